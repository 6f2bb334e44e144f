"""The invariants of table metadata the spec states, checked once when a metadata file is read.

Each check costs a pass over ids already in memory. Metadata that breaks one is
CorruptMetadataError (the caller adds the file's location): read anyway, it would give wrong
rows (a `refs.main` that `current-snapshot-id` contradicts is a different table state to
Iceberg Java than to us) or make the next commit worse (a sequence number handed out twice
makes deletes apply to the wrong files; a column id handed out twice aliases two columns).
What Iceberg Java writes passes: an empty table without `current-snapshot-id` (or with -1) and
without `refs.main`; snapshots from before a v1 -> v2 upgrade, all at sequence number 0; refs
carrying retention fields (judged by expire_snapshots, which uses them).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any, Protocol, TypeVar

from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import BucketTransform, TruncateTransform

from mor.errors import CorruptMetadataError
from mor.format.spec import MAIN_BRANCH

REF_TYPES = ("branch", "tag")
INT32_MAX = 2**31 - 1


class CheckedSnapshot(Protocol):
    """What the checks read of a snapshot (mor/format/metadata.py's `Snapshot`)."""

    @property
    def snapshot_id(self) -> int: ...
    @property
    def parent_snapshot_id(self) -> int | None: ...
    @property
    def sequence_number(self) -> int: ...
    @property
    def first_row_id(self) -> int | None: ...
    @property
    def added_rows(self) -> int | None: ...


class CheckedMetadata(Protocol):
    """What the checks read of table metadata (mor/format/metadata.py's `TableMetadata`, which
    calls them while it parses: typed by this, the checks need not import it)."""

    @property
    def last_sequence_number(self) -> int: ...
    @property
    def last_column_id(self) -> int: ...
    @property
    def schemas(self) -> tuple[Schema, ...]: ...
    @property
    def current_schema_id(self) -> int: ...
    @property
    def partition_specs(self) -> tuple[PartitionSpec, ...]: ...
    @property
    def default_spec_id(self) -> int: ...
    @property
    def last_partition_id(self) -> int: ...
    @property
    def sort_orders_json(self) -> tuple[dict[str, Any], ...]: ...
    @property
    def default_sort_order_id(self) -> int: ...
    @property
    def current_snapshot_id(self) -> int | None: ...
    @property
    def snapshots(self) -> tuple[CheckedSnapshot, ...]: ...
    @property
    def refs(self) -> dict[str, dict[str, Any]]: ...
    @property
    def next_row_id(self) -> int | None: ...
    def sort_order_ids(self) -> list[int]: ...


Checked = TypeVar("Checked", bound=CheckedMetadata)


def check_metadata(m: Checked) -> Checked:
    """`m`, or CorruptMetadataError naming the first invariant it breaks."""
    _check_sort_orders(m)
    _check_pointers(m)
    _check_unique("schema id", (s.schema_id for s in m.schemas))
    _check_unique("partition spec id", (s.spec_id for s in m.partition_specs))
    _check_unique("sort order id", m.sort_order_ids())
    _check_unique("snapshot id", (s.snapshot_id for s in m.snapshots))
    _check_refs(m)
    _check_sequence_numbers(m)
    _check_id_counters(m)
    _check_transform_arguments(m)
    return m


def _check_pointers(m: CheckedMetadata) -> None:
    """The ids the metadata points at must exist in it, or every later lookup fails."""
    if m.current_schema_id not in {s.schema_id for s in m.schemas}:
        raise CorruptMetadataError(f"current-schema-id {m.current_schema_id} names no schema")
    if m.default_spec_id not in {s.spec_id for s in m.partition_specs}:
        raise CorruptMetadataError(f"default-spec-id {m.default_spec_id} names no partition spec")
    if m.default_sort_order_id not in m.sort_order_ids():
        raise CorruptMetadataError(f"default-sort-order-id {m.default_sort_order_id} names no sort order")
    if m.current_snapshot_id is not None and m.current_snapshot_id not in {s.snapshot_id for s in m.snapshots}:
        raise CorruptMetadataError(f"current-snapshot-id {m.current_snapshot_id} names no snapshot")


_SORT_DIRECTIONS = ("asc", "desc")
_NULL_ORDERS = ("nulls-first", "nulls-last")


def _check_sort_orders(m: CheckedMetadata) -> None:
    """Sort orders are kept as JSON until a writer parses them (mor/format/metadata.py):
    their shape is checked here so that bad ones are refused when the file is read."""
    for order in m.sort_orders_json:
        if not isinstance(order, dict) or not _is_int(order.get("order-id")) or not isinstance(order.get("fields"), list):
            raise CorruptMetadataError(f"sort order {order!r} is not an object with an integer order-id and a fields list")
        for f in order["fields"]:
            if not (
                isinstance(f, dict)
                and _is_int(f.get("source-id"))
                and isinstance(f.get("transform"), str)
                and f.get("direction") in _SORT_DIRECTIONS
                and f.get("null-order") in _NULL_ORDERS
            ):
                raise CorruptMetadataError(
                    f"sort order {order['order-id']} has field {f!r}: it needs an integer source-id, a transform, "
                    f"a direction {_SORT_DIRECTIONS} and a null-order {_NULL_ORDERS}"
                )


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_unique(what: str, ids: Iterable[int]) -> None:
    repeated = sorted(i for i, n in Counter(ids).items() if n > 1)
    if repeated:
        raise CorruptMetadataError(f"{what} {repeated[0]} is used twice")


def _check_refs(m: CheckedMetadata) -> None:
    """Every ref names a snapshot of the table, and main is where current-snapshot-id says (the
    spec: current-snapshot-id "must be the same as the current ID of the main branch")."""
    snapshot_ids = {s.snapshot_id for s in m.snapshots}
    for name, ref in m.refs.items():
        if not isinstance(ref, dict):
            raise CorruptMetadataError(f"ref {name!r} is not an object: {ref!r}")
        kind = ref.get("type")
        if kind not in REF_TYPES or (name == MAIN_BRANCH and kind != "branch"):
            raise CorruptMetadataError(f"ref {name!r} has type {kind!r}; it must be {'branch' if name == MAIN_BRANCH else 'branch or tag'}")
        if ref.get("snapshot-id") not in snapshot_ids:
            raise CorruptMetadataError(f"ref {name!r} names snapshot {ref.get('snapshot-id')!r}, which the table does not have")
    main: Any = m.refs.get(MAIN_BRANCH, {}).get("snapshot-id")
    if main != m.current_snapshot_id:
        current = "missing" if m.current_snapshot_id is None else m.current_snapshot_id
        raise CorruptMetadataError(f"current-snapshot-id ({current}) is not refs.main's snapshot-id ({main})")


def _check_sequence_numbers(m: CheckedMetadata) -> None:
    """Sequence numbers only grow: last-sequence-number is the highest handed out, and a
    snapshot's is above its parent's. Snapshots made before an upgrade from v1 all have 0."""
    by_id = {s.snapshot_id: s for s in m.snapshots}
    if m.last_sequence_number < 0:
        raise CorruptMetadataError(f"last-sequence-number {m.last_sequence_number} is negative")
    for s in m.snapshots:
        if s.sequence_number > m.last_sequence_number:
            raise CorruptMetadataError(
                f"snapshot {s.snapshot_id} has sequence-number {s.sequence_number}, above last-sequence-number "
                f"{m.last_sequence_number}: sequence numbers went backwards"
            )
        parent = by_id.get(s.parent_snapshot_id) if s.parent_snapshot_id is not None else None
        if parent is not None and s.sequence_number <= parent.sequence_number and s.sequence_number > 0:
            raise CorruptMetadataError(
                f"snapshot {s.snapshot_id} has sequence-number {s.sequence_number}, not above its parent "
                f"{parent.snapshot_id}'s {parent.sequence_number}: sequence numbers went backwards"
            )
        if s.sequence_number < 0:
            raise CorruptMetadataError(f"snapshot {s.snapshot_id} has a negative sequence-number {s.sequence_number}")


def _check_id_counters(m: CheckedMetadata) -> None:
    """last-column-id, last-partition-id and (v3) next-row-id are at or above every id they
    counted: the next column, partition field or row would otherwise reuse one."""
    highest_column = max((s.highest_field_id for s in m.schemas), default=0)
    if m.last_column_id < highest_column:
        raise CorruptMetadataError(f"last-column-id {m.last_column_id} is below field id {highest_column} of a schema")
    highest_partition = max((f.field_id for s in m.partition_specs for f in s.fields), default=0)
    if m.last_partition_id < highest_partition:
        raise CorruptMetadataError(f"last-partition-id {m.last_partition_id} is below partition field id {highest_partition}")
    if m.next_row_id is not None:
        for s in m.snapshots:
            if s.first_row_id is not None and s.first_row_id + (s.added_rows or 0) > m.next_row_id:
                raise CorruptMetadataError(
                    f"next-row-id {m.next_row_id} is below the row ids snapshot {s.snapshot_id} handed out "
                    f"({s.first_row_id} + {s.added_rows or 0})"
                )


def _check_transform_arguments(m: CheckedMetadata) -> None:
    """A bucket count or truncate width is a 32-bit int in the spec (Java reads it as one);
    a larger one fails every write here with OverflowError."""
    for spec in m.partition_specs:
        for f in spec.fields:
            t = f.transform
            n = t.num_buckets if isinstance(t, BucketTransform) else t.width if isinstance(t, TruncateTransform) else 1
            if not 1 <= n <= INT32_MAX:
                raise CorruptMetadataError(f"partition spec {spec.spec_id}: field {f.name!r} has transform {t}, outside 1..{INT32_MAX}")
