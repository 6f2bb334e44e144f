"""The change feed: the rows each snapshot inserted, deleted and updated, deletes included.

    table.changes(from_snapshot_id=a, to_snapshot_id=b).to_arrow()

For every snapshot after `from` up to and including `to` (an ancestor chain; `from=None` starts
from the empty table) the snapshot is diffed against its parent (mor/read/snapshot_diff.py):
rows of data files it removed and rows its new deletes hit are removed rows, rows of the files it
added are added rows. Then, per snapshot:
  - rows equal in every table column on both sides cancel (a copy-on-write rewrite carries the
    rows it keeps over to its new file; an UPDATE that sets a row to what it held changes
    nothing), as Iceberg's changelog view removes carry-overs;
  - a removed and an added row with the same key (the `on=` columns, else the schema's identifier
    fields, else on a format v3 table the row lineage `_row_id`) pair up as UPDATE_BEFORE and
    UPDATE_AFTER when the key is held by exactly one row on each side (never on a null key);
  - the rest are DELETE and INSERT.
`replace` snapshots (compaction, delete rewrites) change no rows and emit nothing, without being
read. `_change_ordinal` numbers the snapshots that can change rows, from 0; rows come out per
snapshot, in order, so applying them in order to the rows at `from` (a removed row removes one
equal row, an added row adds one) gives the rows at `to`. `net_changes=True` cancels across the
whole range instead (a row inserted then deleted inside the range disappears) and pairs again:
the difference between the two ends, held in memory at once.

Cost: metadata planning of each snapshot in the range, then only what changed: the rows at the
positions a new position delete or deletion vector names (row groups without one are skipped),
the files a snapshot added or removed, and for a new equality delete the files it reaches.

A start the table's history no longer holds is refused, never guessed: a `from` snapshot or a
`from_timestamp` whose snapshot was expired, or `from=None` once the first snapshots were
expired, raise ExpiredHistoryError naming the oldest snapshot the feed can start from (diffing
against a state that cannot be read would report every live row as inserted, and lose deletes).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
from pyiceberg.schema import Schema

from mor.api.change_rows import cancel_equal_rows, group_ids, has_no_null, pair_by_key
from mor.api.scan import FrameConversions, project_columns, snapshot_schema
from mor.api.time_travel import as_of_ms, choose_snapshot, utc_text
from mor.errors import ExpiredHistoryError, InvalidArgumentError, InvalidFilterError, NoSuchSnapshotError
from mor.expr.filters import FilterLike, bind_filter, parse_filter
from mor.format.lineage import LINEAGE_FIELD_IDS
from mor.format.metadata import Snapshot
from mor.format.spec import ROW_ID_NAME
from mor.planning.planner import plan_files
from mor.planning.task import FileScanTask
from mor.read.snapshot_diff import SnapshotDiff, SnapshotDiffer

if TYPE_CHECKING:
    from mor.dml.handle import TableHandle

CHANGE_TYPE = "_change_type"
CHANGE_ORDINAL = "_change_ordinal"
COMMIT_SNAPSHOT_ID = "_commit_snapshot_id"
INSERT, DELETE, UPDATE_BEFORE, UPDATE_AFTER = "INSERT", "DELETE", "UPDATE_BEFORE", "UPDATE_AFTER"
CHANGE_FIELDS = [
    pa.field(CHANGE_TYPE, pa.string(), nullable=False),
    pa.field(CHANGE_ORDINAL, pa.int32(), nullable=False),
    pa.field(COMMIT_SNAPSHOT_ID, pa.int64(), nullable=False),
]
_REMOVED = (DELETE, UPDATE_BEFORE)


class ChangeScan(FrameConversions):
    def __init__(
        self,
        table: TableHandle,
        from_snapshot_id: int | None = None,
        to_snapshot_id: int | None = None,
        columns: Sequence[str] | None = None,
        filter: FilterLike = None,
        from_timestamp: dt.datetime | int | None = None,
        to_timestamp: dt.datetime | int | None = None,
        on: Sequence[str] | None = None,
        net_changes: bool = False,
        case_sensitive: bool = True,
        *,
        schema: Schema | None = None,
        first_ordinal: int = 0,
        start_as_inserts: bool = False,
    ):
        """`schema` (default: the schema of `to`) and `first_ordinal` let a caller split one
        range into parts that read alike (Spark reads a range one snapshot per task).
        `start_as_inserts`: with no start, diff the oldest snapshot left against the empty
        table even when older ones were expired (its live rows come out as INSERTs), as a new
        stream of changes starts from the table's state; otherwise that is ExpiredHistoryError."""
        self.table = table
        self.first_ordinal = first_ordinal
        self.case_sensitive = case_sensitive
        self.net_changes = net_changes
        metadata = table.metadata
        if to_snapshot_id is not None or to_timestamp is not None:
            self.to_snapshot = choose_snapshot(table, to_snapshot_id, to_timestamp)
            self.schema = snapshot_schema(metadata, self.to_snapshot)
        else:
            self.to_snapshot = metadata.current_snapshot()
            self.schema = metadata.schema()
        if schema is not None:
            self.schema = schema
        self.from_snapshot = _from_snapshot(table, from_snapshot_id, from_timestamp, self.to_snapshot, start_as_inserts)
        self.snapshots = _range(table, self.from_snapshot, self.to_snapshot)
        self.row_filter = parse_filter(filter)
        bind_filter(self.schema, self.row_filter, case_sensitive)
        if columns is not None and any(c in (CHANGE_TYPE, CHANGE_ORDINAL, COMMIT_SNAPSHOT_ID) for c in columns):
            raise InvalidFilterError(f"the change columns are always given; columns names table columns, got {list(columns)}")
        self.projection = project_columns(self.schema, columns, case_sensitive, metadata.format_version)
        self.keys = _keys(self.schema, on, metadata.format_version, case_sensitive)
        # Rows are read whole (and with _row_id when it pairs updates), whatever is selected:
        # a carried-over row is one equal in every column, and the key may not be selected.
        wanted = list(dict.fromkeys([*(f.name for f in self.schema.fields), *(f.name for f in self.projection.fields), *self.keys]))
        self.read_projection = project_columns(self.schema, wanted, case_sensitive, metadata.format_version)
        self.value_columns = [f.name for f in self.read_projection.fields if f.field_id not in LINEAGE_FIELD_IDS]
        self.output_schema = pa.schema([*_arrow_fields(self.projection), *CHANGE_FIELDS])

    def __repr__(self) -> str:
        first = self.from_snapshot.snapshot_id if self.from_snapshot else None
        last = self.to_snapshot.snapshot_id if self.to_snapshot else None
        return f"ChangeScan({self.table.identifier}, from={first}, to={last}, {len(self.snapshots)} snapshots)"

    def to_batches(self) -> Iterator[pa.RecordBatch]:
        """The changes, snapshot by snapshot (all at once with net_changes)."""
        if self.net_changes:
            yield from self.to_arrow().to_batches()
            return
        for part in self._per_snapshot():
            yield from (b for b in self._output(part).to_batches() if b.num_rows)

    def to_arrow(self) -> pa.Table:
        parts = list(self._per_snapshot())
        if self.net_changes and parts:
            parts = [self._net(pa.concat_tables(parts))]
        return pa.Table.from_batches([b for p in parts for b in self._output(p).to_batches()], schema=self.output_schema)

    def _per_snapshot(self) -> Iterator[pa.Table]:
        """Per snapshot that can change rows: its labelled rows in the read projection."""
        if not self.snapshots:
            return
        table = self.table
        differ = SnapshotDiffer(table.io, self.schema, self.read_projection, self.row_filter, self.case_sensitive)
        parent = self._plan(self.from_snapshot) if self.from_snapshot is not None else []
        ordinal = self.first_ordinal
        for snapshot in self.snapshots:
            tasks = self._plan(snapshot)
            if snapshot.operation != "replace":
                labelled = self._label(differ.diff(parent, tasks), ordinal, snapshot.snapshot_id)
                ordinal += 1
                if labelled.num_rows:
                    yield labelled
            parent = tasks

    def _plan(self, snapshot: Snapshot) -> list[FileScanTask]:
        t = self.table
        return plan_files(t.io, t.metadata, snapshot, self.row_filter, self.case_sensitive, self.schema)

    def _label(self, diff: SnapshotDiff, ordinal: int, snapshot_id: int) -> pa.Table:
        removed, added = diff.removed, diff.added
        if removed.num_rows and added.num_rows:
            keep_removed, keep_added = cancel_equal_rows(*group_ids([removed, added], self.value_columns))
            removed, added = removed.filter(keep_removed), added.filter(keep_added)
        labelled = _pair(removed, added, self.keys)
        n = labelled.num_rows
        return labelled.append_column(CHANGE_FIELDS[1], pa.array(np.full(n, ordinal, np.int32))).append_column(
            CHANGE_FIELDS[2], pa.array(np.full(n, snapshot_id, np.int64))
        )

    def _net(self, changes: pa.Table) -> pa.Table:
        """Every change of the range cancelled against the others, then paired again."""
        removed_mask = np.isin(changes.column(CHANGE_TYPE).to_numpy(zero_copy_only=False), _REMOVED)
        removed = changes.filter(removed_mask).drop_columns([CHANGE_TYPE])
        added = changes.filter(~removed_mask).drop_columns([CHANGE_TYPE])
        keep_removed, keep_added = cancel_equal_rows(*group_ids([removed, added], self.value_columns))
        paired = _pair(removed.filter(keep_removed), added.filter(keep_added), self.keys)
        order = [*(f.name for f in self.read_projection.fields), CHANGE_TYPE, CHANGE_ORDINAL, COMMIT_SNAPSHOT_ID]  # top-level
        return paired.select(order)

    def _output(self, labelled: pa.Table) -> pa.Table:
        return labelled.select(self.output_schema.names).cast(self.output_schema)


