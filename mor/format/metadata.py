"""Table metadata (format v2 and v3): the JSON document each commit writes, as frozen values.

Everything the spec lists for v2 is kept, and v3's row lineage counters (`next-row-id`, a
snapshot's `first-row-id` and `added-rows`); keys we do not model (statistics, ...), at the top
level and in snapshots, and every field of every ref (Java's retention fields on main too) are
carried through untouched so a commit never drops what another engine wrote. A file read is
held to the spec's invariants (mor/format/metadata_checks.py).
"""

from __future__ import annotations

import datetime as dt
import json
import re
import time
import uuid
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any, SupportsInt, cast

from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.types import ListType, MapType, NestedField, StructType, TimestampNanoType, TimestamptzNanoType, UnknownType

from mor.errors import CorruptMetadataError, InvalidArgumentError, UnsupportedFeatureError
from mor.format.metadata_checks import check_metadata
from mor.format.properties import METADATA_PREVIOUS_VERSIONS_MAX, check_properties
from mor.format.spec import (
    FORMAT_VERSION,
    INITIAL_SEQUENCE_NUMBER,
    MAIN_BRANCH,
    SUPPORTED_FORMAT_VERSIONS,
    UNPARTITIONED_LAST_PARTITION_ID,
)

if TYPE_CHECKING:
    from pyiceberg.table.sorting import SortOrder


@dataclass(frozen=True)
class Snapshot:
    snapshot_id: int
    parent_snapshot_id: int | None
    sequence_number: int
    timestamp_ms: int
    manifest_list: str
    summary: dict[str, str]
    schema_id: int | None = None
    # v3 row lineage: the first row id this snapshot could hand out, and how many it reserved.
    # None in v2 tables and in snapshots made before a table's upgrade to v3.
    first_row_id: int | None = None
    added_rows: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # keys another engine wrote that we do not model

    @property
    def operation(self) -> str:
        return self.summary.get("operation", "")

    def __repr__(self) -> str:
        try:
            made = dt.datetime.fromtimestamp(self.timestamp_ms / 1000, dt.UTC).isoformat(timespec="milliseconds")
        except (OverflowError, OSError, ValueError):
            made = f"{self.timestamp_ms} ms"
        return f"Snapshot(id={self.snapshot_id}, operation={self.operation!r}, sequence_number={self.sequence_number}, timestamp={made!r})"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"snapshot-id": self.snapshot_id}
        if self.parent_snapshot_id is not None:
            out["parent-snapshot-id"] = self.parent_snapshot_id
        out.update(
            {
                "sequence-number": self.sequence_number,
                "timestamp-ms": self.timestamp_ms,
                "manifest-list": self.manifest_list,
                "summary": self.summary,
            }
        )
        if self.schema_id is not None:
            out["schema-id"] = self.schema_id
        if self.first_row_id is not None:
            out["first-row-id"] = self.first_row_id
            out["added-rows"] = self.added_rows or 0
        out.update(self.extra)
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Snapshot:
        if "manifest-list" not in d:
            raise UnsupportedFeatureError("snapshots without a manifest list (v1 manifests) are not supported")
        return cls(
            snapshot_id=d["snapshot-id"],
            parent_snapshot_id=d.get("parent-snapshot-id"),
            sequence_number=d.get("sequence-number", INITIAL_SEQUENCE_NUMBER),
            timestamp_ms=d["timestamp-ms"],
            manifest_list=d["manifest-list"],
            summary=dict(d.get("summary") or {"operation": "append"}),
            schema_id=d.get("schema-id"),
            first_row_id=d.get("first-row-id"),
            added_rows=d.get("added-rows"),
            extra={k: v for k, v in d.items() if k not in _SNAPSHOT_KEYS},
        )


_SNAPSHOT_KEYS = frozenset(
    ("snapshot-id", "parent-snapshot-id", "sequence-number", "timestamp-ms", "manifest-list", "summary", "schema-id",
     "first-row-id", "added-rows")
)  # fmt: skip


