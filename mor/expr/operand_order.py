"""Which operands of a bound term Spark computes, and where: its ANSI mode raises on a row (a zero
divisor, an overflow, a cast of bad text) only where it computes a value, and it skips an
operator's second operand where the first is NULL (the result is NULL anyway) and a coalesce
operand where one before it is set. mor/expr/residual_rows.py computes the same rows; this
module says which terms can fail, and which are NULL exactly where an operand is."""

from __future__ import annotations

from typing import Any

from mor.expr.residual import Call, Constant

# Operators whose result is NULL where either operand is: the second operand is computed only
# where the first is set. Division and remainder compute their divisor first.
DIVISOR_FIRST = frozenset({"/", "%", "pmod"})
OPERATORS = frozenset({"+", "-", "*"}) | DIVISOR_FIRST

_DATE_PARTS = frozenset(
    {"year", "quarter", "month", "weekofyear", "day", "dayofweek", "dayofweek_iso", "dayofyear", "hour", "minute", "second"}
)
# Calls that are NULL exactly where one of their operands is (in ANSI mode an overflow or a zero
# divisor raises, it does not give NULL).
NULL_WITH_OPERANDS = frozenset({"+", "-", "*", "/", "%", "neg", "abs", "lower", "upper", "length", "concat", "date"}) | _DATE_PARTS


def can_fail(term: Any) -> bool:
    """Whether computing `term` can raise on a row for a value an ordinary row holds: a division or
    remainder by anything but a constant that is not zero, or text cast (text that is no number).
    (An overflow raises too, only near a type's limits: not weighed here, see docs/limits.md.)"""
    if not isinstance(term, Call):
        return False
    if term.function in ("cast", "date") and getattr(term.args[0], "kind", "") in ("string", "text"):
        return True
    if term.function in DIVISOR_FIRST and not (isinstance(term.args[1], Constant) and term.args[1].value not in (0, None)):
        return True
    return any(can_fail(a) for a in term.args)
