"""Metadata updates: what a commit changes (the REST spec's `TableUpdate`s, with its names and
JSON form), and `TableCommit`, one commit as data (requirements + updates).

Every writer of mor states its commit as a `TableCommit`; the SQL catalog applies it locally
(mor/catalog/sql_operations.py) with `apply_updates` (mor/format/apply.py), a REST catalog sends it,
and mor's REST server applies what any client sends with that same function.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema

from mor.errors import InvalidArgumentError, InvalidMetadataError, UnsupportedFeatureError
from mor.format.commit_validation import check_snapshot_fields
from mor.format.metadata import Snapshot
from mor.format.requirements import Requirement, requirement_from_dict

if TYPE_CHECKING:  # pyiceberg.table is imported only when a sort order is used: reads need none
    from pyiceberg.table.sorting import SortOrder

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
        out: dict[str, Any] = {"action": self.ACTION, "schema": _model(self.schema)}
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
    except InvalidArgumentError:
        raise
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
        from pyiceberg.table.sorting import SortOrder

        return AddSortOrder(SortOrder.model_validate(d["sort-order"]))
    if action == SetDefaultSortOrder.ACTION:
        return SetDefaultSortOrder(_int(d["sort-order-id"]))
    if action == AddSnapshot.ACTION:
        raw = d["snapshot"]
        if not isinstance(raw, dict):
            raise ValueError("snapshot is an object")
        if not isinstance(raw.get("summary"), dict) or "operation" not in raw["summary"]:
            raise InvalidMetadataError(f"snapshot {raw.get('snapshot-id')!r} has no summary with an operation")
        snapshot = Snapshot.from_dict(raw)
        check_snapshot_fields(snapshot)  # InvalidMetadataError naming a field of the wrong type
        return AddSnapshot(snapshot)
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
