"""A bound residual (mor.expr.residual) as a pyarrow compute expression, with Spark SQL's
semantics in ANSI mode (casts, LIKE and date parts: mor.expr.casts, mor.expr.like; `dayofweek`
counts from Sunday 1): a null operand makes the result NULL (the row is not selected); `/`
divides whole numbers and doubles as floating point, decimals by Spark's decimal rule; a zero
divisor of `/` or `%` is an error (DIVIDE_BY_ZERO); `+ - * abs` raise on overflow rather than
wrap; NaN equals NaN and sorts above every number. Numbers of different kinds meet in the wider
one (int < decimal < float), decimals at a common scale, so that a comparison is exact; a date
meets a timestamp as its midnight, UTC for timestamptz.
"""

from __future__ import annotations

import functools
import math
import operator
from collections.abc import Callable
from decimal import Decimal
from typing import Any, NamedTuple

import pyarrow as pa
import pyarrow.compute as pc
from pyiceberg.types import IntegerType

from mor.errors import InvalidFilterError
from mor.expr import list_contains
from mor.expr.cast_rows import as_double, cast_expression
from mor.expr.casts import CastType
from mor.expr.literals import MICROS_PER_DAY, decimal_of, unscaled
from mor.expr.operand_order import DIVISOR_FIRST, NULL_WITH_OPERANDS, OPERATORS, can_fail
from mor.expr.remainders import remainder
from mor.expr.residual import BoundResidual, Call, Column, Constant, Test
from mor.format.arrow_types import to_arrow_type

_NULL_BOOL = pa.nulls(1, pa.bool_())[0]
# date and time parts, as Spark SQL numbers them (dayofweek: Sunday 1 to Saturday 7)
_PARTS: dict[str, Callable[[pc.Expression], pc.Expression]] = {
    "year": pc.year, "quarter": pc.quarter, "month": pc.month, "weekofyear": pc.iso_week, "day": pc.day,
    "dayofweek": lambda t: pc.day_of_week(t, count_from_zero=False, week_start=7),
    "dayofweek_iso": lambda t: pc.day_of_week(t, count_from_zero=False, week_start=1),
    "dayofyear": pc.day_of_year, "hour": pc.hour, "minute": pc.minute, "second": pc.second,
}  # fmt: skip
_TIME_PARTS = ("hour", "minute", "second")  # of a date: its midnight's
_MAX_PRECISION = 38
_MAX_PRECISION_256 = 76
_CHECKED = {"+": pc.add_checked, "-": pc.subtract_checked, "*": pc.multiply_checked}  # ANSI: overflow raises
_TEMPORAL_TYPES = {"date": pa.date32(), "timestamp": pa.timestamp("us"), "timestamptz": pa.timestamp("us", tz="UTC")}
_KIND_TYPES = {
    "null": pa.null(),
    "int": pa.int64(),
    "float": pa.float64(),
    "string": pa.string(),
    "text": pa.string(),
    "bool": pa.bool_(),
    **_TEMPORAL_TYPES,
}


class _Value(NamedTuple):
    expr: pc.Expression
    kind: str
    type: pa.DataType


def residual_expression(residual: BoundResidual, paths: dict[int, tuple[str, ...]], guard: pc.Expression | None = None) -> pc.Expression:
    """`paths`: field id -> column path (names through structs) in the batches filtered.
    `guard`: the rows whose answer matters (see `term_expression`)."""
    result = _test(residual.test, paths, guard)
    return ~result if residual.negated else result


def _test(test: Test, paths: dict[int, tuple[str, ...]], guard: pc.Expression | None = None) -> pc.Expression:
    left = _value(test.left, paths, guard)
    if test.op == "is null":
        return left.expr.is_null(nan_is_null=False)
    if test.op == "is nan":  # Spark's isnan: never NULL (false for a null), true only of a float NaN
        return pc.coalesce(pc.is_nan(left.expr), pa.scalar(False)) if left.kind == "float" else pc.scalar(False)
    if test.op == "starts with":
        return pc.starts_with(left.expr, pattern=test.right[0].value)
    if test.op == "like":
        return pc.match_like(left.expr, pattern=test.right[0].value)
    if test.op == "in":
        return _is_in(left, test.right)
    reach = _where_set(test.left, test.right[0], paths, guard)  # a comparison with NULL is NULL: Spark stops
    left, right = _common([left, _value(test.right[0], paths, reach)])
    return _compare(test.op, left, right)


