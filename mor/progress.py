"""Progress of long work: a callback for library users, a rich progress bar on a terminal,
nothing otherwise.

An operation opens stages (`with progress.stage("read files", total=n) as step:`) and
advances them as work completes (`step.advance(1, bytes=size)`). Appends, the DML verbs, scans
and maintenance take `progress=`:
  None      a bar on stderr when stderr is a terminal, silent otherwise (logs, CI, notebooks
            piping output stay clean);
  True      a bar on stderr, terminal or not;
  False     silent;
  callable  called with a ProgressEvent at the start of each stage and after each advance, at
            once, from the thread that did the work (one stage's events come one at a time).
Work that is often quick (appends, DML, scans) shows its bar only once a stage has run for
`BAR_DELAY_SECONDS`, so a short call leaves the terminal alone; a callback is never delayed.

Every stage in progress, of any operation and thread, is a row of one display on stderr; the
display ends with the last of them. rich is imported only when a bar shows.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from mor.errors import InvalidArgumentError

# How long a stage of work that is often quick runs before its bar shows.
BAR_DELAY_SECONDS = 2.0


@dataclass(frozen=True)
class ProgressEvent:
    operation: str  # "append", "delete", "scan", "compact", "expire_snapshots", ...
    stage: str  # what is being done, e.g. "write rows", "scan files", "rewrite data files"
    done: int  # in `unit`, so far; never decreases within a stage
    total: int | None  # None when not known up front
    unit: str = "files"  # "files", "rows", "bytes"
    # Bytes read or written so far, for a stage that counts rows or files but also says how
    # many bytes it has moved (appends, DML writes, scans); None for the others.
    bytes: int | None = None


ProgressCallback = Callable[[ProgressEvent], None]
ProgressArg = ProgressCallback | bool | None


class Step:
    """One stage in progress; `advance(n, bytes=b)` after each unit of work (from any thread)."""

    def __init__(self, report: Callable[[int, int], None]):
        self._report = report
        self._lock = threading.Lock()
        self.done = 0
        self.bytes = 0

    def advance(self, n: int = 1, *, bytes: int = 0) -> None:
        if not (n or bytes):
            return  # nothing moved: no event
        with self._lock:
            self.done += n
            self.bytes += bytes
            self._report(self.done, self.bytes)


class Progress:
    """How one operation reports its stages (see the module docstring). `delay`: seconds a
    stage runs before its bar shows."""

    def __init__(self, operation: str, progress: ProgressArg = None, *, delay: float = 0.0):
        if not (progress is None or isinstance(progress, bool) or callable(progress)):
            raise InvalidArgumentError(f"progress must be None, a bool or a callable, got {progress!r}")
        self.operation = operation
        self.callback = progress if callable(progress) and not isinstance(progress, bool) else None
        self.bar = self.callback is None and progress is not False and (progress is True or _stderr_is_terminal())
        self.delay = delay

    @classmethod
    def delayed(cls, operation: str, progress: ProgressArg = None) -> Progress:
        """For work that is often quick (appends, DML, scans): a bar waits BAR_DELAY_SECONDS."""
        return cls(operation, progress, delay=BAR_DELAY_SECONDS)

    @contextmanager
    def stage(self, name: str, total: int | None, unit: str = "files", *, with_bytes: bool = False) -> Iterator[Step]:
        """A stage of `total` `unit`s (None: unknown); `with_bytes`: its events say the bytes
        moved too."""
        if self.callback is not None:
            callback, operation = self.callback, self.operation

            def report(done: int, moved: int) -> None:
                callback(ProgressEvent(operation, name, done, total, unit, moved if with_bytes else None))

            report(0, 0)
            yield Step(report)
        elif self.bar:
            row = _BarRow(f"{self.operation}: {name}", total, unit, with_bytes)
            with row.shown_after(self.delay):
                yield Step(row.update)
        else:
            yield Step(lambda done, moved: None)


class _BarRow:
    """One stage's row in the shared display, shown once the stage has run for a while."""

    def __init__(self, description: str, total: int | None, unit: str, with_bytes: bool):
        self.description = description
        self.total = total
        self.unit = unit
        self.with_bytes = with_bytes
        self.done = 0
        self.bytes = 0
        self.task: Any = None  # rich's task id, once shown
        self.closed = False
        self.started = time.monotonic()

    @contextmanager
    def shown_after(self, delay: float) -> Iterator[None]:
        timer = None
        if delay > 0:
            timer = threading.Timer(delay, self.show)
            timer.daemon = True
            timer.start()
        else:
            self.show()
        try:
            yield
        finally:
            if timer is not None:
                timer.cancel()
            self.close()

    def show(self) -> None:
        with _display.lock:
            if self.closed or self.task is not None:
                return
            self.task = _display.add(self.description, self.total, self.counts(), self.started)

    def update(self, done: int, moved: int) -> None:
        with _display.lock:
            self.done, self.bytes = done, moved
            if self.task is not None:
                _display.update(self.task, done, self.counts())

    def close(self) -> None:
        with _display.lock:
            self.closed = True
            if self.task is not None:
                _display.update(self.task, self.done, self.counts(), ended=time.monotonic())
                _display.remove()

    def counts(self) -> str:
        """Like "3/10 files, 1.2 MB", or "1.2 MB/5.0 MB" for a stage counted in bytes."""
        show = human_bytes if self.unit == "bytes" else lambda n: f"{n:,}"
        text = show(self.done) + ("" if self.total is None else "/" + show(self.total))
        if self.unit != "bytes":
            text += f" {self.unit}"
        if self.with_bytes:
            text += f", {human_bytes(self.bytes)}"
        return text


