"""Scan: what to read (filter, columns, snapshot, limit), planned into tasks and read into
Arrow, and from Arrow into pandas, polars or DuckDB (imported only by the method that needs it).
Reading reports progress (mor/progress.py): stage "read files", each planned file counted, with
its size as bytes, once read (a limit may stop before the last)."""

from __future__ import annotations

import copy
import datetime as dt
import itertools
import numbers
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from pyiceberg.schema import Schema

from mor.api.time_travel import choose_snapshot
from mor.errors import InvalidArgumentError, InvalidFilterError
from mor.expr.filters import FileFilter, FilterLike, bind_filter, parse_filter
from mor.format.arrow_types import to_arrow_schema
from mor.format.lineage import LINEAGE_FIELDS
from mor.format.metadata import Snapshot, TableMetadata
from mor.planning.data_manifests import ReadDataManifests
from mor.planning.planner import plan_tasks
from mor.planning.task import FileScanTask
from mor.progress import Progress, ProgressArg, Step
from mor.read.scan_reader import TaskDone, read_batches, read_table

if TYPE_CHECKING:
    from mor.dml.handle import TableHandle


class FrameConversions:
    """pandas, polars and DuckDB views of whatever `to_arrow()` returns, for every scan-like
    object (a scan, a change feed)."""

    table: TableHandle

    def to_arrow(self) -> pa.Table:
        raise NotImplementedError

    def to_pandas(self, **kwargs: Any) -> Any:
        """The rows as a pandas DataFrame; `kwargs` go to `pyarrow.Table.to_pandas` (e.g.
        `types_mapper=pd.ArrowDtype` keeps nullable ints as ints)."""
        return self.to_arrow().to_pandas(**kwargs)

    def to_polars(self) -> Any:
        """The rows as a polars DataFrame."""
        import polars as pl  # optional: imported by the one method that needs it

        return pl.from_arrow(self.to_arrow())

    def to_duckdb(self, connection: Any, name: str | None = None) -> Any:
        """The rows as a DuckDB relation over the Arrow table, without a copy: registered with
        `connection` as the view `name` (default: the table's name without its namespace)."""
        view = name or self.table.identifier.rsplit(".", 1)[-1]
        connection.register(view, self.to_arrow())
        return connection.table(view)


