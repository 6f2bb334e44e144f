"""A cast of a column (or any term) evaluated on the rows, with mor.expr.casts' rules: a value
that does not convert raises (pyarrow's ArrowInvalid, which the row filter reports as
InvalidFilterError), a null stays null; fractions go to whole numbers toward zero and to fewer
decimal places half away from zero; text is trimmed, and read as a date up to its time."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from mor.expr import float_text
from mor.expr.casts import BOOLEAN_TEXTS, CastType

_TIMESTAMP = pa.timestamp("us")
_TIMESTAMPTZ = pa.timestamp("us", tz="UTC")
_INTS = {8: pa.int8(), 16: pa.int16(), 32: pa.int32(), 64: pa.int64()}
_ZONE = r"(Z|z|UTC|[+-]\d{2}(:?\d{2})?)$"


def cast_expression(expr: pc.Expression, kind: str, dtype: pa.DataType, target: CastType) -> tuple[pc.Expression, pa.DataType]:
    """`expr` (a term of `kind`, of Arrow type `dtype`) cast to `target`: (expression, its type)."""
    if kind in ("string", "text") and target.kind != "string":
        expr = pc.utf8_trim_whitespace(expr)
        if target.kind in ("int", "float", "decimal"):
            expr = pc.replace_substring_regex(expr, pattern=r"^\+", replacement="")  # '+4', as Spark and DuckDB read it
    if target.kind == "int":
        if kind in ("float", "decimal"):
            expr = pc.trunc(expr)  # toward zero; NaN and out of range raise in the cast
        return expr.cast(_INTS[target.bits]).cast(pa.int64()), pa.int64()
    if target.kind == "float":
        expr = as_double(expr, kind)
        return (expr.cast(pa.float32()).cast(pa.float64()) if target.bits == 32 else expr), pa.float64()
    if target.kind == "decimal":
        return _decimal(expr, kind, dtype, target)
    if target.kind == "string":
        if kind in ("timestamp", "timestamptz"):
            return _timestamp_text(expr, dtype), pa.string()
        if kind == "float":
            return float_text.call(expr.cast(pa.float64())), pa.string()
        return expr.cast(pa.string()), pa.string()
    if target.kind == "bool":
        if kind in ("string", "text"):
            lowered = pc.utf8_lower(expr)
            # Spark's words for true and false; any other text stays as written and fails the cast
            expr = pc.if_else(
                pc.is_in(lowered, value_set=pa.array(BOOLEAN_TEXTS[0])),
                "true",
                pc.if_else(pc.is_in(lowered, value_set=pa.array(BOOLEAN_TEXTS[1])), "false", expr),
            )
        return expr.cast(pa.bool_()), pa.bool_()
    return _temporal(expr, kind, target.kind)


def as_double(expr: pc.Expression, kind: str) -> pc.Expression:
    """A number as a double. Decimals go through their text: Arrow's decimal cast scales by a
    power of ten in floating point and can miss the nearest double (0.1 became
    0.09999999999999999), where Spark's (Java's BigDecimal.doubleValue) is the nearest."""
    if kind == "decimal":
        return expr.cast(pa.string()).cast(pa.float64())
    return expr.cast(pa.float64())


def _decimal(expr: pc.Expression, kind: str, dtype: pa.DataType, target: CastType) -> tuple[pc.Expression, pa.DataType]:
    result = pa.decimal128(target.precision, target.scale)
    if kind in ("string", "text"):
        expr = expr.cast(pa.decimal128(38, max(target.scale, 18)))
    elif kind == "int" or kind == "bool":
        expr = expr.cast(pa.int64()).cast(pa.decimal128(19 + target.scale, target.scale))  # every int64, then the precision checked
        return expr.cast(result), result
    if kind == "float":  # NaN and the infinities have no decimal: NULL in Spark, ANSI mode too (not an error)
        expr = pc.if_else(pc.is_finite(expr), expr, pa.scalar(None, dtype))
    # fewer places than the text's (read at 18 at least), the decimal's or a float's: half away from zero
    if kind in ("float", "string", "text") or dtype.scale > target.scale:
        expr = pc.round(expr, ndigits=target.scale, round_mode="half_towards_infinity")
    return expr.cast(result), result


def _timestamp_text(expr: pc.Expression, dtype: pa.DataType) -> pc.Expression:
    """'2025-06-05 10:00:00' and '2025-06-05 10:00:00.5', as Spark writes a timestamp (UTC)."""
    whole = pc.floor_temporal(expr, unit="second")
    text = pc.strftime(whole.cast(pa.timestamp("s", tz=dtype.tz)), format="%Y-%m-%d %H:%M:%S")
    micros = pc.subtract(expr.cast(pa.int64()), whole.cast(pa.int64()))
    fraction = pc.utf8_rtrim(pc.utf8_lpad(micros.cast(pa.string()), width=6, padding="0"), characters="0")
    return pc.if_else(micros == 0, text, pc.binary_join_element_wise(text, fraction, "."))


def _temporal(expr: pc.Expression, kind: str, target: str) -> tuple[pc.Expression, pa.DataType]:
    if kind in ("string", "text"):
        if target == "date":  # its time, if written, cut
            dated = pc.replace_substring_regex(expr, pattern=r"^(\d{4}-\d{2}-\d{2})[T ].*$", replacement=r"\1")
            return dated.cast(pa.date32()), pa.date32()
        if target == "timestamp":
            return pc.replace_substring_regex(expr, pattern=r"(Z|z|UTC|[+-]00:?00)$", replacement="").cast(_TIMESTAMP), _TIMESTAMP
        dated = pc.replace_substring_regex(expr, pattern=r"^(\d{4}-\d{2}-\d{2})$", replacement=r"\1 00:00:00")
        zoned = pc.if_else(pc.match_substring_regex(dated, pattern=_ZONE), dated, pc.binary_join_element_wise(dated, "Z", ""))
        return zoned.cast(_TIMESTAMPTZ), _TIMESTAMPTZ
    if target == "date":
        return expr.cast(pa.date32()), pa.date32()
    if kind == "date":
        expr = expr.cast(_TIMESTAMP)  # its midnight (UTC, for an instant)
    dtype = _TIMESTAMP if target == "timestamp" else _TIMESTAMPTZ
    return expr.cast(dtype), dtype
