"""Iceberg schema -> Spark schema, and Arrow batches in exactly the Arrow schema Spark expects.

Spark checks only the first batch of a Python data source against
`to_arrow_schema(spark_schema)` (types, time zones and nullability), so every batch is cast to
that schema here. Types follow Iceberg's Spark mapping: timestamptz is TIMESTAMP (UTC),
timestamp is TIMESTAMP_NTZ, uuid is STRING, fixed is BINARY.
"""

from __future__ import annotations

import uuid

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
    TimestampType,
    TimestamptzType,
    TimeType,
    UUIDType,
)
from pyspark.sql import types as st
from pyspark.sql.pandas.types import to_arrow_schema

from mor.errors import SchemaMismatchError, UnsupportedFeatureError

_PRIMITIVES: dict[type, st.DataType] = {
    BooleanType: st.BooleanType(),
    IntegerType: st.IntegerType(),
    LongType: st.LongType(),
    FloatType: st.FloatType(),
    DoubleType: st.DoubleType(),
    DateType: st.DateType(),
    TimestampType: st.TimestampNTZType(),
    TimestamptzType: st.TimestampType(),
    StringType: st.StringType(),
    UUIDType: st.StringType(),
    BinaryType: st.BinaryType(),
}


def spark_type(t: IcebergType) -> st.DataType:
    if type(t) in _PRIMITIVES:
        return _PRIMITIVES[type(t)]
    if isinstance(t, DecimalType):
        return st.DecimalType(t.precision, t.scale)
    if isinstance(t, FixedType):
        return st.BinaryType()
    if isinstance(t, TimeType):
        return st.TimeType(6)
    if isinstance(t, StructType):
        return st.StructType([spark_field(f) for f in t.fields])
    if isinstance(t, ListType):
        return st.ArrayType(spark_type(t.element_type), containsNull=not t.element_required)
    if isinstance(t, MapType):
        return st.MapType(spark_type(t.key_type), spark_type(t.value_type), valueContainsNull=not t.value_required)
    raise UnsupportedFeatureError(f"no Spark type for Iceberg type {t}")


def spark_field(f: NestedField) -> st.StructField:
    return st.StructField(f.name, spark_type(f.field_type), nullable=not f.required)


def spark_schema(schema: Schema) -> st.StructType:
    return st.StructType([spark_field(f) for f in schema.fields])


def spark_arrow_schema(schema: st.StructType) -> pa.Schema:
    """The Arrow schema Spark checks Python data source batches against."""
    return to_arrow_schema(schema, timezone="UTC")


def check_requested_schema(requested: st.StructType, table_schema: Schema) -> list[str]:
    """The table columns a user's `.schema(...)` names, in its order; SchemaMismatchError
    when it names a column the table lacks or gives a column another type."""
    by_name = {f.name: f for f in table_schema.fields}
    by_lower = {f.name.lower(): f for f in table_schema.fields}
    names = []
    for field in requested.fields:
        column = by_name.get(field.name) or by_lower.get(field.name.lower())
        if column is None:
            raise SchemaMismatchError(f"column {field.name!r} is not in the table (columns: {list(by_name)})")
        expected = spark_type(column.field_type)
        if not _same_type(field.dataType, expected):
            raise SchemaMismatchError(
                f"column {field.name!r} is {expected.simpleString()} in the table, not {field.dataType.simpleString()}"
            )
        names.append(column.name)
    return names


def _same_type(a: st.DataType, b: st.DataType) -> bool:
    """Types equal up to nullability (a user schema may call a required column nullable)."""
    if isinstance(a, st.StructType) and isinstance(b, st.StructType):
        return len(a.fields) == len(b.fields) and all(
            x.name == y.name and _same_type(x.dataType, y.dataType) for x, y in zip(a.fields, b.fields)
        )
    if isinstance(a, st.ArrayType) and isinstance(b, st.ArrayType):
        return _same_type(a.elementType, b.elementType)
    if isinstance(a, st.MapType) and isinstance(b, st.MapType):
        return _same_type(a.keyType, b.keyType) and _same_type(a.valueType, b.valueType)
    return a == b


def to_spark_batch(batch: pa.RecordBatch, target: pa.Schema) -> pa.RecordBatch:
    """`batch` (table column names) as a batch of exactly `target`, matched by name."""
    names = batch.schema.names
    lower = {n.lower(): i for i, n in enumerate(names)}
    columns = []
    for field in target:
        index = batch.schema.get_field_index(field.name)
        column = batch.column(index if index >= 0 else lower[field.name.lower()])
        if column.type != field.type:
            column = _uuid_strings(column) if _is_uuid(column.type, field.type) else column.cast(field.type)
        columns.append(column)
    if not columns:
        return pa.RecordBatch.from_pydict({}, schema=target) if batch.num_rows == 0 else _no_columns(batch.num_rows, target)
    return pa.RecordBatch.from_arrays(columns, schema=target)


def _no_columns(rows: int, target: pa.Schema) -> pa.RecordBatch:
    # A zero-column batch still has to carry its row count (count(*) reads no column).
    return pa.RecordBatch.from_struct_array(pa.array([{}] * rows, pa.struct([])))


def _is_uuid(source: pa.DataType, target: pa.DataType) -> bool:
    return pa.types.is_fixed_size_binary(source) and source.byte_width == 16 and pa.types.is_string(target)


def _uuid_strings(column: pa.Array) -> pa.Array:
    return pa.array([None if v is None else str(uuid.UUID(bytes=v)) for v in column.to_pylist()], pa.string())


def check_no_duplicates(schema: st.StructType) -> None:
    lowered = [f.name.lower() for f in schema.fields]
    if len(set(lowered)) != len(lowered):
        raise SchemaMismatchError(f"duplicate column names in {schema.simpleString()}")
