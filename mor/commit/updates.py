"""Metadata updates: what a commit changes (the REST spec's `TableUpdate`s, with its names), and
`apply_updates`, the one pure function that turns a table's metadata and a list of updates into
the next metadata.

Every writer of mor states its commit as a `TableCommit` (requirements + updates); the SQL
catalog applies it locally (mor/commit/table_ops.py), a REST catalog sends it, and mor's REST
server applies what any client sends with this same function. Metadata the updates do not
touch (refs, statistics, sort orders, properties and unknown keys another engine wrote) is
carried over as it is.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table.sorting import SortOrder

from mor.commit.requirements import CommitFailedError, Requirement, requirement_from_dict
from mor.errors import InvalidArgumentError, UnsupportedFeatureError
from mor.format.metadata import Snapshot, TableMetadata, now_ms, same_schema, upgraded
from mor.format.spec import MAIN_BRANCH, STATISTICS_KEYS

LAST_ADDED = -1  # set-current-schema / set-default-spec / set-default-sort-order: the one this commit added


def _model(value: Any) -> dict[str, Any]:
    return json.loads(value.model_dump_json())


@dataclass(frozen=True)
class Update:
    ACTION: ClassVar[str] = ""

    def to_dict(self) -> dict[str, Any]:
        raise NotImplementedError


@dataclass(frozen=True)
class AssignUuid(Update):
    ACTION = "assign-uuid"
    uuid: str

    def to_dict(self) -> dict[str, Any]:
        return {"action": self.ACTION, "uuid": self.uuid}


@dataclass(frozen=True)
class UpgradeFormatVersion(Update):
    ACTION = "upgrade-format-version"
    format_version: int

    def to_dict(self) -> dict[str, Any]:
        return {"action": self.ACTION, "format-version": self.format_version}


@dataclass(frozen=True)
class AddSchema(Update):
    ACTION = "add-schema"
    schema: Schema
    last_column_id: int | None = None  # deprecated by the spec; the ids handed out, when higher

    def to_dict(self) -> dict[str, Any]:
        out = {"action": self.ACTION, "schema": _model(self.schema)}
        if self.last_column_id is not None:
            out["last-column-id"] = self.last_column_id
        return out


@dataclass(frozen=True)
class SetCurrentSchema(Update):
    ACTION = "set-current-schema"
    schema_id: int = LAST_ADDED

    def to_dict(self) -> dict[str, Any]:
        return {"action": self.ACTION, "schema-id": self.schema_id}


@dataclass(frozen=True)
class AddSpec(Update):
    ACTION = "add-spec"
    spec: PartitionSpec

    def to_dict(self) -> dict[str, Any]:
        return {"action": self.ACTION, "spec": _model(self.spec)}


@dataclass(frozen=True)
class SetDefaultSpec(Update):
    ACTION = "set-default-spec"
    spec_id: int = LAST_ADDED

    def to_dict(self) -> dict[str, Any]:
        return {"action": self.ACTION, "spec-id": self.spec_id}


@dataclass(frozen=True)
class AddSortOrder(Update):
    ACTION = "add-sort-order"
    sort_order: SortOrder

    def to_dict(self) -> dict[str, Any]:
        return {"action": self.ACTION, "sort-order": _model(self.sort_order)}


@dataclass(frozen=True)
class SetDefaultSortOrder(Update):
    ACTION = "set-default-sort-order"
    sort_order_id: int = LAST_ADDED

    def to_dict(self) -> dict[str, Any]:
        return {"action": self.ACTION, "sort-order-id": self.sort_order_id}


@dataclass(frozen=True)
class AddSnapshot(Update):
    ACTION = "add-snapshot"
    snapshot: Snapshot

    def to_dict(self) -> dict[str, Any]:
        return {"action": self.ACTION, "snapshot": self.snapshot.to_dict()}


@dataclass(frozen=True)
class SetSnapshotRef(Update):
    """`ref` is the ref as stored (`snapshot-id`, `type`, retention fields): the ref becomes it."""

    ACTION = "set-snapshot-ref"
    ref_name: str
    ref: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"action": self.ACTION, "ref-name": self.ref_name, **self.ref}


@dataclass(frozen=True)
class RemoveSnapshots(Update):
    ACTION = "remove-snapshots"
    snapshot_ids: tuple[int, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"action": self.ACTION, "snapshot-ids": list(self.snapshot_ids)}


@dataclass(frozen=True)
class RemoveSnapshotRef(Update):
    ACTION = "remove-snapshot-ref"
    ref_name: str

    def to_dict(self) -> dict[str, Any]:
        return {"action": self.ACTION, "ref-name": self.ref_name}


@dataclass(frozen=True)
class SetLocation(Update):
    ACTION = "set-location"
    location: str

    def to_dict(self) -> dict[str, Any]:
        return {"action": self.ACTION, "location": self.location}


@dataclass(frozen=True)
class SetProperties(Update):
    ACTION = "set-properties"
    updates: dict[str, str]

    def to_dict(self) -> dict[str, Any]:
        return {"action": self.ACTION, "updates": dict(self.updates)}


@dataclass(frozen=True)
class RemoveProperties(Update):
    ACTION = "remove-properties"
    removals: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"action": self.ACTION, "removals": list(self.removals)}


@dataclass(frozen=True)
class SetStatistics(Update):
    """A statistics file of a snapshot (`statistics`) or a partition statistics file
    (`partition-statistics`), replacing the snapshot's previous one."""

    ACTION = "set-statistics"
    key: str  # one of STATISTICS_KEYS
    statistics: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        if self.key == "statistics":
            return {"action": self.ACTION, "snapshot-id": self.statistics.get("snapshot-id"), "statistics": self.statistics}
        return {"action": "set-partition-statistics", "partition-statistics": self.statistics}


