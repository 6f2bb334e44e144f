"""Fitting data to a table's schema: the check that appended data fits, and the casts that
make it so (the type mapping itself is mor/format/arrow_types.py)."""

from __future__ import annotations

import pyarrow as pa
from pyiceberg.schema import Schema

from mor.errors import SchemaMismatchError
from mor.format.arrow_types import to_arrow_schema
from mor.write.safe_casts import WIDEN_HINT, narrowed


def _compatible(source: pa.DataType, target: pa.DataType) -> bool:
    """Casts that never change a value: same type, string/binary size variants, widening."""
    if source == target or pa.types.is_null(source):
        return True
    if isinstance(source, pa.UuidType):
        return target == source.storage_type
    same_family = [
        (pa.types.is_string, pa.types.is_large_string, pa.types.is_string_view),
        (pa.types.is_binary, pa.types.is_large_binary, pa.types.is_binary_view),
    ]
    for family in same_family:
        if any(p(source) for p in family) and any(p(target) for p in family):
            return True
    if pa.types.is_integer(source) and pa.types.is_integer(target):
        return source.bit_width <= target.bit_width and (pa.types.is_signed_integer(source) or source.bit_width < target.bit_width)
    if pa.types.is_floating(source) and pa.types.is_floating(target):
        return source.bit_width <= target.bit_width
    if pa.types.is_timestamp(source) and pa.types.is_timestamp(target):
        return (source.tz is None) == (target.tz is None)  # unit changes: value-checked (safe_casts.narrowed)
    if pa.types.is_date(source) and pa.types.is_date(target):
        return True
    if pa.types.is_decimal(source) and pa.types.is_decimal(target):
        # pyarrow infers the fewest digits from Python Decimals: decimal(3, 2) data fits decimal(9, 2)
        return source.scale == target.scale and source.precision <= target.precision
    if pa.types.is_struct(source) and pa.types.is_struct(target):
        return _fields_compatible(list(source), list(target))
    if (pa.types.is_list(source) or pa.types.is_large_list(source)) and pa.types.is_list(target):
        return _compatible(source.value_type, target.value_type)
    if pa.types.is_map(source) and pa.types.is_map(target):
        return _compatible(source.key_type, target.key_type) and _compatible(source.item_type, target.item_type)
    return False


def _fields_compatible(source: list[pa.Field], target: list[pa.Field]) -> bool:
    by_name = {f.name: f for f in source}
    return set(by_name) == {f.name for f in target} and all(_compatible(by_name[f.name].type, f.type) for f in target)


def check_unique_names(source: pa.Schema, what: str) -> None:
    """SchemaMismatchError naming the first top-level column that `source` has twice (Arrow
    allows it; looking the column up by name could not say which one is meant)."""
    seen: set[str] = set()
    for name in source.names:
        if name in seen:
            raise SchemaMismatchError(f"column {name!r} appears twice in {what}")
        seen.add(name)


def check_fits(source: pa.Schema, schema: Schema, nullable_into_required: bool = True) -> None:
    """SchemaMismatchError naming the difference unless data of Arrow schema `source` fits the
    table: the same column names, types that cast without changing a value, and (unless
    `nullable_into_required`) no nullable column where the table requires a value."""
    check_unique_names(source, "the data")
    target = to_arrow_schema(schema)
    names = set(source.names)
    missing = [f.name for f in target if f.name not in names]
    extra = [n for n in source.names if target.get_field_index(n) < 0]
    if missing or extra:
        problems = ([f"missing {missing}"] if missing else []) + ([f"unexpected {extra}"] if extra else [])
        by_lower = {n.lower(): n for n in missing}
        hints = [f"{n!r} is spelled {by_lower[n.lower()]!r} in the table" for n in extra if n.lower() in by_lower]
        hint = f" (names are case-sensitive: {'; '.join(hints)})" if hints else ""
        raise SchemaMismatchError(f"columns do not match the table: {', '.join(problems)}{hint}")
    for f in target:
        field = source.field(f.name)
        if not _compatible(field.type, f.type):
            raise SchemaMismatchError(f"column {f.name!r}: {field.type} does not fit the table's {f.type}")
        if not nullable_into_required and field.nullable and not f.nullable:
            raise SchemaMismatchError(f"column {f.name!r} is required in the table but nullable in the data")


def conform(data: pa.Table, schema: Schema, widen_hint: str = WIDEN_HINT, exact: bool = False) -> pa.Table:
    """`data` cast to the table's Arrow schema, or SchemaMismatchError naming the difference:
    widening casts always, other number casts as Spark stores them (mor/write/safe_casts.py),
    numbers into decimal columns by value, rounded HALF_UP (mor/write/decimals.py; `widen_hint`
    says how to widen a decimal column too narrow for a value). `exact`: values that are
    matched, not stored (keys): a number must be one the column holds (2.5 is no int key)."""
    target = to_arrow_schema(schema)
    check_unique_names(data.schema, "the data")
    data = narrowed(data, target, widen_hint, exact)
    check_fits(data.schema, schema)
    for f in target:
        if not f.nullable and data.column(f.name).null_count > 0:
            raise SchemaMismatchError(f"column {f.name!r} is required but has {data.column(f.name).null_count} nulls")
    try:
        return data.select(target.names).cast(target, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise SchemaMismatchError(f"data does not fit the table schema: {e}") from e