def _pair(removed: pa.Table, added: pa.Table, keys: Sequence[str]) -> pa.Table:
    """Removed and added rows labelled DELETE / INSERT, or UPDATE_BEFORE / UPDATE_AFTER (each
    before row followed by its after row) where their key pairs them; other columns kept."""
    before = after = np.empty(0, dtype=np.int64)
    if keys and removed.num_rows and added.num_rows:
        removed_ids, added_ids = group_ids([removed, added], keys)
        before, after = pair_by_key(removed_ids, added_ids, has_no_null(removed, keys), has_no_null(added, keys))
    deletes = np.setdiff1d(np.arange(removed.num_rows), before)
    inserts = np.setdiff1d(np.arange(added.num_rows), after)
    pairs = pa.concat_tables([removed.take(before), added.take(after)])
    interleaved = np.column_stack([np.arange(len(before)), np.arange(len(before)) + len(before)]).reshape(-1)
    parts = [
        _typed(removed.take(deletes), [DELETE] * len(deletes)),
        _typed(pairs.take(interleaved), [UPDATE_BEFORE, UPDATE_AFTER] * len(before)),
        _typed(added.take(inserts), [INSERT] * len(inserts)),
    ]
    return pa.concat_tables(parts)


def _typed(rows: pa.Table, types: list[str]) -> pa.Table:
    return rows.append_column(CHANGE_FIELDS[0], pa.array(types, pa.string()))


