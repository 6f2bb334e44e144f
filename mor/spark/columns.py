"""A mor row filter (pyiceberg expression, bound to the table schema) as a Spark Column, so
Spark's native Parquet reader selects the rows the local reader selects.

Both sides follow spec/predicates.md, and Spark SQL does natively what the local reader
(mor/expr/arrow_rows.py) spells out: three-valued logic (a NULL operand selects nothing, also
under NOT and in NOT IN), NaN above every number (`NaN > 1.0` is true), `isnan(NULL)` false.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

from pyiceberg.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BooleanExpression,
    BoundEqualTo,
    BoundGreaterThan,
    BoundGreaterThanOrEqual,
    BoundIn,
    BoundIsNaN,
    BoundIsNull,
    BoundLessThan,
    BoundLessThanOrEqual,
    BoundNotEqualTo,
    BoundNotIn,
    BoundNotNaN,
    BoundNotNull,
    BoundNotStartsWith,
    BoundStartsWith,
    Not,
    Or,
)
from pyiceberg.types import (
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IcebergType,
    TimestampType,
    TimestamptzType,
)
from pyspark.sql import Column
from pyspark.sql import functions as F

from mor.errors import UnsupportedFeatureError

EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def to_column(expr: BooleanExpression) -> Column:
    """`expr` must be bound (mor.expr.filters.bind_filter)."""
    if isinstance(expr, AlwaysTrue):
        return F.lit(True)
    if isinstance(expr, AlwaysFalse):
        return F.lit(False)
    if isinstance(expr, And):
        return to_column(expr.left) & to_column(expr.right)
    if isinstance(expr, Or):
        return to_column(expr.left) | to_column(expr.right)
    if isinstance(expr, Not):
        return ~to_column(expr.child)
    field = expr.term.ref().field
    column = F.col(f"`{field.name}`")
    ftype = field.field_type
    if isinstance(expr, BoundIsNull):
        return column.isNull()
    if isinstance(expr, BoundNotNull):
        return column.isNotNull()
    if isinstance(expr, BoundIsNaN):
        return F.isnan(column)
    if isinstance(expr, BoundNotNaN):
        return ~F.isnan(column)  # true for NULL, which is not NaN (isnan(NULL) is false)
    if isinstance(expr, (BoundIn, BoundNotIn)):
        values = [_value(ftype, lit.value) for lit in expr.literals]
        matched = _zero_safe(column, ftype, values).isin(values)
        return matched if isinstance(expr, BoundIn) else ~matched
    value = _value(ftype, expr.literal.value)
    column = _zero_safe(column, ftype, [value])
    if isinstance(expr, BoundStartsWith):
        return column.startswith(value)
    if isinstance(expr, BoundNotStartsWith):
        return ~column.startswith(value)
    comparisons = {
        BoundEqualTo: lambda: column == value,
        BoundNotEqualTo: lambda: column != value,
        BoundLessThan: lambda: column < value,
        BoundLessThanOrEqual: lambda: column <= value,
        BoundGreaterThan: lambda: column > value,  # true for NaN: Spark sorts it above every number
        BoundGreaterThanOrEqual: lambda: column >= value,
    }
    for kind, build in comparisons.items():
        if isinstance(expr, kind):
            return build()
    raise UnsupportedFeatureError(f"no Spark form for filter {expr}")


def _zero_safe(column: Column, ftype: IcebergType, values: list[Any]) -> Column:
    """`column` + 0.0 where a float column meets a zero literal: -0.0 = 0.0 in SQL, but Spark
    pushes `f = 0.0` (and `f >= 0.0`, ...) into Parquet's row-group statistics, which order -0.0
    below 0.0 and skip a row group of -0.0 (measured: `f = 0` found no row on Spark 4). The sum
    is -0.0 + 0.0 = 0.0, and an expression is not pushed down; every other filter still is."""
    if isinstance(ftype, (FloatType, DoubleType)) and any(isinstance(v, float) and v == 0.0 for v in values):
        return column + F.lit(0.0)
    return column


def _value(ftype: IcebergType, value: Any) -> Any:
    """Iceberg's internal literal (micros, days, unscaled) as the Python value Spark expects."""
    if isinstance(ftype, TimestamptzType):
        return EPOCH + dt.timedelta(microseconds=value)
    if isinstance(ftype, TimestampType):
        return (EPOCH + dt.timedelta(microseconds=value)).replace(tzinfo=None)
    if isinstance(ftype, DateType):
        return dt.date(1970, 1, 1) + dt.timedelta(days=value)
    if isinstance(ftype, DecimalType) and not isinstance(value, Decimal):
        return Decimal(value)
    return value