@dataclass(frozen=True)
class RemoveStatistics(Update):
    ACTION = "remove-statistics"
    key: str
    snapshot_id: int

    def to_dict(self) -> dict[str, Any]:
        action = self.ACTION if self.key == "statistics" else "remove-partition-statistics"
        return {"action": action, "snapshot-id": self.snapshot_id}


@dataclass(frozen=True)
class RemoveSpecs(Update):
    ACTION = "remove-partition-specs"
    spec_ids: tuple[int, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"action": self.ACTION, "spec-ids": list(self.spec_ids)}


@dataclass(frozen=True)
class RemoveSchemas(Update):
    ACTION = "remove-schemas"
    schema_ids: tuple[int, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"action": self.ACTION, "schema-ids": list(self.schema_ids)}


@dataclass(frozen=True)
class TableCommit:
    """One commit of one table, as data."""

    requirements: list[Requirement] = field(default_factory=list)
    updates: list[Update] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"requirements": [r.to_dict() for r in self.requirements], "updates": [u.to_dict() for u in self.updates]}

    @classmethod
    def from_dict(cls, d: Any) -> TableCommit:
        if not isinstance(d, dict):
            raise InvalidArgumentError(f"a commit is an object with requirements and updates, got {type(d).__name__}")
        requirements, updates = d.get("requirements") or [], d.get("updates") or []
        if not isinstance(requirements, list) or not isinstance(updates, list):
            raise InvalidArgumentError("a commit's requirements and updates are lists")
        return cls([requirement_from_dict(r) for r in requirements], [update_from_dict(u) for u in updates])


# -- parsing ----------------------------------------------------------------------------------


def update_from_dict(d: Any) -> Update:
    """An update from its REST JSON; InvalidArgumentError for one that is malformed,
    UnsupportedFeatureError for one mor does not apply (encryption keys, views)."""
    if not isinstance(d, dict) or not isinstance(d.get("action"), str):
        raise InvalidArgumentError(f"an update is an object with an 'action', got {d!r}")
    action = d["action"]
    try:
        return _parse(action, d)
    except KeyError as e:
        raise InvalidArgumentError(f"update {action} lacks {e.args[0]!r}") from None
    except (ValueError, TypeError) as e:  # pydantic's ValidationError is a ValueError
        detail = " ".join(str(e).split())[:300]
        raise InvalidArgumentError(f"update {action} is malformed: {detail}") from None


def _parse(action: str, d: dict[str, Any]) -> Update:
    if action == AssignUuid.ACTION:
        return AssignUuid(_str(d["uuid"]))
    if action == UpgradeFormatVersion.ACTION:
        return UpgradeFormatVersion(_int(d["format-version"]))
    if action == AddSchema.ACTION:
        last = d.get("last-column-id")
        return AddSchema(Schema.model_validate(d["schema"]), None if last is None else _int(last))
    if action == SetCurrentSchema.ACTION:
        return SetCurrentSchema(_int(d["schema-id"]))
    if action == AddSpec.ACTION:
        return AddSpec(PartitionSpec.model_validate(d["spec"]))
    if action == SetDefaultSpec.ACTION:
        return SetDefaultSpec(_int(d["spec-id"]))
    if action == AddSortOrder.ACTION:
        return AddSortOrder(SortOrder.model_validate(d["sort-order"]))
    if action == SetDefaultSortOrder.ACTION:
        return SetDefaultSortOrder(_int(d["sort-order-id"]))
    if action == AddSnapshot.ACTION:
        if not isinstance(d["snapshot"], dict):
            raise ValueError("snapshot is an object")
        return AddSnapshot(Snapshot.from_dict(d["snapshot"]))
    if action == SetSnapshotRef.ACTION:
        ref = {k: v for k, v in d.items() if k not in ("action", "ref-name")}
        _int(ref["snapshot-id"])
        if ref.get("type") not in ("branch", "tag"):
            raise ValueError(f"ref type is 'branch' or 'tag', got {ref.get('type')!r}")
        return SetSnapshotRef(_str(d["ref-name"]), ref)
    if action == RemoveSnapshots.ACTION:
        return RemoveSnapshots(tuple(_int(i) for i in _list(d["snapshot-ids"])))
    if action == RemoveSnapshotRef.ACTION:
        return RemoveSnapshotRef(_str(d["ref-name"]))
    if action == SetLocation.ACTION:
        return SetLocation(_str(d["location"]))
    if action == SetProperties.ACTION:
        updates = d["updates"]
        if not isinstance(updates, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in updates.items()):
            raise ValueError("updates is an object of strings")
        return SetProperties(dict(updates))
    if action == RemoveProperties.ACTION:
        return RemoveProperties(tuple(_str(k) for k in _list(d["removals"])))
    if action == SetStatistics.ACTION:
        return SetStatistics("statistics", _object(d["statistics"]))
    if action == "set-partition-statistics":
        return SetStatistics("partition-statistics", _object(d["partition-statistics"]))
    if action == RemoveStatistics.ACTION:
        return RemoveStatistics("statistics", _int(d["snapshot-id"]))
    if action == "remove-partition-statistics":
        return RemoveStatistics("partition-statistics", _int(d["snapshot-id"]))
    if action == RemoveSpecs.ACTION:
        return RemoveSpecs(tuple(_int(i) for i in _list(d["spec-ids"])))
    if action == RemoveSchemas.ACTION:
        return RemoveSchemas(tuple(_int(i) for i in _list(d["schema-ids"])))
    if action in ("add-encryption-key", "remove-encryption-key", "set-current-view-version", "add-view-version"):
        raise UnsupportedFeatureError(f"update {action} is not supported")
    raise InvalidArgumentError(f"unknown update action {action!r}")


