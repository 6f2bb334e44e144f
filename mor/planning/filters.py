"""Row filters: parsed, checked, bound, and evaluated against metadata, behind mor's errors.

pyiceberg binds a filter to a schema, projects it onto partitions and evaluates it against
column metrics; this module is the one place that calls those, so a pyiceberg change touches
one file. The semantics (spec/predicates.md) are SQL's: a row is selected only where the
predicate is TRUE, and NaN sorts above every number. Pruning here must never drop a file that
holds such a row.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterable
from decimal import Decimal
from typing import Any

from pyiceberg.expressions import (
    AlwaysTrue,
    And,
    BooleanExpression,
    GreaterThan,
    GreaterThanOrEqual,
    IsNaN,
    LiteralPredicate,
    Not,
    Or,
    SetPredicate,
)
from pyiceberg.expressions.visitors import (
    _InclusiveMetricsEvaluator,
    _StrictMetricsEvaluator,
    bind,
    expression_evaluator,
    extract_field_ids,
    inclusive_projection,
    manifest_evaluator,
    rewrite_not,
)
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.types import (
    DoubleType,
    FloatType,
    IcebergType,
    IntegerType,
    LongType,
    NestedField,
)

from mor.errors import InvalidFilterError
from mor.format.content_file import ContentFile, PartitionValues
from mor.format.manifest import ManifestFile
from mor.format.partition_values import as_record
from mor.planning.filter_text import parse

FilterLike = str | BooleanExpression | None

_INT_RANGES = {IntegerType: (-(2**31), 2**31 - 1), LongType: (-(2**63), 2**63 - 1)}
_FLOAT32_MAX = 3.4028234663852886e38


def parse_filter(row_filter: FilterLike) -> BooleanExpression:
    if row_filter is None:
        return AlwaysTrue()
    if isinstance(row_filter, BooleanExpression):
        return row_filter
    if not isinstance(row_filter, str) or not row_filter.strip():
        raise InvalidFilterError(f"a filter must be predicate text or an expression, got {row_filter!r}")
    return parse(row_filter)


# One operation binds its filter in many places (checks, planning, matching, reading), and pyiceberg
# converts every literal of an `in` list each time (about 0.8 s per 100,000 values): remember the
# last few results by object identity (expressions and schemas are immutable).
_REMEMBERED: dict[tuple[str, int, int, bool], tuple[BooleanExpression, Schema, BooleanExpression]] = {}
_REMEMBER_LAST = 32
_REMEMBER_LOCK = threading.Lock()


def _remembered(
    kind: str, schema: Schema, expr: BooleanExpression, case_sensitive: bool, compute: Callable[[], BooleanExpression]
) -> BooleanExpression:
    key = (kind, id(expr), id(schema), case_sensitive)
    hit = _REMEMBERED.get(key)
    if hit is not None and hit[0] is expr and hit[1] is schema:
        return hit[2]
    result = compute()
    with _REMEMBER_LOCK:
        while len(_REMEMBERED) >= _REMEMBER_LAST:
            del _REMEMBERED[next(iter(_REMEMBERED))]  # the oldest
        _REMEMBERED[key] = (expr, schema, result)
    return result


def bind_filter(schema: Schema, expr: BooleanExpression, case_sensitive: bool = True) -> BooleanExpression:
    def compute() -> BooleanExpression:
        _check_literals(schema, expr, case_sensitive)
        try:
            return bind(schema, expr, case_sensitive)
        except (ValueError, TypeError) as e:
            columns = ", ".join(schema.column_names[:30])
            raise InvalidFilterError(f"filter {expr} does not fit the table schema: {e} (columns: {columns})") from e

    return _remembered("bound", schema, expr, case_sensitive, compute)


def _inclusive_evaluator(schema: Schema, expr: BooleanExpression, case_sensitive: bool) -> _InclusiveMetricsEvaluator:
    """pyiceberg's inclusive metrics evaluator for `expr`'s pruning form, bound once per filter
    (its constructor would bind it again on every call)."""
    pruning = _remembered("pruning", schema, expr, case_sensitive, lambda: pruning_filter(schema, expr, case_sensitive))
    evaluator = _InclusiveMetricsEvaluator.__new__(_InclusiveMetricsEvaluator)
    evaluator.include_empty_files = False
    evaluator.expr = bind_filter(schema, pruning, case_sensitive)
    return evaluator


def filter_field_ids(schema: Schema, expr: BooleanExpression, case_sensitive: bool = True) -> set[int]:
    return extract_field_ids(bind_filter(schema, expr, case_sensitive))


class FileFilter:
    """Decides, from metadata only, which manifests and files may hold matching rows."""

    def __init__(self, schema: Schema, specs: dict[int, PartitionSpec], expr: BooleanExpression, case_sensitive: bool = True):
        bind_filter(schema, expr, case_sensitive)  # fail early with InvalidFilterError
        self.schema = schema
        self.specs = specs
        self.expr = expr
        self.case_sensitive = case_sensitive
        self._pruning = _remembered("pruning", schema, expr, case_sensitive, lambda: pruning_filter(schema, expr, case_sensitive))
        self._metrics = _inclusive_evaluator(schema, expr, case_sensitive)
        self._strict: _StrictMetricsEvaluator | None = None  # built when first asked: binding costs
        self._manifest_evals: dict[int, Callable[[Any], bool]] = {}
        self._partition_evals: dict[int, Callable[[Any], bool]] = {}

    def manifest_may_match(self, manifest: ManifestFile) -> bool:
        spec_id = manifest.partition_spec_id
        if spec_id not in self._manifest_evals:
            spec = self.specs[spec_id]
            self._manifest_evals[spec_id] = (
                _always if spec.is_unpartitioned() else manifest_evaluator(spec, self.schema, self._project(spec), self.case_sensitive)
            )
        return bool(self._manifest_evals[spec_id](manifest))

    def partition_may_match(self, spec_id: int, partition: PartitionValues) -> bool:
        if spec_id not in self._partition_evals:
            spec = self.specs[spec_id]
            partition_schema = Schema(*spec.partition_type(self.schema).fields)
            self._partition_evals[spec_id] = (
                _always
                if spec.is_unpartitioned()
                else expression_evaluator(partition_schema, self._project(spec), self.case_sensitive)
            )
        return bool(self._partition_evals[spec_id](as_record(partition)))

    def file_may_match(self, file: ContentFile) -> bool:
        return self.partition_may_match(file.spec_id, file.partition) and bool(self._metrics.eval(file))  # type: ignore[arg-type]

    def file_must_match(self, file: ContentFile) -> bool:
        """True when every row of the file matches by its column metrics, in Iceberg's two-valued
        reading: trust it only for columns without nulls and NaNs (see RowMatcher)."""
        if self._strict is None:
            self._strict = _StrictMetricsEvaluator(self.schema, self.expr, self.case_sensitive)
        return bool(self._strict.eval(file))  # type: ignore[arg-type]

    def _project(self, spec: PartitionSpec) -> BooleanExpression:
        return inclusive_projection(self.schema, spec, self.case_sensitive)(self._pruning)


def _always(_: Any) -> bool:
    return True  # an unpartitioned spec projects every filter to true: skip binding it again


def metrics_evaluator(schema: Schema, expr: BooleanExpression, case_sensitive: bool = True) -> Callable[[Any], bool]:
    """Tests whether an object with column metrics (a file, a row group) may hold matches."""
    evaluator = _inclusive_evaluator(schema, expr, case_sensitive)
    return lambda metrics: bool(evaluator.eval(metrics))


def pruning_filter(schema: Schema, expr: BooleanExpression, case_sensitive: bool = True) -> BooleanExpression:
    """`expr` for pyiceberg's metrics and partition evaluators. NaN sorts above every number, so
    `x > c` and `x >= c` hold for NaN; but column bounds leave NaN out (and pyiceberg rules out a
    file of NaNs only), so on floating point columns ask for `x > c or x is nan`. NOTs are pushed
    to the leaves first (by De Morgan, which Kleene logic keeps) so that `not x <= c` is seen."""

    def visit(e: BooleanExpression) -> BooleanExpression:
        if isinstance(e, And):
            return And(visit(e.left), visit(e.right))
        if isinstance(e, Or):
            return Or(visit(e.left), visit(e.right))
        if isinstance(e, (GreaterThan, GreaterThanOrEqual)):
            field = _field(schema, e.term.name, case_sensitive)
            if field is not None and isinstance(field.field_type, (FloatType, DoubleType)):
                return Or(e, IsNaN(e.term))
        return e

    return visit(rewrite_not(expr))


def _check_literals(schema: Schema, expr: BooleanExpression, case_sensitive: bool) -> None:
    """Refuse literals that pyiceberg would turn into another value or into an always-true or
    always-false predicate (`i > 1.5` bound as `i > 2`; `i < 2**70` as true, null rows included),
    and NaN, which compares as nothing (Iceberg refuses it too: use is_nan / not_nan)."""
    if isinstance(expr, (And, Or)):
        _check_literals(schema, expr.left, case_sensitive)
        _check_literals(schema, expr.right, case_sensitive)
    elif isinstance(expr, Not):
        _check_literals(schema, expr.child, case_sensitive)
    elif isinstance(expr, (LiteralPredicate, SetPredicate)):
        field = _field(schema, expr.term.name, case_sensitive)
        values = [expr.literal.value] if isinstance(expr, LiteralPredicate) else [lit.value for lit in expr.literals]
        if field is not None:  # an unknown column is reported by bind
            _check_values(field, values)


def _check_values(field: NestedField, values: Iterable[Any]) -> None:
    ftype: IcebergType = field.field_type
    if isinstance(ftype, (FloatType, DoubleType)):
        for v in values:
            if _is_nan(v):
                raise InvalidFilterError(
                    f"NaN cannot be compared with column {field.name!r}: use '{field.name} is nan' or '{field.name} is not nan'"
                )
            if isinstance(ftype, FloatType) and isinstance(v, (int, float, Decimal)) and abs(v) > _FLOAT32_MAX:
                raise InvalidFilterError(f"{v} is out of range for column {field.name!r} of type float")
    bounds = _INT_RANGES.get(type(ftype))
    if bounds is None:
        return
    for v in values:
        if isinstance(v, bool) or not isinstance(v, (int, float, Decimal)):
            continue  # not a number: bind says whether it converts
        if not _is_whole(v):
            raise InvalidFilterError(f"{v} is not a whole number, and column {field.name!r} holds {ftype} values")
        if not bounds[0] <= v <= bounds[1]:
            raise InvalidFilterError(f"{v} is out of range for column {field.name!r} of type {ftype}")


def _is_whole(v: float | Decimal) -> bool:
    if isinstance(v, int):
        return True
    if isinstance(v, float):
        return v.is_integer()
    return v.is_finite() and v == v.to_integral_value()


def _is_nan(v: Any) -> bool:
    if isinstance(v, float):
        return math.isnan(v)
    if isinstance(v, Decimal):
        return v.is_nan()
    if isinstance(v, str):
        try:
            return math.isnan(float(v))
        except ValueError:
            return False
    return False


def _field(schema: Schema, name: str, case_sensitive: bool) -> NestedField | None:
    try:
        return schema.find_field(name, case_sensitive)
    except ValueError:
        return None