def term_expression(term: Any, paths: dict[int, tuple[str, ...]], guard: pc.Expression | None = None) -> tuple[pc.Expression, pa.DataType]:
    """A bound term (mor.expr.residual.bind_term) as an expression over the rows, and its type.
    `guard`: the rows whose value is wanted (a CASE's branch); on the others every column reads
    as null, so a cast or an overflow there raises nothing, as SQL computes a branch only for
    the rows that take it."""
    value = _value(term, paths, guard)
    return value.expr, value.type


def _is_in(left: _Value, items: tuple[Constant, ...]) -> pc.Expression:
    """SQL's `in` over constants: NULL for a null operand (pyarrow's is_in says false)."""
    left = _common([left, *(_constant(c) for c in items)])[0]
    values = pa.array([_item(c, left.kind) for c in items], left.type)
    return pc.if_else(left.expr.is_valid(), pc.is_in(left.expr, value_set=values), _NULL_BOOL)


def _compare(op: str, left: _Value, right: _Value) -> pc.Expression:
    a, b = left.expr, right.expr
    plain = {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b, "=": a == b, "!=": a != b}[op]
    if left.kind != "float":
        return plain
    # NaN = NaN, and NaN sorts above every number (Iceberg's order, DuckDB's and Spark's).
    a_nan, b_nan = pc.is_nan(a), pc.is_nan(b)
    with_nan = {"<": ~a_nan & b_nan, "<=": b_nan, ">": a_nan & ~b_nan, ">=": a_nan, "=": a_nan & b_nan, "!=": ~(a_nan & b_nan)}[op]
    # A NULL operand makes the comparison NULL, also beside a NaN (`NaN >= NULL` is not true).
    return pc.if_else(a.is_null() | b.is_null(), _NULL_BOOL, pc.if_else(a_nan | b_nan, with_nan, plain))


# -- terms ------------------------------------------------------------------------------------


def _value(term: Any, paths: dict[int, tuple[str, ...]], guard: pc.Expression | None = None) -> _Value:
    if isinstance(term, Column):
        return _column(term, paths, guard)
    if isinstance(term, Constant):
        return _constant(term)
    if term.function == "cast":
        value, target = _value(term.args[0], paths, guard), term.args[1]
        expr, dtype = cast_expression(value.expr, value.kind, value.type, target)
        return _Value(expr, target.kind, dtype)
    if term.function == "coalesce":
        return _call(term, _coalesce_operands(term, paths, guard))
    if term.function in OPERATORS and len(term.args) == 2:
        return _call(term, _operator_operands(term, paths, guard))
    args = [_value(a, paths, guard) if not _is_interval(a) else _Value(pc.scalar(None), "interval", pa.null()) for a in term.args]
    return _call(term, args)


def _coalesce_operands(call: Call, paths: dict[int, tuple[str, ...]], guard: pc.Expression | None) -> list[_Value]:
    """coalesce's operands as Spark computes them: each only for the rows every operand before it
    left null (`coalesce(x, 1 / y)` divides nowhere `x` is set); one that cannot fail, anywhere."""
    operands: list[_Value] = []
    unset: list[pc.Expression] = []  # where each operand so far is null
    for arg in call.args:
        reach = guard
        if unset and can_fail(arg):
            still_null = functools.reduce(operator.and_, unset)
            reach = still_null if guard is None else guard & still_null
        value = _value(arg, paths, reach)
        operands.append(value)
        valid = _set_where(arg, paths)
        unset.append(value.expr.is_null() if valid is None else ~valid)
    return operands


def _operator_operands(call: Call, paths: dict[int, tuple[str, ...]], guard: pc.Expression | None) -> list[_Value]:
    """An operator's two operands as Spark computes them: the second only where the first is set
    (`nullif(i, 0) + 1 / j` divides nowhere `i` is 0); `/ % pmod` take their divisor first."""
    first, second = (1, 0) if call.function in DIVISOR_FIRST else (0, 1)
    values: dict[int, _Value] = {first: _value(call.args[first], paths, guard)}
    reach = _where_set(call.args[first], call.args[second], paths, guard)
    values[second] = _value(call.args[second], paths, reach)
    return [values[0], values[1]]


