"""Evaluating user value expressions (pyarrow compute) over rows, for UPDATE and MERGE."""

from __future__ import annotations

from typing import Any, Mapping

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from mor.errors import SchemaMismatchError

Assignments = Mapping[str, Any]  # column -> literal value or pc.Expression


def as_expression(value: Any, target: pa.DataType) -> pc.Expression:
    if isinstance(value, pc.Expression):
        return value
    try:
        return pc.scalar(pa.scalar(value, type=target))
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError) as e:
        raise SchemaMismatchError(f"value {value!r} does not fit type {target}: {e}") from e


def project(rows: pa.Table, columns: Mapping[str, pc.Expression]) -> pa.Table:
    """Evaluate named expressions over `rows` (one output row per input row)."""
    try:
        return ds.dataset(rows).to_table(columns=dict(columns))
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as e:
        raise SchemaMismatchError(f"cannot evaluate {list(columns)}: {e}") from e


def evaluate_condition(rows: pa.Table, condition: pc.Expression | None) -> pa.Array:
    """A boolean per row (null counts as false); all true without a condition."""
    if condition is None:
        return pa.array([True] * rows.num_rows, pa.bool_())
    result = project(rows, {"_c": condition}).column("_c")
    if not pa.types.is_boolean(result.type):
        raise SchemaMismatchError(f"condition {condition} is not boolean but {result.type}")
    return pc.fill_null(result.combine_chunks(), False)
