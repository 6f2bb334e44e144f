"""Commit requirements: what must still hold of a table for a commit to apply (the REST spec's
`TableRequirement`s, with its names).

A writer states what its change was planned on (the table's uuid, the snapshot a branch points
at, the schema and spec it wrote with); whoever applies the change (the SQL catalog here, a REST
catalog server elsewhere) checks them against the table as it is at that moment. A failed
requirement is `CommitFailedError`: nothing was applied, the writer refreshes and re-plans. Its
message is Iceberg Java's, word for word ("Requirement failed: current schema changed: expected
id 1 != 2"): REST clients and their tests match on it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from mor.errors import CommitError, InvalidArgumentError
from mor.format.metadata import TableMetadata


class CommitFailedError(CommitError):
    """Internal: the table is not as the commit was planned on (another writer moved it first,
    or a requirement fails). Nothing was applied; retry on the new state."""


@dataclass(frozen=True)
class Requirement:
    TYPE: ClassVar[str] = ""

    def check(self, current: TableMetadata | None) -> None:
        """CommitFailedError unless the requirement holds of `current` (None: no such table)."""
        if current is None:
            raise CommitFailedError(f"requirement {self.TYPE} failed: the table does not exist")
        self._check(current)

    def _check(self, current: TableMetadata) -> None:
        raise NotImplementedError

    def to_dict(self) -> dict[str, Any]:
        raise NotImplementedError


@dataclass(frozen=True)
class AssertCreate(Requirement):
    TYPE = "assert-create"

    def check(self, current: TableMetadata | None) -> None:
        if current is not None:
            raise CommitFailedError("Requirement failed: table already exists")

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.TYPE}


@dataclass(frozen=True)
class AssertTableUuid(Requirement):
    TYPE = "assert-table-uuid"
    uuid: str

    def _check(self, current: TableMetadata) -> None:
        if current.table_uuid.lower() != self.uuid.lower():
            raise CommitFailedError(f"Requirement failed: UUID does not match: expected {current.table_uuid} != {self.uuid}")

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.TYPE, "uuid": self.uuid}


@dataclass(frozen=True)
class AssertRefSnapshotId(Requirement):
    """The ref points at `snapshot_id`; with None, the ref must not exist."""

    TYPE = "assert-ref-snapshot-id"
    ref: str
    snapshot_id: int | None

    def _check(self, current: TableMetadata) -> None:
        found = current.refs.get(self.ref)
        if found is None:
            if self.snapshot_id is not None:
                raise CommitFailedError(f"Requirement failed: branch or tag {self.ref} is missing, expected {self.snapshot_id}")
            return
        kind = "tag" if found.get("type") == "tag" else "branch"
        if self.snapshot_id is None:
            raise CommitFailedError(f"Requirement failed: {kind} {self.ref} was created concurrently")
        if found.get("snapshot-id") != self.snapshot_id:
            raise CommitFailedError(
                f"Requirement failed: {kind} {self.ref} has changed: expected id {self.snapshot_id} != {found.get('snapshot-id')}"
            )

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.TYPE, "ref": self.ref, "snapshot-id": self.snapshot_id}


@dataclass(frozen=True)
class _IntRequirement(Requirement):
    """What every `_int_requirement` class has: the number under `KEY` in its REST JSON."""

    KEY: ClassVar[str] = ""
    value: int


def _int_requirement(type_: str, key: str, attribute: str, what: str) -> type[_IntRequirement]:
    """A requirement that one number of the metadata (`what`, as Iceberg Java's message names
    it) is unchanged."""

    @dataclass(frozen=True)
    class IntRequirement(_IntRequirement):
        TYPE = type_
        KEY = key
        value: int

        def _check(self, current: TableMetadata) -> None:
            found = getattr(current, attribute)
            if found != self.value:
                raise CommitFailedError(f"Requirement failed: {what} changed: expected id {self.value} != {found}")

        def to_dict(self) -> dict[str, Any]:
            return {"type": self.TYPE, key: self.value}

    return IntRequirement


AssertCurrentSchemaId = _int_requirement("assert-current-schema-id", "current-schema-id", "current_schema_id", "current schema")
AssertLastAssignedFieldId = _int_requirement(
    "assert-last-assigned-field-id", "last-assigned-field-id", "last_column_id", "last assigned field id"
)
AssertLastAssignedPartitionId = _int_requirement(
    "assert-last-assigned-partition-id", "last-assigned-partition-id", "last_partition_id", "last assigned partition id"
)
AssertDefaultSpecId = _int_requirement("assert-default-spec-id", "default-spec-id", "default_spec_id", "default partition spec")
AssertDefaultSortOrderId = _int_requirement(
    "assert-default-sort-order-id", "default-sort-order-id", "default_sort_order_id", "default sort order"
)

_INT_REQUIREMENTS = {
    r.TYPE: r
    for r in (
        AssertCurrentSchemaId,
        AssertLastAssignedFieldId,
        AssertLastAssignedPartitionId,
        AssertDefaultSpecId,
        AssertDefaultSortOrderId,
    )
}


def check_requirements(requirements: list[Requirement], current: TableMetadata | None) -> None:
    for requirement in requirements:
        requirement.check(current)


def requirement_from_dict(d: Any) -> Requirement:
    """A requirement from its REST JSON; InvalidArgumentError for one that is malformed or unknown."""
    if not isinstance(d, dict) or not isinstance(d.get("type"), str):
        raise InvalidArgumentError(f"a requirement is an object with a 'type', got {d!r}")
    kind = d["type"]
    try:
        if kind == AssertCreate.TYPE:
            return AssertCreate()
        if kind == AssertTableUuid.TYPE:
            return AssertTableUuid(_typed(d, "uuid", str))
        if kind == AssertRefSnapshotId.TYPE:
            snapshot_id = d.get("snapshot-id")
            if snapshot_id is not None:
                snapshot_id = _typed(d, "snapshot-id", int)
            return AssertRefSnapshotId(_typed(d, "ref", str), snapshot_id)
        if kind in _INT_REQUIREMENTS:
            cls = _INT_REQUIREMENTS[kind]
            return cls(_typed(d, cls.KEY, int))
    except KeyError as e:
        raise InvalidArgumentError(f"requirement {kind} lacks {e.args[0]!r}") from None
    raise InvalidArgumentError(f"unknown requirement type {kind!r}")


def _typed(d: dict[str, Any], key: str, kind: type) -> Any:
    value = d[key]
    if not isinstance(value, kind) or isinstance(value, bool):
        raise InvalidArgumentError(f"{key} must be a {kind.__name__}, got {value!r}")
    return value
