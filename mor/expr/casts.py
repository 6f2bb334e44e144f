"""`cast(x as type)` and `x::type`: the types a filter names, which casts are accepted, and the
cast of a constant, done when the filter is parsed.

A cast of a constant folds to a typed constant, so that `ts >= cast('2025-01-01' as date)` is a
plain comparison and prunes; a cast of a column is evaluated on the rows
(mor.expr.cast_rows). Both follow Spark SQL in its default (ANSI) mode, which DuckDB shares
where they overlap: a value that does not convert (`cast('abc' as int)`, 300 as tinyint, NaN as
int) is an error, never a silent NULL (Spark's one exception: a float's NaN or infinity as a
decimal is NULL); fractions go to whole numbers toward zero (Spark;
DuckDB rounds) and to fewer decimal places half away from zero; text is trimmed before it is
read as a number, a boolean (`true`/`t`/`yes`/`y`/`1` and their false counterparts, any case)
or a date (whose time, if written, is cut). Type names: `timestamp` is mor's timestamp without
zone (also `timestamp_ntz`), `timestamptz` the instant (also `timestamp_ltz`); a time without
zone read as an instant is UTC.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from decimal import ROUND_DOWN, ROUND_HALF_UP, Decimal, InvalidOperation, localcontext
from typing import Any

from mor.expr.float_text import double_text
from mor.expr.literals import MICROS_PER_DAY, parse_temporal
from mor.expr.temporal import temporal_text

MAX_PRECISION = 38


@dataclass(frozen=True)
class CastType:
    """A cast's target: its kind (a residual term's kind) and, for numbers, its size."""

    kind: str  # int, float, decimal, string, bool, date, timestamp, timestamptz
    bits: int = 64  # int: 8, 16, 32 or 64; float: 32 or 64
    precision: int = 0  # decimal
    scale: int = 0  # decimal

    def __str__(self) -> str:
        if self.kind == "decimal":
            return f"decimal({self.precision},{self.scale})"
        if self.kind == "int":
            return {8: "tinyint", 16: "smallint", 32: "int", 64: "bigint"}[self.bits]
        if self.kind == "float":
            return "float" if self.bits == 32 else "double"
        return {"bool": "boolean"}.get(self.kind, self.kind)


_TYPES: dict[str, CastType] = {
    "boolean": CastType("bool"), "bool": CastType("bool"),
    "tinyint": CastType("int", 8), "byte": CastType("int", 8),
    "smallint": CastType("int", 16), "short": CastType("int", 16),
    "int": CastType("int", 32), "integer": CastType("int", 32),
    "bigint": CastType("int", 64), "long": CastType("int", 64),
    "float": CastType("float", 32), "real": CastType("float", 32), "double": CastType("float", 64),
    "decimal": CastType("decimal", precision=10), "dec": CastType("decimal", precision=10), "numeric": CastType("decimal", precision=10),
    "string": CastType("string"), "varchar": CastType("string"), "text": CastType("string"),
    "date": CastType("date"),
    "timestamp": CastType("timestamp"), "timestamp_ntz": CastType("timestamp"),
    "timestamptz": CastType("timestamptz"), "timestamp_ltz": CastType("timestamptz"),
}  # fmt: skip
TYPE_NAMES = (
    "boolean, tinyint, smallint, int, bigint, float, double, decimal(p,s), string (varchar), date, "
    "timestamp (timestamp_ntz), timestamptz (timestamp_ltz)"
)
_NUMBERS = ("int", "decimal", "float")
_TEMPORAL = ("date", "timestamp", "timestamptz")
# target kind -> the kinds a cast to it accepts
CASTS: dict[str, tuple[str, ...]] = {
    "int": (*_NUMBERS, "string", "bool"),
    "float": (*_NUMBERS, "string", "bool"),
    "decimal": (*_NUMBERS, "string"),
    "string": ("int", "decimal", "float", "string", "bool", *_TEMPORAL),  # a float as Spark writes it: mor.expr.float_text
    "bool": ("int", "string", "bool"),
    "date": ("string", *_TEMPORAL),
    "timestamp": ("string", *_TEMPORAL),
    "timestamptz": ("string", *_TEMPORAL),
}
_TRUE = {"t", "true", "y", "yes", "1"}
_FALSE = {"f", "false", "n", "no", "0"}
BOOLEAN_TEXTS = (tuple(sorted(_TRUE)), tuple(sorted(_FALSE)))
_WHOLE = re.compile(r"[+-]?\d+")


def cast_type(name: str, sizes: list[int] | None) -> CastType:
    """The type a name and its sizes (`decimal(10, 2)`, `varchar(20)`) name; ValueError that
    lists the names accepted."""
    base = _TYPES.get(name.lower())
    if base is None:
        raise ValueError(f"unknown type {name!r}: cast to one of {TYPE_NAMES}")
    if sizes is None:
        return base
    if base.kind == "decimal" and 1 <= len(sizes) <= 2:
        precision, scale = sizes[0], sizes[1] if len(sizes) == 2 else 0
        if not (1 <= precision <= MAX_PRECISION and 0 <= scale <= precision):
            raise ValueError(f"decimal({', '.join(map(str, sizes))}): precision 1 to {MAX_PRECISION}, scale 0 to the precision")
        return CastType("decimal", precision=precision, scale=scale)
    if name.lower() == "varchar" and len(sizes) == 1:
        return base  # Spark casts to varchar(n) as to string
    raise ValueError(f"{name}({', '.join(map(str, sizes))}) takes no such sizes: cast to one of {TYPE_NAMES}")


def check_cast(kind: str, target: CastType, what: Any) -> str | None:
    """Why `what` of `kind` cannot be cast to `target`, naming what can be; None if it can."""
    allowed = CASTS[target.kind]
    if kind in allowed or (kind == "text" and "string" in allowed):
        return None
    sources = ", ".join("boolean" if k == "bool" else k for k in allowed)
    return f"cannot cast {what} ({kind}) to {target}: a cast to {target} takes {sources}"


def cast_constant(value: Any, kind: str, target: CastType) -> tuple[Any, str]:
    """(value, kind) of a constant cast to `target`: a date or time as its canonical text;
    ValueError saying why for a value the target cannot hold."""
    if target.kind == "int":
        return _to_int(value, kind, target), "int"
    if target.kind == "float":
        number = float(_number(value, kind)) if kind not in ("text", "string") else float(_trimmed(value, "a number"))
        if math.isnan(number):
            raise ValueError("NaN cannot be compared: use 'col is nan' or 'col is not nan'")
        if target.bits == 32 and math.isfinite(number) and abs(number) > 3.4028234663852886e38:
            raise ValueError(f"{value} is out of range for float")
        return number, "float"
    if target.kind == "decimal":
        return _to_decimal(value, kind, target), "decimal"
    if target.kind == "string":
        return _to_string(value, kind), "string"
    if target.kind == "bool":
        if kind == "bool":
            return value, "bool"
        if kind == "int":
            return value != 0, "bool"
        text = value.strip().lower()
        if text not in _TRUE | _FALSE:
            raise ValueError(f"{value!r} is not a boolean (true: {', '.join(BOOLEAN_TEXTS[0])}; false: {', '.join(BOOLEAN_TEXTS[1])})")
        return text in _TRUE, "bool"
    return _to_temporal(value, kind, target.kind), target.kind


def _trimmed(value: str, what: str) -> str:
    text = value.strip()
    if not text:
        raise ValueError(f"{value!r} is not {what}")
    return text


def _number(value: Any, kind: str) -> Decimal | float | int:
    if kind == "bool":
        return int(value)
    return value


def _to_int(value: Any, kind: str, target: CastType) -> int:
    if kind in ("text", "string"):
        text = _trimmed(value, "a whole number")
        if not _WHOLE.fullmatch(text):
            raise ValueError(f"{value!r} is not a whole number")
        whole = int(text)
    elif kind == "float" and not math.isfinite(value):
        raise ValueError(f"{value} has no whole number")
    elif kind in ("float", "decimal"):
        whole = int(Decimal(value).to_integral_value(ROUND_DOWN))  # toward zero, as Spark
    else:
        whole = int(value)
    low, high = -(2 ** (target.bits - 1)), 2 ** (target.bits - 1) - 1
    if not low <= whole <= high:
        raise ValueError(f"{whole} is out of range for {target} ({low} to {high})")
    return whole


def _to_decimal(value: Any, kind: str, target: CastType) -> Decimal:
    try:
        if kind in ("text", "string"):
            number = Decimal(_trimmed(value, "a number"))
        elif kind == "float":
            number = Decimal(repr(value))  # the double's shortest text, as Spark's BigDecimal(double)
        else:
            number = Decimal(value)
    except InvalidOperation:
        raise ValueError(f"{value!r} is not a number") from None
    if not number.is_finite():
        raise ValueError(f"{value} is no decimal")
    with localcontext() as context:
        context.prec = 2 * MAX_PRECISION + len(number.as_tuple().digits)
        rounded = number.quantize(Decimal(1).scaleb(-target.scale), ROUND_HALF_UP)  # half away from zero
    if len(rounded.as_tuple().digits) > target.precision and rounded != 0:
        raise ValueError(f"{value} does not fit {target}")
    return rounded


def _to_string(value: Any, kind: str) -> str:
    if kind == "bool":
        return "true" if value else "false"
    if kind == "float":
        return double_text(float(value))
    if kind == "decimal":
        return format(value, "f")
    if kind in _TEMPORAL:
        return format_temporal(value, kind)
    return str(value)


def format_temporal(text: str, kind: str) -> str:
    """A date or time as Spark's cast to string writes it: '2025-06-05', '2025-06-05 10:00:00',
    '2025-06-05 10:00:00.5' (UTC for an instant, without its zone)."""
    micros = _micros(text, kind)
    if kind == "date":
        return temporal_text("date", micros)
    whole, fraction = temporal_text("timestamp", micros).split(".")
    fraction = fraction.rstrip("0")
    return f"{whole}.{fraction}" if fraction else whole


def _to_temporal(value: Any, kind: str, target: str) -> str:
    if kind in ("text", "string"):
        try:
            parse_temporal(value)
        except ValueError:
            raise ValueError(f"{value!r} is not a date or timestamp (YYYY-MM-DD[ HH:MM[:SS[.ffffff]]][Z|+HH:MM])") from None
        kind = "timestamptz" if target == "timestamptz" else "timestamp" if target == "timestamp" else "date"
    micros = _micros(value, kind)
    if target == "date":
        micros -= micros % MICROS_PER_DAY
    return temporal_text(target, micros)


def _micros(text: str, kind: str) -> int:
    """Microseconds since 1970-01-01 (UTC for an instant) of a date or time constant's text."""
    value = parse_temporal(text)
    if kind == "date":
        return value.days * MICROS_PER_DAY
    if kind == "timestamp" and value.offset not in (None, 0):
        raise ValueError(f"timestamp '{text}' has a zone (write timestamptz '...')")
    return value.wall_micros() - (value.offset or 0)
