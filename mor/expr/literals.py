"""Literals compared exactly with a column: dates and times as SQL users write them, and
numbers of any scale.

An untyped 'text' is cast to the column's type, as SQL engines cast it (DuckDB, PostgreSQL):
a date column takes the date part of '2025-06-05 10:00'; a zone-less time compared with a
timestamptz column is UTC; a timestamp column (no zone) takes a time in UTC ('Z', '+00:00')
and refuses another zone rather than ignore it. A typed literal keeps its type:
`timestamp '2025-06-05 10:00'` against a date column compares each date as its midnight, and
`date '2025-06-05'` against a timestamp column is that midnight.

Nanosecond timestamp columns (timestamp_ns, timestamptz_ns) compare with `TimestampNanoLiteral`
(pyiceberg has none): text keeps its digits to the nanosecond, a microsecond literal (a Python
datetime) is that many thousand nanoseconds.

A value finer than the column (1.234 on decimal(10,2), 1.5 on an int, 10:00 against a date) or
beyond its range is compared exactly, not rounded: `=` is never true, `<` becomes `<=` the value
rounded down, `>` becomes `>` it. Such a rewrite stays NULL for a null operand, so that `not`
of it selects no null row either (`never`/`always` below).
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Callable
from decimal import Decimal
from fractions import Fraction
from functools import singledispatchmethod
from typing import Any, NamedTuple

from pydantic import model_serializer
from pyiceberg.expressions import (
    AlwaysFalse,
    And,
    BooleanExpression,
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNaN,
    LessThan,
    LessThanOrEqual,
    LiteralPredicate,
    NotEqualTo,
    NotIn,
    NotNaN,
    NotNull,
    Or,
    SetPredicate,
)
from pyiceberg.expressions.literals import (
    DateLiteral,
    DecimalLiteral,
    DoubleLiteral,
    Literal,
    LongLiteral,
    StringLiteral,
    TimestampLiteral,
)
from pyiceberg.types import (
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IcebergType,
    IntegerType,
    LongType,
    NestedField,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
)

from mor.errors import InvalidFilterError

MICROS_PER_DAY = 86_400_000_000
NANOS_PER_DAY = 86_400_000_000_000
_EPOCH_ORDINAL = dt.date(1970, 1, 1).toordinal()
_INT_RANGES = {IntegerType: (-(2**31), 2**31 - 1), LongType: (-(2**63), 2**63 - 1)}
_TEMPORAL = re.compile(
    r"\s*(?P<y>\d{4})-(?P<m>\d{1,2})-(?P<d>\d{1,2})"
    r"(?:[T ](?P<H>\d{1,2}):(?P<M>\d{2})(?::(?P<S>\d{2})(?:\.(?P<f>\d+))?)?)?"
    r"\s*(?P<zone>[Zz]|UTC|[+-]\d{2}(?::?\d{2})?)?\s*"
)


class DateText(StringLiteral):
    """`date '2025-06-05'`: a date, whatever column it meets."""


class TimestampText(StringLiteral):
    """`timestamp '2025-06-05 10:00'`: a timestamp without zone (UTC against timestamptz)."""


class TimestamptzText(StringLiteral):
    """`timestamptz '2025-06-05 10:00+02:00'`: an instant (zone-less text: UTC)."""


TYPED_TEXT: dict[str, type[StringLiteral]] = {"date": DateText, "timestamp": TimestampText, "timestamptz": TimestamptzText}
_TYPED_CLASSES = set(TYPED_TEXT.values())


class TimestampNanoLiteral(TimestampLiteral):
    """Nanoseconds since 1970-01-01 (UTC for timestamptz_ns), for nanosecond timestamp columns.
    A TimestampLiteral to pyiceberg's transforms (day, hour, ... take its value as nanoseconds
    from the column's type), and converting only to the nanosecond types (and dates)."""

    @model_serializer
    def ser_model(self) -> str:
        seconds, nanos = divmod(self.value, 1_000_000_000)
        return (dt.datetime(1970, 1, 1) + dt.timedelta(seconds=seconds)).isoformat() + f".{nanos:09d}"

    def increment(self) -> Literal[int]:
        return TimestampNanoLiteral(self.value + 1)

    def decrement(self) -> Literal[int]:
        return TimestampNanoLiteral(self.value - 1)

    @singledispatchmethod
    def to(self, type_var: IcebergType) -> Literal[Any]:
        raise TypeError(f"Cannot convert TimestampNanoLiteral into {type_var}")

    @to.register(TimestampNanoType)
    @to.register(TimestamptzNanoType)
    def _(self, _: IcebergType) -> Literal[Any]:
        return self

    @to.register(DateType)
    def _(self, _: DateType) -> Literal[Any]:
        return DateLiteral(self.value // NANOS_PER_DAY)


class Temporal(NamedTuple):
    """A date or date-time as written: days since 1970-01-01, microseconds into the day (None
    for a date alone; digits beyond micros are cut, as a cast cuts them, and kept apart as
    `nanos` for nanosecond columns) and the zone's offset in microseconds (None when none is
    written)."""

    days: int
    micros_of_day: int | None
    offset: int | None
    nanos: int = 0  # the 7th to 9th digits of the fraction (beyond: cut)

    def wall_micros(self) -> int:
        return self.days * MICROS_PER_DAY + (self.micros_of_day or 0)


def parse_temporal(text: str) -> Temporal:
    """'2025-06-05', '2025-06-05 10:00', '2025-06-05T10:00:00.5+02:00', ... ; ValueError if not."""
    m = _TEMPORAL.fullmatch(text)
    if m is None:
        raise ValueError(f"{text!r} is not a date or timestamp (YYYY-MM-DD[ HH:MM[:SS[.ffffff]]][Z|+HH:MM])")
    days = dt.date(int(m["y"]), int(m["m"]), int(m["d"])).toordinal() - _EPOCH_ORDINAL
    if m["H"] is None:
        if m["zone"] is not None:
            raise ValueError(f"{text!r}: a zone needs a time of day")
        return Temporal(days, None, None)
    hour, minute, second = int(m["H"]), int(m["M"]), int(m["S"] or 0)
    if hour > 23 or minute > 59 or second > 59:
        raise ValueError(f"{text!r}: no such time of day")
    digits = (m["f"] or "").ljust(9, "0")
    micros = ((hour * 60 + minute) * 60 + second) * 1_000_000 + int(digits[:6])
    return Temporal(days, micros, _offset(m["zone"]), int(digits[6:9]))


def _offset(zone: str | None) -> int | None:
    if zone is None:
        return None
    if zone in ("Z", "z", "UTC"):
        return 0
    digits = zone[1:].replace(":", "")
    hours, minutes = int(digits[:2]), int(digits[2:] or 0)
    if hours > 18 or minutes > 59:
        raise ValueError(f"no such zone offset {zone!r}")
    sign = -1 if zone[0] == "-" else 1
    return sign * (hours * 60 + minutes) * 60_000_000


def exact_predicate(field: NestedField, expr: BooleanExpression) -> BooleanExpression:
    """`expr` (an unbound comparison or set predicate on `field`) with its literals in the
    column's own type, compared exactly (see the module docstring); `expr` itself when its
    literals need nothing of that. InvalidFilterError for text that is no value of the column."""
    if not isinstance(expr, (LiteralPredicate, SetPredicate)):
        return expr
    domain = _domain(field)
    literals = [expr.literal] if isinstance(expr, LiteralPredicate) else list(expr.literals)
    classes = {type(lit) for lit in literals}  # one pass over a long list
    if classes & _TYPED_CLASSES and (domain is None or domain.make not in (DateLiteral, TimestampLiteral, TimestampNanoLiteral)):
        typed = next(lit for lit in literals if type(lit) in _TYPED_CLASSES)
        raise InvalidFilterError(
            f"{_typed_name(typed)} '{typed.value}' cannot be compared with column {field.name!r} of type {field.field_type}"
        )
    if domain is None or not _needs_exactness(domain, literals, classes):
        return expr
    try:
        if isinstance(expr, LiteralPredicate):
            return _exact_comparison(expr, domain.units(expr.literal), domain)
        return _exact_set(expr, [domain.units(lit) for lit in literals], domain)
    except ValueError as e:
        raise InvalidFilterError(f"column {field.name!r} of type {field.field_type}: {e}") from e


def _typed_name(lit: Literal[Any]) -> str:
    return next(name for name, cls in TYPED_TEXT.items() if type(lit) is cls)


class _Domain:
    """A column's values as whole numbers of its unit (days, micros, 10**-scale, 1), with the
    range they may take (None: unbounded here) and how to make a literal of one."""

    def __init__(self, field: NestedField, handles: Callable[[Literal[Any]], bool], units: Callable[[Literal[Any]], Fraction],
                 make: Callable[[int], Literal[Any]], bounds: tuple[int, int] | None):  # fmt: skip
        self.field, self.handles, self.units, self.make, self.bounds = field, handles, units, make, bounds


def _domain(field: NestedField) -> _Domain | None:
    ftype: IcebergType = field.field_type
    if isinstance(ftype, DateType):
        return _Domain(field, _is_text, lambda lit: _date_units(field, lit), DateLiteral, None)
    if isinstance(ftype, (TimestampType, TimestamptzType)):
        zoned = isinstance(ftype, TimestamptzType)
        return _Domain(field, _is_text, lambda lit: Fraction(_timestamp_micros(field, lit, zoned)), TimestampLiteral, None)
    if isinstance(ftype, (TimestampNanoType, TimestamptzNanoType)):
        zoned = isinstance(ftype, TimestamptzNanoType)
        return _Domain(field, _not_nanos, lambda lit: Fraction(_timestamp_nanos(field, lit, zoned)), TimestampNanoLiteral, None)
    if isinstance(ftype, DecimalType):
        scale, limit = ftype.scale, 10**ftype.precision - 1
        return _Domain(
            field,
            lambda lit: not _fits_decimal(lit, scale, limit),
            lambda lit: _number(lit) * 10**scale,
            lambda n: DecimalLiteral(decimal_of(n, scale)),
            (-limit, limit),
        )
    bounds = _INT_RANGES.get(type(ftype))
    if bounds is not None:
        return _Domain(field, lambda lit: _needs_rounding(lit, bounds), _number, LongLiteral, bounds)
    return None


def _needs_exactness(domain: _Domain, literals: list[Literal[Any]], classes: set[type]) -> bool:
    if domain.make is TimestampNanoLiteral:
        return classes != {TimestampNanoLiteral}
    if classes <= {DateLiteral, TimestampLiteral}:
        return False  # already in the column's type (or a type bind refuses)
    if domain.make is LongLiteral and classes == {LongLiteral}:  # a long list of ints
        values = [lit.value for lit in literals]
        assert domain.bounds is not None  # an integer column's domain (the only one making LongLiterals) has bounds
        return not domain.bounds[0] <= min(values) <= max(values) <= domain.bounds[1]
    return any(domain.handles(lit) for lit in literals)


def _fits_decimal(lit: Literal[Any], scale: int, limit: int) -> bool:
    """A decimal literal already of the column's scale and precision (or no number)."""
    if not _is_number(lit):
        return True
    if not isinstance(lit, DecimalLiteral) or lit.value.as_tuple().exponent != -scale:
        return False
    return abs(unscaled(lit.value)) <= limit


# Exact, whatever the decimal context's precision (28 digits by default; a decimal(38, s) has 38).
def unscaled(value: Decimal) -> int:
    """The integer of `value`'s digits (its value times 10**-exponent)."""
    sign, digits, _ = value.as_tuple()
    n = int("".join(map(str, digits)) or "0")
    return -n if sign else n


def decimal_of(n: int, scale: int) -> Decimal:
    """n * 10**-scale, exactly, with exponent -scale."""
    return Decimal((1 if n < 0 else 0, tuple(int(c) for c in str(abs(n))), -scale))


def _is_text(lit: Literal[Any]) -> bool:
    return isinstance(lit, StringLiteral)


def _is_number(lit: Literal[Any]) -> bool:
    return isinstance(lit, (DecimalLiteral, LongLiteral)) or (isinstance(lit, DoubleLiteral) and math.isfinite(lit.value))


def _needs_rounding(lit: Literal[Any], bounds: tuple[int, int]) -> bool:
    """A number an int column cannot hold as it is (a fraction, or out of range)."""
    if isinstance(lit, LongLiteral):
        return not bounds[0] <= lit.value <= bounds[1]
    return _is_number(lit)


def _number(lit: Literal[Any]) -> Fraction:
    """A double as its shortest text (`1e-2` is 0.01, not the binary value just above it):
    Spark compares a decimal or whole column with a double as doubles, and a column value
    equals the double exactly where its nearest double is that one."""
    if isinstance(lit, DoubleLiteral):
        return Fraction(Decimal(repr(lit.value)))
    return Fraction(lit.value)


def _date_units(field: NestedField, lit: Literal[Any]) -> Fraction:
    value = parse_temporal(lit.value)
    if isinstance(lit, (TimestampText, TimestamptzText)) and value.micros_of_day is not None:
        micros = value.wall_micros() if isinstance(lit, TimestampText) else _utc_micros(lit, value)
        return Fraction(micros, MICROS_PER_DAY)  # the date compared as its midnight
    return Fraction(value.days)  # a cast to date keeps the date part


def _timestamp_micros(field: NestedField, lit: Literal[Any], zoned: bool) -> int:
    value = parse_temporal(lit.value)
    if isinstance(lit, DateText):
        return value.days * MICROS_PER_DAY
    if zoned:
        return _utc_micros(lit, value)
    if value.offset not in (None, 0):
        raise ValueError(f"{lit.value!r} has a zone, and the column holds timestamps without zone: write the time without it")
    return value.wall_micros()


def _not_nanos(lit: Literal[Any]) -> bool:
    return type(lit) is not TimestampNanoLiteral


def _timestamp_nanos(field: NestedField, lit: Literal[Any], zoned: bool) -> int:
    """A literal against a nanosecond column, in nanoseconds: text to its ninth digit, a
    microsecond timestamp (a datetime) or a date scaled. InvalidFilterError-bound ValueError for
    anything else (a number is no instant)."""
    if isinstance(lit, TimestampNanoLiteral):
        return lit.value
    if isinstance(lit, TimestampLiteral):
        return lit.value * 1000
    if isinstance(lit, DateLiteral):
        return lit.value * NANOS_PER_DAY
    if not isinstance(lit, StringLiteral):
        raise ValueError(f"{lit.value!r} is not a timestamp (write it as text, '2025-06-05 10:00:00.123456789')")
    return _timestamp_micros(field, lit, zoned) * 1000 + parse_temporal(lit.value).nanos


def _utc_micros(lit: Literal[Any], value: Temporal) -> int:
    if isinstance(lit, TimestampText) and value.offset not in (None, 0):
        raise ValueError(f"timestamp '{lit.value}' has no zone (write timestamptz '...' or plain '...')")
    return value.wall_micros() - (value.offset or 0)


# -- exact comparisons ------------------------------------------------------------------------

_ORDER = {LessThan: "<", LessThanOrEqual: "<=", GreaterThan: ">", GreaterThanOrEqual: ">=", EqualTo: "=", NotEqualTo: "!="}


def _exact_comparison(expr: LiteralPredicate, units: Fraction, domain: _Domain) -> BooleanExpression:
    term, op = expr.term, _ORDER.get(type(expr))
    if op is None:  # starts with: text only
        raise ValueError(f"'starts with' needs a string column, not {domain.field.field_type}")
    low, high = domain.bounds if domain.bounds is not None else (None, None)
    if high is not None and units > high:
        return always(term, domain) if op in ("<", "<=", "!=") else never(term, domain)
    if low is not None and units < low:
        return always(term, domain) if op in (">", ">=", "!=") else never(term, domain)
    if units.denominator == 1:
        return type(expr)(term, domain.make(int(units)))
    below = math.floor(units)  # no column value lies between `below` and `units`
    if op == "=":
        return never(term, domain)
    if op == "!=":
        return always(term, domain)
    return LessThanOrEqual(term, domain.make(below)) if op in ("<", "<=") else GreaterThan(term, domain.make(below))


def _exact_set(expr: SetPredicate, units: list[Fraction], domain: _Domain) -> BooleanExpression:
    """`in` keeps the values the column can hold; with none, `in` is never true, `not in`
    always (for a non-null value)."""
    bounds = domain.bounds
    kept = {domain.make(int(u)) for u in units if u.denominator == 1 and (bounds is None or bounds[0] <= u <= bounds[1])}
    if not kept:
        return never(expr.term, domain) if isinstance(expr, In) else always(expr.term, domain)
    return (In if isinstance(expr, In) else NotIn)(expr.term, kept)


def never(term: Any, domain: _Domain) -> BooleanExpression:
    """False for every value, NULL for a null (`x < 0 and x >= 0`)."""
    zero = domain.make(0)
    return And(LessThan(term, zero), GreaterThanOrEqual(term, zero))


def always(term: Any, domain: _Domain) -> BooleanExpression:
    """True for every value, NULL for a null (`x >= 0 or x < 0`)."""
    zero = domain.make(0)
    return Or(GreaterThanOrEqual(term, zero), LessThan(term, zero))


# A comparison of a float column with NaN ('NaN', as Spark casts the text) -> the same rows by
# is_nan / not_nan: NaN equals NaN and sorts above every number (Spark's order); NULL stays NULL.
_NAN_COMPARED: dict[type, Callable[[str], BooleanExpression]] = {
    EqualTo: IsNaN,
    NotEqualTo: lambda name: And(NotNaN(name), NotNull(name)),
    GreaterThan: lambda name: AlwaysFalse(),
    GreaterThanOrEqual: IsNaN,
    LessThan: lambda name: And(NotNaN(name), NotNull(name)),
    LessThanOrEqual: NotNull,
}


def nan_compared(field: NestedField | None, expr: LiteralPredicate | SetPredicate) -> BooleanExpression | None:
    """`expr` on float column `field` without NaN among its values (see _NAN_COMPARED), or None
    when it has none (or the column is no float)."""
    if field is None or not isinstance(field.field_type, (FloatType, DoubleType)):
        return None
    name = expr.term.name
    if isinstance(expr, LiteralPredicate):
        rewrite = _NAN_COMPARED.get(type(expr))
        return rewrite(name) if rewrite is not None and is_nan_value(expr.literal.value) else None
    if not any(is_nan_value(lit.value) for lit in expr.literals):  # a long list of plain floats: one pass, no NaN
        return None
    rest = [lit for lit in expr.literals if not is_nan_value(lit.value)]
    if isinstance(expr, In):
        return Or(In(name, rest), IsNaN(name)) if rest else IsNaN(name)
    return And(NotIn(name, rest), NotNaN(name)) if rest else And(NotNaN(name), NotNull(name))


def is_nan_value(v: Any) -> bool:
    """A NaN, as a float, a Decimal or text ('NaN', 'nan')."""
    if isinstance(v, float):
        return math.isnan(v)
    if isinstance(v, Decimal):
        return v.is_nan()
    if isinstance(v, str):
        try:
            return math.isnan(float(v))
        except ValueError:
            return False
    return False
