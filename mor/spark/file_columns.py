"""One data file's columns as Spark's native Parquet reader must ask for them, and the Spark
expressions that turn them into the table's columns: field resolution by id
(mor/read/field_resolution.py) written as a Spark projection.

Spark reads Parquet columns by name, so a file is read with a schema in the file's own names and
types (only the parts the table still needs: a dropped struct field is not asked for), and a
projection then renames, widens (int -> long, float -> double, decimal precision), fills nulls
for fields the file lacks (added after it was written) and rebuilds nested values whose fields
changed: structs field by field (by id), lists and maps through `transform`,
`transform_keys`/`transform_values`. Files whose columns need nothing of that cost nothing extra:
the column is passed through as read.

Nested field ids come from the file's Parquet field ids; a file without them (imported Parquet
read through the table's name mapping) is matched by name below the top level.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pyarrow as pa
from pyiceberg.schema import Schema
from pyiceberg.types import IcebergType, ListType, MapType, NestedField, StructType, TimeType, UUIDType
from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as st

from mor.errors import UnsupportedFeatureError
from mor.format.arrow_types import FIELD_ID_KEY
from mor.read.field_resolution import FileProjection
from mor.spark.types import spark_schema, spark_type

Convert = Callable[[Column], Column]


@dataclass(frozen=True)
class FileRead:
    """How to read one file's columns natively: `read_schema` (file names and Spark types of
    the file columns used) and, per requested field, the expression giving its table value."""

    read_schema: st.StructType
    columns: list[Column]


def file_read(file_schema: pa.Schema, projection: FileProjection) -> FileRead:
    """The native read of the file `file_schema` describes, for `projection`'s fields (in order)."""
    read_fields = []
    columns = []
    for c in projection.columns:
        wanted = spark_type(c.field.field_type)
        if c.column is None:  # no such field id in the file: added after it (its initial default, v3, else null)
            columns.append(F.lit(c.field.initial_default).cast(wanted).alias(c.field.name))
            continue
        file_field = file_schema.field(c.column)
        read_type, convert = _resolve(file_field.type, c.field.field_type, f"column {c.field.name!r}")
        read_fields.append(st.StructField(c.column, read_type, nullable=True))
        columns.append(convert(F.col(quoted(c.column))).alias(c.field.name))
    return FileRead(st.StructType(read_fields), columns)


def table_read(fields: list[NestedField]) -> FileRead:
    """The native read of a file written in the table's own names and types for `fields`."""
    read_schema = spark_schema(Schema(*fields))
    return FileRead(read_schema, [F.col(quoted(f.name)) for f in fields])


def quoted(name: str) -> str:
    """`name` as a Spark column reference (dots and backticks in names taken literally)."""
    return "`" + name.replace("`", "``") + "`"


def _same(column: Column) -> Column:
    return column


def _resolve(file_type: pa.DataType, target: IcebergType, where: str) -> tuple[st.DataType, Convert]:
    """(the Spark type to read the file's field as, how that becomes `target`)."""
    if isinstance(target, StructType):
        return _resolve_struct(file_type, target, where)
    if isinstance(target, ListType):
        if not (pa.types.is_list(file_type) or pa.types.is_large_list(file_type)):
            raise _mismatch(where, file_type, target)
        element_type, element = _resolve(file_type.value_type, target.element_type, f"{where} element")
        read: st.DataType = st.ArrayType(element_type, containsNull=True)
        if element is _same:
            return read, _same
        return read, lambda column: F.transform(column, element)
    if isinstance(target, MapType):
        if not pa.types.is_map(file_type):
            raise _mismatch(where, file_type, target)
        key_type, key = _resolve(file_type.key_type, target.key_type, f"{where} key")
        value_type, value = _resolve(file_type.item_type, target.value_type, f"{where} value")
        read = st.MapType(key_type, value_type, valueContainsNull=True)
        if key is _same and value is _same:
            return read, _same

        def convert_map(column: Column) -> Column:
            if key is not _same:
                column = F.transform_keys(column, lambda k, _: key(k))
            if value is not _same:
                column = F.transform_values(column, lambda _, v: value(v))
            return column

        return read, convert_map
    if isinstance(target, (UUIDType, TimeType)):
        raise UnsupportedFeatureError(f"{where}: {target} columns have no Spark type the native Parquet reader gives")
    read_type = _primitive_read_type(file_type, where)
    wanted = spark_type(target)
    if read_type == wanted:
        return read_type, _same
    return read_type, lambda column: column.cast(wanted)