@dataclass(frozen=True)
class TableMetadata:
    table_uuid: str
    location: str
    last_sequence_number: int
    last_updated_ms: int
    last_column_id: int
    schemas: tuple[Schema, ...]
    current_schema_id: int
    partition_specs: tuple[PartitionSpec, ...]
    default_spec_id: int
    last_partition_id: int
    # Sort orders stay JSON until a writer asks for them: pyiceberg's SortOrder lives in
    # pyiceberg.table, whose import would cost every read ~0.2 s (`sort_orders` parses them).
    sort_orders_json: tuple[dict[str, Any], ...]
    default_sort_order_id: int
    properties: dict[str, str] = field(default_factory=dict)
    current_snapshot_id: int | None = None
    snapshots: tuple[Snapshot, ...] = ()
    snapshot_log: tuple[tuple[int, int], ...] = ()  # (timestamp-ms, snapshot-id)
    metadata_log: tuple[tuple[int, str], ...] = ()  # (timestamp-ms, metadata-file)
    refs: dict[str, dict[str, Any]] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)  # keys we carry through unmodelled
    format_version: int = FORMAT_VERSION
    next_row_id: int | None = None  # v3: higher than every row id handed out; None in v2

    # -- lookups -------------------------------------------------------------------------
    def schema(self) -> Schema:
        return self.schema_by_id(self.current_schema_id)

    def schema_by_id(self, schema_id: int) -> Schema:
        for s in self.schemas:
            if s.schema_id == schema_id:
                return s
        raise CorruptMetadataError(f"no schema with id {schema_id}")

    def spec(self) -> PartitionSpec:
        return self.specs()[self.default_spec_id]

    def specs(self) -> dict[int, PartitionSpec]:
        return {s.spec_id: s for s in self.partition_specs}

    def current_snapshot(self) -> Snapshot | None:
        return None if self.current_snapshot_id is None else self.snapshot_by_id(self.current_snapshot_id)

    def snapshot_by_id(self, snapshot_id: int) -> Snapshot:
        for s in self.snapshots:
            if s.snapshot_id == snapshot_id:
                return s
        raise KeyError(snapshot_id)

    def snapshot_as_of(self, timestamp_ms: int) -> Snapshot | None:
        """The snapshot that was current at `timestamp_ms`, by the snapshot log."""
        current = None
        for ts, snapshot_id in self.snapshot_log:
            if ts <= timestamp_ms:
                current = snapshot_id
        return None if current is None else self.snapshot_by_id(current)

    def ancestors(self, snapshot_id: int | None) -> list[Snapshot]:
        """The snapshot and its parents, newest first."""
        by_id = {s.snapshot_id: s for s in self.snapshots}
        out = []
        while snapshot_id is not None and snapshot_id in by_id:
            out.append(by_id[snapshot_id])
            snapshot_id = by_id[snapshot_id].parent_snapshot_id
        return out

    @cached_property
    def sort_orders(self) -> tuple[SortOrder, ...]:
        from pyiceberg.table.sorting import SortOrder

        try:
            return tuple(SortOrder.model_validate(o) for o in self.sort_orders_json)
        except ValueError as e:  # pydantic's ValidationError is one
            detail = " ".join(line.strip() for line in str(e).strip().splitlines()[:3])
            raise CorruptMetadataError(f"invalid sort order: {detail}") from e

    def sort_order_ids(self) -> list[int]:
        return [o["order-id"] for o in self.sort_orders_json]

    @property
    def sort_order(self) -> SortOrder:
        return next(o for o in self.sort_orders if o.order_id == self.default_sort_order_id)

    # -- JSON ----------------------------------------------------------------------------
    def to_json(self) -> str:
        # Compact, as Iceberg Java writes it: with `indent`, json falls back from its C encoder
        # to the Python one, which took 60% of a small append's time once the table had
        # 150 snapshots (every commit writes the whole history).
        return json.dumps(self.to_dict(), separators=(",", ":"))

    def to_dict(self) -> dict[str, Any]:
        """The metadata as its JSON object (what `to_json` writes)."""
        d: dict[str, Any] = {
            "format-version": self.format_version,
            "table-uuid": self.table_uuid,
            "location": self.location,
            "last-sequence-number": self.last_sequence_number,
            "last-updated-ms": self.last_updated_ms,
            "last-column-id": self.last_column_id,
            "current-schema-id": self.current_schema_id,
            "schemas": [json.loads(s.model_dump_json()) for s in self.schemas],
            "default-spec-id": self.default_spec_id,
            "partition-specs": [json.loads(s.model_dump_json()) for s in self.partition_specs],
            "last-partition-id": self.last_partition_id,
            "default-sort-order-id": self.default_sort_order_id,
            "sort-orders": list(self.sort_orders_json),
            "properties": self.properties,
        }
        if self.current_snapshot_id is not None:
            d["current-snapshot-id"] = self.current_snapshot_id
        d["refs"] = self.refs
        d["snapshots"] = [s.to_dict() for s in self.snapshots]
        if self.format_version == 1:
            _as_v1(d, self)
        d["snapshot-log"] = [{"timestamp-ms": ts, "snapshot-id": sid} for ts, sid in self.snapshot_log]
        d["metadata-log"] = [{"timestamp-ms": ts, "metadata-file": f} for ts, f in self.metadata_log]
        if self.format_version >= 3:
            d["next-row-id"] = self.next_row_id or 0
        d.update(self.extra)
        return d

    @classmethod
    def from_json(cls, text: str | bytes) -> TableMetadata:
        try:
            d = json.loads(text)
        except ValueError as e:  # also bytes that are not UTF-8
            raise CorruptMetadataError(f"not JSON ({e})") from e
        return cls.from_dict(d)

    @classmethod
    def from_dict(cls, d: object) -> TableMetadata:
        """Metadata from its parsed JSON (a REST catalog's answer holds it so), held to the
        spec's invariants; CorruptMetadataError saying what is wrong."""
        if not isinstance(d, dict):
            raise CorruptMetadataError(f"not table metadata: a JSON {type(d).__name__}, not an object")
        try:
            return check_metadata(cls._from_dict(d))
        except (UnsupportedFeatureError, CorruptMetadataError):
            raise
        except KeyError as e:
            raise CorruptMetadataError(f"required field {e.args[0]!r} is missing") from e
        except (ValueError, TypeError, AttributeError) as e:
            unsupported = _UNSUPPORTED_TYPE.search(str(e))
            if unsupported is not None:  # a type of a newer spec (variant, geometry, ...) pyiceberg cannot model
                raise UnsupportedFeatureError(
                    f"the table has a column of type {unsupported.group(1)!r}, which mor cannot read or write yet"
                ) from e
            detail = " ".join(line.strip() for line in str(e).strip().splitlines()[:3])
            raise CorruptMetadataError(f"invalid table metadata: {type(e).__name__}: {detail}") from e

    @classmethod
    def _from_dict(cls, d: dict[str, Any]) -> TableMetadata:
        version = d.get("format-version")
        if version is None:
            raise CorruptMetadataError("required field 'format-version' is missing")
        if version not in SUPPORTED_FORMAT_VERSIONS:
            raise UnsupportedFeatureError(
                f"table format-version {version!r} is not supported (mor reads and writes {SUPPORTED_FORMAT_VERSIONS})"
            )
        if version == 1:
            d = _from_v1(d)
        known = {
            "format-version", "table-uuid", "location", "last-sequence-number", "last-updated-ms",
            "last-column-id", "current-schema-id", "schemas", "default-spec-id", "partition-specs",
            "last-partition-id", "default-sort-order-id", "sort-orders", "properties",
            "current-snapshot-id", "refs", "snapshots", "snapshot-log", "metadata-log", "next-row-id",
        }  # fmt: skip
        current = d.get("current-snapshot-id")
        if current == -1:
            current = None
        refs = dict(d.get("refs") or {})
        if current is not None and MAIN_BRANCH not in refs:
            refs[MAIN_BRANCH] = {"snapshot-id": current, "type": "branch"}
        return cls(
            format_version=version,
            table_uuid=d["table-uuid"],
            location=d["location"],
            last_sequence_number=d["last-sequence-number"],
            last_updated_ms=d["last-updated-ms"],
            last_column_id=d["last-column-id"],
            schemas=tuple(Schema.model_validate(s) for s in d["schemas"]),
            current_schema_id=d["current-schema-id"],
            partition_specs=tuple(PartitionSpec.model_validate(s) for s in d["partition-specs"]),
            default_spec_id=d["default-spec-id"],
            last_partition_id=d["last-partition-id"],
            sort_orders_json=tuple(d["sort-orders"]),
            default_sort_order_id=d["default-sort-order-id"],
            properties=dict(d.get("properties") or {}),
            current_snapshot_id=current,
            snapshots=tuple(Snapshot.from_dict(s) for s in d.get("snapshots") or ()),
            snapshot_log=tuple((e["timestamp-ms"], e["snapshot-id"]) for e in d.get("snapshot-log") or ()),
            metadata_log=tuple((e["timestamp-ms"], e["metadata-file"]) for e in d.get("metadata-log") or ()),
            refs=refs,
            extra={k: v for k, v in d.items() if k not in known},
            # A v3 table without it has handed out no row ids yet.
            next_row_id=(d.get("next-row-id") or 0) if version >= 3 else None,
        )


