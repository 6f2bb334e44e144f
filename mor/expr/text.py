"""Filters in messages: a filter as filter text (`id < 3 and (amount * 1.1) > 100`, where
pyiceberg's own `str` of an expression is its constructor's repr, `And(left=BoundLessThan(...`),
and why a filter does not bind, in the user's words."""

from __future__ import annotations

import difflib
import re
from typing import Any

from pyiceberg.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BooleanExpression,
    BoundPredicate,
    Not,
    Or,
    UnboundPredicate,
)
from pyiceberg.expressions.literals import DateLiteral, Literal, TimestampLiteral
from pyiceberg.schema import Schema
from pyiceberg.utils.datetime import days_to_date, micros_to_timestamp

from mor.expr.residual import Residual

MAX_CHARS = 200  # a longer text is cut, with "..." (a 100,000-value IN list stays readable)

_OPERATORS = {
    "EqualTo": "=", "NotEqualTo": "!=", "LessThan": "<", "LessThanOrEqual": "<=", "GreaterThan": ">",
    "GreaterThanOrEqual": ">=", "StartsWith": "starts with", "NotStartsWith": "not starts with",
}  # fmt: skip
_UNARY = {"IsNull": "is null", "NotNull": "is not null", "IsNaN": "is nan", "NotNaN": "is not nan"}
_SETS = {"In": "in", "NotIn": "not in"}
_UNKNOWN_NAME = re.compile(r"Could not find field with name (.+?), case_sensitive=")


def filter_text(expr: BooleanExpression) -> str:
    """`expr` written as filter text, cut at MAX_CHARS."""
    text = _text(expr)
    return text if len(text) <= MAX_CHARS else text[: MAX_CHARS - 3] + "..."


def _text(expr: BooleanExpression) -> str:
    if isinstance(expr, AlwaysTrue):
        return "true"
    if isinstance(expr, AlwaysFalse):
        return "false"
    if isinstance(expr, And):
        return f"{_grouped(expr.left, Or)} and {_grouped(expr.right, Or)}"
    if isinstance(expr, Or):
        return f"{_text(expr.left)} or {_text(expr.right)}"
    if isinstance(expr, Not):
        return f"not ({_text(expr.child)})"
    if isinstance(expr, Residual):
        return str(expr)
    if isinstance(expr, (BoundPredicate, UnboundPredicate)):
        return _predicate(expr)
    return str(expr)


def _grouped(expr: BooleanExpression, looser: type) -> str:
    return f"({_text(expr)})" if isinstance(expr, looser) else _text(expr)


def _predicate(expr: Any) -> str:
    kind = type(expr).__name__.removeprefix("Bound")
    name = expr.term.ref().field.name if isinstance(expr, BoundPredicate) else expr.term.name
    if kind in _UNARY:
        return f"{name} {_UNARY[kind]}"
    if kind in _SETS:
        values = ", ".join(sorted((_value(lit) for lit in expr.literals), key=lambda v: (len(v), v)))
        return f"{name} {_SETS[kind]} ({values})"
    if kind in _OPERATORS:
        return f"{name} {_OPERATORS[kind]} {_value(expr.literal)}"
    return str(expr)


def _value(literal: Literal[Any]) -> str:
    value = literal.value
    if isinstance(literal, DateLiteral):
        return f"date '{days_to_date(value).isoformat()}'"
    if isinstance(literal, TimestampLiteral):  # micros since the epoch, UTC
        return f"timestamp '{micros_to_timestamp(value).isoformat(sep=' ')}'"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def unfit_message(schema: Schema, error: Exception) -> str:
    """Why a filter does not bind to `schema` (pyiceberg's `error`), in the user's words: the
    unknown column and the likeliest one meant, or the boolean test of a column that is none."""
    names = schema.column_names
    columns = ", ".join(names[:30]) + (", ..." if len(names) > 30 else "")
    unknown = _UNKNOWN_NAME.search(str(error))
    if unknown:
        name = unknown.group(1)
        close = difflib.get_close_matches(name, names, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        return f"the filter names column {name!r}, which the table does not have (columns: {columns}){hint}"
    if "Cannot convert BooleanLiteral into" in str(error):
        kind = str(error).rsplit(" ", 1)[-1]
        return f"a column of type {kind} compared with true or false (or named alone as a condition): only a boolean column is a condition"
    return f"the filter does not fit the table schema: {error} (columns: {columns})"
