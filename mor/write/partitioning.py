"""Split Arrow data by partition value (transforms run on Arrow arrays via pyiceberg-core)."""

from __future__ import annotations

import re
import struct
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import TimeTransform, Transform, parse_transform
from pyiceberg.types import (
    IcebergType,
    ListType,
    MapType,
    NestedField,
    StructType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
)

from mor.errors import InvalidArgumentError, SchemaMismatchError, UnsupportedFeatureError
from mor.format.content_file import PartitionValues
from mor.format.partition_values import to_internal
from mor.format.spec import PARTITION_FIELD_ID_START

_ROW = "__mor_row"


TRANSFORMS = ("identity", "bucket", "truncate", "year", "month", "day", "hour", "void")
_WITH_NUMBER = ("bucket", "truncate")
_SYNTAX = "a column, or year/month/day/hour(col), bucket(N, col), truncate(W, col), void(col)"
_PLURALS = {"years": "year", "months": "month", "days": "day", "hours": "hour"}
_DIGITS = re.compile(r"[0-9]+")  # ASCII only: str.isdigit() also takes '²', which int() refuses
INT32_MAX = 2**31 - 1
_TRANSFORM_TEXT = re.compile(r"^\s*([A-Za-z]+)\s*(?:\[([^\]]*)\]|\(([^)]*)\))?\s*$")


def parse_partition_by(schema: Schema, partition_by: list[str] | None) -> PartitionSpec:
    """`["category", "day(ts)", "bucket(16, id)", "truncate(4, name)"]` -> a PartitionSpec.
    InvalidArgumentError naming the term (and the column) that is wrong."""
    if partition_by is None:
        partition_by = []
    if isinstance(partition_by, str) or not isinstance(partition_by, (list, tuple)):
        raise InvalidArgumentError(f"partition_by is a list of terms like ['category', 'day(ts)'], got {partition_by!r}")
    fields: list[PartitionField] = []
    for i, text in enumerate(partition_by):
        source, transform, name = partition_term(schema, text)
        for f in fields:
            if (f.source_id, f.transform) == (source.field_id, transform) or f.name == name:
                raise InvalidArgumentError(f"partition term {text!r} repeats an earlier term ({f.name})")
        fields.append(PartitionField(source.field_id, PARTITION_FIELD_ID_START + i, transform, name))
    return PartitionSpec(*fields, spec_id=0)


def partition_term(schema: Schema, text: object) -> tuple[NestedField, Transform[Any, Any], str]:
    """(source column, transform, partition field name) of one term."""
    if not isinstance(text, str) or not text.strip():
        raise InvalidArgumentError(f"partition term {text!r} is not a term: write {_SYNTAX}")
    column, transform_name, number = _split_term(text)
    return resolve_partition_term(schema, column, transform_name, number, text)


def resolve_partition_term(
    schema: Schema, column: str, transform_name: str, number: str, text: str
) -> tuple[NestedField, Transform[Any, Any], str]:
    """(source column, transform, default partition field name) of `transform_name[number]`
    on `column`; `text` is how the caller wrote it, for the error messages."""
    transform_name = _PLURALS.get(transform_name, transform_name)
    if transform_name not in TRANSFORMS:
        raise InvalidArgumentError(f"partition term {text!r}: unknown transform {transform_name!r}; write {_SYNTAX}")
    if (transform_name in _WITH_NUMBER) != bool(number):
        raise InvalidArgumentError(f"partition term {text!r}: write {_SYNTAX}")
    if number and (_DIGITS.fullmatch(number) is None or not 1 <= int(number) <= INT32_MAX):
        # Iceberg stores a bucket count and a truncate width as a 32-bit int: a larger one would
        # commit, then fail every write (OverflowError) and every Java reader.
        raise InvalidArgumentError(
            f"partition term {text!r}: {transform_name} needs a whole number of at least 1 and at most {INT32_MAX}, got {number!r}"
        )
    try:
        source = schema.find_field(column)
    except ValueError:
        raise InvalidArgumentError(f"partition term {text!r}: the table has no column {column!r}") from None
    if source.field_id in _ids_in_lists_and_maps(schema.fields):
        raise InvalidArgumentError(f"partition term {text!r}: the Iceberg spec allows no partition source inside a list or a map")
    transform = parse_transform(f"{transform_name}[{number}]" if number else transform_name)
    if not transform.can_transform(source.field_type):
        raise InvalidArgumentError(
            f"partition term {text!r}: {transform_name} cannot apply to column {column!r} of type {source.field_type}"
        )
    # Iceberg Java names a partition field after the source's full name: `s.d`, `s.ts_day`.
    return source, transform, default_field_name(schema.find_column_name(source.field_id) or column, transform_name, number)