def _where_set(term: Any, then: Any, paths: dict[int, tuple[str, ...]], guard: pc.Expression | None) -> pc.Expression | None:
    """The guard to compute `then` under when it is wanted only where `term` is not null: `guard`
    itself when `then` cannot fail on a row, or when where `term` is set cannot be said safely."""
    valid = _set_where(term, paths) if can_fail(then) else None
    if valid is None:
        return guard
    return valid if guard is None else guard & valid


def _set_where(term: Any, paths: dict[int, tuple[str, ...]]) -> pc.Expression | None:
    """Where `term` is not null: from its columns where it is null exactly where an operand is,
    else from its value where computing that cannot fail on any row (unguarded: guards built from
    guards would grow with every operator they nest in); None where neither can be said."""
    if isinstance(term, Column):
        return pc.field(*paths[term.field_id]).is_valid()
    if isinstance(term, Constant):
        return pc.scalar(term.value is not None)
    parts = [_set_where(a, paths) for a in term.args] if term.function in NULL_WITH_OPERANDS else [None]
    if all(p is not None for p in parts):
        return functools.reduce(operator.and_, parts)
    return None if can_fail(term) else _value(term, paths).expr.is_valid()


def _is_interval(term: Any) -> bool:
    return isinstance(term, Constant) and term.kind == "interval"  # add_interval's: read from the call


def _column(column: Column, paths: dict[int, tuple[str, ...]], guard: pc.Expression | None = None) -> _Value:
    expr = pc.field(*paths[column.field_id])
    if column.kind in ("list", "map"):  # counted (size) or searched (array_contains): its own type
        assert column.type is not None  # a bound column has its type
        return _Value(expr, column.kind, to_arrow_type(column.type))
    if column.kind == "decimal":
        ftype = column.type
        assert ftype is not None  # a bound column has its type
        value = _Value(expr, "decimal", pa.decimal128(ftype.precision, ftype.scale))
    else:
        target = _KIND_TYPES[column.kind]
        value = _Value(expr.cast(target), column.kind, target)  # int32 -> int64, float -> double
    if guard is None:
        return value
    return _Value(pc.if_else(guard, value.expr, pa.scalar(None, value.type)), value.kind, value.type)


def _constant(constant: Constant) -> _Value:
    value = constant.value
    if constant.kind == "decimal":
        exponent = value.as_tuple().exponent
        if exponent > 0:  # 1E+6: as a whole number, exactly
            value = decimal_of(unscaled(value) * 10**exponent, 0)
        scale = max(0, -value.as_tuple().exponent)
        if len(value.as_tuple().digits) > _MAX_PRECISION:
            raise InvalidFilterError(f"{constant.value} has more than {_MAX_PRECISION} digits")
        dtype = pa.decimal128(max(len(value.as_tuple().digits), scale, 1), scale)
        return _Value(pc.scalar(pa.scalar(value, dtype)), "decimal", dtype)
    if constant.kind == "int" and not -(2**63) <= value < 2**63:
        raise InvalidFilterError(f"{value} is out of range for a whole number in a filter (at most 64 bits)")
    dtype = _KIND_TYPES[constant.kind]
    return _Value(pc.scalar(pa.scalar(value, dtype)), "string" if constant.kind == "text" else constant.kind, dtype)


def _item(constant: Constant, kind: str) -> Any:
    """An `in` list item as a value of `kind`."""
    value = constant.value
    if kind == "decimal":
        return Decimal(value)
    if kind == "float":
        return float(value)
    if constant.kind == "date" and kind != "date":
        return value * MICROS_PER_DAY
    return value


