"""Reading many tasks: a shared delete cache, streaming in order, or in parallel to a table."""

from __future__ import annotations

import os
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.expressions import BooleanExpression
from pyiceberg.schema import Schema

from mor.io.fileio import FileIO
from mor.planning.task import FileScanTask
from mor.read.position_deletes import DeleteFileCache
from mor.read.task_reader import DEFAULT_BATCH_ROWS, TaskReader

T = TypeVar("T")
R = TypeVar("R")
TaskDone = Callable[[FileScanTask], None]  # told when a task has been read


def parallel_map(fn: Callable[[T], R], items: Sequence[T], max_workers: int | None = None) -> list[R]:
    """`[fn(x) for x in items]` on a thread pool, in order. Reading tasks in threads pays off
    because pyarrow releases the GIL while it decodes and filters."""
    workers = max_workers or min(len(items), (os.cpu_count() or 1) * 2) or 1
    if workers == 1:
        return [fn(x) for x in items]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(fn, items))


def prepared_reader(
    io: FileIO,
    tasks: Sequence[FileScanTask],
    schema: Schema,
    projection: Schema,
    row_filter: BooleanExpression,
    case_sensitive: bool,
    batch_rows: int | None = DEFAULT_BATCH_ROWS,
) -> TaskReader:
    """One TaskReader for all of `tasks`: delete files are dropped from its cache after the last
    task that needs them (`reader.cache.done(task)`)."""
    reader = TaskReader(io, schema, projection, row_filter, DeleteFileCache(io, tasks), case_sensitive, batch_rows)
    # Announced up front, each set of equality columns and partition is indexed once, with all
    # of its files, rather than once per subset of files the tasks happen to need.
    reader.equality_cache.prepare(d for t in tasks for d in t.equality_deletes)
    reader.cache.prefetch()
    return reader


def read_batches(
    io: FileIO,
    tasks: Sequence[FileScanTask],
    schema: Schema,
    projection: Schema,
    row_filter: BooleanExpression,
    case_sensitive: bool = True,
    task_done: TaskDone | None = None,
) -> Iterator[pa.RecordBatch]:
    """The rows of `tasks`, streamed in order; `task_done(task)` after each task's last batch."""
    reader = prepared_reader(io, tasks, schema, projection, row_filter, case_sensitive)
    for task in tasks:
        yield from reader.read(task)
        reader.cache.done(task)
        if task_done is not None:
            task_done(task)


def read_table(
    io: FileIO,
    tasks: Sequence[FileScanTask],
    schema: Schema,
    projection: Schema,
    row_filter: BooleanExpression,
    case_sensitive: bool = True,
    max_workers: int | None = None,
    task_done: TaskDone | None = None,
) -> pa.Table:
    """All rows of all tasks, in task order; tasks are read in parallel threads (pyarrow
    releases the GIL while decoding). Every row is kept anyway, so row groups are decoded
    whole: small batches cost about a tenth more time on large row groups. `task_done(task)`
    once a task is read (from the thread that read it)."""
    reader = prepared_reader(io, tasks, schema, projection, row_filter, case_sensitive, batch_rows=None)
    workers = max_workers or (os.cpu_count() or 1)
    if len(tasks) < workers:  # too few files to keep every core busy: read parts of files too
        units = _row_group_units(io, tasks)
        last_unit = _LastUnit(units, task_done)
        parts = parallel_map(lambda unit: last_unit.after(unit[0], list(reader.read(*unit))), units, max_workers)
        for task in tasks:
            reader.cache.done(task)
    else:

        def read_one(task: FileScanTask) -> list[pa.RecordBatch]:
            batches = list(reader.read(task))
            reader.cache.done(task)
            if task_done is not None:
                task_done(task)
            return batches

        parts = parallel_map(read_one, tasks, max_workers)
    batches = [b for part in parts for b in part]
    return pa.Table.from_batches(batches, schema=reader.output_schema)


class _LastUnit:
    """Calls `task_done(task)` when the last of a task's units is read (in any order)."""

    def __init__(self, units: Sequence[tuple[FileScanTask, range | None]], task_done: TaskDone | None):
        self.left = Counter(id(task) for task, _ in units)
        self.task_done = task_done
        self.lock = threading.Lock()

    def after(self, task: FileScanTask, batches: list[pa.RecordBatch]) -> list[pa.RecordBatch]:
        with self.lock:
            self.left[id(task)] -= 1
            last = self.left[id(task)] == 0
        if last and self.task_done is not None:
            self.task_done(task)
        return batches


def _row_group_units(io: FileIO, tasks: Sequence[FileScanTask]) -> list[tuple[FileScanTask, range | None]]:
    """Each task as one unit per row group, in order: threads take them as they free up (a
    file that cannot be opened stays whole: reading it raises the error with its name)."""
    units: list[tuple[FileScanTask, range | None]] = []
    for task in tasks:
        try:
            with io.open_input(task.data_file.file_path) as f:
                count = pq.ParquetFile(f).metadata.num_row_groups
        except (OSError, pa.ArrowException):
            units.append((task, None))
            continue
        units += [(task, range(i, i + 1)) for i in range(count)] or [(task, None)]
    return units