_UNSUPPORTED_TYPE = re.compile(r"Unsupported field type: '([^']+)'")


def _from_v1(d: dict[str, Any]) -> dict[str, Any]:
    """A v1 metadata object in the v2 shape: the fields v1 may leave out filled in as the spec
    says (one `schema`, one `partition-spec` as spec 0, no sequence numbers, no sort orders)."""
    d = dict(d)
    if "schemas" not in d:
        schema = dict(d["schema"])
        schema.setdefault("schema-id", 0)
        d["schemas"] = [schema]
        d.setdefault("current-schema-id", schema["schema-id"])
    if "partition-specs" not in d:
        d["partition-specs"] = [{"spec-id": 0, "fields": d["partition-spec"]}]
        d.setdefault("default-spec-id", 0)
    if "last-partition-id" not in d:
        ids = [f["field-id"] for spec in d["partition-specs"] for f in spec["fields"] if "field-id" in f]
        d["last-partition-id"] = max(ids, default=999)
    d.setdefault("last-sequence-number", INITIAL_SEQUENCE_NUMBER)
    d.setdefault("sort-orders", [{"order-id": 0, "fields": []}])
    d.setdefault("default-sort-order-id", 0)
    d.pop("schema", None)
    d.pop("partition-spec", None)
    return d


