"""Test-only fault injection: kill this process at a named step of a commit.

Crash tests run a writer with `MOR_FAULT_POINT=<point>` in its environment; when the commit
reaches that point the process sends itself SIGKILL, exactly as if the machine died there.
With `MOR_FAULT_KILL=group` it kills the process group `MOR_FAULT_PGID` (default its own)
instead: a Spark driver that puts its group id there before it starts its JVM dies whole, JVM
and Python workers with it, when a worker commits (Spark's workers run in groups of their own).
Unset (always, outside tests), `reached` is one dictionary lookup.
"""

from __future__ import annotations

import os
import signal

ENV = "MOR_FAULT_POINT"
SCOPE_ENV = "MOR_FAULT_KILL"  # "group": the process group, else this process
GROUP_ENV = "MOR_FAULT_PGID"

# The steps of a commit, in order (see snapshot_producer.commit_changes).
POINTS = (
    "files-written",  # data and delete files written, nothing else
    "manifests-written",  # plus manifests of the new files
    "manifest-list-written",  # plus the manifest list of the new snapshot
    "metadata-written",  # plus the new metadata JSON, not yet swapped in
    "committed",  # the catalog points at the new metadata; the caller has not heard yet
)


def reached(point: str) -> None:
    if os.environ.get(ENV) == point:
        if os.environ.get(SCOPE_ENV) == "group":
            os.killpg(int(os.environ.get(GROUP_ENV) or os.getpgid(0)), signal.SIGKILL)
        os.kill(os.getpid(), signal.SIGKILL)
