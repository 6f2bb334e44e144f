"""The clock and intervals in filter text, folded into constants when the filter is parsed.

`current_date`, `current_timestamp` and `now()` are read once, when the text is parsed, in UTC
(mor's session zone: a time without zone is UTC everywhere in mor), as Spark SQL reads them
once per query. `interval 7 days`, `interval '1' hour`, `interval 1 day 2 hours` and
`interval '7 days'` are Spark SQL's interval literals; added to or subtracted from a date or
time constant they give a constant, so `ts > current_timestamp - interval 1 hour` is a plain
comparison that prunes files. As in Spark SQL, a date plus whole days or months stays a date,
a date plus hours is a timestamp, and adding months keeps the day of the month where the
month has it, else takes the month's last day (Jan 31 + 1 month = Feb 28 or 29).
"""

from __future__ import annotations

import calendar
import datetime as dt
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from mor.expr.literals import MICROS_PER_DAY, parse_temporal

_EPOCH = dt.datetime(1970, 1, 1)
# unit -> (months, microseconds) per unit; plurals are accepted too
UNITS: dict[str, tuple[int, int]] = {
    "year": (12, 0),
    "month": (1, 0),
    "week": (0, 7 * MICROS_PER_DAY),
    "day": (0, MICROS_PER_DAY),
    "hour": (0, 3_600_000_000),
    "minute": (0, 60_000_000),
    "second": (0, 1_000_000),
    "millisecond": (0, 1_000),
    "microsecond": (0, 1),
}


def unit_of(word: str) -> str | None:
    """The unit a word names ('days' -> 'day'), or None."""
    word = word.lower()
    return word if word in UNITS else word[:-1] if word.endswith("s") and word[:-1] in UNITS else None


@dataclass(frozen=True)
class Interval:
    """A span of calendar months plus microseconds (Spark's year-month and day-time parts)."""

    months: int
    micros: int

    def __str__(self) -> str:
        return f"interval {self.months} months {self.micros} microseconds"

    def __add__(self, other: Interval) -> Interval:
        return Interval(self.months + other.months, self.micros + other.micros)

    def __neg__(self) -> Interval:
        return Interval(-self.months, -self.micros)


def interval_of(amount: str, unit: str) -> Interval:
    """`amount` of `unit` (a unit_of name); a fraction only of seconds and smaller units.
    ValueError when it is not a number of that unit."""
    try:
        value = Decimal(amount.strip())
    except InvalidOperation:
        raise ValueError(f"{amount!r} is not a number of {unit}s") from None
    months, micros = UNITS[unit]
    if value != value.to_integral_value() and (months or micros > 1_000_000):
        raise ValueError(f"an interval of {amount} {unit}s: only seconds and smaller units take a fraction")
    if not value.is_finite():
        raise ValueError(f"{amount!r} is not a number of {unit}s")
    return Interval(int(value) * months, int(value * micros))


def now() -> dt.datetime:
    """The clock the filter text reads (UTC); tests replace it."""
    return dt.datetime.now(dt.UTC)


def current_date() -> tuple[str, str]:
    """(the text of today's date in UTC, "date")."""
    return now().date().isoformat(), "date"


def current_timestamp() -> tuple[str, str]:
    """(the text of this instant, "timestamptz"): Spark's current_timestamp() is a timestamp
    with local time zone, here UTC."""
    return temporal_text("timestamptz", _micros_of(now().replace(tzinfo=None))), "timestamptz"


def shifted(text: str, kind: str, interval: Interval) -> tuple[str, str]:
    """(text, kind) of the date or time `text` of `kind` plus `interval`; ValueError when the
    result is out of range or the text has a zone where its kind has none."""
    value = parse_temporal(text)
    if kind == "timestamp" and value.offset not in (None, 0):
        raise ValueError(f"timestamp '{text}' has a zone (write timestamptz '...')")
    micros = value.days * MICROS_PER_DAY if kind == "date" else value.wall_micros() - (value.offset or 0)
    try:
        moved = _add_months(_EPOCH + dt.timedelta(microseconds=micros), interval.months) + dt.timedelta(microseconds=interval.micros)
    except OverflowError:
        raise ValueError(f"{kind} '{text}' plus {interval} is out of range (years 1 to 9999)") from None
    result_kind = kind if kind != "date" or interval.micros % MICROS_PER_DAY == 0 else "timestamp"
    return temporal_text(result_kind, _micros_of(moved)), result_kind


def temporal_text(kind: str, micros: int) -> str:
    """The canonical text of a date (days: micros // MICROS_PER_DAY) or a time of `kind`."""
    moment = _EPOCH + dt.timedelta(microseconds=micros)
    if kind == "date":
        return moment.date().isoformat()
    text = moment.isoformat(sep=" ", timespec="microseconds")
    return text + "+00:00" if kind == "timestamptz" else text


def _micros_of(moment: dt.datetime) -> int:
    delta = moment - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _add_months(moment: dt.datetime, months: int) -> dt.datetime:
    if not months:
        return moment
    index = moment.year * 12 + moment.month - 1 + months
    year, month = divmod(index, 12)
    if not 1 <= year <= 9999:
        raise OverflowError
    day = min(moment.day, calendar.monthrange(year, month + 1)[1])
    return moment.replace(year=year, month=month + 1, day=day)