def _ids_in_lists_and_maps(fields: tuple[NestedField, ...], inside: bool = False) -> set[int]:
    """Ids of the fields below a list or a map, which the spec rules out as partition sources."""
    ids = set()
    for f in fields:
        if inside:
            ids.add(f.field_id)
        t = f.field_type
        if isinstance(t, StructType):
            ids |= _ids_in_lists_and_maps(t.fields, inside)
        elif isinstance(t, ListType):
            ids |= _ids_in_lists_and_maps((t.element_field,), True)
        elif isinstance(t, MapType):
            ids |= _ids_in_lists_and_maps((t.key_field, t.value_field), True)
    return ids


def default_field_name(column: str, transform_name: str, number: str = "") -> str:
    """`category`, `ts_day`, `id_bucket_16`, `name_truncate_4`; a void field is `<column>_null`."""
    if transform_name == "identity":
        return column
    if transform_name == "void":
        return f"{column}_null"
    return f"{column}_{transform_name}" + (f"_{number}" if number else "")


def split_transform(text: str) -> tuple[str, str]:
    """`"bucket[16]"` or `"bucket(16)"` -> ("bucket", "16"); `"day"` -> ("day", "")."""
    match = _TRANSFORM_TEXT.match(text)
    if match is None:
        raise InvalidArgumentError(f"transform {text!r}: write identity, year, month, day, hour, void, bucket[N] or truncate[W]")
    return match.group(1).lower(), (match.group(2) or match.group(3) or "").strip()


def split_partition_terms(text: str) -> list[str]:
    """`"category, day(ts), bucket(16, id)"` -> `["category", "day(ts)", "bucket(16, id)"]`:
    split on the commas outside parentheses."""
    if not text.strip():
        return []
    terms, depth, start = [], 0, 0
    for i, char in enumerate(text + ","):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth < 0 or (i == len(text) and depth):
            raise InvalidArgumentError(f"unbalanced parentheses in partition terms {text!r}")
        if char == "," and depth == 0:
            terms.append(text[start:i].strip())
            start = i + 1
    if not all(terms):
        raise InvalidArgumentError(f"empty partition term in {text!r}")
    return terms


def _split_term(text: str) -> tuple[str, str, str]:
    text = text.strip()
    if "(" not in text:
        return text, "identity", ""
    if not text.endswith(")"):
        raise InvalidArgumentError(f"partition term {text!r}: write {_SYNTAX}")
    transform, inner = text[:-1].split("(", 1)
    parts = [p.strip() for p in inner.split(",")]
    transform = _PLURALS.get(transform.strip(), transform.strip())
    if len(parts) == 1:
        return parts[0], transform, ""
    if len(parts) == 2:
        return parts[1], transform, parts[0]
    raise InvalidArgumentError(f"partition term {text!r}: write {_SYNTAX}")


def partition_column(field: PartitionField, schema: Schema, data: pa.Table) -> pa.Array:
    source = schema.find_field(field.source_id)
    source_type, values = source.field_type, source_values(schema, field.source_id, data)
    if isinstance(source_type, (TimestampNanoType, TimestamptzNanoType)) and isinstance(field.transform, TimeTransform):
        # pyiceberg-core's hour transform takes no zoned nanoseconds; a year, month, day or
        # hour is the same of the instant's microsecond (rounded down).
        source_type, values = _floor_micros(source_type, values)
    try:
        fn = field.transform.pyarrow_transform(source_type)
    except (NotImplementedError, ModuleNotFoundError) as e:
        raise UnsupportedFeatureError(f"partition transform {field.transform} on Arrow data: {e}") from e
    column = fn(values)
    if pa.types.is_decimal(column.type):
        _check_precision(field, source, column)
    return column


