"""Evaluating user values over rows, for UPDATE and MERGE: SQL text (mor.expr.values), pyarrow
compute expressions and literals."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from mor.errors import SchemaMismatchError
from mor.expr.values import Lit, Scope, text_expression
from mor.write.safe_casts import narrowed

Assignments = Mapping[str, Any]  # column -> SQL text, pc.Expression, mor.lit(...) or a Python literal


def as_expression(value: Any, target: pa.DataType, scope: Scope, column: str) -> pc.Expression:
    """A column's new value as an expression over the rows `scope` describes: a `str` is SQL
    text, a pyarrow expression stays as it is, anything else (and `mor.lit(...)`) is a literal."""
    if isinstance(value, pc.Expression):
        return value
    if isinstance(value, str):
        return text_expression(value, target, scope, column)
    if isinstance(value, Lit):
        value = value.value
    try:
        return pc.scalar(pa.scalar(value, type=target))
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError) as e:
        stored = _stored(value, target, column)  # as a write stores it (Decimal("1.005") into decimal(10, 2) is 1.01)
        if stored is None:
            raise SchemaMismatchError(f"value {value!r} does not fit {column!r} ({target}): {e}") from e
        return pc.scalar(stored)


def _stored(value: Any, target: pa.DataType, column: str) -> pa.Scalar | None:
    """`value` converted by the store assignment every write applies (mor/write/safe_casts.py);
    None where that does not convert its type either."""
    try:
        natural = pa.array([value])
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
        return None
    stored = narrowed(pa.table({column: natural}), pa.schema([pa.field(column, target)]))
    return stored.column(0)[0] if stored.schema.field(0).type == target else None


def project(rows: pa.Table, columns: Mapping[str, pc.Expression]) -> pa.Table:
    """Evaluate named expressions over `rows` (one output row per input row)."""
    try:
        return _dataset(rows).to_table(columns=dict(columns))
    except _ARROW_ERRORS as e:
        raise _evaluation_error(rows, columns, e) from e


def _dataset(rows: pa.Table) -> Any:
    import pyarrow.dataset as ds  # here, not at import: pyarrow.dataset imports pandas (a second)

    return ds.dataset(rows)


_ARROW_ERRORS = (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError)


def _evaluation_error(rows: pa.Table, columns: Mapping[str, pc.Expression], error: Exception) -> SchemaMismatchError:
    """SchemaMismatchError naming the output column whose expression does not evaluate, and
    the column it refers to that `rows` lack (Arrow's own message dumps the whole schema)."""
    for name, expression in columns.items():
        try:
            _dataset(rows.slice(0, 0)).to_table(columns={name: expression})
        except _ARROW_ERRORS as e:
            unknown = _UNKNOWN_FIELD.search(str(e))
            if unknown:
                return SchemaMismatchError(
                    f"the expression for {name!r} ({expression}) refers to column {unknown.group(1)!r},"
                    f" which is not one of {rows.column_names}"
                )
            return SchemaMismatchError(f"the expression for {name!r} ({expression}) does not evaluate: {_first_line(e)}")
    # Every expression types: the values of some row fail (an overflow, say): name them.
    for name, expression in columns.items():
        row = _first_failing_row(rows, name, expression)
        if row is not None:
            index, reason = row
            return SchemaMismatchError(f"column {name!r}: {reason}, in the row {_described(rows, index)}")
    return SchemaMismatchError(f"cannot evaluate {list(columns)}: {_first_line(error)}")


def _first_failing_row(rows: pa.Table, name: str, expression: pc.Expression) -> tuple[int, str] | None:
    """(the first row whose value of `expression` fails, Arrow's reason), found by halving:
    a few evaluations of ever fewer rows; None when every row evaluates."""
    try:
        _dataset(rows).to_table(columns={name: expression})
        return None
    except _ARROW_ERRORS as e:
        reason = _first_line(e)
    start, stop = 0, rows.num_rows  # the first failing row lies in [start, stop)
    while stop - start > 1:
        middle = (start + stop) // 2
        try:
            _dataset(rows.slice(start, middle - start)).to_table(columns={name: expression})
            start = middle
        except _ARROW_ERRORS as e:
            stop, reason = middle, _first_line(e)
    return start, reason


def _described(rows: pa.Table, index: int, shown: int = 4) -> str:
    """A row by its first columns' values (`id=2, price=900.00`): a table's key comes first."""
    names = [n for n in rows.column_names if not n.startswith("_")][:shown]
    values = ", ".join(f"{n}={rows.column(n)[index].as_py()!r}" for n in names)
    return f"{values}{', ...' if len(rows.column_names) > len(names) else ''}"


_UNKNOWN_FIELD = re.compile(r"No match for FieldRef\.Name\((.*?)\) in ")


def _first_line(error: Exception) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def evaluate_condition(rows: pa.Table, condition: pc.Expression | None) -> pa.Array:
    """A boolean per row (null counts as false); all true without a condition."""
    if condition is None:
        return pa.array([True] * rows.num_rows, pa.bool_())
    result = project(rows, {"condition": condition}).column("condition")
    if not pa.types.is_boolean(result.type):
        raise SchemaMismatchError(f"condition {condition} is not boolean but {result.type}")
    return pc.fill_null(result.combine_chunks(), False)