def _call(call: Call, args: list[_Value]) -> _Value:
    f = call.function
    if f in ("+", "-", "*"):
        left, right = _common(args, for_arithmetic=True)
        result = _arithmetic_type(f, left.type, right.type)
        if pa.types.is_decimal(result) and _exact_decimal(f, left.type, right.type)[0] > _MAX_PRECISION:
            return _Value(_decimal_beyond_38(f, left, right, result), "decimal", result)
        return _Value(_CHECKED[f](left.expr, right.expr), left.kind, result)
    if f == "/":  # ANSI: a zero divisor is an error (DIVIDE_BY_ZERO), never infinity or NULL
        if call.kind == "decimal":
            return _decimal_divide(call, args)
        a, b = (as_double(v.expr, v.kind) for v in args)
        return _Value(pc.divide_checked(a, b), "float", pa.float64())
    if f == "%":
        left, right = _common(args)
        if left.kind == "int":
            return _Value(_remainder(left.expr, right.expr), "int", pa.int64())
        return _fractional_remainder(left, right, [a.type for a in args])
    if f == "neg":
        return _Value(pc.negate_checked(args[0].expr), args[0].kind, args[0].type)
    if f == "abs":
        return _Value(pc.abs_checked(args[0].expr), args[0].kind, args[0].type)
    if f in ("lower", "upper"):
        return _Value((pc.utf8_lower if f == "lower" else pc.utf8_upper)(args[0].expr), "string", pa.string())
    if f == "length":
        return _Value(pc.utf8_length(args[0].expr).cast(pa.int64()), "int", pa.int64())
    if f in _PARTS:
        expr = args[0].expr.cast(pa.timestamp("us")) if args[0].kind == "date" and f in _TIME_PARTS else args[0].expr
        return _Value(_PARTS[f](expr).cast(pa.int64()), "int", pa.int64())
    if f == "extract_second":  # with its fraction, decimal(8,6), as Spark SQL's extract(second from t)
        expr = args[0].expr.cast(pa.timestamp("us")) if args[0].kind == "date" else args[0].expr
        micros = pc.add(pc.multiply(pc.second(expr), 1_000_000), pc.add(pc.multiply(pc.millisecond(expr), 1000), pc.microsecond(expr)))
        seconds = pc.divide(micros.cast(pa.decimal128(19, 0)), pa.scalar(Decimal(1_000_000), pa.decimal128(7, 0)))
        return _Value(seconds.cast(pa.decimal128(8, 6)), "decimal", pa.decimal128(8, 6))
    if f == "date":
        return _Value(args[0].expr.cast(pa.date32()), "date", pa.date32())
    if f == "coalesce":
        common = _common(args)
        return _Value(pc.coalesce(*(v.expr for v in common)), common[0].kind, common[0].type)
    if f in _MORE:
        return _MORE[f](call, args)
    raise InvalidFilterError(f"unknown function {f}()")  # the binder knows no other


def _text(value: _Value) -> pc.Expression:
    """A value as Spark's cast to string writes it (concat's operands)."""
    if value.kind in ("string", "text"):
        return value.expr
    return cast_expression(value.expr, value.kind, value.type, CastType("string"))[0]


def _concat(call: Call, args: list[_Value]) -> _Value:
    """Spark's concat and `||`: NULL when any operand is."""
    texts = [_text(a) for a in args]
    if len(texts) == 1:
        return _Value(texts[0], "string", pa.string())
    return _Value(pc.binary_join_element_wise(*texts, "", null_handling="emit_null"), "string", pa.string())


def _constant_int(call: Call, value: Any, what: str) -> int:
    if not isinstance(value, Constant) or value.kind != "int":
        raise InvalidFilterError(f"{call.function}() takes {what} as a whole number written in the text, in {call}")
    return int(value.value)


def _substring(call: Call, args: list[_Value]) -> _Value:
    """Spark's substring(s, pos[, len]): from 1; 0 is 1; a negative position counts from the end."""
    start = _constant_int(call, call.args[1], "its position")
    length = _constant_int(call, call.args[2], "its length") if len(call.args) > 2 else None
    if length is not None and length <= 0:
        return _Value(pc.if_else(args[0].expr.is_valid(), pa.scalar(""), pa.scalar(None, pa.string())), "string", pa.string())
    if start > 0:
        begin = start - 1
        stop = None if length is None else begin + length
    elif start == 0:
        begin, stop = 0, length
    else:
        begin = start
        stop = None if length is None or start + length >= 0 else start + length
    bounds = {"start": begin} if stop is None else {"start": begin, "stop": stop}
    return _Value(pc.utf8_slice_codeunits(args[0].expr, **bounds), "string", pa.string())


