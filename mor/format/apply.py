"""`apply_updates`: the one pure function that turns a table's metadata and a list of updates
(mor/format/updates.py) into the next metadata, as Iceberg's metadata builder does.

Metadata the updates do not touch (refs, statistics, sort orders, properties and unknown keys
another engine wrote) is carried over as it is.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema

from mor.errors import InvalidArgumentError, InvalidMetadataError, UnsupportedFeatureError
from mor.format.commit_validation import ILLEGAL_ARGUMENT
from mor.format.metadata import Snapshot, TableMetadata, check_schema_fits_version, now_ms, same_schema, sort_order_json, upgraded
from mor.format.requirements import CommitFailedError
from mor.format.spec import MAIN_BRANCH, STATISTICS_KEYS
from mor.format.updates import (
    LAST_ADDED,
    AddSchema,
    AddSnapshot,
    AddSortOrder,
    AddSpec,
    AssignUuid,
    RemoveProperties,
    RemoveSchemas,
    RemoveSnapshotRef,
    RemoveSnapshots,
    RemoveSpecs,
    RemoveStatistics,
    SetCurrentSchema,
    SetDefaultSortOrder,
    SetDefaultSpec,
    SetLocation,
    SetProperties,
    SetSnapshotRef,
    SetStatistics,
    Update,
    UpgradeFormatVersion,
)

if TYPE_CHECKING:
    from pyiceberg.table.sorting import SortOrder


def apply_updates(base: TableMetadata, updates: list[Update]) -> TableMetadata:
    """The metadata after `updates`, in order, as Iceberg's metadata builder makes it.
    InvalidMetadataError (an InvalidArgumentError carrying the exception Iceberg Java's builder
    throws) for an update that cannot apply to any state (a ref to a snapshot the table lacks,
    a downgrade); CommitFailedError for one that no longer fits the table as it is
    now (a snapshot whose sequence number or row ids are behind it): re-plan and try again."""
    state = _Builder(base)
    for update in updates:
        state.apply(update)
    return state.result()


class _Builder:
    def __init__(self, base: TableMetadata):
        self.m = base
        self.base = base
        self.last_added: dict[str, int] = {}
        self.added_snapshots: dict[int, Snapshot] = {}

    def result(self) -> TableMetadata:
        if self.m is self.base:
            return self.base
        stamps = [s.timestamp_ms for s in self.added_snapshots.values()]
        return replace(self.m, last_updated_ms=max(now_ms(), self.base.last_updated_ms, *stamps))

    def apply(self, u: Update) -> None:
        m = self.m
        if isinstance(u, AssignUuid):
            if u.uuid != m.table_uuid:
                raise InvalidMetadataError(f"cannot assign table-uuid {u.uuid}: the table has {m.table_uuid}", ILLEGAL_ARGUMENT)
        elif isinstance(u, UpgradeFormatVersion):
            try:
                self.m = upgraded(m, u.format_version)
            except InvalidArgumentError as e:
                raise InvalidMetadataError(f"upgrade-format-version: {e}", ILLEGAL_ARGUMENT) from None
        elif isinstance(u, AddSchema):
            self._add_schema(u)
        elif isinstance(u, SetCurrentSchema):
            schema_id = self._resolve("schema", u.schema_id)
            if schema_id not in {s.schema_id for s in m.schemas}:
                self._missing("schema", schema_id)
            self.m = replace(m, current_schema_id=schema_id)
        elif isinstance(u, AddSpec):
            self._add_spec(u.spec)
        elif isinstance(u, SetDefaultSpec):
            spec_id = self._resolve("spec", u.spec_id)
            if spec_id not in m.specs():
                self._missing("partition spec", spec_id)
            self.m = replace(m, default_spec_id=spec_id)
        elif isinstance(u, AddSortOrder):
            self._add_sort_order(u.sort_order)
        elif isinstance(u, SetDefaultSortOrder):
            order_id = self._resolve("sort-order", u.sort_order_id)
            if order_id not in m.sort_order_ids():
                self._missing("sort order", order_id)
            self.m = replace(m, default_sort_order_id=order_id)
        elif isinstance(u, AddSnapshot):
            self._add_snapshot(u.snapshot)
        elif isinstance(u, SetSnapshotRef):
            self._set_ref(u)
        elif isinstance(u, RemoveSnapshots):
            self._remove_snapshots(set(u.snapshot_ids))
        elif isinstance(u, RemoveSnapshotRef):
            refs = {k: v for k, v in m.refs.items() if k != u.ref_name}
            current = None if u.ref_name == MAIN_BRANCH else m.current_snapshot_id
            self.m = replace(m, refs=refs, current_snapshot_id=current)
        elif isinstance(u, SetLocation):
            self.m = replace(m, location=u.location.rstrip("/"))
        elif isinstance(u, SetProperties):
            self.m = replace(m, properties={**m.properties, **u.updates})
        elif isinstance(u, RemoveProperties):
            self.m = replace(m, properties={k: v for k, v in m.properties.items() if k not in u.removals})
        elif isinstance(u, SetStatistics):
            snapshot_id = u.statistics.get("snapshot-id")
            kept = [s for s in m.extra.get(u.key) or () if not (isinstance(s, dict) and s.get("snapshot-id") == snapshot_id)]
            self.m = replace(m, extra={**m.extra, u.key: [*kept, u.statistics]})
        elif isinstance(u, RemoveStatistics):
            kept = [s for s in m.extra.get(u.key) or () if not (isinstance(s, dict) and s.get("snapshot-id") == u.snapshot_id)]
            self.m = replace(m, extra={**m.extra, u.key: kept})
        elif isinstance(u, RemoveSpecs):
            if m.default_spec_id in u.spec_ids:
                raise InvalidMetadataError(f"cannot remove the default partition spec {m.default_spec_id}", ILLEGAL_ARGUMENT)
            self.m = replace(m, partition_specs=tuple(s for s in m.partition_specs if s.spec_id not in u.spec_ids))
        elif isinstance(u, RemoveSchemas):
            if m.current_schema_id in u.schema_ids:
                raise InvalidMetadataError(f"cannot remove the current schema {m.current_schema_id}", ILLEGAL_ARGUMENT)
            self.m = replace(m, schemas=tuple(s for s in m.schemas if s.schema_id not in u.schema_ids))
        else:
            raise UnsupportedFeatureError(f"update {type(u).__name__} is not supported")

    def _resolve(self, kind: str, given: int) -> int:
        if given != LAST_ADDED:
            return given
        if kind not in self.last_added:
            raise InvalidMetadataError(f"{kind} id -1 means the one this commit added, and it added none")
        return self.last_added[kind]

    @staticmethod
    def _missing(kind: str, given: int) -> None:
        raise InvalidMetadataError(f"the table has no {kind} with id {given}", ILLEGAL_ARGUMENT)

    def _add_schema(self, u: AddSchema) -> None:
        """An identical schema already there is reused with its id, as Iceberg does; otherwise
        the schema gets the next id. last-column-id rises to cover its field ids."""
        m = self.m
        check_schema_fits_version(u.schema, m.format_version)
        existing = next((s for s in m.schemas if same_schema(s, u.schema)), None)
        schemas = m.schemas
        if existing is None:
            schema_id = max(s.schema_id for s in m.schemas) + 1
            existing = Schema(*u.schema.fields, schema_id=schema_id, identifier_field_ids=list(u.schema.identifier_field_ids))
            schemas = schemas + (existing,)
        last_column_id = max(m.last_column_id, u.schema.highest_field_id, u.last_column_id or 0)
        self.m = replace(m, schemas=schemas, last_column_id=last_column_id)
        self.last_added["schema"] = existing.schema_id

    def _add_spec(self, spec: PartitionSpec) -> None:
        """A spec with the same fields as one the table has is that one; otherwise it keeps its
        id when that is free (files may already be written with it), else gets the next."""
        m = self.m
        existing = next((s for s in m.partition_specs if s.fields == spec.fields), None)
        if existing is None:
            ids = {s.spec_id for s in m.partition_specs}
            spec_id = spec.spec_id if spec.spec_id not in ids and spec.spec_id >= 0 else max(ids) + 1
            existing = PartitionSpec(*spec.fields, spec_id=spec_id)
            last_partition_id = max([m.last_partition_id, *(f.field_id for f in spec.fields)])
            self.m = replace(m, partition_specs=m.partition_specs + (existing,), last_partition_id=last_partition_id)
        self.last_added["spec"] = existing.spec_id

    def _add_sort_order(self, order: SortOrder) -> None:
        from pyiceberg.table.sorting import SortOrder  # only here: reads need no sort order

        m = self.m
        existing = next((o for o in m.sort_orders if o.fields == order.fields), None)
        if existing is None:
            order_id = 0 if not order.fields else max([o.order_id for o in m.sort_orders] + [0]) + 1
            existing = SortOrder(*order.fields, order_id=order_id)
            self.m = replace(m, sort_orders_json=m.sort_orders_json + (sort_order_json(existing),))
        self.last_added["sort-order"] = existing.order_id

    def _add_snapshot(self, snapshot: Snapshot) -> None:
        m = self.m
        if any(s.snapshot_id == snapshot.snapshot_id for s in m.snapshots):
            raise InvalidMetadataError(f"snapshot {snapshot.snapshot_id} already exists")
        v1 = m.format_version == 1 and snapshot.sequence_number == 0  # v1 has no sequence numbers
        if snapshot.parent_snapshot_id is not None and snapshot.sequence_number <= m.last_sequence_number and not v1:
            raise CommitFailedError(
                f"snapshot {snapshot.snapshot_id} has sequence number {snapshot.sequence_number}, not above the table's "
                f"last-sequence-number {m.last_sequence_number}: the table moved on"
            )
        next_row_id = m.next_row_id
        if m.format_version >= 3:
            if snapshot.first_row_id is None:
                raise InvalidMetadataError(f"snapshot {snapshot.snapshot_id} of a v3 table lacks first-row-id")
            if snapshot.first_row_id < (m.next_row_id or 0):
                raise CommitFailedError(
                    f"snapshot {snapshot.snapshot_id} hands out row ids from {snapshot.first_row_id}, behind the "
                    f"table's next-row-id {m.next_row_id}: the table moved on"
                )
            next_row_id = snapshot.first_row_id + (snapshot.added_rows or 0)
        self.m = replace(
            m,
            snapshots=m.snapshots + (snapshot,),
            last_sequence_number=max(m.last_sequence_number, snapshot.sequence_number),
            next_row_id=next_row_id,
        )
        self.added_snapshots[snapshot.snapshot_id] = snapshot

    def _set_ref(self, u: SetSnapshotRef) -> None:
        m = self.m
        snapshot_id = u.ref["snapshot-id"]
        if not any(s.snapshot_id == snapshot_id for s in m.snapshots):
            raise InvalidMetadataError(f"ref {u.ref_name!r} cannot point at snapshot {snapshot_id}: the table has no such snapshot")
        if u.ref_name == MAIN_BRANCH and u.ref.get("type") != "branch":
            raise InvalidMetadataError("main is a branch, it cannot be set to a tag")
        if m.refs.get(u.ref_name) == u.ref:
            return
        refs = {**m.refs, u.ref_name: dict(u.ref)}
        if u.ref_name != MAIN_BRANCH:
            self.m = replace(m, refs=refs)
            return
        added = self.added_snapshots.get(snapshot_id)
        stamp = added.timestamp_ms if added is not None else max(now_ms(), m.last_updated_ms)
        log = m.snapshot_log + ((stamp, snapshot_id),)
        self.m = replace(m, refs=refs, current_snapshot_id=snapshot_id, snapshot_log=log)

    def _remove_snapshots(self, removed: set[int]) -> None:
        """Refs to removed snapshots go too, and their statistics; the snapshot log loses every
        entry up to the last removed one (it must not claim a state that cannot be read)."""
        m = self.m
        kept = tuple(s for s in m.snapshots if s.snapshot_id not in removed)
        kept_ids = {s.snapshot_id for s in kept}
        log: list[tuple[int, int]] = []
        for entry in m.snapshot_log:
            if entry[1] not in kept_ids:
                log.clear()
            else:
                log.append(entry)
        refs = {k: v for k, v in m.refs.items() if v.get("snapshot-id") not in removed}
        extra = dict(m.extra)
        for key in STATISTICS_KEYS:
            if isinstance(extra.get(key), list):
                extra[key] = [s for s in extra[key] if not (isinstance(s, dict) and s.get("snapshot-id") in removed)]
        current = m.current_snapshot_id if MAIN_BRANCH in refs else None
        self.m = replace(m, snapshots=kept, snapshot_log=tuple(log), refs=refs, extra=extra, current_snapshot_id=current)
