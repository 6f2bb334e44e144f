"""Narrowing casts that keep every value, as Spark's ANSI store assignment takes them.

Widening (int -> long, float -> double, decimal precision up, string size variants) never
changes a value and is `check_fits`'s business. A narrowing cast changes a value only for
some values, so it is taken when every value of the column survives it and refused otherwise,
with the column and the first value that does not fit:

- an integer into a narrower integer (int64 data into an `int` column, e.g. what
  `pc.add(int32_column, 1000)` yields): every value in the column's range;
- a floating-point number into an integer column: every value integral and in range (3.0 is
  3; 3.5, NaN and infinities are refused);
- a timestamp into another unit (pandas' nanoseconds into Iceberg's microseconds): no value
  with a finer part than the column keeps. Zone-ness must still match (`check_fits`).

Nothing else narrows: a narrower decimal, a double into a float, a date into a timestamp
stay refused, as Iceberg's promotion rules have them. Only top-level columns narrow.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from mor.errors import SchemaMismatchError


def narrowed(data: pa.Table, target: pa.Schema) -> pa.Table:
    """`data` with each top-level column that narrows into the same-named column of `target`
    cast to its type; SchemaMismatchError naming the column and a value that does not fit.
    Other columns are left as they are (for `check_fits` to judge)."""
    for i, field in enumerate(data.schema):
        j = target.get_field_index(field.name)
        if j < 0 or not narrows(field.type, target.field(j).type):
            continue
        column_type = target.field(j).type
        data = data.set_column(i, field.with_type(column_type), _checked_cast(data.column(i), field.name, column_type))
    return data


def narrows(source: pa.DataType, target: pa.DataType) -> bool:
    """Is `source` -> `target` a narrowing cast that some values survive unchanged?"""
    if source == target:
        return False
    if pa.types.is_integer(source) and pa.types.is_integer(target):
        same_width_unsigned = source.bit_width == target.bit_width and not pa.types.is_signed_integer(source)
        return source.bit_width > target.bit_width or same_width_unsigned
    if pa.types.is_floating(source) and pa.types.is_integer(target):
        return True
    if pa.types.is_timestamp(source) and pa.types.is_timestamp(target):
        return (source.tz is None) == (target.tz is None) and source.unit != target.unit
    return False


def _checked_cast(column: pa.ChunkedArray, name: str, target: pa.DataType) -> pa.ChunkedArray:
    try:
        return column.cast(target, safe=True)
    except pa.ArrowNotImplementedError:
        raise SchemaMismatchError(f"column {name!r}: {column.type} does not fit the table's {target}") from None
    except pa.ArrowInvalid as e:
        value = _first_changed_value(column, target)
        found = f"value {value} does not fit" if value is not None else f"values do not fit ({e})"
        raise SchemaMismatchError(f"column {name!r}: {found} the table's {target}") from None


def _first_changed_value(column: pa.ChunkedArray, target: pa.DataType) -> str | None:
    """The first value that an unchecked cast to `target` and back changes, as text (cast by
    Arrow, so that showing a timestamp needs no pandas); None if none is found."""
    try:
        round_trip = column.cast(target, safe=False).cast(column.type, safe=False)
    except pa.ArrowException:
        return None
    changed = pc.fill_null(pc.not_equal(round_trip, column), False)
    index = pc.index(changed, True).as_py()
    if index is None or index < 0:
        return None
    text = pc.cast(column.slice(index, 1), pa.string())
    return str(text[0].as_py())
