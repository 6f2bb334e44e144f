"""The Iceberg <-> Arrow type mapping: the Arrow type mor reads and writes for each Iceberg type,
and a new Iceberg schema (fresh field ids) for a user's Arrow schema. Types only: no compute."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from itertools import count

import pyarrow as pa
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
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
    UnknownType,
    UUIDType,
)

from mor.errors import SchemaMismatchError

FIELD_ID_KEY = b"PARQUET:field_id"

# Names of the metadata columns engines read next to a table's own (Iceberg's `_file` and
# `_pos`, and the v3 row lineage): a top-level table column of one of these names could not
# be told apart from them, so mor creates none (a table another engine made stays readable).
RESERVED_COLUMNS = ("_file", "_pos", "_row_id", "_last_updated_sequence_number")

_PRIMITIVE_TO_ARROW: dict[type, pa.DataType] = {
    BooleanType: pa.bool_(),
    IntegerType: pa.int32(),
    LongType: pa.int64(),
    FloatType: pa.float32(),
    DoubleType: pa.float64(),
    DateType: pa.date32(),
    TimeType: pa.time64("us"),
    TimestampType: pa.timestamp("us"),
    TimestamptzType: pa.timestamp("us", tz="UTC"),
    TimestampNanoType: pa.timestamp("ns"),  # format v3
    TimestamptzNanoType: pa.timestamp("ns", tz="UTC"),  # format v3
    UnknownType: pa.null(),  # format v3: always null, and stored in no data file
    StringType: pa.string(),
    UUIDType: pa.binary(16),
    BinaryType: pa.binary(),
}


def to_arrow_type(t: IcebergType, in_parquet: bool = False) -> pa.DataType:
    """The Arrow type mor reads and takes for `t` (uuid: 16 bytes); `in_parquet`: the type it is
    written to Parquet as (uuid: Arrow's uuid extension, which Parquet annotates as UUID, as the
    spec's type mapping asks and Iceberg Java needs to read it as a uuid)."""
    if in_parquet and isinstance(t, UUIDType):
        return pa.uuid()
    if type(t) in _PRIMITIVE_TO_ARROW:
        return _PRIMITIVE_TO_ARROW[type(t)]
    if isinstance(t, DecimalType):
        return pa.decimal128(t.precision, t.scale)
    if isinstance(t, FixedType):
        return pa.binary(len(t))
    if isinstance(t, StructType):
        return pa.struct([to_arrow_field(f, in_parquet) for f in t.fields])
    if isinstance(t, ListType):
        return pa.list_(to_arrow_field(t.element_field, in_parquet))
    if isinstance(t, MapType):
        return pa.map_(to_arrow_field(t.key_field, in_parquet), to_arrow_field(t.value_field, in_parquet))
    raise SchemaMismatchError(f"no Arrow type for Iceberg type {t}")


def default_array(f: NestedField, length: int, write: bool = False) -> pa.Array:
    """`length` copies of the field's default (v3: `initial-default`, what readers give rows of
    files written before the field existed; `write`: `write-default`, what writers give rows
    that do not supply it), nulls when it has none."""
    value = f.write_default if write else f.initial_default
    arrow_type = to_arrow_type(f.field_type)
    if value is None:
        return pa.nulls(length, arrow_type)
    if isinstance(value, uuid.UUID):
        value = value.bytes
    return pa.array([value] * length, arrow_type)


def to_arrow_field(f: NestedField, in_parquet: bool = False) -> pa.Field:
    return pa.field(f.name, to_arrow_type(f.field_type, in_parquet), nullable=not f.required, metadata={FIELD_ID_KEY: str(f.field_id)})


def to_arrow_schema(schema: Schema, in_parquet: bool = False) -> pa.Schema:
    """The Arrow schema of `schema`; `in_parquet`: of the data files written for it, which hold
    no column of type `unknown` (the spec keeps those out of files: they read as null)."""
    fields = [f for f in schema.fields if not (in_parquet and isinstance(f.field_type, UnknownType))]
    return pa.schema([to_arrow_field(f, in_parquet) for f in fields])


def to_parquet_rows(rows: pa.Table, parquet_schema: pa.Schema) -> pa.Table:
    """`rows` (in mor's Arrow types) as the Parquet writer takes them (`to_arrow_schema(...,
    in_parquet=True)`): uuid columns become the uuid extension type, `unknown` ones are left
    out; nothing else changes."""
    if rows.schema.equals(parquet_schema):
        return rows
    return rows.select(parquet_schema.names).cast(parquet_schema)


def from_arrow_schema(arrow_schema: pa.Schema) -> Schema:
    """A new Iceberg schema with fresh ids (1..n, depth first) for a user's Arrow schema."""
    if not isinstance(arrow_schema, pa.Schema):
        raise SchemaMismatchError(f"expected a pyarrow.Schema, got {type(arrow_schema).__name__}")
    _check_names(list(arrow_schema), "")
    ids = count(1)
    top_ids = [next(ids) for _ in arrow_schema]  # top-level fields first, as Iceberg does
    fields = [_to_nested(f, fid, ids) for f, fid in zip(arrow_schema, top_ids)]
    return Schema(*fields, schema_id=0)


def _check_names(fields: list[pa.Field], parent: str) -> None:
    """Column names must be non-empty and unique among their siblings (in structs too)."""
    seen: set[str] = set()
    for f in fields:
        path = f"{parent}{f.name}"
        if not f.name.strip():
            raise SchemaMismatchError(f"column names must not be empty or blank, got {path!r}")
        if f.name in seen:
            raise SchemaMismatchError(f"column {path!r} appears twice in the schema")
        if not parent and f.name in RESERVED_COLUMNS:
            raise SchemaMismatchError(reserved_message(f.name))
        seen.add(f.name)
        if pa.types.is_struct(f.type):
            _check_names(list(f.type), f"{path}.")


def reserved_message(name: str) -> str:
    return f"column name {name!r} is reserved for a metadata column ({', '.join(RESERVED_COLUMNS)}); choose another name"


def _to_nested(f: pa.Field, field_id: int, ids: Iterator[int]) -> NestedField:
    return NestedField(field_id, f.name, _from_arrow_type(f.type, ids), required=not f.nullable)


def _from_arrow_type(t: pa.DataType, ids: Iterator[int]) -> IcebergType:
    if isinstance(t, pa.UuidType):
        return UUIDType()  # (read back as its storage, binary(16), the Arrow type of uuid here)
    if pa.types.is_boolean(t):
        return BooleanType()
    if pa.types.is_int8(t) or pa.types.is_int16(t) or pa.types.is_int32(t) or pa.types.is_uint8(t) or pa.types.is_uint16(t):
        return IntegerType()
    if pa.types.is_int64(t) or pa.types.is_uint32(t):
        return LongType()
    if pa.types.is_float32(t):
        return FloatType()
    if pa.types.is_float64(t):
        return DoubleType()
    if pa.types.is_decimal(t):
        return DecimalType(t.precision, t.scale)
    if pa.types.is_date32(t) or pa.types.is_date64(t):
        return DateType()
    if pa.types.is_time(t):
        return TimeType()
    if pa.types.is_timestamp(t):
        return TimestamptzType() if t.tz is not None else TimestampType()
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return StringType()
    if pa.types.is_fixed_size_binary(t):
        return FixedType(t.byte_width)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return BinaryType()
    if pa.types.is_struct(t):
        top = [next(ids) for _ in range(t.num_fields)]
        return StructType(*[_to_nested(t.field(i), top[i], ids) for i in range(t.num_fields)])
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        element_id = next(ids)
        v = t.value_field
        return ListType(element_id, _from_arrow_type(v.type, ids), element_required=not v.nullable)
    if pa.types.is_map(t):
        key_id, value_id = next(ids), next(ids)
        return MapType(
            key_id,
            _from_arrow_type(t.key_type, ids),
            value_id,
            _from_arrow_type(t.item_type, ids),
            value_required=not t.item_field.nullable,
        )
    raise SchemaMismatchError(f"Arrow type {t} has no Iceberg equivalent")