def _trimmed(call: Call, args: list[_Value]) -> _Value:
    trim = {"trim": pc.utf8_trim, "ltrim": pc.utf8_ltrim, "rtrim": pc.utf8_rtrim}[call.function]
    return _Value(trim(args[0].expr, characters=" "), "string", pa.string())  # Spark trims spaces only


def _rounded(call: Call, args: list[_Value]) -> _Value:
    """Spark's floor and ceil (to whole numbers) and round(x, d) (half up)."""
    value = args[0]
    if call.function in ("floor", "ceil"):
        if value.kind == "int":
            return value
        whole = (pc.floor if call.function == "floor" else pc.ceil)(value.expr)
        return _Value(whole.cast(pa.int64()), "int", pa.int64())  # a bigint, as Spark's: NaN or infinite is an error (ANSI)
    digits = _constant_int(call, call.args[1], "its digits")
    if value.kind == "int" and digits >= 0:
        return value
    if value.kind == "decimal":
        return _rounded_decimal(value, digits)
    return _Value(
        pc.round(value.expr, ndigits=digits, round_mode="half_towards_infinity"), value.kind, value.type
    )  # Spark's HALF_UP: away from zero


def _rounded_decimal(value: _Value, digits: int) -> _Value:
    """round(x, d) of a decimal(p, s) as Spark types it: one more whole digit (9.99 rounds to
    10.0) and min(s, d) places, decimal(p - s + 1 + min(s, d), min(s, d)), or for a negative d
    decimal(p - s + 1 - d, 0); at most 38 digits."""
    precision, scale = value.type.precision, value.type.scale
    whole = precision - scale + 1
    result = (
        pa.decimal128(min(_MAX_PRECISION, whole - digits), 0)
        if digits < 0
        else pa.decimal128(min(_MAX_PRECISION, whole + min(scale, digits)), min(scale, digits))
    )
    widened = value.expr.cast(pa.decimal128(min(_MAX_PRECISION, precision + 1), scale))  # room for the carry
    rounded = pc.round(widened, ndigits=digits, round_mode="half_towards_infinity")  # Spark's HALF_UP: away from zero
    return _Value(rounded.cast(result), "decimal", result)


def _extreme(call: Call, args: list[_Value]) -> _Value:
    """Spark's greatest and least: nulls skipped, NULL only when every operand is."""
    common = _common(args)
    pick = pc.max_element_wise if call.function == "greatest" else pc.min_element_wise
    if common[0].kind != "float":
        return _Value(pick(*(v.expr for v in common), skip_nulls=True), common[0].kind, common[0].type)
    # NaN sorts above every number (Spark's order): greatest is NaN where an operand is, least
    # only where every operand that is not null is. Arrow's pick passes over NaN.
    nan = pa.scalar(math.nan, common[0].type)
    numbers = [pc.if_else(pc.is_nan(v.expr), pa.scalar(None, common[0].type), v.expr) for v in common]
    picked = pick(*numbers, skip_nulls=True)
    any_nan = functools.reduce(operator.or_, (pc.coalesce(pc.is_nan(v.expr), pa.scalar(False)) for v in common))
    if call.function == "greatest":
        return _Value(pc.if_else(any_nan, nan, picked), "float", common[0].type)
    return _Value(pc.if_else(picked.is_null() & any_nan, nan, picked), "float", common[0].type)


def _nullif(call: Call, args: list[_Value]) -> _Value:
    left, right = _common(args)
    same = pc.coalesce(_compare("=", left, right), pa.scalar(False))
    return _Value(pc.if_else(same, pa.scalar(None, args[0].type), args[0].expr), args[0].kind, args[0].type)


def _remainder(a: pc.Expression, b: pc.Expression) -> pc.Expression:
    """Whole numbers' remainder with the sign of `a`, as SQL's `%` (a zero `b` is an error)."""
    return pc.subtract_checked(a, pc.multiply_checked(b, pc.divide_checked(a, b)))


