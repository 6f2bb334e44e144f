"""Scan: what to read (filter, columns, snapshot), planned into tasks and read into Arrow."""

from __future__ import annotations

import datetime as dt
import numbers
from typing import TYPE_CHECKING, Iterator, Sequence

import pyarrow as pa
from pyiceberg.schema import Schema

from mor.errors import InvalidArgumentError, InvalidFilterError, NoSuchSnapshotError
from mor.format.metadata import Snapshot, TableMetadata
from mor.planning.filters import FilterLike, bind_filter, parse_filter
from mor.planning.planner import plan_files
from mor.planning.task import FileScanTask
from mor.format.lineage import LINEAGE_FIELDS
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
        time_travel = snapshot_id is not None or as_of is not None
        self.schema = snapshot_schema(table.metadata, self.snapshot) if time_travel else table.metadata.schema()
        self.row_filter = parse_filter(filter)
        bind_filter(self.schema, self.row_filter, case_sensitive)
        self.projection = _project(self.schema, columns, case_sensitive, table.metadata.format_version)

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
    """The schema a snapshot was written with (time travel reads it, as Iceberg does; a plain
    scan reads the table's current schema, which may be newer); the current schema when the
    snapshot does not say."""
    if snapshot is None or snapshot.schema_id is None:
        return metadata.schema()
    return metadata.schema_by_id(snapshot.schema_id)


def _project(schema: Schema, columns: Sequence[str] | None, case_sensitive: bool, format_version: int = 2) -> Schema:
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


def _choose_snapshot(table: Table, snapshot_id: int | None, as_of: dt.datetime | int | None) -> Snapshot | None:
    metadata = table.metadata
    if snapshot_id is not None and as_of is not None:
        raise InvalidArgumentError("give snapshot_id or as_of, not both")
    if snapshot_id is not None:
        if isinstance(snapshot_id, bool) or not isinstance(snapshot_id, numbers.Integral):
            raise InvalidArgumentError(f"snapshot_id is an int, got {type(snapshot_id).__name__} {snapshot_id!r}")
        try:
            return metadata.snapshot_by_id(int(snapshot_id))
        except KeyError:
            raise NoSuchSnapshotError(f"{table.identifier} has no snapshot {snapshot_id}") from None
    if as_of is not None:
        ms = _as_of_ms(as_of)
        try:
            snapshot = metadata.snapshot_as_of(ms)
        except KeyError as e:
            raise NoSuchSnapshotError(f"the snapshot {e.args[0]} of {table.identifier} current at {as_of} has expired") from None
        if snapshot is None:
            first = min((ts for ts, _ in metadata.snapshot_log), default=None)
            since = "it has no snapshots" if first is None else f"its first snapshot is from {_utc(first)}"
            raise NoSuchSnapshotError(f"{table.identifier} had no snapshot at {as_of} ({_utc(ms)}): {since}")
        return snapshot
    return metadata.current_snapshot()


def _as_of_ms(as_of: object) -> int:
    """Milliseconds since the epoch of an `as_of` (an int of milliseconds, or a datetime;
    a naive datetime is UTC)."""
    if isinstance(as_of, dt.datetime):
        return int(_aware(as_of).timestamp() * 1000)
    if isinstance(as_of, numbers.Integral) and not isinstance(as_of, bool):
        return int(as_of)
    raise InvalidArgumentError(
        f"as_of is a datetime or an int of milliseconds since the epoch, got {type(as_of).__name__} {as_of!r}"
    )


def _utc(ms: int) -> str:
    try:
        return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).isoformat(timespec="milliseconds")
    except (OverflowError, OSError, ValueError):
        return f"{ms} ms"


def _aware(t: dt.datetime) -> dt.datetime:
    return t if t.tzinfo is not None else t.replace(tzinfo=dt.timezone.utc)
