"""What a commit may make of a table: the checks Iceberg Java's metadata builder
(`TableMetadata.Builder`) makes as it applies a change, run on the result of every commit before
its metadata file is written (`commit_many` and `create_in_catalog` in mor/catalog/sql_operations.py:
the SQL catalog, `mor serve` and multi-table transactions all write there).

`check_metadata` (metadata_checks.py) holds any metadata file to the spec's invariants. This
module adds what a change can break, comparing the result with the metadata it started from:
- properties it sets are strings mor can act on, and a new table's are none that Iceberg
  reserves (`format-version`, `uuid`, ...);
- counters never go back: format-version, last-column-id, last-partition-id,
  last-sequence-number and (v3) next-row-id; the table-uuid never changes;
- what the change adds is well formed: schemas (field ids unique and outside the reserved range,
  full names unique and identifier fields as the spec allows them, the last two checked by
  pyiceberg's Schema as it is made), partition specs and sort orders
  (sources that exist in the current schema, primitive and not inside a list or map, transforms
  that apply to their type, unique partition names and field ids), snapshots (every field of its
  spec type, a summary of strings holding one of the spec's operations, a schema id the table
  has), refs (retention fields positive, and only branches keep snapshots);
- the default partition spec and sort order still bind to the current schema, so a schema
  change cannot drop a column the table partitions or sorts by.
Each refusal is InvalidMetadataError naming the field; `java_type` says which exception Iceberg
Java's builder throws for it (the REST server answers with that type).
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from pyiceberg.types import ListType, MapType, NestedField, StructType

from mor.errors import CorruptMetadataError, InvalidMetadataError
from mor.format.metadata import Snapshot, TableMetadata, all_fields, check_schema_fits_version
from mor.format.metadata_checks import check_metadata
from mor.format.properties import check_properties
from mor.format.spec import MAIN_BRANCH, STATISTICS_KEYS, SUPPORTED_FORMAT_VERSIONS, Operation

if TYPE_CHECKING:
    from pyiceberg.partitioning import PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.transforms import Transform

ILLEGAL_ARGUMENT = "IllegalArgumentException"
LONG_RANGE = (-(2**63), 2**63 - 1)
INT_RANGE = (-(2**31), 2**31 - 1)
# The spec reserves field ids above Integer.MAX_VALUE - 200 for metadata columns (_file, _pos,
# the position delete columns, row lineage): a table column there would alias one of them.
MAX_COLUMN_ID = 2**31 - 1 - 200
OPERATIONS = (Operation.APPEND, Operation.REPLACE, Operation.OVERWRITE, Operation.DELETE)
RETENTION_FIELDS = ("min-snapshots-to-keep", "max-snapshot-age-ms", "max-ref-age-ms")
BRANCH_ONLY_FIELDS = ("min-snapshots-to-keep", "max-snapshot-age-ms")
# What the metadata states itself; a property of that name would contradict it.
RESERVED_PROPERTIES = frozenset(
    ("format-version", "uuid", "snapshot-count", "current-snapshot-id", "current-snapshot-summary",
     "current-snapshot-timestamp-ms", "current-schema", "default-partition-spec", "default-sort-order")
)  # fmt: skip


def validate_change(base: TableMetadata | None, new: TableMetadata) -> None:
    """InvalidMetadataError unless `new` is metadata a commit from `base` (None: a new table)
    may write."""
    if new.format_version not in SUPPORTED_FORMAT_VERSIONS:
        raise InvalidMetadataError(f"format-version {new.format_version} is not one of {SUPPORTED_FORMAT_VERSIONS}", ILLEGAL_ARGUMENT)
    if not isinstance(new.location, str) or not new.location.strip():
        raise InvalidMetadataError(f"location must be a non-empty string, got {new.location!r}", ILLEGAL_ARGUMENT)
    if base is not None:
        _check_counters(base, new)
    _check_properties(base, new)
    old_schemas = set() if base is None else {s.schema_id for s in base.schemas}
    for schema in new.schemas:
        if schema.schema_id not in old_schemas:
            check_schema(schema, new.format_version)
    current = new.schema()
    old_specs = set() if base is None else set(base.specs())
    for spec in new.partition_specs:
        if spec.spec_id not in old_specs:
            _check_new_spec(spec, current, new.format_version)
    _check_binds(f"default partition spec {new.default_spec_id}", [(f.source_id, f.transform) for f in new.spec().fields], current)
    _check_sort_orders(base, new, current)
    old_snapshots = set() if base is None else {s.snapshot_id for s in base.snapshots}
    schema_ids = {s.schema_id for s in new.schemas}
    for snapshot in new.snapshots:
        if snapshot.snapshot_id not in old_snapshots:
            check_snapshot_fields(snapshot, schema_ids)
    for name, ref in new.refs.items():
        if base is None or base.refs.get(name) != ref:
            _check_ref(name, ref)
    _check_statistics(base, new)
    try:
        check_metadata(new)  # the invariants of any metadata file: ids unique, pointers resolve, ...
    except CorruptMetadataError as e:
        raise InvalidMetadataError(str(e)) from None


def _check_counters(base: TableMetadata, new: TableMetadata) -> None:
    if new.table_uuid != base.table_uuid:
        raise InvalidMetadataError(f"table-uuid cannot change: {base.table_uuid} -> {new.table_uuid}", ILLEGAL_ARGUMENT)
    if new.format_version < base.format_version:
        raise InvalidMetadataError(f"format-version cannot go down: v{base.format_version} -> v{new.format_version}", ILLEGAL_ARGUMENT)
    counters = [
        ("last-column-id", base.last_column_id, new.last_column_id),
        ("last-partition-id", base.last_partition_id, new.last_partition_id),
        ("last-sequence-number", base.last_sequence_number, new.last_sequence_number),
    ]
    if base.next_row_id is not None:
        counters.append(("next-row-id", base.next_row_id, new.next_row_id if new.next_row_id is not None else -1))
    for name, before, after in counters:
        if after < before:
            raise InvalidMetadataError(f"{name} cannot go back: {before} -> {after}", ILLEGAL_ARGUMENT)


def _check_properties(base: TableMetadata | None, new: TableMetadata) -> None:
    """Properties a commit sets are strings mor can act on; a new table's hold none of the
    names Iceberg reserves for what the metadata itself says (Java refuses them at creation)."""
    changed = {k: v for k, v in new.properties.items() if base is None or base.properties.get(k) != v}
    check_properties(changed)
    reserved = sorted(set(changed) & RESERVED_PROPERTIES) if base is None else []
    if reserved:
        raise InvalidMetadataError(f"table properties should not contain reserved properties, but got {reserved}", ILLEGAL_ARGUMENT)


# -- schemas --------------------------------------------------------------------------------


def check_schema(schema: Schema, format_version: int) -> None:
    """A schema a commit adds: unique field ids in the column range, and only the types its
    format version has. (Unique full names and valid identifier fields: pyiceberg's Schema
    refuses any other when it is made, as the update is parsed or applied.)"""
    fields = all_fields(schema.fields)
    ids = Counter(f.field_id for f in fields)
    repeated = sorted(i for i, n in ids.items() if n > 1)
    if repeated:
        names = [f.name for f in fields if f.field_id == repeated[0]]
        raise InvalidMetadataError(
            f"schema {schema.schema_id}: field id {repeated[0]} is used twice ({names[0]!r} and {names[1]!r})", ILLEGAL_ARGUMENT
        )
    out_of_range = next((f for f in fields if not 0 < f.field_id <= MAX_COLUMN_ID), None)
    if out_of_range is not None:
        raise InvalidMetadataError(
            f"schema {schema.schema_id}: field {out_of_range.name!r} has id {out_of_range.field_id}, outside 1..{MAX_COLUMN_ID} "
            "(higher ids are reserved for metadata columns)"
        )
    try:
        check_schema_fits_version(schema, format_version)
    except ValueError as e:
        raise InvalidMetadataError(f"schema {schema.schema_id}: {e}") from None


def _parents(fields: tuple[NestedField, ...] | list[NestedField], parent: NestedField | None) -> dict[int, NestedField]:
    out: dict[int, NestedField] = {}
    for f in fields:
        if parent is not None:
            out[f.field_id] = parent
        t = f.field_type
        children = t.fields if isinstance(t, StructType) else [t.element_field] if isinstance(t, ListType) else []
        if isinstance(t, MapType):
            children = [t.key_field, t.value_field]
        out.update(_parents(children, f))
    return out


# -- partition specs and sort orders -------------------------------------------------------


def _check_new_spec(spec: PartitionSpec, schema: Schema, format_version: int) -> None:
    what = f"partition spec {spec.spec_id}"
    ids = Counter(f.field_id for f in spec.fields)
    repeated = sorted(i for i, n in ids.items() if n > 1)
    if repeated:
        raise InvalidMetadataError(f"{what}: partition field id {repeated[0]} is used twice", ILLEGAL_ARGUMENT)
    names = Counter(f.name for f in spec.fields)
    if any(not n for n in names):
        raise InvalidMetadataError(f"{what}: a partition field has an empty name", ILLEGAL_ARGUMENT)
    twice = sorted(n for n, k in names.items() if k > 1)
    if twice:
        raise InvalidMetadataError(f"{what}: partition name {twice[0]!r} is used more than once", ILLEGAL_ARGUMENT)
    if format_version == 1 and [f.field_id for f in spec.fields] != list(range(1000, 1000 + len(spec.fields))):
        raise InvalidMetadataError(f"{what} does not use the sequential field ids from 1000 that format v1 requires")
    for f in spec.fields:
        column = _field_named(schema, f.name)
        if column is not None and not (_is_identity_or_void(f.transform) and column.field_id == f.source_id):
            raise InvalidMetadataError(
                f"{what}: partition name {f.name!r} is a column of the schema; only an identity partition of that column may take its name",
                ILLEGAL_ARGUMENT,
            )
    _check_binds(what, [(f.source_id, f.transform) for f in spec.fields], schema)


def _check_sort_orders(base: TableMetadata | None, new: TableMetadata, schema: Schema) -> None:
    try:
        orders = new.sort_orders
    except CorruptMetadataError as e:
        raise InvalidMetadataError(str(e)) from None
    old_orders = set() if base is None else set(base.sort_order_ids())
    for order in orders:
        if order.order_id not in old_orders or order.order_id == new.default_sort_order_id:
            _check_binds(f"sort order {order.order_id}", [(f.source_id, f.transform) for f in order.fields], schema)


def _check_binds(what: str, fields: list[tuple[int, Transform[Any, Any]]], schema: Schema) -> None:
    """Each (source id, transform) names a primitive column of `schema`, nested in structs
    only, whose type the transform applies to (a v1 `void` field may outlive its column)."""
    from pyiceberg.transforms import VoidTransform

    parents = _parents(schema.fields, None)
    by_id = {f.field_id: f for f in all_fields(schema.fields)}
    for source_id, transform in fields:
        if isinstance(transform, VoidTransform):
            continue
        column = by_id.get(source_id)
        if column is None:
            raise InvalidMetadataError(f"{what}: cannot find source column {source_id} for a {transform} field in the current schema")
        if not column.field_type.is_primitive:
            raise InvalidMetadataError(f"{what}: cannot partition or sort by non-primitive column {column.name!r} ({column.field_type})")
        if not transform.can_transform(column.field_type):
            raise InvalidMetadataError(
                f"{what}: invalid source type {column.field_type} of column {column.name!r} for transform {transform}"
            )
        parent = parents.get(source_id)
        while parent is not None:
            if not isinstance(parent.field_type, StructType):
                raise InvalidMetadataError(f"{what}: column {column.name!r} lies inside {parent.field_type}; only structs may hold it")
            parent = parents.get(parent.field_id)


def _field_named(schema: Schema, name: str) -> NestedField | None:
    try:
        return schema.find_field(name)
    except ValueError:
        return None


def _is_identity_or_void(transform: Transform[Any, Any]) -> bool:
    from pyiceberg.transforms import IdentityTransform, VoidTransform

    return isinstance(transform, (IdentityTransform, VoidTransform))


# -- snapshots, refs, statistics ----------------------------------------------------------


def check_snapshot_fields(snapshot: Snapshot, schema_ids: set[int] | None = None) -> None:
    """Every field of a snapshot a commit adds has its spec type: ids and counters longs, the
    manifest list a non-empty string, the summary strings holding one of the spec's operations;
    its schema id names a schema of the table (`schema_ids`, when given)."""
    what = f"snapshot {snapshot.snapshot_id!r}"
    _long(snapshot.snapshot_id, f"{what}: snapshot-id")
    if snapshot.parent_snapshot_id is not None:
        _long(snapshot.parent_snapshot_id, f"{what}: parent-snapshot-id")
    _long(snapshot.sequence_number, f"{what}: sequence-number")
    _long(snapshot.timestamp_ms, f"{what}: timestamp-ms")
    if not isinstance(snapshot.manifest_list, str) or not snapshot.manifest_list.strip():
        raise InvalidMetadataError(f"{what}: manifest-list must be a non-empty string, got {snapshot.manifest_list!r}", ILLEGAL_ARGUMENT)
    summary = snapshot.summary
    if not isinstance(summary, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in summary.items()):
        raise InvalidMetadataError(f"{what}: summary must be an object of strings, got {summary!r}", ILLEGAL_ARGUMENT)
    if summary.get("operation") not in OPERATIONS:
        raise InvalidMetadataError(f"{what}: summary operation must be one of {OPERATIONS}, got {summary.get('operation')!r}")
    if snapshot.schema_id is not None:
        _int(snapshot.schema_id, f"{what}: schema-id")
        if schema_ids is not None and snapshot.schema_id not in schema_ids:
            raise InvalidMetadataError(f"{what}: schema-id {snapshot.schema_id} names no schema of the table")
    for name, value in (("first-row-id", snapshot.first_row_id), ("added-rows", snapshot.added_rows)):
        if value is not None:
            _long(value, f"{what}: {name}")
            if value < 0:
                raise InvalidMetadataError(f"{what}: {name} must not be negative, got {value}")


def _check_ref(name: str, ref: dict[str, Any]) -> None:
    if not isinstance(name, str) or not name:
        raise InvalidMetadataError(f"a ref name must be a non-empty string, got {name!r}", ILLEGAL_ARGUMENT)
    _long(ref.get("snapshot-id"), f"ref {name!r}: snapshot-id")
    if name == MAIN_BRANCH and ref.get("type") != "branch":
        raise InvalidMetadataError(f"cannot set {MAIN_BRANCH} to a tag, it must be a branch")
    for key in RETENTION_FIELDS:
        value = ref.get(key)
        if value is None:
            continue
        _long(value, f"ref {name!r}: {key}")
        if value <= 0:
            raise InvalidMetadataError(f"ref {name!r}: {key} must be greater than 0, got {value}", ILLEGAL_ARGUMENT)
        if key in BRANCH_ONLY_FIELDS and ref.get("type") == "tag":
            raise InvalidMetadataError(f"ref {name!r}: a tag does not support {key}", ILLEGAL_ARGUMENT)


def _check_statistics(base: TableMetadata | None, new: TableMetadata) -> None:
    """Statistics files a commit adds name their snapshot and path with their spec types."""
    for key in STATISTICS_KEYS:
        if not isinstance(new.extra.get(key) or [], list):
            raise InvalidMetadataError(f"{key} must be a list, got {type(new.extra[key]).__name__}", ILLEGAL_ARGUMENT)
    for key, entry in _added_statistics(base, new):
        if not isinstance(entry, dict):
            raise InvalidMetadataError(f"a {key} entry must be an object, got {entry!r}", ILLEGAL_ARGUMENT)
        _long(entry.get("snapshot-id"), f"{key} entry: snapshot-id")
        if not isinstance(entry.get("statistics-path"), str) or not entry["statistics-path"]:
            raise InvalidMetadataError(
                f"{key} entry of snapshot {entry.get('snapshot-id')}: statistics-path must be a string", ILLEGAL_ARGUMENT
            )


def statistics_paths(base: TableMetadata | None, new: TableMetadata) -> list[str]:
    """The paths of the statistics files `new` lists that `base` did not (after `validate_change`)."""
    return [entry["statistics-path"] for _, entry in _added_statistics(base, new) if isinstance(entry, dict)]


def _added_statistics(base: TableMetadata | None, new: TableMetadata) -> list[tuple[str, Any]]:
    """(key, entry) of each statistics entry `new` lists that `base` did not."""
    out = []
    for key in STATISTICS_KEYS:
        before = [] if base is None else base.extra.get(key) or []
        entries = new.extra.get(key) or []
        out += [(key, e) for e in entries if e not in before] if isinstance(entries, list) else []
    return out


def _long(value: object, what: str) -> None:
    _whole(value, what, LONG_RANGE, "long")


def _int(value: object, what: str) -> None:
    _whole(value, what, INT_RANGE, "int")


def _whole(value: object, what: str, bounds: tuple[int, int], kind: str) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or not bounds[0] <= value <= bounds[1]:
        raise InvalidMetadataError(f"{what} must be a {kind}, got {value!r}", ILLEGAL_ARGUMENT)
