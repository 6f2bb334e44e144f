"""Avro schemas of manifests and manifest lists (Iceberg v2 and v3), with field ids.

Maps with int keys are arrays of key/value records named `k<key-id>_v<value-id>` with
`logicalType: map`; nested records are named `r<field-id>`; optional fields are unions with
null and default null. fastavro keeps the custom `field-id`/`element-id` attributes.
"""

from __future__ import annotations

from typing import Any

from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IcebergType,
    IntegerType,
    LongType,
    StringType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
    UUIDType,
)
from pyiceberg.utils.decimal import decimal_required_bytes

from mor.errors import UnsupportedFeatureError
from mor.format.partition_values import avro_field_name


def _optional(field_id: int, name: str, avro_type: Any, doc: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "type": ["null", avro_type], "default": None, "field-id": field_id}
    if doc:
        out["doc"] = doc
    return out


def _required(field_id: int, name: str, avro_type: Any, doc: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "type": avro_type, "field-id": field_id}
    if doc:
        out["doc"] = doc
    return out


def _int_map(field_id: int, name: str, key_id: int, value_id: int, value_type: str) -> dict[str, Any]:
    items = {
        "type": "record",
        "name": f"k{key_id}_v{value_id}",
        "fields": [
            {"name": "key", "type": "int", "field-id": key_id},
            {"name": "value", "type": value_type, "field-id": value_id},
        ],
    }
    return _optional(field_id, name, {"type": "array", "logicalType": "map", "items": items})


def partition_value_avro_type(iceberg_type: IcebergType) -> Any:
    """Avro type of one partition value (the result type of its transform)."""
    if isinstance(iceberg_type, BooleanType):
        return "boolean"
    if isinstance(iceberg_type, IntegerType):
        return "int"
    if isinstance(iceberg_type, LongType):
        return "long"
    if isinstance(iceberg_type, FloatType):
        return "float"
    if isinstance(iceberg_type, DoubleType):
        return "double"
    if isinstance(iceberg_type, DateType):
        return {"type": "int", "logicalType": "date"}
    if isinstance(iceberg_type, TimeType):
        return {"type": "long", "logicalType": "time-micros"}
    if isinstance(iceberg_type, TimestamptzType):
        return {"type": "long", "logicalType": "timestamp-micros", "adjust-to-utc": True}
    if isinstance(iceberg_type, TimestampType):
        return {"type": "long", "logicalType": "timestamp-micros", "adjust-to-utc": False}
    if isinstance(iceberg_type, (TimestampNanoType, TimestamptzNanoType)):
        return {"type": "long", "logicalType": "timestamp-nanos", "adjust-to-utc": isinstance(iceberg_type, TimestamptzNanoType)}
    if isinstance(iceberg_type, StringType):
        return "string"
    if isinstance(iceberg_type, BinaryType):
        return "bytes"
    if isinstance(iceberg_type, UUIDType):
        return {"type": "fixed", "name": "uuid_fixed", "size": 16, "logicalType": "uuid"}
    if isinstance(iceberg_type, FixedType):
        return {"type": "fixed", "name": f"fixed_{len(iceberg_type)}", "size": len(iceberg_type)}
    if isinstance(iceberg_type, DecimalType):
        # The spec's Avro form: fixed of the fewest bytes that hold the precision (named as Java does).
        p, s = iceberg_type.precision, iceberg_type.scale
        return {"type": "fixed", "name": f"decimal_{p}_{s}", "size": decimal_required_bytes(p),
                "logicalType": "decimal", "precision": p, "scale": s}  # fmt: skip
    raise UnsupportedFeatureError(f"partition values of type {iceberg_type} are not supported")


def partition_record_schema(spec: PartitionSpec, schema: Schema) -> dict[str, Any]:
    fields, named = [], set()
    for f in spec.partition_type(schema).fields:
        avro_type = partition_value_avro_type(f.field_type)
        if isinstance(avro_type, dict) and "name" in avro_type:
            # Avro defines a named type (two uuid or decimal(9, 2) fields) once, then refers to it.
            avro_type, first = avro_type["name"], avro_type
            if avro_type not in named:
                named.add(avro_type)
                avro_type = first
        field = _optional(f.field_id, avro_field_name(f.name), avro_type)
        if field["name"] != f.name:
            field["iceberg-field-name"] = f.name  # as Iceberg Java keeps the original name
        fields.append(field)
    return {"type": "record", "name": "r102", "fields": fields}


