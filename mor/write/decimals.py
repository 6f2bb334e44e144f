"""Numbers into a decimal column, by value, as Spark's ANSI store assignment puts them there.

A value goes into a `decimal(P, S)` column when, rounded to S decimal places, it has at most
P - S digits before the point; otherwise SchemaMismatchError names the column, the first value
that does not fit and the precision that would hold every value. So:

- a decimal(P1, S1) of any precision: polars' Decimal(38, 2) into decimal(10, 2) when every
  value fits (the declared precision does not matter, the values do);
- more decimal places than the column keeps: rounded HALF_UP (ties away from zero: 2.345 ->
  2.35, -2.345 -> -2.35), as Spark's `Decimal.changePrecision(p, s, ROUND_HALF_UP)` does in a
  cast and in store assignment; a value that rounds past the precision (999.995 into
  decimal(5, 2)) is refused, as ANSI mode raises NUMERIC_VALUE_OUT_OF_RANGE;
- a double (`pc.field("amount") * 1.1`): taken as the shortest decimal that reads back as the
  same double (Python's `repr`, Java's `Double.toString`, which Spark's cast uses: 1.5 * 1.1 is
  1.6500000000000001 -> 1.65, 2.675 -> 2.68), then rounded as above; NaN and infinities are
  refused. A float is first made a double (Spark's `toDouble`);
- an integer: exact, refused when it has too many digits.

Arrow's own casts are not used for the rounding: a decimal rescale refuses to round, a
float-to-decimal cast rounds the binary value (2.675 -> 2.67), and its `half_up` mode rounds
ties towards positive infinity (-2.345 -> -2.34), not Java's HALF_UP.
"""

from __future__ import annotations

import decimal

import pyarrow as pa
import pyarrow.compute as pc

from mor.errors import SchemaMismatchError

MAX_PRECISION = 38  # Iceberg's decimal(P, S): P <= 38
_WIDE_PRECISION = 76  # decimal256: room for any decimal128 value at any scale up to 38, and a carry

# Arrow's name for Java's HALF_UP (its "half_up" is ties towards positive infinity).
_HALF_UP = "half_towards_infinity"


def fits_decimal(source: pa.DataType) -> bool:
    """Is `source` a type whose values `to_decimal` puts into a decimal column?"""
    return pa.types.is_decimal(source) or pa.types.is_integer(source) or pa.types.is_floating(source)


def changes_value(source: pa.DataType, target: pa.DataType) -> bool:
    """Could some value of `source` not fit decimal `target` as it is (so that `to_decimal`
    must judge each)? Same scale and no fewer digits never changes a value."""
    if pa.types.is_decimal(source):
        return source.scale != target.scale or source.precision > target.precision
    return fits_decimal(source)


def to_decimal(column: pa.ChunkedArray, name: str, target: pa.DataType, widen_hint: str = "") -> pa.ChunkedArray:
    """`column` (decimal, integer or floating point) as decimal `target`, each value rounded
    HALF_UP to the target's scale; SchemaMismatchError naming column `name` and the first value
    with too many digits. `widen_hint`: how to widen the column, said in that error (a format
    string with `{name}` and `{type}`, the type that would hold every value)."""
    rounded = _rounded(column, name, target, widen_hint)
    try:
        return rounded.cast(target, safe=True)
    except pa.ArrowInvalid:
        pass  # a value has too many digits: say which
    limit = pa.scalar(decimal.Decimal(10) ** (target.precision - target.scale), rounded.type)
    index = _first(pc.greater_equal(pc.abs(rounded), limit)) or 0
    largest = pc.max(pc.abs(rounded)).as_py()
    raise _too_big(name, column[index].as_py(), target, len(str(int(largest or 0))) + target.scale, widen_hint)


def _too_big(name: str, value: object, target: pa.DataType, needed: int, widen_hint: str) -> SchemaMismatchError:
    """The error for `value` with too many digits before the point; `needed`: the precision
    that would hold every value at the column's scale."""
    hint = ""
    if needed > MAX_PRECISION:
        hint = f"; its values need decimal({needed}, {target.scale}), more digits than Iceberg's decimals hold ({MAX_PRECISION})"
    elif widen_hint:
        hint = "; " + widen_hint.format(name=name, type=f"pa.decimal128({needed}, {target.scale})")
    shown = str(value) if isinstance(value, decimal.Decimal) else repr(value)
    return SchemaMismatchError(
        f"column {name!r}: value {shown} does not fit the table's {_sql(target)} "
        f"(at most {target.precision - target.scale} digits before the point){hint}"
    )


def _rounded(column: pa.ChunkedArray, name: str, target: pa.DataType, widen_hint: str) -> pa.ChunkedArray:
    """`column` as a wide decimal (decimal256) rounded HALF_UP to `target`'s scale (the wide
    type may keep more places, all zeros)."""
    source = column.type
    if pa.types.is_decimal(source):
        scale = max(source.scale, target.scale)
        precision = min(_WIDE_PRECISION, source.precision - source.scale + scale + 1)  # +1: a rounding carry
        wide = column.cast(pa.decimal256(precision, scale))
    elif pa.types.is_integer(source):
        wide = column.cast(pa.decimal256(_WIDE_PRECISION, target.scale))
    else:
        wide = _floats_as_decimals(column.cast(pa.float64()), name, target, widen_hint)
    if wide.type.scale == target.scale:
        return wide
    return pc.round(wide, ndigits=target.scale, round_mode=_HALF_UP)


def _floats_as_decimals(column: pa.ChunkedArray, name: str, target: pa.DataType, widen_hint: str) -> pa.ChunkedArray:
    """Doubles as the shortest decimals that read back as them (Arrow prints doubles so), at a
    scale that holds every digit that matters for `target`."""
    not_a_number = _first(pc.invert(pc.is_finite(column)))
    if not_a_number is not None:
        bad = column[not_a_number].as_py()
        raise SchemaMismatchError(f"column {name!r}: value {bad} does not fit the table's {_sql(target)}: it is no number")
    integer_digits = target.precision - target.scale
    magnitude = pc.abs(column)
    # Too large whatever the rounding: refused here, so that the text below always parses.
    over = _first(pc.greater_equal(magnitude, float(10**integer_digits)))
    if over is not None:
        largest = pc.max(magnitude).as_py()
        raise _too_big(name, column[over].as_py(), target, len(f"{largest:.0f}") + target.scale, widen_hint)
    # Too small to reach the last place kept (below a tenth of it): 0, as it rounds.
    tiny = pc.fill_null(pc.less(magnitude, 10.0 ** -(target.scale + 1)), False)
    column = pc.if_else(tiny, 0.0, column)
    # A double that is at least a tenth of the last place has at most 17 significant digits
    # from there: this scale holds them all, and the digits before the point and a rounding
    # carry still fit.
    scale = _WIDE_PRECISION - integer_digits - 1
    return column.cast(pa.string()).cast(pa.decimal256(_WIDE_PRECISION, scale))


def _first(mask: pa.ChunkedArray) -> int | None:
    """The index of the first true value of `mask` (nulls are not); None if there is none."""
    index = pc.index(pc.fill_null(mask, False), True).as_py()
    return None if index is None or index < 0 else int(index)


def _sql(t: pa.DataType) -> str:
    return f"decimal({t.precision}, {t.scale})"
