"""CPU seconds of a process tree, read from /proc (Linux), without psutil.

A Spark job spends its CPU in three kinds of process: the Python driver, the JVM it starts, and
Python workers that the JVM forks (some short-lived). Summing user + system time over the live
tree, plus the children time each process accounts for its reaped children, counts all of them;
taking the difference of two readings around a call gives that call's CPU.
"""

from __future__ import annotations

import os
from pathlib import Path

_TICKS = os.sysconf("SC_CLK_TCK")


def _stat_fields(pid: int) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:  # the process ended between the listing and the read
        return None
    # The command name (field 2) is in parentheses and may hold spaces: split after it.
    return text[text.rindex(")") + 2 :].split()


def _children(pid: int) -> list[int]:
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            out += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return out


def tree_cpu_seconds(root: int | None = None) -> float:
    """user + system + reaped-children CPU of `root` (this process) and every descendant."""
    total_ticks = 0
    stack = [root or os.getpid()]
    seen: set[int] = set()
    while stack:
        pid = stack.pop()
        if pid in seen:
            continue
        seen.add(pid)
        fields = _stat_fields(pid)
        if fields is None:
            continue
        # After the command: state(0) ... utime(11) stime(12) cutime(13) cstime(14).
        total_ticks += sum(int(fields[i]) for i in (11, 12, 13, 14))
        stack += _children(pid)
    return total_ticks / _TICKS