def _int(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError(f"expected a whole number, got {value!r}")
    return value


def _str(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError(f"expected a string, got {value!r}")
    return value


def _list(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise ValueError(f"expected a list, got {value!r}")
    return value


def _object(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValueError(f"expected an object, got {value!r}")
    return value


# -- applying ---------------------------------------------------------------------------------


def apply_updates(base: TableMetadata, updates: list[Update]) -> TableMetadata:
    """The metadata after `updates`, in order, as Iceberg's metadata builder makes it.
    InvalidArgumentError for an update that cannot apply to any state (a ref to a snapshot the
    table lacks, a downgrade); CommitFailedError for one that no longer fits the table as it is
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
                raise InvalidArgumentError(f"cannot assign table-uuid {u.uuid}: the table has {m.table_uuid}")
        elif isinstance(u, UpgradeFormatVersion):
            try:
                self.m = upgraded(m, u.format_version)
            except InvalidArgumentError as e:
                raise InvalidArgumentError(f"upgrade-format-version: {e}") from None
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
            if order_id not in {o.order_id for o in m.sort_orders}:
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
                raise InvalidArgumentError(f"cannot remove the default partition spec {m.default_spec_id}")
            self.m = replace(m, partition_specs=tuple(s for s in m.partition_specs if s.spec_id not in u.spec_ids))
        elif isinstance(u, RemoveSchemas):
            if m.current_schema_id in u.schema_ids:
                raise InvalidArgumentError(f"cannot remove the current schema {m.current_schema_id}")
            self.m = replace(m, schemas=tuple(s for s in m.schemas if s.schema_id not in u.schema_ids))
        else:
            raise UnsupportedFeatureError(f"update {type(u).__name__} is not supported")

    def _resolve(self, kind: str, given: int) -> int:
        if given != LAST_ADDED:
            return given
        if kind not in self.last_added:
            raise InvalidArgumentError(f"{kind} id -1 means the one this commit added, and it added none")
        return self.last_added[kind]

    @staticmethod
    def _missing(kind: str, given: int) -> None:
        raise InvalidArgumentError(f"the table has no {kind} with id {given}")

    def _add_schema(self, u: AddSchema) -> None:
        """An identical schema already there is reused with its id, as Iceberg does; otherwise
        the schema gets the next id. last-column-id rises to cover its field ids."""
        m = self.m
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
        m = self.m
        existing = next((o for o in m.sort_orders if o.fields == order.fields), None)
        if existing is None:
            order_id = 0 if not order.fields else max([o.order_id for o in m.sort_orders] + [0]) + 1
            existing = SortOrder(*order.fields, order_id=order_id)
            self.m = replace(m, sort_orders=m.sort_orders + (existing,))
        self.last_added["sort-order"] = existing.order_id

    def _add_snapshot(self, snapshot: Snapshot) -> None:
        m = self.m
        if any(s.snapshot_id == snapshot.snapshot_id for s in m.snapshots):
            raise InvalidArgumentError(f"snapshot {snapshot.snapshot_id} already exists")
        if snapshot.parent_snapshot_id is not None and snapshot.sequence_number <= m.last_sequence_number:
            raise CommitFailedError(
                f"snapshot {snapshot.snapshot_id} has sequence number {snapshot.sequence_number}, not above the table's "
                f"last-sequence-number {m.last_sequence_number}: the table moved on"
            )
        next_row_id = m.next_row_id
        if m.format_version >= 3:
            if snapshot.first_row_id is None:
                raise InvalidArgumentError(f"snapshot {snapshot.snapshot_id} of a v3 table lacks first-row-id")
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
            raise InvalidArgumentError(f"ref {u.ref_name!r} cannot point at snapshot {snapshot_id}: the table has no such snapshot")
        if u.ref_name == MAIN_BRANCH and u.ref.get("type") != "branch":
            raise InvalidArgumentError("main is a branch")
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
