"""Casts that store data in a table's columns as Spark's ANSI store assignment does: any
number into any number column, nested fields by the same rules.

Widening (int -> long, float -> double, decimal precision up, string size variants) never
changes a value and is `check_fits`'s business. The other number casts change some values,
as Spark stores them, and fail on a value the column cannot hold, naming the column and the
first such value:

- an integer into a narrower integer (int64 data into an `int` column, e.g. what
  `pc.add(int32_column, 1000)` yields): every value in the column's range;
- a floating-point number or a decimal into an integer column: the fractional part dropped
  (toward zero, as Spark's cast does: 2.7 is 2, -2.7 is -2); NaN, infinities and values out of
  range are errors;
- an integer or a decimal into a floating-point column: the nearest value (a long beyond 2**53
  rounds, as in Spark);
- a timestamp into another unit (pandas' nanoseconds into Iceberg's microseconds): no value
  with a finer part than the column keeps. Zone-ness must still match (`check_fits`);
- a decimal of another precision or scale, an integer or a double into a decimal column:
  every value, rounded HALF_UP to the column's scale, within its precision (polars'
  Decimal(38, 2) into decimal(10, 2); `pc.field("amount") * 1.1` back into decimal(5, 2)): the
  rules are mor/write/decimals.py's.

Nothing else converts: a double into a float, a date into a timestamp, text into a number stay
refused. Fields of structs, list elements and map keys and values cast by the same rules (a
pandas round trip makes a struct's int32 field int64); an error names the field by its dotted
path (`info.a`).
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from mor.errors import SchemaMismatchError
from mor.write.decimals import changes_value, fits_decimal, to_decimal

# How to make a decimal column hold larger values, said when a value does not fit it.
WIDEN_HINT = "table.update_schema().widen({name!r}, {type}) widens the column to hold them"


def narrowed(data: pa.Table, target: pa.Schema, widen_hint: str = WIDEN_HINT, exact: bool = False) -> pa.Table:
    """`data` with each column that narrows (itself or a nested field) into the same-named
    column of `target` cast to its type; SchemaMismatchError naming the column (or nested
    field) and a value that does not fit (`widen_hint`: how to widen a decimal column, see
    mor/write/decimals.py). Other columns are left as they are (for `check_fits` to judge).
    `exact`: no fraction is dropped (a number into an integer column must be whole)."""
    for i, field in enumerate(data.schema):
        j = target.get_field_index(field.name)
        if j < 0 or not narrows(field.type, target.field(j).type):
            continue
        column_type = target.field(j).type
        column = data.column(i)
        if _is_nested(column_type):
            for chunk in column.chunks:
                _check_nested(chunk, column_type, field.name, widen_hint)  # names the nested field that does not fit
            # Only the narrowing fields change type (the rest is check_fits' to judge). Unsafe:
            # the values were checked, and a value under a null parent is never read.
            column_type = _narrowed_type(field.type, column_type)
            column = column.cast(column_type, safe=False)
        elif pa.types.is_decimal(column_type):
            column = to_decimal(column, field.name, column_type, widen_hint)
        else:
            column = _checked_cast(column, field.name, column_type, exact)
        data = data.set_column(i, field.with_type(column_type), column)
    return data


def narrows(source: pa.DataType, target: pa.DataType) -> bool:
    """Is `source` -> `target` a narrowing cast (of the value or of a nested field) that some
    values survive unchanged?"""
    if source == target:
        return False
    if pa.types.is_struct(source) and pa.types.is_struct(target):
        children = {source.field(k).name: source.field(k).type for k in range(source.num_fields)}
        return any(narrows(children[f.name], f.type) for f in target if f.name in children)
    if _is_list(source) and _is_list(target):
        return narrows(source.value_type, target.value_type)
    if pa.types.is_map(source) and pa.types.is_map(target):
        return narrows(source.key_type, target.key_type) or narrows(source.item_type, target.item_type)
    if pa.types.is_integer(source) and pa.types.is_integer(target):
        same_width_unsigned = source.bit_width == target.bit_width and not pa.types.is_signed_integer(source)
        return source.bit_width > target.bit_width or same_width_unsigned
    if (pa.types.is_floating(source) or pa.types.is_decimal(source)) and pa.types.is_integer(target):
        return True
    if (pa.types.is_integer(source) or pa.types.is_decimal(source)) and pa.types.is_floating(target):
        return True
    if pa.types.is_timestamp(source) and pa.types.is_timestamp(target):
        return (source.tz is None) == (target.tz is None) and source.unit != target.unit
    if pa.types.is_decimal(target) and fits_decimal(source):
        return changes_value(source, target)
    return False


def _is_list(t: pa.DataType) -> bool:
    return pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)


def _is_nested(t: pa.DataType) -> bool:
    return pa.types.is_struct(t) or _is_list(t) or pa.types.is_map(t)


def _narrowed_type(source: pa.DataType, target: pa.DataType) -> pa.DataType:
    """`source` with each field that narrows into `target`'s given `target`'s type."""
    if not narrows(source, target):
        return source
    if pa.types.is_struct(source):
        wanted = {f.name: f.type for f in target}
        fields = [source.field(k) for k in range(source.num_fields)]
        return pa.struct([f.with_type(_narrowed_type(f.type, wanted[f.name])) if f.name in wanted else f for f in fields])
    if pa.types.is_map(source):
        key = source.key_field.with_type(_narrowed_type(source.key_type, target.key_type))
        return pa.map_(key, source.item_field.with_type(_narrowed_type(source.item_type, target.item_type)))
    if _is_list(source):
        element = source.value_field.with_type(_narrowed_type(source.value_type, target.value_type))
        if pa.types.is_large_list(source):
            return pa.large_list(element)
        return pa.list_(element, source.list_size) if pa.types.is_fixed_size_list(source) else pa.list_(element)
    return target


def _check_nested(values: pa.Array, target: pa.DataType, path: str, widen_hint: str) -> None:
    """SchemaMismatchError naming the nested field (`info.a`, `tags.element`, `attrs.value`)
    whose values do not all fit `target`'s type for it. Children are read with their parents'
    nulls applied, so a value under a null struct is not judged."""
    source = values.type
    if not narrows(source, target):
        return
    if pa.types.is_struct(source):
        children = dict(zip([source.field(k).name for k in range(source.num_fields)], values.flatten()))
        for f in target:
            if f.name in children:
                _check_nested(children[f.name], f.type, f"{path}.{f.name}", widen_hint)
    elif pa.types.is_map(source):
        _check_nested(values.keys, target.key_type, f"{path}.key", widen_hint)
        _check_nested(values.items, target.item_type, f"{path}.value", widen_hint)
    elif _is_list(source):
        _check_nested(values.flatten(), target.value_type, f"{path}.element", widen_hint)
    elif pa.types.is_decimal(target):
        _check_nested_decimal(pa.chunked_array([values], source), path, target, widen_hint)
    else:
        _checked_cast(pa.chunked_array([values], source), path, target)


def _check_nested_decimal(values: pa.ChunkedArray, path: str, target: pa.DataType, widen_hint: str) -> None:
    """SchemaMismatchError unless every value fits decimal `target` without rounding: the
    nested column is cast by Arrow, which does not round as a top-level column is rounded."""
    fitted = to_decimal(values, path, target, widen_hint)
    try:
        changed = pc.fill_null(pc.not_equal(values.cast(target, safe=False), fitted), False)
    except pa.ArrowException:
        changed = pc.is_valid(values)
    index = pc.index(changed, True).as_py()
    if index is not None and index >= 0:
        value = values[index].as_py()
        raise SchemaMismatchError(
            f"column {path!r}: value {value} needs rounding to fit the table's decimal({target.precision}, {target.scale}); "
            "mor rounds decimals in top-level columns only: round it first"
        )


def _checked_cast(column: pa.ChunkedArray, name: str, target: pa.DataType, exact: bool = False) -> pa.ChunkedArray:
    if pa.types.is_floating(target) and (pa.types.is_integer(column.type) or pa.types.is_decimal(column.type)):
        return column.cast(target, safe=False)  # the nearest value: nothing overflows a double
    given = column  # what an error shows
    if exact:
        pass  # a whole number casts; another fails below, named
    elif pa.types.is_integer(target) and pa.types.is_floating(column.type):
        column = pc.trunc(_finite(column, name, target))  # toward zero; the cast below fails on a value out of range
    elif pa.types.is_integer(target) and pa.types.is_decimal(column.type):
        whole = pa.decimal128 if column.type.precision <= 38 else pa.decimal256
        column = column.cast(whole(column.type.precision, 0), safe=False)  # toward zero
    try:
        return column.cast(target, safe=True)
    except pa.ArrowNotImplementedError:
        raise SchemaMismatchError(f"column {name!r}: {column.type} does not fit the table's {target}") from None
    except pa.ArrowInvalid as e:
        index = _first_changed(column, target)
        found = f"value {_text(given, index)} does not fit" if index is not None else f"values do not fit ({e})"
        raise SchemaMismatchError(f"column {name!r}: {found} the table's {target}") from None


def _finite(column: pa.ChunkedArray, name: str, target: pa.DataType) -> pa.ChunkedArray:
    """SchemaMismatchError naming the first NaN or infinity (no integer holds one)."""
    bad = pc.fill_null(pc.invert(pc.is_finite(column)), False)
    index = pc.index(bad, True).as_py()
    if index is not None and index >= 0:
        raise SchemaMismatchError(f"column {name!r}: value {column[index].as_py()} does not fit the table's {target}")
    return column


def _first_changed(column: pa.ChunkedArray, target: pa.DataType) -> int | None:
    """The index of the first value that an unchecked cast to `target` and back changes; None
    if none is found."""
    try:
        round_trip = column.cast(target, safe=False).cast(column.type, safe=False)
    except pa.ArrowException:
        return None
    changed = pc.fill_null(pc.not_equal(round_trip, column), False)
    index = pc.index(changed, True).as_py()
    return None if index is None or index < 0 else int(index)


def _text(column: pa.ChunkedArray, index: int) -> str:
    """A value as text (cast by Arrow, so that showing a timestamp needs no pandas)."""
    return str(pc.cast(column.slice(index, 1), pa.string())[0].as_py())
