"""Scan: what to read (filter, columns, snapshot), planned into tasks and read into Arrow."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Iterator, Sequence

import pyarrow as pa
from pyiceberg.schema import Schema

from mor.errors import InvalidArgumentError, InvalidFilterError, NoSuchSnapshotError
from mor.format.metadata import Snapshot, TableMetadata
from mor.planning.filters import FilterLike, bind_filter, parse_filter
from mor.planning.planner import plan_files
from mor.planning.task import FileScanTask
from mor.read.scan_reader import read_batches, read_table

if TYPE_CHECKING:
    from mor.api.table import Table


class Scan:
    def __init__(
        self,
        table: Table,
        filter: FilterLike = None,
        columns: Sequence[str] | None = None,
        snapshot_id: int | None = None,
        as_of: dt.datetime | int | None = None,
        case_sensitive: bool = True,
    ):
        self.table = table
        self.case_sensitive = case_sensitive
        self.snapshot = _choose_snapshot(table, snapshot_id, as_of)
        self.schema = snapshot_schema(table.metadata, self.snapshot)
        self.row_filter = parse_filter(filter)
        bind_filter(self.schema, self.row_filter, case_sensitive)
        self.projection = _project(self.schema, columns, case_sensitive)

    def plan_files(self) -> list[FileScanTask]:
        return plan_files(
            self.table.io, self.table.metadata, self.snapshot, self.row_filter, self.case_sensitive, self.schema
        )

    def to_batches(self) -> Iterator[pa.RecordBatch]:
        return read_batches(
            self.table.io, self.plan_files(), self.schema, self.projection, self.row_filter, self.case_sensitive
        )

    def to_arrow(self) -> pa.Table:
        return read_table(self.table.io, self.plan_files(), self.schema, self.projection, self.row_filter, self.case_sensitive)

    def count(self) -> int:
        """Live rows matching the filter; reads only the filter's and delete keys' columns."""
        tasks = self.plan_files()
        return read_table(self.table.io, tasks, self.schema, self.schema.select(), self.row_filter, self.case_sensitive).num_rows


def snapshot_schema(metadata: TableMetadata, snapshot: Snapshot | None) -> Schema:
    """The schema a snapshot was written with (time travel reads it, as Iceberg does); the
    current schema when the snapshot does not say."""
    if snapshot is None or snapshot.schema_id is None:
        return metadata.schema()
    return metadata.schema_by_id(snapshot.schema_id)


def _project(schema: Schema, columns: Sequence[str] | None, case_sensitive: bool) -> Schema:
    if columns is None:
        return schema
    if isinstance(columns, str):
        raise InvalidFilterError(f"columns must be a list of names, got the string {columns!r}")
    try:
        return schema.select(*columns, case_sensitive=case_sensitive)
    except ValueError as e:
        raise InvalidFilterError(f"unknown column in {list(columns)}: {e}") from e


def _choose_snapshot(table: Table, snapshot_id: int | None, as_of: dt.datetime | int | None) -> Snapshot | None:
    metadata = table.metadata
    if snapshot_id is not None and as_of is not None:
        raise InvalidArgumentError("give snapshot_id or as_of, not both")
    if snapshot_id is not None:
        try:
            return metadata.snapshot_by_id(snapshot_id)
        except KeyError:
            raise NoSuchSnapshotError(f"table has no snapshot {snapshot_id}") from None
    if as_of is not None:
        ms = as_of if isinstance(as_of, int) else int(_aware(as_of).timestamp() * 1000)
        snapshot = metadata.snapshot_as_of(ms)
        if snapshot is None:
            raise NoSuchSnapshotError(f"table had no snapshot at {as_of}")
        return snapshot
    return metadata.current_snapshot()


def _aware(t: dt.datetime) -> dt.datetime:
    return t if t.tzinfo is not None else t.replace(tzinfo=dt.timezone.utc)