def _fractional_remainder(left: _Value, right: _Value, operands: list[pa.DataType]) -> _Value:
    """`%` of doubles (Java's: exact), or of decimals, typed as Spark types it: the scale of
    the finer operand and the whole digits of the shorter, decimal(min(p1 - s1, p2 - s2) + s, s)."""
    if left.kind == "float":
        return _Value(remainder(left.expr, right.expr, pa.float64()), "float", pa.float64())
    shapes = [(t.precision, t.scale) if pa.types.is_decimal(t) else (19, 0) for t in operands]
    scale = max(s for _, s in shapes)
    result = pa.decimal128(min(_MAX_PRECISION, min(p - s for p, s in shapes) + scale), scale)
    return _Value(remainder(left.expr, right.expr, left.type).cast(result), "decimal", result)


def _pmod(call: Call, args: list[_Value]) -> _Value:
    """Spark's pmod(a, n): r = a % n, and (r + n) % n where r is negative (so never negative
    for a positive n; for a negative n, pmod(-7, -3) is -1)."""
    left, right = _common(args)
    if left.kind == "int":
        a, n = left.expr, right.expr
        r = _remainder(a, n)
        return _Value(pc.if_else(pc.less(r, 0), _remainder(pc.add_checked(r, n), n), r), "int", pa.int64())
    r = _fractional_remainder(left, right, [a.type for a in args])
    again = _fractional_remainder(_Value(pc.add_checked(r.expr, right.expr), r.kind, r.type), right, [r.type, right.type])
    zero = pa.scalar(0.0) if r.kind == "float" else pa.scalar(Decimal(0), r.type)  # a decimal meets an int only within 38 digits
    return _Value(pc.if_else(pc.less(r.expr, zero), again.expr.cast(r.type), r.expr), r.kind, r.type)


def _as_date(value: _Value) -> pc.Expression:
    if value.kind == "date":
        return value.expr
    if value.kind in ("string", "text"):
        return cast_expression(value.expr, value.kind, value.type, CastType("date"))[0]
    return value.expr.cast(pa.timestamp("us")).cast(pa.date32()) if value.kind == "timestamp" else value.expr.cast(pa.date32())


def _days(expr: pc.Expression) -> pc.Expression:
    return expr.cast(pa.int32()).cast(pa.int64())


def _date_add(call: Call, args: list[_Value]) -> _Value:
    """Spark's date_add(start, days) (and date_sub, sqlglot's date_add of -days): a date."""
    days = pc.add_checked(_days(_as_date(args[0])), args[1].expr)
    return _Value(days.cast(pa.int32()).cast(pa.date32()), "date", pa.date32())


def _datediff(call: Call, args: list[_Value]) -> _Value:
    end, start = (_days(_as_date(a)) for a in args)
    return _Value(pc.subtract(end, start), "int", pa.int64())