def _keys(schema: Schema, on: Sequence[str] | None, format_version: int, case_sensitive: bool) -> list[str]:
    """The columns that say two rows are one row before and after an update."""
    if on is not None:
        if isinstance(on, str) or not on:
            raise InvalidArgumentError(f"on is a non-empty list of column names, got {on!r}")
        return [f.name for f in project_columns(schema, list(on), case_sensitive).fields]
    if schema.identifier_field_ids:
        return [schema.find_column_name(i) for i in schema.identifier_field_ids]
    return [ROW_ID_NAME] if format_version >= 3 else []


def _arrow_fields(projection: Schema) -> list[pa.Field]:
    from mor.format.arrow_types import to_arrow_schema

    return [f.with_nullable(True) for f in to_arrow_schema(projection)]


def _from_snapshot(
    table: TableHandle, snapshot_id: int | None, timestamp: dt.datetime | int | None, last: Snapshot | None, start_as_inserts: bool = False
) -> Snapshot | None:
    """The snapshot the changes start after; None: the empty table before the first one.
    ExpiredHistoryError, naming the oldest start there is, when that start was expired: the
    feed would otherwise diff against a state it cannot read and report rows wrongly."""
    if snapshot_id is not None and timestamp is not None:
        raise InvalidArgumentError("give from_snapshot_id or from_timestamp, not both")
    chain = table.metadata.ancestors(last.snapshot_id) if last is not None else []
    oldest = chain[-1] if chain and chain[-1].parent_snapshot_id is not None else None  # None: no history expired
    if snapshot_id is not None:
        try:
            return choose_snapshot(table, snapshot_id, None)
        except NoSuchSnapshotError as e:
            if oldest is None:
                raise
            raise _expired(table, f"{table.identifier} has no snapshot {snapshot_id}", oldest) from e
    if timestamp is not None:
        ms = as_of_ms(timestamp)
        try:
            snapshot = table.metadata.snapshot_as_of(ms)
        except KeyError:  # the snapshot current then has expired
            snapshot = None
        else:
            if snapshot is not None or oldest is None:
                return snapshot  # None: no snapshot yet at that time, every change is after it
        if not chain:
            raise NoSuchSnapshotError(f"the snapshot of {table.identifier} current at {utc_text(ms)} has expired; the table has none now")
        raise _expired(table, f"the snapshot of {table.identifier} current at {utc_text(ms)} has expired", oldest or chain[-1])
    if oldest is not None and not start_as_inserts:
        raise _expired(table, f"the changes of {table.identifier} from its first snapshot are gone", oldest)
    return None


def _expired(table: TableHandle, what: str, oldest: Snapshot) -> ExpiredHistoryError:
    when = utc_text(oldest.timestamp_ms)
    return ExpiredHistoryError(
        f"{what}: its history before snapshot {oldest.snapshot_id} (committed {when}) was expired. The change feed can start "
        f"from there: from_snapshot_id={oldest.snapshot_id}, or a from_timestamp at or after {when}",
        oldest.snapshot_id,
        oldest.timestamp_ms,
    )


def _range(table: TableHandle, first: Snapshot | None, last: Snapshot | None) -> list[Snapshot]:
    """The snapshots after `first` up to `last`, oldest first; `first` must be an ancestor."""
    if last is None:
        if first is not None:
            raise NoSuchSnapshotError(f"{table.identifier} has no snapshot to read changes up to")
        return []
    chain = table.metadata.ancestors(last.snapshot_id)
    if first is None:
        return chain[::-1]
    ids = [s.snapshot_id for s in chain]
    if first.snapshot_id not in ids:
        raise InvalidArgumentError(
            f"snapshot {first.snapshot_id} is not an ancestor of snapshot {last.snapshot_id} in {table.identifier}: "
            "changes are read along one line of history"
        )
    return chain[: ids.index(first.snapshot_id)][::-1]