def _as_v1(d: dict[str, Any], m: TableMetadata) -> None:
    """Write `d` as v1 metadata: the current schema and default spec also in their v1 fields
    (v1 readers read only those), and no sequence numbers."""
    d["schema"] = json.loads(m.schema().model_dump_json())
    d["partition-spec"] = json.loads(m.spec().model_dump_json())["fields"]
    d.pop("last-sequence-number", None)
    for snapshot in d["snapshots"]:
        snapshot.pop("sequence-number", None)


# -- pure transitions (each returns new metadata) -----------------------------------------


def new_table_metadata(
    schema: Schema,
    spec: PartitionSpec,
    sort_order: SortOrder | None,
    location: str,
    properties: dict[str, str],
    format_version: int = FORMAT_VERSION,
) -> TableMetadata:
    """The metadata of a new table (`sort_order` None: unsorted)."""
    check_properties(properties)
    check_format_version(format_version)
    check_schema_fits_version(schema, format_version)
    return TableMetadata(
        format_version=format_version,
        next_row_id=0 if format_version >= 3 else None,
        table_uuid=str(uuid.uuid4()),
        location=location,
        last_sequence_number=INITIAL_SEQUENCE_NUMBER,
        last_updated_ms=now_ms(),
        last_column_id=schema.highest_field_id,
        schemas=(schema,),
        current_schema_id=schema.schema_id,
        partition_specs=(spec,),
        default_spec_id=spec.spec_id,
        last_partition_id=max((f.field_id for f in spec.fields), default=UNPARTITIONED_LAST_PARTITION_ID),
        sort_orders_json=({"order-id": 0, "fields": []} if sort_order is None else sort_order_json(sort_order),),
        default_sort_order_id=0 if sort_order is None else sort_order.order_id,
        properties=dict(properties),
    )


def sort_order_json(order: SortOrder) -> dict[str, Any]:
    """A sort order as metadata JSON holds it."""
    return json.loads(order.model_dump_json())


def check_schema_fits_version(schema: Schema, format_version: int) -> None:
    """InvalidArgumentError for what only format v3 has (nanosecond timestamps, `unknown`,
    default values) in a schema of an older table."""
    if format_version >= 3:
        return
    for f in all_fields(schema.fields):
        if isinstance(f.field_type, (TimestampNanoType, TimestamptzNanoType, UnknownType)):
            what = f"type {f.field_type}"
        elif f.initial_default is not None or f.write_default is not None:
            what = "a default value"
        else:
            continue
        raise InvalidArgumentError(
            f"column {f.name!r} has {what}, which needs table format v3; this table is v{format_version} "
            "(create it with format_version=3, or upgrade(format_version=3) first)"
        )


def all_fields(fields: tuple[NestedField, ...] | list[NestedField]) -> list[NestedField]:
    out: list[NestedField] = []
    for f in fields:
        out.append(f)
        t = f.field_type
        if isinstance(t, StructType):
            out += all_fields(t.fields)
        elif isinstance(t, ListType):
            out += all_fields([t.element_field])
        elif isinstance(t, MapType):
            out += all_fields([t.key_field, t.value_field])
    return out


def check_format_version(version: object) -> None:
    if isinstance(version, bool) or version not in SUPPORTED_FORMAT_VERSIONS:
        raise InvalidArgumentError(f"format_version must be one of {SUPPORTED_FORMAT_VERSIONS}, not {version!r}")


def parse_format_version(value: object) -> int:
    """A format version given as an int or as the text of a table property."""
    try:
        version = int(value) if isinstance(value, str) else value
    except ValueError:
        version = value
    check_format_version(version)
    return int(cast(SupportsInt, version))  # checked: a number equal to a supported version


