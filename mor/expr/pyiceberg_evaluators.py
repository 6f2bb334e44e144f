"""What mor builds on pyiceberg's evaluators beyond their public API: the inclusive metrics
evaluator, made to prune by `in` lists longer than pyiceberg's limit, and the strict metrics,
manifest and partition evaluators constructed over a binding mor made once (their
constructors would bind again, converting an `in` list literal by literal). pyiceberg's private
classes and attributes are read here alone (mor/catalog/pyiceberg_rest.py holds the REST
client's), pinned by tests/unit/catalog/test_pyiceberg_rest.py."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable
from typing import Any, TypeAlias

from pyiceberg.conversions import from_bytes
from pyiceberg.expressions import BooleanExpression, BoundTerm
from pyiceberg.expressions.visitors import (
    IN_PREDICATE_LIMIT,
    _ExpressionEvaluator,
    _InclusiveMetricsEvaluationVisitor,
    _ManifestEvalVisitor,
    _StrictMetricsEvaluator,
    visit,
)
from pyiceberg.types import PrimitiveType, UUIDType

StrictEvaluator: TypeAlias = _StrictMetricsEvaluator


def strict_evaluator(struct: Any, bound: BooleanExpression) -> StrictEvaluator:
    """pyiceberg's strict metrics evaluator of `bound` over the fields of `struct` (files with
    no rows are not taken to match)."""
    strict = _StrictMetricsEvaluator.__new__(_StrictMetricsEvaluator)
    strict.struct = struct
    strict.include_empty_files = False
    strict.expr = bound
    return strict


def manifest_evaluator(partition_filter: BooleanExpression) -> Callable[[Any], bool]:
    """Whether a manifest's partition summaries may hold rows matching `partition_filter`."""
    evaluator = _ManifestEvalVisitor.__new__(_ManifestEvalVisitor)
    evaluator.partition_filter = partition_filter
    return evaluator.eval


def partition_evaluator(bound: BooleanExpression) -> Callable[[Any], bool]:
    """Whether a file's partition tuple matches `bound`."""
    evaluator = _ExpressionEvaluator.__new__(_ExpressionEvaluator)
    evaluator.bound = bound
    return evaluator.eval


class MetricsEvaluator:
    """pyiceberg's inclusive metrics evaluator (`_InclusiveMetricsEvaluator.eval`) over a bound
    expression, which also prunes by an `in` list longer than pyiceberg's limit (200 values,
    beyond which it keeps every file): a file may match only if a value lies within its bounds,
    found by bisection in the sorted values."""

    def __init__(self, bound: BooleanExpression):
        self.expr = bound
        self._sorted: dict[int, tuple[set[Any], list[Any] | None]] = {}  # id(value set) -> sorted values

    def eval(self, file: Any) -> bool:
        if file.record_count == 0:
            return False
        if file.record_count < 0:
            return True  # unknown (old imports)
        return visit(self.expr, _LongListVisitor(file, self._sorted_values))

    def _sorted_values(self, values: set[Any]) -> list[Any] | None:
        hit = self._sorted.get(id(values))
        if hit is None or hit[0] is not values:
            try:
                ordered: list[Any] | None = sorted(values)
            except TypeError:
                ordered = None
            hit = self._sorted[id(values)] = (values, ordered)
        return hit[1]


class _LongListVisitor(_InclusiveMetricsEvaluationVisitor):
    def __init__(self, file: Any, sorted_values: Callable[[set[Any]], list[Any] | None]):
        super().__init__(file)
        self.sorted_values = sorted_values

    def visit_in(self, term: BoundTerm, literals: set[Any]) -> bool:
        if len(literals) <= IN_PREDICATE_LIMIT:
            return super().visit_in(term, literals)
        field = term.ref().field
        field_id = field.field_id
        if self._contains_nulls_only(field_id) or self._contains_nans_only(field_id):
            return False
        ordered = self.sorted_values(literals)
        if ordered is None or not isinstance(field.field_type, PrimitiveType) or isinstance(field.field_type, UUIDType):
            return True
        lower_bytes, upper_bytes = self.lower_bounds.get(field_id), self.upper_bounds.get(field_id)
        lower = None if lower_bytes is None else from_bytes(field.field_type, lower_bytes)
        upper = None if upper_bytes is None else from_bytes(field.field_type, upper_bytes)
        if self._is_nan(lower) or self._is_nan(upper):
            return True  # unreliable bounds, as pyiceberg says
        try:
            i = 0 if lower is None else bisect_left(ordered, lower)
            return i < len(ordered) and (upper is None or ordered[i] <= upper)
        except TypeError:
            return True
