"""Key columns for value-based DML (delete_rows, upsert, merge): checks and pruning."""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc
from pyiceberg.expressions import AlwaysTrue, And, BooleanExpression, GreaterThanOrEqual, IsNull, LessThanOrEqual, Or
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.types import DoubleType, FloatType, IntegerType, LongType, NestedField, PrimitiveType, StringType

from mor.errors import DuplicateKeyError, InvalidArgumentError, SchemaMismatchError, UnsupportedFeatureError
from mor.read.equality_deletes import EqualityKeySet


def key_fields(schema: Schema, names: Sequence[str]) -> list[NestedField]:
    """The table fields of equality key columns: primitive, not float or double (spec rule)."""
    if isinstance(names, str) or not isinstance(names, (list, tuple)) or not names:
        raise InvalidArgumentError(f"key columns must be a non-empty list of names, got {names!r}")
    not_names = [n for n in names if not isinstance(n, str)]
    if not_names:
        raise InvalidArgumentError(f"key columns are names (strings), got {not_names} in {list(names)}")
    if len(set(names)) != len(names):
        raise InvalidArgumentError(f"key columns repeat: {list(names)}")
    fields = []
    for name in names:
        try:
            field = schema.find_field(name)
        except ValueError:
            raise SchemaMismatchError(f"key column {name!r} is not in the table schema") from None
        if all(f.field_id != field.field_id for f in schema.fields):
            raise UnsupportedFeatureError(f"key column {name!r} is inside a struct: keys must be top-level columns")
        if not isinstance(field.field_type, PrimitiveType) or isinstance(field.field_type, (FloatType, DoubleType)):
            raise SchemaMismatchError(f"key column {name!r} has type {field.field_type}: keys must be primitive, not float/double")
        fields.append(field)
    return fields


def null_keyed(rows: pa.Table, names: Sequence[str]) -> pa.Array | None:
    """True for each row with a null in some key column: as in SQL, such a key matches no row
    (not even one with the same nulls; a null-safe match is equality deletes' rule, not a join's).
    None when no row has one."""
    mask = None
    for name in names:
        column = rows.column(name)
        if column.null_count:
            nulls = pc.is_null(column)
            mask = nulls if mask is None else pc.or_(mask, nulls)
    return None if mask is None else mask.combine_chunks() if isinstance(mask, pa.ChunkedArray) else mask


def unique_key_set(rows: pa.Table, names: Sequence[str]) -> EqualityKeySet:
    """The key set of DML source rows; each key may appear once."""
    keys = EqualityKeySet(list(names), rows.select(list(names)))
    if keys.distinct_keys != rows.num_rows:
        raise DuplicateKeyError(f"{rows.num_rows - keys.distinct_keys} source rows repeat a key on {list(names)}: each key may appear once")
    return keys


def is_partition_scoped(spec: PartitionSpec, schema: Schema, names: Sequence[str]) -> bool:
    """Can deletes of these keys live in the partition of each key? Only when every partition
    source column is a key column, so a key's partition is computable from the key. Compared by
    field id: a source inside a struct (`s.d`) has the leaf name of another column (`d`), and a
    source the schema has dropped is no key."""
    key_ids = {schema.find_field(name).field_id for name in names}
    return bool(spec.fields) and all(f.source_id in key_ids for f in spec.fields)


def key_range(schema: Schema, keys: pa.Table) -> BooleanExpression:
    """A filter every row with one of these keys satisfies (min/max per orderable column), for
    pruning files and row groups by their metrics."""
    expr: BooleanExpression = AlwaysTrue()
    for name in keys.column_names:
        field_type = schema.find_field(name).field_type
        if not isinstance(field_type, (IntegerType, LongType, StringType)):
            continue
        column = keys.column(name)
        bounds = pc.min_max(column)
        lo, hi = bounds["min"].as_py(), bounds["max"].as_py()
        if lo is None:
            term: BooleanExpression = IsNull(name)
        else:
            term = And(GreaterThanOrEqual(name, lo), LessThanOrEqual(name, hi))
            if column.null_count:
                term = Or(term, IsNull(name))
        expr = term if isinstance(expr, AlwaysTrue) else And(expr, term)
    return expr