def _add_interval(call: Call, args: list[_Value]) -> _Value:
    """A date or time plus a constant interval of days and smaller units (Spark's `ts + interval
    1 day`); months on rows are refused (their lengths differ)."""
    value, interval = args[0], call.args[1].value
    if interval.months:
        raise InvalidFilterError(f"an interval of months or years added to a column is not supported, in {call}: use days")
    if value.kind == "date" and interval.micros % MICROS_PER_DAY == 0:
        days = pc.add_checked(_days(value.expr), interval.micros // MICROS_PER_DAY)
        return _Value(days.cast(pa.int32()).cast(pa.date32()), "date", pa.date32())
    base = value.expr.cast(pa.timestamp("us")) if value.kind == "date" else value.expr
    dtype = pa.timestamp("us") if value.kind == "date" else value.type
    micros = pc.add_checked(base.cast(pa.int64()), interval.micros)
    return _Value(micros.cast(dtype), "timestamp" if value.kind == "date" else value.kind, dtype)


def _text_test(call: Call, args: list[_Value]) -> _Value:
    """startswith, endswith and contains of a text written in the filter."""
    pattern = call.args[1]
    if not isinstance(pattern, Constant):
        raise InvalidFilterError(f"{call.function}() takes its second argument as 'text' written in the filter, in {call}")
    test = {"startswith": pc.starts_with, "endswith": pc.ends_with, "contains": pc.match_substring}[call.function]
    return _Value(test(args[0].expr, pattern=pattern.value), "bool", pa.bool_())


def _size(call: Call, args: list[_Value]) -> _Value:
    """Spark's size() in ANSI mode: the number of elements, NULL for a null list or map."""
    return _Value(pc.list_value_length(args[0].expr).cast(pa.int64()), "int", pa.int64())


def _array_contains(call: Call, args: list[_Value]) -> _Value:
    """Spark's array_contains(list, value) of a value written in the text: NULL for a null list,
    and where the value is not found but the list holds a null (as `in` with a null)."""
    value = call.args[1]
    if not isinstance(value, Constant):
        raise InvalidFilterError(f"array_contains() takes its value as a value written in the text, in {call}")
    element = args[0].type.value_type
    fits = {"int": pa.types.is_integer, "float": pa.types.is_floating, "string": pa.types.is_string, "text": pa.types.is_string,
            "bool": pa.types.is_boolean}  # fmt: skip
    kind = "float" if value.kind == "int" and pa.types.is_floating(element) else value.kind
    if not fits[kind](element):
        raise InvalidFilterError(f"array_contains() looks for {value} in a list of {element}, in {call}")
    return _Value(list_contains.call(args[0].expr, value.value, kind), "bool", pa.bool_())


_MORE: dict[str, Callable[[Call, list[_Value]], _Value]] = {
    "concat": _concat, "substring": _substring, "trim": _trimmed, "ltrim": _trimmed, "rtrim": _trimmed,
    "floor": _rounded, "ceil": _rounded, "round": _rounded, "greatest": _extreme, "least": _extreme,
    "nullif": _nullif, "pmod": _pmod, "date_add": _date_add, "datediff": _datediff, "add_interval": _add_interval,
    "startswith": _text_test, "endswith": _text_test, "contains": _text_test, "size": _size, "array_contains": _array_contains,
}  # fmt: skip


def _decimal_divide(call: Call, args: list[_Value]) -> _Value:
    """Spark's decimal division: the result's precision and scale by its rule (allowing precision
    loss past 38 digits), computed exactly and rounded half away from zero to that scale."""
    (p1, s1), (p2, s2) = (_decimal_shape(term, value) for term, value in zip(call.args, args))
    scale = max(6, s1 + p2 + 1)
    precision = p1 - s1 + s2 + scale
    if precision > _MAX_PRECISION:
        scale = max(_MAX_PRECISION - (precision - scale), min(scale, 6))
        precision = _MAX_PRECISION
    result = pa.decimal128(precision, scale)
    # Arrow divides decimals by truncating at a scale of its own: give the dividend enough places
    # that the digit after the result's scale is exact, then round at the result's scale. (Arrow
    # casts an int64 only to 19 digits or more: whole numbers go through decimal(20, 0).)
    places = scale + s2 + 1
    dividend, divisor = (v.expr if pa.types.is_decimal(v.type) else v.expr.cast(pa.decimal256(20, 0)) for v in args)
    whole_digits = p1 - s1 if pa.types.is_decimal(args[0].type) else 20
    if whole_digits + places > _MAX_PRECISION_256:
        raise InvalidFilterError(f"{call} needs more than {_MAX_PRECISION_256} digits")
    dividend = dividend.cast(pa.decimal256(whole_digits + places, places))
    quotient = pc.round(pc.divide_checked(dividend, divisor), ndigits=scale, round_mode="half_towards_infinity")
    return _Value(quotient.cast(result), "decimal", result)


def _decimal_shape(term: Any, value: _Value) -> tuple[int, int]:
    """(precision, scale) of a division's operand as Spark types it: a decimal's own, a whole
    number written in the text its digits, an int column 10 digits, any other whole number 20."""
    if pa.types.is_decimal(value.type):
        return value.type.precision, value.type.scale
    if isinstance(term, Constant):
        return max(1, len(str(abs(int(term.value))))), 0
    if isinstance(term, Column) and isinstance(term.type, IntegerType):
        return 10, 0
    return 20, 0


def _arithmetic_type(op: str, a: pa.DataType, b: pa.DataType) -> pa.DataType:
    """The result type: for decimals, SQL's precision and scale, and past 38 digits Spark's
    rule (spark.sql.decimalOperations.allowPrecisionLoss, its default): the whole digits are
    kept and the fraction gives way, down to 6 places (or fewer where the operands had fewer)."""
    if not pa.types.is_decimal(a):
        return a
    precision, scale = _exact_decimal(op, a, b)
    if precision > _MAX_PRECISION:
        scale = max(_MAX_PRECISION - (precision - scale), min(scale, 6))
        precision = _MAX_PRECISION
    return pa.decimal128(precision, scale)


def _exact_decimal(op: str, a: pa.DataType, b: pa.DataType) -> tuple[int, int]:
    """The precision and scale that hold every exact result of `a op b` (decimals)."""
    if op == "*":
        return a.precision + b.precision + 1, a.scale + b.scale
    scale = max(a.scale, b.scale)
    return max(a.precision - a.scale, b.precision - b.scale) + scale + 1, scale


def _decimal_beyond_38(op: str, left: _Value, right: _Value, result: pa.DataType) -> pc.Expression:
    """`left op right` on decimals whose exact result needs more than 38 digits: computed exactly in
    256 bits, rounded half up to the result's scale, then stored in 128 (an error, never a wrong
    value, when the whole digits do not fit: ANSI overflow)."""
    precisions = [left.type.precision, right.type.precision]
    if op == "*" and sum(precisions) + 1 > _MAX_PRECISION_256:
        # Arrow sizes a product one digit above its largest value: declare the wider operand a
        # digit narrower (a value that needs that digit makes a product beyond 38 digits anyway,
        # unless the other factor is tiny: then this cast fails, an error, never a wrong value).
        wider = precisions.index(max(precisions))
        precisions[wider] = _MAX_PRECISION_256 - 1 - precisions[1 - wider]
    wide = [v.expr.cast(pa.decimal256(p, v.type.scale)) for v, p in zip((left, right), precisions)]
    exact = _CHECKED[op](*wide)
    if result.scale < _exact_decimal(op, left.type, right.type)[1]:
        exact = pc.round(exact, ndigits=result.scale, round_mode="half_up")
    return exact.cast(result)


def _common(values: list[_Value], for_arithmetic: bool = False) -> list[_Value]:
    """`values` cast to one type: the widest number kind (decimals: a scale and precision that
    hold each exactly; for arithmetic Arrow aligns the scales itself), or a timestamp for dates
    meeting timestamps."""
    typed = [v for v in values if v.kind != "null"]
    if typed and len(typed) < len(values):  # a null operand takes the others' type
        values = [
            v if v.kind != "null" else _Value(pc.scalar(pa.scalar(None, typed[0].type)), typed[0].kind, typed[0].type) for v in values
        ]
    kinds = {v.kind for v in values}
    if len(kinds) == 1 and (kinds != {"decimal"} or for_arithmetic):
        return values
    if "float" in kinds:
        return [_cast(v, "float", pa.float64()) for v in values]
    if "decimal" in kinds:
        decimals = [v.type if v.kind == "decimal" else pa.decimal128(19, 0) for v in values]
        if for_arithmetic:
            return [_cast(v, "decimal", t) for v, t in zip(values, decimals)]
        scale = max(t.scale for t in decimals)
        precision = max(t.precision - t.scale for t in decimals) + scale
        if precision > _MAX_PRECISION:
            raise InvalidFilterError(f"comparing these decimals needs {precision} digits; at most {_MAX_PRECISION}")
        return [_cast(v, "decimal", pa.decimal128(precision, scale)) for v in values]
    if "timestamptz" in kinds:
        return [_cast(v, "timestamptz", _TEMPORAL_TYPES["timestamptz"]) for v in values]
    if "timestamp" in kinds:
        return [_cast(v, "timestamp", _TEMPORAL_TYPES["timestamp"]) for v in values]
    return values


def _cast(value: _Value, kind: str, dtype: pa.DataType) -> _Value:
    if value.type == dtype:
        return value
    expr = value.expr
    if value.kind == "date" and pa.types.is_timestamp(dtype):
        expr = expr.cast(pa.timestamp("us"))  # its midnight (then UTC, for timestamptz)
    if kind == "float":
        expr = as_double(expr, value.kind)
    return _Value(expr.cast(dtype), kind, dtype)