def manifest_entry_schema(spec: PartitionSpec, schema: Schema, format_version: int = 2) -> dict[str, Any]:
    # v3 adds row lineage (first_row_id) and the blob of a deletion vector in its Puffin file.
    v3_fields = [
        _optional(142, "first_row_id", "long", "The first row ID assigned to the first row in the data file"),
        _optional(143, "referenced_data_file", "string"),
        _optional(144, "content_offset", "long", "The offset in the file where the content starts"),
        _optional(145, "content_size_in_bytes", "long", "The length of referenced content stored in the file"),
    ]
    data_file = {
        "type": "record",
        "name": "r2",
        "fields": [
            _required(134, "content", "int", "Contents of the file: 0=data, 1=position deletes, 2=equality deletes"),
            _required(100, "file_path", "string", "Location URI with FS scheme"),
            _required(101, "file_format", "string", "File format name: avro, orc, or parquet"),
            _required(102, "partition", partition_record_schema(spec, schema), "Partition data tuple"),
            _required(103, "record_count", "long", "Number of records in the file"),
            _required(104, "file_size_in_bytes", "long", "Total file size in bytes"),
            _int_map(108, "column_sizes", 117, 118, "long"),
            _int_map(109, "value_counts", 119, 120, "long"),
            _int_map(110, "null_value_counts", 121, 122, "long"),
            _int_map(137, "nan_value_counts", 138, 139, "long"),
            _int_map(125, "lower_bounds", 126, 127, "bytes"),
            _int_map(128, "upper_bounds", 129, 130, "bytes"),
            _optional(131, "key_metadata", "bytes"),
            _optional(132, "split_offsets", {"type": "array", "items": "long", "element-id": 133}),
            _optional(135, "equality_ids", {"type": "array", "items": "int", "element-id": 136}),
            _optional(140, "sort_order_id", "int"),
            *(v3_fields if format_version >= 3 else [_optional(143, "referenced_data_file", "string")]),
        ],
    }
    if format_version == 1:
        return _v1_manifest_entry(data_file)
    return {
        "type": "record",
        "name": "manifest_entry",
        "fields": [
            _required(0, "status", "int"),
            _optional(1, "snapshot_id", "long"),
            _optional(3, "sequence_number", "long"),
            _optional(4, "file_sequence_number", "long"),
            _required(2, "data_file", data_file),
        ],
    }


# v1 data files carry a block size, which v2 dropped; Iceberg Java writes this constant.
V1_BLOCK_SIZE_BYTES = 64 * 1024 * 1024


def _v1_manifest_entry(data_file: dict[str, Any]) -> dict[str, Any]:
    """The v1 manifest entry: a required snapshot id, no sequence numbers, and data files
    without content, equality ids or a referenced data file, with `block_size_in_bytes`."""
    dropped = {"content", "equality_ids", "referenced_data_file"}
    fields = [f for f in data_file["fields"] if f["name"] not in dropped]
    at = next(i for i, f in enumerate(fields) if f["name"] == "file_size_in_bytes") + 1
    fields.insert(at, _required(105, "block_size_in_bytes", "long", "Deprecated. Always write a default in v1"))
    return {
        "type": "record",
        "name": "manifest_entry",
        "fields": [
            _required(0, "status", "int"),
            _required(1, "snapshot_id", "long"),
            _required(2, "data_file", {**data_file, "fields": fields}),
        ],
    }


MANIFEST_FILE_SCHEMA_V2: dict[str, Any] = {
    "type": "record",
    "name": "manifest_file",
    "fields": [
        _required(500, "manifest_path", "string", "Location URI with FS scheme"),
        _required(501, "manifest_length", "long", "Total file size in bytes"),
        _required(502, "partition_spec_id", "int", "Spec ID used to write"),
        _required(517, "content", "int", "Contents of the manifest: 0=data, 1=deletes"),
        _required(515, "sequence_number", "long", "Sequence number when the manifest was added"),
        _required(516, "min_sequence_number", "long", "Lowest sequence number in the manifest"),
        _required(503, "added_snapshot_id", "long", "Snapshot ID that added the manifest"),
        _required(504, "added_files_count", "int", "Added entry count"),
        _required(505, "existing_files_count", "int", "Existing entry count"),
        _required(506, "deleted_files_count", "int", "Deleted entry count"),
        _required(512, "added_rows_count", "long", "Added rows count"),
        _required(513, "existing_rows_count", "long", "Existing rows count"),
        _required(514, "deleted_rows_count", "long", "Deleted rows count"),
        _optional(
            507,
            "partitions",
            {
                "type": "array",
                "element-id": 508,
                "items": {
                    "type": "record",
                    "name": "r508",
                    "fields": [
                        _required(509, "contains_null", "boolean"),
                        _optional(518, "contains_nan", "boolean"),
                        _optional(510, "lower_bound", "bytes"),
                        _optional(511, "upper_bound", "bytes"),
                    ],
                },
            },
            "Summary for each partition",
        ),
        _optional(519, "key_metadata", "bytes"),
    ],
}

# v1 lists: no content (data manifests only), no sequence numbers, the counts optional.
MANIFEST_FILE_SCHEMA_V1: dict[str, Any] = {
    **MANIFEST_FILE_SCHEMA_V2,
    "fields": [
        {**f, "type": ["null", f["type"]], "default": None} if f["name"].endswith("_count") else f
        for f in MANIFEST_FILE_SCHEMA_V2["fields"]
        if f["name"] not in ("content", "sequence_number", "min_sequence_number")
    ],
}

MANIFEST_FILE_SCHEMA_V3: dict[str, Any] = {
    **MANIFEST_FILE_SCHEMA_V2,
    "fields": [
        *MANIFEST_FILE_SCHEMA_V2["fields"],
        _optional(520, "first_row_id", "long", "Starting row ID to assign to new rows in ADDED data files"),
    ],
}