class Scan(FrameConversions):
    def __init__(
        self,
        table: TableHandle,
        filter: FilterLike = None,
        columns: Sequence[str] | None = None,
        snapshot_id: int | None = None,
        as_of: dt.datetime | dt.date | str | int | None = None,
        case_sensitive: bool = True,
        limit: int | None = None,
        progress: ProgressArg = None,
    ):
        self.table = table
        self.progress = Progress.delayed("scan", progress)
        self.case_sensitive = case_sensitive
        self.snapshot = choose_snapshot(table, snapshot_id, as_of)
        time_travel = snapshot_id is not None or as_of is not None
        self.schema = snapshot_schema(table.metadata, self.snapshot) if time_travel else table.metadata.schema()
        self.row_filter = parse_filter(filter)
        bind_filter(self.schema, self.row_filter, case_sensitive)
        self.projection = project_columns(self.schema, columns, case_sensitive, table.metadata.format_version)
        self.columns = None if columns is None else list(columns)
        self.filter_text = filter if isinstance(filter, str) else "true" if filter is None else repr(self.row_filter)
        self.row_limit = _check_limit(limit)

    def __repr__(self) -> str:
        snapshot_id = self.snapshot.snapshot_id if self.snapshot is not None else None
        limit = "" if self.row_limit is None else f", limit={self.row_limit}"
        return f"Scan({self.table.identifier!r}, filter={self.filter_text!r}, columns={self.columns!r}, snapshot_id={snapshot_id}{limit})"

    def limit(self, n: int) -> Scan:
        """This scan, reading at most `n` rows (the first in task order): files stop being
        read once they are produced."""
        limited = copy.copy(self)
        limited.row_limit = _check_limit(n)
        return limited

    def plan_files(self, keep_metrics: bool = True) -> list[FileScanTask]:
        """The tasks of this scan. `keep_metrics=False` when they are only read: the data files
        then carry only the filter's columns' metrics (faster, far less memory at scale); keep
        them to write the files back."""
        return list(self.plan_tasks(keep_metrics))

    def plan_tasks(self, keep_metrics: bool = False, *, read_data_manifests: ReadDataManifests | None = None) -> Iterator[FileScanTask]:
        """The tasks of this scan as a stream, in the order `plan_files` lists them: a table of
        a million files is read without holding a million tasks. By default for reading
        (`keep_metrics=False`). `read_data_manifests`: where the data manifests are read (Spark's
        executors: mor/spark/planning.py); the same tasks wherever."""
        return plan_tasks(
            self.table.io,
            self.table.metadata,
            self.snapshot,
            self.row_filter,
            self.case_sensitive,
            self.schema,
            keep_metrics,
            read_data_manifests,
        )

    def to_batches(self) -> Iterator[pa.RecordBatch]:
        return self._batches(self.plan_tasks(), self.projection)

    def to_arrow(self) -> pa.Table:
        tasks = self.plan_files(keep_metrics=False)
        if self.row_limit is not None:
            return pa.Table.from_batches(list(self._batches(tasks, self.projection)), schema=to_arrow_schema(self.projection))
        return self._table(tasks, self.projection)

    def count(self) -> int:
        """Live rows matching the filter (at most `limit`). A data file no delete file applies
        to, whose metrics prove every row matches (always, without a filter), is counted from
        its record count; the others are read, only the filter's and delete keys' columns.
        Planned and read a group of files at a time."""
        metrics = FileFilter(self.schema, self.table.metadata.specs(), self.row_filter, self.case_sensitive)
        total = 0
        for tasks in batched(self.plan_tasks(), STREAM_GROUP):
            known = [not t.delete_files and metrics.every_row_matches(t.data_file) for t in tasks]
            total += sum(t.data_file.record_count for t, k in zip(tasks, known) if k)
            to_read = [t for t, k in zip(tasks, known) if not k]
            if self.row_limit is not None:
                if total >= self.row_limit:
                    return self.row_limit
                total += sum(b.num_rows for b in self._batches(to_read, self.schema.select(), self.row_limit - total))
            elif to_read:
                total += self._table(to_read, self.schema.select()).num_rows
        return total if self.row_limit is None else min(total, self.row_limit)

    def _table(self, tasks: Sequence[FileScanTask], projection: Schema) -> pa.Table:
        with self.progress.stage("read files", len(tasks), with_bytes=True) as step:
            return read_table(self.table.io, tasks, self.schema, projection, self.row_filter, self.case_sensitive, task_done=_counted(step))

    def _batches(self, tasks: Iterable[FileScanTask], projection: Schema, limit: int | None = None) -> Iterator[pa.RecordBatch]:
        """The rows, streamed (at most `limit`, default the scan's) a group of tasks at a time
        as the plan gives them; the progress stage lasts as long as the stream (its total known
        when the tasks are a list or one group: a stream of more is read as it is planned)."""
        limit = self.row_limit if limit is None else limit
        groups = batched(tasks, STREAM_GROUP)
        first = next(groups, [])
        rest = next(groups, None)
        total = len(first) if rest is None else len(tasks) if isinstance(tasks, Sequence) else None
        groups = itertools.chain([first], [] if rest is None else [rest], groups)
        with self.progress.stage("read files", total, with_bytes=True) as step:

            def read(part: Sequence[FileScanTask]) -> Iterator[pa.RecordBatch]:
                return read_batches(
                    self.table.io, part, self.schema, projection, self.row_filter, self.case_sensitive, task_done=_counted(step)
                )

            for group in groups:
                if limit is None:
                    yield from read(group)
                    continue
                for batch in first_rows(read, group, limit):
                    limit -= batch.num_rows
                    yield batch
                if limit <= 0:
                    return


STREAM_GROUP = 1024  # tasks read per reader: a stream of a million files is read a group at a time