def _floor_micros(source_type: IcebergType, values: pa.Array) -> tuple[IcebergType, pa.Array]:
    nanos = values.cast(pa.int64())
    floored = pc.divide(pc.subtract(nanos, pc.if_else(pc.less(nanos, 0), 999, 0)), 1000)  # divide rounds toward 0
    utc = isinstance(source_type, TimestamptzNanoType)
    micros_type = TimestamptzType() if utc else TimestampType()
    return micros_type, floored.cast(pa.timestamp("us", tz="UTC" if utc else None))


def source_values(schema: Schema, source_id: int, data: pa.Table) -> pa.Array:
    """The values of the partition source `source_id` in `data` (columns named as in `schema`):
    a top-level column, or a field of struct columns, null where an enclosing struct is null."""
    path = _struct_path(schema.fields, source_id)
    if path is None:
        raise InvalidArgumentError(f"partition source field {source_id} is not a column or a struct field of the schema")
    column = data.column(path[0]).combine_chunks()
    for name in path[1:]:
        column = pc.struct_field(column, name)  # unlike StructArray.field, keeps the parent's nulls
    return column


def _struct_path(fields: tuple[NestedField, ...], field_id: int) -> list[str] | None:
    """Names from the top-level column down to field `field_id` through structs (names, not a
    dotted string: a column name may itself hold a dot)."""
    for f in fields:
        if f.field_id == field_id:
            return [f.name]
        if isinstance(f.field_type, StructType):
            below = _struct_path(f.field_type.fields, field_id)
            if below is not None:
                return [f.name, *below]
    return None


def _check_precision(field: PartitionField, source: NestedField, column: pa.Array) -> None:
    """truncate(W) keeps the source's decimal type, yet can round a value past its precision
    (truncate(2) of -9999999.99 is -10000000.00, not a decimal(9, 2)). The manifest's Avro
    decimal(9, 2) cannot hold it: refuse the rows rather than write a partition readers reject."""
    try:
        column.validate(full=True)
    except pa.ArrowInvalid:
        too_wide = [v for v in column.to_pylist() if v is not None and len(v.as_tuple().digits) > column.type.precision]
        raise SchemaMismatchError(
            f"partition field {field.name!r}: {field.transform} of column {source.name!r} gives {too_wide[0] if too_wide else 'a value'}, "
            f"which does not fit the partition type {source.field_type}"
        ) from None


def partition_key(values: PartitionValues) -> tuple[Any, ...]:
    """`values` as a dict key that keeps -0.0 and 0.0 apart (and one NaN equal to another), as
    `_grouping_key` does."""
    return tuple(("float", struct.pack(">d", v) if v == v else b"nan") if isinstance(v, float) else v for v in values)


def _grouping_key(column: pa.Array) -> pa.Array:
    """What rows of one partition share. Floats group by their bits (one NaN): -0.0 and 0.0 are
    equal to group_by, yet they are two identity partitions, and readers that take an identity
    column's value from the partition (Iceberg Java) must get back what was written."""
    if not pa.types.is_floating(column.type):
        return column
    canonical = pc.if_else(pc.is_nan(column), pa.scalar(float("nan"), column.type), column)
    return canonical.view(pa.int32() if column.type.bit_width == 32 else pa.int64())


def _internal_storage(column: pa.Array) -> pa.Array:
    """Timestamps as the integers Iceberg keeps (micros, or nanos for timestamp_ns): Python's
    datetime would cut nanoseconds."""
    return column.cast(pa.int64()) if pa.types.is_timestamp(column.type) else column


def split_by_partition(spec: PartitionSpec, schema: Schema, data: pa.Table) -> Iterator[tuple[PartitionValues, pa.Table]]:
    """(partition values, rows) for each partition present in `data`, in a stable order."""
    if not spec.fields:
        yield (), data
        return
    keys = {f"p{i}": partition_column(f, schema, data) for i, f in enumerate(spec.fields)}
    key_table = pa.table({**{k: _grouping_key(c) for k, c in keys.items()}, _ROW: pa.array(range(data.num_rows), pa.int64())})
    groups = key_table.group_by(list(keys), use_threads=False).aggregate([(_ROW, "list")])
    groups = groups.sort_by([(k, "ascending") for k in keys])
    columns = [_internal_storage(groups.column(k).combine_chunks().view(keys[k].type)) for k in keys]
    for row in range(groups.num_rows):
        values = tuple(to_internal(c[row].as_py()) for c in columns)
        indices = groups.column(f"{_ROW}_list")[row].values
        yield values, data.take(pc.cast(indices, pa.int64()))