def _resolve_struct(file_type: pa.DataType, target: StructType, where: str) -> tuple[st.DataType, Convert]:
    if not pa.types.is_struct(file_type):
        raise _mismatch(where, file_type, target)
    children = list(file_type)
    by_id = {_field_id(f): f for f in children if _field_id(f) is not None}
    by_name = {f.name: f for f in children} if not by_id else {}
    read_fields: list[st.StructField] = []
    parts: list[tuple[NestedField, str | None, Convert]] = []
    for child in target.fields:
        found = by_id.get(child.field_id) if by_id else by_name.get(child.name)
        if found is None:
            parts.append((child, None, _same))
            continue
        child_type, convert = _resolve(found.type, child.field_type, f"{where}.{child.name}")
        read_fields.append(st.StructField(found.name, child_type, nullable=True))
        parts.append((child, found.name, convert))
    read = st.StructType(read_fields)
    unchanged = [p[1] for p in parts] == [f.name for f in target.fields] and all(p[2] is _same for p in parts)
    if unchanged:
        return read, _same
    wanted = spark_type(target)

    def convert_struct(column: Column) -> Column:
        values = [
            (F.lit(child.initial_default).cast(spark_type(child.field_type)) if name is None else convert(column.getField(name))).alias(
                child.name
            )
            for child, name, convert in parts
        ]
        return F.when(column.isNull(), F.lit(None).cast(wanted)).otherwise(F.struct(*values))

    return read, convert_struct


def _field_id(field: pa.Field) -> int | None:
    raw = (field.metadata or {}).get(FIELD_ID_KEY)
    return None if raw is None else int(raw)


_SIMPLE: list[tuple[Callable[[pa.DataType], bool], st.DataType]] = [
    (pa.types.is_boolean, st.BooleanType()),
    (pa.types.is_int8, st.ByteType()),
    (pa.types.is_int16, st.ShortType()),
    (pa.types.is_int32, st.IntegerType()),
    (pa.types.is_int64, st.LongType()),
    (pa.types.is_float32, st.FloatType()),
    (pa.types.is_float64, st.DoubleType()),
    (pa.types.is_date32, st.DateType()),
    (pa.types.is_string, st.StringType()),
    (pa.types.is_large_string, st.StringType()),
    (pa.types.is_binary, st.BinaryType()),
    (pa.types.is_large_binary, st.BinaryType()),
    (pa.types.is_fixed_size_binary, st.BinaryType()),
]


def _primitive_read_type(file_type: pa.DataType, where: str) -> st.DataType:
    """The Spark type Spark's Parquet reader gives the file's column as."""
    for test, spark in _SIMPLE:
        if test(file_type):
            return spark
    if pa.types.is_decimal(file_type):
        return st.DecimalType(file_type.precision, file_type.scale)
    if pa.types.is_timestamp(file_type) and file_type.unit in ("ms", "us"):
        return st.TimestampType() if file_type.tz is not None else st.TimestampNTZType()
    raise UnsupportedFeatureError(f"{where}: Spark's Parquet reader cannot read {file_type} as mor does")


def _mismatch(where: str, file_type: pa.DataType, target: IcebergType) -> UnsupportedFeatureError:
    return UnsupportedFeatureError(f"{where} is {file_type} in the file, which Spark cannot read as {target}")
