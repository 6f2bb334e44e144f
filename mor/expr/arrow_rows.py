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

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyiceberg.expressions import And, BooleanExpression, Not, Or
from pyiceberg.expressions.literals import Literal
from pyiceberg.expressions.visitors import BoundBooleanExpressionVisitor, visit
from pyiceberg.schema import Schema
from pyiceberg.types import DoubleType, FloatType, IntegerType, LongType, NestedField, StructType, UUIDType

from mor.errors import InvalidFilterError
from mor.expr.residual import BoundResidual, has_residual
from mor.expr.residual_rows import residual_expression
from mor.expr.text import filter_text
from mor.format.arrow_types import to_arrow_type

_NULL = pa.nulls(1, pa.bool_())[0]  # not pa.scalar: that imports pandas, a second at start-up


def to_arrow_filter(
    expr: BooleanExpression, schema: Schema, paths: dict[int, tuple[str, ...]] | None = None, guard: pc.Expression | None = None
) -> pc.Expression:
    """`expr` must be bound to `schema` (mor.expr.filters.bind_filter). `paths`: each field's
    column path in the rows, where it is not its path of names in `schema`. `guard`: the rows
    whose answer matters (a CASE's branch); nothing fails on the others."""
    return _in_order(expr, _SqlFilter(schema, paths=paths), guard)


def _in_order(expr: BooleanExpression, visitor: _SqlFilter, guard: pc.Expression | None) -> pc.Expression:
    """`expr` as the visitor writes it, except that the right side of `and` is computed only
    where the left is not FALSE, and of `or` where it is not TRUE (`guard`: elsewhere its
    columns read as null), as Spark evaluates them: `j != 0 and i / j > 1` divides by no zero."""
    if isinstance(expr, And | Or):
        left = _in_order(expr.left, visitor, guard)
        right_guard = guard
        if has_residual(expr.right):  # only a residual can fail on a row
            reaches = pc.coalesce(left if isinstance(expr, And) else ~left, pc.scalar(True))
            right_guard = reaches if guard is None else guard & reaches
        right = _in_order(expr.right, visitor, right_guard)
        return left & right if isinstance(expr, And) else left | right  # Kleene's
    if isinstance(expr, Not):
        return ~_in_order(expr.child, visitor, guard)
    if isinstance(expr, BoundResidual) and guard is not None:
        return residual_expression(expr, visitor.paths, guard)
    return visit(expr, visitor)


class RowFilter:
    """A bound row filter applied to batches: `to_arrow_filter`'s expression, except that an
    `in` list of many integers is looked up in a table made once (`IntegerSet`) into a column
    added to the batch for the expression to read: pyarrow's is_in builds its hash table again
    for every batch, and probing it costs several times a table lookup."""

    def __init__(self, expr: BooleanExpression, schema: Schema):
        visitor = _SqlFilter(schema, lookups=True)
        self.filter = expr
        self.expression = _in_order(expr, visitor, None)
        self.lookups = visitor.lookups  # (added column, the column it looks up, the set)

    def apply(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """The rows where the filter is TRUE; InvalidFilterError where a value makes it fail (a
        cast of text that is no number, an overflow: SQL's errors, as Spark's ANSI mode raises them)."""
        try:
            if not self.lookups:
                return batch.filter(self.expression)
            names = batch.schema.names
            found = [values.contains(batch.column(column)) for _, column, values in self.lookups]
            extended = pa.RecordBatch.from_arrays([*batch.columns, *found], names=[*names, *(n for n, _, _ in self.lookups)])
            return extended.filter(self.expression).select(names)
        except pa.ArrowInvalid as e:
            raise InvalidFilterError(f"the filter {filter_text(self.filter)} fails on a row read: {e}") from e


class IntegerSet:
    """A set of integers as a table of flags over their range, for `in` lists whose range is at
    most `SPAN_PER_VALUE` times their count: membership of a batch is one vectorized lookup."""

    MIN_VALUES = 1024  # a shorter list costs is_in little
    SPAN_PER_VALUE = 64  # bytes of table per value at most
    MAX_SPAN = 1 << 26

    def __init__(self, values: np.ndarray):
        self.low, self.high = int(values.min()), int(values.max())
        self.flags = np.zeros(self.high - self.low + 1, dtype=bool)
        self.flags[values - self.low] = True

    @classmethod
    def of(cls, values: set[Any]) -> IntegerSet | None:
        if len(values) < cls.MIN_VALUES:
            return None
        array = np.fromiter(values, dtype=np.int64, count=len(values))
        span = int(array.max()) - int(array.min()) + 1
        return cls(array) if span <= min(cls.SPAN_PER_VALUE * len(array), cls.MAX_SPAN) else None

    def contains(self, column: pa.Array) -> pa.Array:
        """SQL's `column in (...)`: NULL for a null."""
        values = (pc.fill_null(column, self.low) if column.null_count else column).to_numpy().astype(np.int64, copy=False)
        inside = (values >= self.low) & (values <= self.high)
        found = self.flags[np.where(inside, values - self.low, 0)] & inside
        return pa.array(found, mask=~column.is_valid().to_numpy(zero_copy_only=False) if column.null_count else None)


class _SqlFilter(BoundBooleanExpressionVisitor[pc.Expression]):
    def __init__(self, schema: Schema, lookups: bool = False, paths: dict[int, tuple[str, ...]] | None = None):
        self.paths = _field_paths(schema.as_struct(), ()) if paths is None else paths
        self.with_lookups = lookups
        self.lookups: list[tuple[str, str, IntegerSet]] = []
        self.names = {f.name for f in schema.fields}

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
        ftype = term.ref().field.field_type
        path = self.paths[term.ref().field.field_id]
        if self.with_lookups and isinstance(ftype, (IntegerType, LongType)) and len(path) == 1:
            values = IntegerSet.of(literals)
            if values is not None:
                name = f"__mor_in_{len(self.lookups)}"
                while name in self.names:
                    name += "_"
                self.lookups.append((name, path[0], values))
                return pc.field(name)
        items = [_arrow_value(v) for v in literals] if isinstance(ftype, UUIDType) else list(literals)
        if isinstance(ftype, (FloatType, DoubleType)) and 0.0 in literals:
            items += [0.0, -0.0]  # is_in hashes bits, but -0.0 = 0.0 (as `=` says)
        values = pa.array(items, self._type(term))  # one array, made once per filter
        # is_in says false for a null; SQL says NULL (so that NOT IN drops it too).
        return pc.if_else(column.is_valid(), pc.is_in(column, value_set=values), _NULL)

    def visit_not_in(self, term: Any, literals: set[Any]) -> pc.Expression:
        return ~self.visit_in(term, literals)

    def visit_residual(self, residual: BoundResidual) -> pc.Expression:
        """Arithmetic, functions, column against column: mor.expr.residual_rows."""
        return residual_expression(residual, self.paths)

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
    f: NestedField
    for f in struct.fields:
        paths[f.field_id] = (*prefix, f.name)
        if isinstance(f.field_type, StructType):
            paths.update(_field_paths(f.field_type, (*prefix, f.name)))
    return paths
