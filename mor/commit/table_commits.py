"""The commit each kind of writer makes, as data: what it changes (updates) and what it was
planned on (requirements), in the REST spec's terms, so a REST catalog server applies it safely
on whatever the table is by then.

Every commit asserts the table's uuid (a table dropped and created again is another table).
The rest follows what the change depends on, as Iceberg's clients require it:
- a snapshot: the branch still points at the snapshot it was built on (and, when it adds
  columns or a partition spec, the schema and spec state it assigned ids from);
- a schema change: the current schema and last assigned column id;
- a partition spec change: the default spec and last assigned partition field id;
- a sort order change: the default sort order;
- expiry: every ref where it was, as it chose what to keep from them.
"""

from __future__ import annotations

from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table.sorting import SortOrder

from mor.commit.idempotency import Idempotency
from mor.format.metadata import Snapshot, TableMetadata, moved_ref, same_schema
from mor.format.requirements import (
    AssertCurrentSchemaId,
    AssertDefaultSortOrderId,
    AssertDefaultSpecId,
    AssertLastAssignedFieldId,
    AssertLastAssignedPartitionId,
    AssertRefSnapshotId,
    AssertTableUuid,
    Requirement,
)
from mor.format.spec import MAIN_BRANCH
from mor.format.updates import (
    AddSchema,
    AddSnapshot,
    AddSortOrder,
    AddSpec,
    RemoveProperties,
    RemoveSnapshotRef,
    RemoveSnapshots,
    SetCurrentSchema,
    SetDefaultSortOrder,
    SetDefaultSpec,
    SetProperties,
    SetSnapshotRef,
    TableCommit,
    Update,
    UpgradeFormatVersion,
)


def snapshot_commit(
    base: TableMetadata,
    snapshot: Snapshot,
    *,
    spec: PartitionSpec | None = None,
    schema: Schema | None = None,
    idempotency: Idempotency | None = None,
    assert_schema: bool = False,
) -> TableCommit:
    """Add `snapshot` (built on `base`'s main branch) and move main to it; first add the
    partition spec its files use and make the schema it wrote with current, when given.
    `idempotency`: the app's version is also recorded as a table property, which no expiry
    removes. `assert_schema`: the rows added were checked against `base`'s current schema."""
    requirements: list[Requirement] = [
        AssertTableUuid(base.table_uuid),
        AssertRefSnapshotId(MAIN_BRANCH, base.current_snapshot_id),
    ]
    updates: list[Update] = []
    if spec is not None and spec.spec_id not in base.specs():
        requirements += [AssertLastAssignedPartitionId(base.last_partition_id), AssertDefaultSpecId(base.default_spec_id)]
        updates.append(AddSpec(spec))
    if schema is not None or assert_schema:
        requirements.append(AssertCurrentSchemaId(base.current_schema_id))
    if schema is not None:
        requirements.append(AssertLastAssignedFieldId(base.last_column_id))
        updates += [AddSchema(numbered(base, schema), max(base.last_column_id, schema.highest_field_id)), SetCurrentSchema()]
    updates += [
        AddSnapshot(snapshot),
        SetSnapshotRef(MAIN_BRANCH, moved_ref(base.refs.get(MAIN_BRANCH), snapshot.snapshot_id)),
    ]
    if idempotency is not None:
        updates.append(SetProperties(idempotency.properties()))
    return TableCommit(requirements, updates)


def numbered(base: TableMetadata, schema: Schema) -> Schema:
    """`schema` with the id it gets in `base`: an identical schema's, else the next free one.
    The server assigns ids, but some trust the one sent (pyiceberg's apply does)."""
    existing = next((s for s in base.schemas if same_schema(s, schema)), None)
    schema_id = existing.schema_id if existing is not None else max(s.schema_id for s in base.schemas) + 1
    return Schema(*schema.fields, schema_id=schema_id, identifier_field_ids=list(schema.identifier_field_ids))


def schema_commit(base: TableMetadata, schema: Schema, last_column_id: int | None = None, snapshot_id: int | None = None) -> TableCommit:
    """Make `schema` current (`last_column_id`: the highest field id handed out for it).
    `snapshot_id`: the change holds only for that snapshot's rows (NOT NULL checked on them),
    so the main branch must still be there."""
    requirements: list[Requirement] = [
        AssertTableUuid(base.table_uuid), AssertCurrentSchemaId(base.current_schema_id), AssertLastAssignedFieldId(base.last_column_id),
    ]  # fmt: skip
    if snapshot_id is not None:
        requirements.append(AssertRefSnapshotId(MAIN_BRANCH, snapshot_id))
    return TableCommit(
        requirements,
        [AddSchema(numbered(base, schema), max(base.last_column_id, schema.highest_field_id, last_column_id or 0)), SetCurrentSchema()],
    )


def spec_commit(base: TableMetadata, spec: PartitionSpec) -> TableCommit:
    """Make `spec` the default partition spec."""
    return TableCommit(
        [
            AssertTableUuid(base.table_uuid),
            AssertDefaultSpecId(base.default_spec_id),
            AssertLastAssignedPartitionId(base.last_partition_id),
        ],
        [AddSpec(spec), SetDefaultSpec()],
    )


def sort_order_commit(base: TableMetadata, order: SortOrder) -> TableCommit:
    """Make `order` the default sort order: an existing order with the same fields keeps its
    id, another is added with the next id (an unsorted order is order 0). Nothing to do when
    it is the default already."""
    if base.sort_order.fields == order.fields:
        return TableCommit([AssertTableUuid(base.table_uuid)], [])
    return TableCommit(
        [AssertTableUuid(base.table_uuid), AssertDefaultSortOrderId(base.default_sort_order_id)],
        [AddSortOrder(order), SetDefaultSortOrder()],
    )


def properties_commit(
    base: TableMetadata, updates: dict[str, str], removals: tuple[str, ...] = (), format_version: int | None = None
) -> TableCommit:
    """Set and remove properties, and upgrade the format version when it is higher."""
    changes: list[Update] = []
    if format_version is not None and format_version != base.format_version:
        changes.append(UpgradeFormatVersion(format_version))
    if updates:
        changes.append(SetProperties(dict(updates)))
    if removals:
        changes.append(RemoveProperties(tuple(removals)))
    return TableCommit([AssertTableUuid(base.table_uuid)], changes)


def constraint_commit(base: TableMetadata, updates: dict[str, str]) -> TableCommit:
    """Set properties that hold only while the table's rows are the ones checked: the main
    branch must still be at `base`'s snapshot (a CHECK constraint checked on its rows)."""
    requirements: list[Requirement] = [AssertTableUuid(base.table_uuid), AssertRefSnapshotId(MAIN_BRANCH, base.current_snapshot_id)]
    return TableCommit(requirements, [SetProperties(dict(updates))])


def expire_commit(base: TableMetadata, expired: set[int], removed_refs: set[str]) -> TableCommit:
    """Remove the `expired` snapshots and the `removed_refs` (refs past their age)."""
    requirements: list[Requirement] = [AssertTableUuid(base.table_uuid)]
    requirements += [AssertRefSnapshotId(name, ref.get("snapshot-id")) for name, ref in sorted(base.refs.items())]
    updates: list[Update] = [RemoveSnapshotRef(name) for name in sorted(removed_refs)]
    if expired:
        updates.append(RemoveSnapshots(tuple(sorted(expired))))
    return TableCommit(requirements, updates)