def upgraded(base: TableMetadata, format_version: int) -> TableMetadata:
    """The table at a higher format version. Nothing already written changes: snapshots made
    before v3 keep no row ids, and row ids start at 0 (the spec's rule for upgrades)."""
    check_format_version(format_version)
    if format_version < base.format_version:
        raise InvalidArgumentError(f"cannot downgrade a v{base.format_version} table to v{format_version}")
    if format_version == base.format_version:
        return base
    return replace(base, format_version=format_version, next_row_id=0, last_updated_ms=max(now_ms(), base.last_updated_ms + 1))


def with_snapshot(base: TableMetadata, snapshot: Snapshot) -> TableMetadata:
    """Add `snapshot` and make it the head of main (and, in v3, move next-row-id past the
    row ids it reserved)."""
    next_row_id = base.next_row_id
    if snapshot.first_row_id is not None:
        next_row_id = snapshot.first_row_id + (snapshot.added_rows or 0)
    return replace(
        base,
        next_row_id=next_row_id,
        last_sequence_number=snapshot.sequence_number,
        last_updated_ms=max(snapshot.timestamp_ms, base.last_updated_ms),
        current_snapshot_id=snapshot.snapshot_id,
        snapshots=base.snapshots + (snapshot,),
        snapshot_log=base.snapshot_log + ((snapshot.timestamp_ms, snapshot.snapshot_id),),
        refs={**base.refs, MAIN_BRANCH: moved_ref(base.refs.get(MAIN_BRANCH), snapshot.snapshot_id)},
    )


def moved_ref(ref: dict[str, Any] | None, snapshot_id: int) -> dict[str, Any]:
    """The branch `ref` pointing at `snapshot_id`, every other field it has kept: Iceberg Java
    stores a branch's retention (`min-snapshots-to-keep`, `max-snapshot-age-ms`,
    `max-ref-age-ms`) there, and a commit that dropped it would change how the table expires."""
    return {**(ref or {}), "snapshot-id": snapshot_id, "type": "branch"}


def with_previous_file(new: TableMetadata, previous_location: str | None, previous: TableMetadata | None) -> TableMetadata:
    """Record the metadata file this version replaces, keeping the log bounded by the table property."""
    if previous_location is None or previous is None:
        return new
    keep = int(new.properties.get(METADATA_PREVIOUS_VERSIONS_MAX, "100"))
    log = previous.metadata_log + ((previous.last_updated_ms, previous_location),)
    return replace(new, metadata_log=log[-keep:] if keep > 0 else ())


def now_ms() -> int:
    return int(time.time() * 1000)


def with_spec(base: TableMetadata, spec: PartitionSpec) -> TableMetadata:
    """Add a partition spec (not as the default). Idempotent for a spec already present."""
    existing = base.specs().get(spec.spec_id)
    if existing is not None:
        if existing.fields != spec.fields:
            raise CorruptMetadataError(f"partition spec {spec.spec_id} already exists with other fields")
        return base
    last_partition_id = max([base.last_partition_id, *(f.field_id for f in spec.fields)])
    return replace(base, partition_specs=base.partition_specs + (spec,), last_partition_id=last_partition_id)


def unpartitioned_spec(base: TableMetadata) -> PartitionSpec:
    """The table's spec with no fields, or a new one to add (for table-wide equality deletes)."""
    for spec in base.partition_specs:
        if not spec.fields:
            return spec
    return PartitionSpec(spec_id=max(s.spec_id for s in base.partition_specs) + 1)


def same_schema(a: Schema, b: Schema) -> bool:
    """The same fields (ids, names, types, requiredness, docs, order) and identifier fields;
    schema ids aside."""
    return tuple(a.fields) == tuple(b.fields) and sorted(a.identifier_field_ids) == sorted(b.identifier_field_ids)


def with_schema(base: TableMetadata, schema: Schema, last_column_id: int | None = None) -> TableMetadata:
    """Make `schema` current: an identical schema already in the table is reused with its id
    (as Iceberg does), otherwise it is added with the next schema id. `last-column-id` rises
    to cover the schema's field ids (and `last_column_id`, the ids handed out for it)."""
    existing = next((s for s in base.schemas if same_schema(s, schema)), None)
    schemas = base.schemas
    if existing is None:
        schema_id = max(s.schema_id for s in base.schemas) + 1
        existing = Schema(*schema.fields, schema_id=schema_id, identifier_field_ids=list(schema.identifier_field_ids))
        schemas = schemas + (existing,)
    highest = max(base.last_column_id, schema.highest_field_id, last_column_id or 0)
    return replace(
        base,
        schemas=schemas,
        current_schema_id=existing.schema_id,
        last_column_id=highest,
        last_updated_ms=max(now_ms(), base.last_updated_ms),
    )