class _Display:
    """The one rich display of the process, from its first row's start to its last row's end."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.bars: Any = None  # a started rich Progress
        self.rows = 0

    def add(self, description: str, total: int | None, counts: str, started: float) -> Any:
        if self.bars is None:
            self.bars = _start_rich()
            if self.bars is None:
                return None
        self.rows += 1
        return self.bars.add_task(description, total=total, counts=counts, started=started)

    def update(self, task: Any, done: int, counts: str, **fields: float) -> None:
        self.bars.update(task, completed=done, counts=counts, **fields)

    def remove(self) -> None:
        self.rows -= 1
        if self.rows == 0:
            bars, self.bars = self.bars, None
            bars.stop()


_display = _Display()


def _start_rich() -> Any:
    """A started rich Progress on stderr, or None when another live display (the caller's own)
    holds the terminal or rich is missing (a dependency, yet no bar is worth failing for).
    Imported here: rich is only needed when someone watches a terminal."""
    try:
        from rich.console import Console
        from rich.errors import LiveError
        from rich.progress import BarColumn, ProgressColumn, Task, TextColumn
        from rich.progress import Progress as RichProgress
        from rich.text import Text
    except ImportError:
        return None

    class SinceStageStart(ProgressColumn):
        """Time since the stage started (before its bar showed), as 0:00:05; frozen once it ended."""

        def render(self, task: Task) -> Text:
            end = task.fields.get("ended") or time.monotonic()
            seconds = int(max(end - task.fields["started"], 0))
            return Text(f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}", style="progress.elapsed")

    columns = (TextColumn("{task.description}"), BarColumn(), TextColumn("{task.fields[counts]}"), SinceStageStart())
    # stdout stays the caller's: rows printed to a pipe must not be routed to the terminal.
    bars = RichProgress(*columns, console=Console(stderr=True), transient=False, redirect_stdout=False, redirect_stderr=False)
    try:
        bars.start()
    except LiveError:
        return None
    return bars


def human_bytes(n: int) -> str:
    """1234567 -> "1.2 MB" (decimal units, as rich and disk makers count)."""
    if n < 1000:
        return f"{n} bytes"
    size = float(n)
    for unit in ("kB", "MB", "GB", "TB"):
        size /= 1000
        if size < 1000 or unit == "TB":
            return f"{size:.1f} {unit}"
    raise AssertionError("unreachable")


def _stderr_is_terminal() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced or closed stderr
        return False
