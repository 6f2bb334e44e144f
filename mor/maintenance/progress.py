"""Progress of long maintenance work: a callback for library users, a rich progress bar on a
terminal, nothing otherwise.

An operation opens stages (`with progress.stage("rewrite data files", total=n) as step:`) and
advances them as work completes. Every operation takes `progress=`:
  None      a bar on stderr when stderr is a terminal, silent otherwise (logs, CI, notebooks
            piping output stay clean);
  False     silent;
  callable  called with a ProgressEvent at the start of each stage and after each advance.
"""

from __future__ import annotations

import sys
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator, Union

from mor.errors import InvalidArgumentError


@dataclass(frozen=True)
class ProgressEvent:
    operation: str  # "compact", "expire_snapshots", ...
    stage: str  # what is being done, e.g. "rewrite data files"
    done: int
    total: int | None  # None when not known up front
    unit: str = "files"


ProgressCallback = Callable[[ProgressEvent], None]
ProgressArg = Union[ProgressCallback, bool, None]


class Step:
    """One stage in progress; `advance(n)` after each unit of work (from any thread)."""

    def __init__(self, report: Callable[[int], None]):
        self._report = report
        self._lock = threading.Lock()
        self.done = 0

    def advance(self, n: int = 1) -> None:
        with self._lock:
            self.done += n
            self._report(self.done)


class Progress:
    def __init__(self, operation: str, progress: ProgressArg = None):
        if not (progress is None or isinstance(progress, bool) or callable(progress)):
            raise InvalidArgumentError(f"progress must be None, a bool or a callable, got {progress!r}")
        self.operation = operation
        self.callback = progress if callable(progress) and not isinstance(progress, bool) else None
        self.bar = self.callback is None and progress is not False and (progress is True or _stderr_is_terminal())

    @contextmanager
    def stage(self, name: str, total: int | None, unit: str = "files") -> Iterator[Step]:
        if self.callback is not None:
            callback = self.callback

            def report(done: int) -> None:
                callback(ProgressEvent(self.operation, name, done, total, unit))

            report(0)
            yield Step(report)
        elif self.bar:
            yield from _rich_stage(f"{self.operation}: {name}", total)
        else:
            yield Step(lambda done: None)


def _rich_stage(description: str, total: int | None) -> Iterator[Step]:
    # Imported on first use: rich is only needed when someone watches a terminal.
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress as RichProgress, TextColumn, TimeElapsedColumn

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with RichProgress(*columns, console=Console(stderr=True), transient=False) as bar:
        task = bar.add_task(description, total=total)
        yield Step(lambda done: bar.update(task, completed=done))


def _stderr_is_terminal() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced or closed stderr
        return False
