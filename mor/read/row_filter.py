"""A bound row filter as a pyarrow compute expression, with SQL's semantics.

A row is kept only where the expression is TRUE. Comparisons, IN and prefix tests are NULL for
a null operand, and NOT/AND/OR follow Kleene logic, so `not (x in (1, 2))` drops a null x just
as `x = 1` does. `is null` and `is nan` are two-valued. NaN sorts above every number (Iceberg's
order, and Spark's and DuckDB's): `NaN > c` is true where IEEE comparison says false.
See spec/predicates.md.
"""

from __future__ import annotations

import uuid
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyiceberg.expressions import BooleanExpression
from pyiceberg.expressions.literals import Literal
from pyiceberg.expressions.visitors import BoundBooleanExpressionVisitor, visit
from pyiceberg.schema import Schema
from pyiceberg.types import DoubleType, FloatType, NestedField, StructType

from mor.write.arrow_schema import to_arrow_type

_NULL = pa.scalar(None, pa.bool_())


def to_arrow_filter(expr: BooleanExpression, schema: Schema) -> pc.Expression:
    """`expr` must be bound to `schema` (mor.planning.filters.bind_filter)."""
    return visit(expr, _SqlFilter(schema))


class _SqlFilter(BoundBooleanExpressionVisitor[pc.Expression]):
    def __init__(self, schema: Schema):
        self.paths = _field_paths(schema.as_struct(), ())

    def _column(self, term: Any) -> pc.Expression:
        field = term.ref().field
        column = pc.field(*self.paths[field.field_id])
        # float is compared as double, as SQL engines compare it with a double literal.
        return column.cast(pa.float64()) if isinstance(field.field_type, FloatType) else column

    def _type(self, term: Any) -> pa.DataType:
        ftype = term.ref().field.field_type
        return pa.float64() if isinstance(ftype, FloatType) else to_arrow_type(ftype)

    def _value(self, term: Any, literal: Literal[Any]) -> pa.Scalar:
        return pa.scalar(_arrow_value(literal.value), self._type(term))

    def _or_nan(self, term: Any, condition: pc.Expression) -> pc.Expression:
        """`x > c` and `x >= c` also hold for NaN, which sorts above every number."""
        if isinstance(term.ref().field.field_type, (FloatType, DoubleType)):
            return condition | pc.is_nan(self._column(term))
        return condition

    def visit_true(self) -> pc.Expression:
        return pc.scalar(True)

    def visit_false(self) -> pc.Expression:
        return pc.scalar(False)

    def visit_not(self, child_result: pc.Expression) -> pc.Expression:
        return ~child_result  # invert: NULL stays NULL

    def visit_and(self, left_result: pc.Expression, right_result: pc.Expression) -> pc.Expression:
        return left_result & right_result  # and_kleene

    def visit_or(self, left_result: pc.Expression, right_result: pc.Expression) -> pc.Expression:
        return left_result | right_result  # or_kleene

    def visit_is_null(self, term: Any) -> pc.Expression:
        return self._column(term).is_null(nan_is_null=False)

    def visit_not_null(self, term: Any) -> pc.Expression:
        return self._column(term).is_valid()

    def visit_is_nan(self, term: Any) -> pc.Expression:
        column = self._column(term)
        return pc.is_nan(column) & column.is_valid()  # false, not NULL, for a null

    def visit_not_nan(self, term: Any) -> pc.Expression:
        return ~self.visit_is_nan(term)  # true for a null: it is not NaN (Iceberg's notNaN)

    def visit_equal(self, term: Any, literal: Literal[Any]) -> pc.Expression:
        return self._column(term) == self._value(term, literal)

    def visit_not_equal(self, term: Any, literal: Literal[Any]) -> pc.Expression:
        return self._column(term) != self._value(term, literal)  # NaN != c is true, as IEEE says

    def visit_less_than(self, term: Any, literal: Literal[Any]) -> pc.Expression:
        return self._column(term) < self._value(term, literal)

    def visit_less_than_or_equal(self, term: Any, literal: Literal[Any]) -> pc.Expression:
        return self._column(term) <= self._value(term, literal)

    def visit_greater_than(self, term: Any, literal: Literal[Any]) -> pc.Expression:
        return self._or_nan(term, self._column(term) > self._value(term, literal))

    def visit_greater_than_or_equal(self, term: Any, literal: Literal[Any]) -> pc.Expression:
        return self._or_nan(term, self._column(term) >= self._value(term, literal))

    def visit_in(self, term: Any, literals: set[Any]) -> pc.Expression:
        column = self._column(term)
        items = [_arrow_value(v) for v in literals]
        if isinstance(term.ref().field.field_type, (FloatType, DoubleType)) and 0.0 in items:
            items += [0.0, -0.0]  # is_in hashes bits, but -0.0 = 0.0 (as `=` says)
        values = pa.array(items, self._type(term))
        # is_in says false for a null; SQL says NULL (so that NOT IN drops it too).
        return pc.if_else(column.is_valid(), pc.is_in(column, value_set=values), _NULL)

    def visit_not_in(self, term: Any, literals: set[Any]) -> pc.Expression:
        return ~self.visit_in(term, literals)

    def visit_starts_with(self, term: Any, literal: Literal[Any]) -> pc.Expression:
        return pc.starts_with(self._column(term), pattern=literal.value)

    def visit_not_starts_with(self, term: Any, literal: Literal[Any]) -> pc.Expression:
        return ~self.visit_starts_with(term, literal)


def _arrow_value(value: Any) -> Any:
    """Iceberg's internal literal value as pyarrow takes it (micros, days, unscaled work as is)."""
    return value.bytes if isinstance(value, uuid.UUID) else value


def _field_paths(struct: StructType, prefix: tuple[str, ...]) -> dict[int, tuple[str, ...]]:
    """Field id -> column path (names through structs), for pc.field(*path)."""
    paths: dict[int, tuple[str, ...]] = {}
    for f in struct.fields:
        f: NestedField  # type: ignore[no-redef]
        paths[f.field_id] = (*prefix, f.name)
        if isinstance(f.field_type, StructType):
            paths.update(_field_paths(f.field_type, (*prefix, f.name)))
    return paths