def batched(items: Iterable[FileScanTask], size: int) -> Iterator[list[FileScanTask]]:
    iterator = iter(items)
    while group := list(itertools.islice(iterator, size)):
        yield group


def _counted(step: Step) -> TaskDone:
    return lambda task: step.advance(1, bytes=task.data_file.file_size_in_bytes)


def first_rows(
    read: Callable[[Sequence[FileScanTask]], Iterator[pa.RecordBatch]], tasks: Sequence[FileScanTask], limit: int
) -> Iterator[pa.RecordBatch]:
    """The first `limit` rows `read` gives for `tasks`, reading a few tasks at a time: each
    time the fewest next tasks whose files hold (before deletes and the filter) the rows still
    wanted. Fewer could not give them, so no task is read that was not needed."""
    remaining, start = limit, 0
    while remaining > 0 and start < len(tasks):
        stop = _covering(tasks, start, remaining)
        for batch in read(tasks[start:stop]):
            if batch.num_rows >= remaining:
                yield batch.slice(0, remaining)
                return
            remaining -= batch.num_rows
            yield batch
        start = stop


def _covering(tasks: Sequence[FileScanTask], start: int, rows: int) -> int:
    """The end of the shortest run of tasks from `start` whose files hold at least `rows` rows."""
    held = 0
    for i in range(start, len(tasks)):
        held += tasks[i].data_file.record_count
        if held >= rows:
            return i + 1
    return len(tasks)


def _check_limit(limit: object) -> int | None:
    if limit is None:
        return None
    if isinstance(limit, bool) or not isinstance(limit, numbers.Integral) or limit < 0:
        raise InvalidArgumentError(f"limit is a number of rows (an int >= 0), got {limit!r}")
    return int(limit)


def snapshot_schema(metadata: TableMetadata, snapshot: Snapshot | None) -> Schema:
    """The schema a snapshot was written with (time travel reads it, as Iceberg does; a plain
    scan reads the table's current schema, which may be newer); the current schema when the
    snapshot does not say."""
    if snapshot is None or snapshot.schema_id is None:
        return metadata.schema()
    return metadata.schema_by_id(snapshot.schema_id)


def project_columns(schema: Schema, columns: Sequence[str] | None, case_sensitive: bool, format_version: int = 2) -> Schema:
    """The selected columns, in the schema's order, then the row lineage columns selected (v3:
    `_row_id`, `_last_updated_sequence_number`); [] selects none (rows still count).
    InvalidFilterError naming a column the schema does not have, or one given twice."""
    if columns is None:
        return schema
    if isinstance(columns, str) or not isinstance(columns, (list, tuple)):
        raise InvalidFilterError(f"columns must be a list of names, got {type(columns).__name__} {columns!r}")
    not_names = [c for c in columns if not isinstance(c, str)]
    if not_names:
        raise InvalidFilterError(f"columns must be names (strings), got {not_names} in {list(columns)}")
    repeated = sorted({c for c in columns if columns.count(c) > 1})
    if repeated:
        raise InvalidFilterError(f"columns {repeated} are selected twice in {list(columns)}")
    lineage = [c for c in columns if c in LINEAGE_FIELDS and _find(schema, c, case_sensitive) is None]
    if lineage and format_version < 3:
        raise InvalidFilterError(
            f"{lineage} are row lineage columns of format v3 tables; this table is v{format_version} "
            "(table.upgrade(format_version=3) starts row lineage)"
        )
    columns = [c for c in columns if c not in lineage]
    try:
        selected = schema.select(*columns, case_sensitive=case_sensitive)
        if lineage:
            selected = Schema(*selected.fields, *(LINEAGE_FIELDS[c] for c in lineage), schema_id=selected.schema_id)
        return selected
    except ValueError:
        unknown = [c for c in columns if _find(schema, c, case_sensitive) is None]
        raise InvalidFilterError(f"unknown columns {unknown}; the table has {schema.column_names}") from None


def _find(schema: Schema, name: str, case_sensitive: bool) -> object:
    try:
        return schema.find_field(name, case_sensitive=case_sensitive)
    except ValueError:
        return None
