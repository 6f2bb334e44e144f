"""Row filters: parsed, checked, bound, and evaluated against metadata, behind mor's errors.

pyiceberg binds a filter to a schema, projects it onto partitions and evaluates it against
column metrics; this module is the one place that calls those, so a pyiceberg change touches
one file. The semantics (spec/predicates.md) are SQL's: a row is selected only where the
predicate is TRUE, and NaN sorts above every number. Pruning here must never drop a file that
holds such a row.

A filter is bound once per object (remembered while it lives), and an `in` list of 100,000
values costs a pass over its literals, not pyiceberg's conversion of each: see `_bind_set`,
and `MetricsEvaluator` for pruning by such a list.
"""

from __future__ import annotations

import inspect
import math
import threading
import weakref
from collections.abc import Callable, Iterable, Mapping
from decimal import Decimal
from functools import cached_property
from typing import Any, TypeAlias, cast

from pyiceberg.expressions import (
    AlwaysTrue,
    And,
    BooleanExpression,
    BoundPredicate,
    BoundSetPredicate,
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    IsNaN,
    LiteralPredicate,
    Not,
    Or,
    SetPredicate,
)
from pyiceberg.expressions.literals import (
    BinaryLiteral,
    BooleanLiteral,
    DateLiteral,
    DoubleLiteral,
    FloatLiteral,
    Literal,
    LongLiteral,
    StringLiteral,
    TimeLiteral,
    TimestampLiteral,
    UUIDLiteral,
)
from pyiceberg.expressions.visitors import (
    InclusiveProjection,
    bind,
    rewrite_not,
    visit,
)
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import TruncateTransform
from pyiceberg.types import (
    BinaryType,
    BooleanType,
    DateType,
    DoubleType,
    FloatType,
    IcebergType,
    IntegerType,
    LongType,
    NestedField,
    StringType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
    UUIDType,
)

from mor.errors import InvalidFilterError
from mor.expr.bounds_prefilter import BoundsPrefilter, Mask
from mor.expr.literals import TimestampNanoLiteral, exact_predicate, is_nan_value, nan_compared
from mor.expr.parse import parse, set_predicate
from mor.expr.pyiceberg_evaluators import MetricsEvaluator, StrictEvaluator, manifest_evaluator, partition_evaluator, strict_evaluator
from mor.expr.residual import Residual, bound_field_ids, pushed_not, without_residuals
from mor.expr.shape import DERIVED_MAX_TERMS, shaped
from mor.expr.text import unfit_message
from mor.format.content_file import ContentFile, PartitionValues
from mor.format.manifest import ManifestFile
from mor.format.partition_values import as_record

FilterLike: TypeAlias = str | BooleanExpression | None

_INT_RANGES = {IntegerType: (-(2**31), 2**31 - 1), LongType: (-(2**63), 2**63 - 1)}
_FLOAT32_MAX = 3.4028234663852886e38


def parse_filter(row_filter: FilterLike) -> BooleanExpression:
    """Text or an expression -> an expression of bounded depth and size (`filter_shape`)."""
    if row_filter is None:
        return AlwaysTrue()
    if isinstance(row_filter, BooleanExpression):
        return shaped(row_filter)
    if not isinstance(row_filter, str) or not row_filter.strip():
        raise InvalidFilterError(f"a filter must be predicate text or an expression, got {row_filter!r}")
    return shaped(parse(row_filter))


# One operation binds its filter in many places (checks, planning, matching, reading, the
# whole-file shortcut): remember results by the identity of the expression (expressions and
# schemas are immutable), so that each is bound, and each evaluator built, once. An entry goes
# when its expression does (a 100,000-value list holds tens of MB), or when more than
# _REMEMBER_LAST are kept.
_REMEMBERED: dict[tuple[str, int, int, bool], tuple[weakref.ref[Any], Schema, Any]] = {}
_REMEMBER_LAST = 256
_REMEMBER_LOCK = threading.Lock()


def _remembered(kind: str, schema: Schema, expr: Any, case_sensitive: bool, compute: Callable[[], Any]) -> Any:
    key = (kind, id(expr), id(schema), case_sensitive)
    hit = _REMEMBERED.get(key)
    if hit is not None and hit[0]() is expr and hit[1] is schema:
        return hit[2]
    result = compute()
    if result is expr:
        return result  # nothing to remember, and an entry holding its own key would never go

    def forget(_: object, key: tuple[str, int, int, bool] = key, remembered: dict[Any, Any] = _REMEMBERED) -> None:
        remembered.pop(key, None)

    entry = (weakref.ref(expr, forget), schema, result)
    with _REMEMBER_LOCK:
        for oldest in list(_REMEMBERED)[: len(_REMEMBERED) - _REMEMBER_LAST + 1]:
            _REMEMBERED.pop(oldest, None)  # (entries may go meanwhile, with their expressions)
        _REMEMBERED[key] = entry
    return result


def bind_filter(schema: Schema, expr: BooleanExpression, case_sensitive: bool = True) -> BooleanExpression:
    """`expr` bound to `schema`, as pyiceberg's `bind` binds it, after mor's literal checks
    (and reshaped by `filter_shape` first, for an expression that did not come through
    `parse_filter`: InvalidFilterError if too deep or too large; the limit on terms is that of
    the forms derived from a filter, which may hold twice its terms)."""

    def compute() -> BooleanExpression:
        try:
            return _bind(schema, shaped(expr, DERIVED_MAX_TERMS), case_sensitive, check=True)
        except (ValueError, TypeError) as e:
            raise InvalidFilterError(unfit_message(schema, e)) from e

    return _remembered("bound", schema, expr, case_sensitive, compute)


def _bind(schema: Schema, expr: BooleanExpression, case_sensitive: bool, check: bool) -> BooleanExpression:
    """pyiceberg's BindVisitor (the same tree of the same bound predicates), with `in` lists
    bound by `_bind_set`, residuals bound by mor; `check`: literals compared exactly in the
    column's type first (`exact_predicate`), then refused if still unfit (`_check_values`)."""
    if isinstance(expr, Residual):
        return expr.bind(schema, case_sensitive)
    if isinstance(expr, And):
        return And(_bind(schema, expr.left, case_sensitive, check), _bind(schema, expr.right, case_sensitive, check))
    if isinstance(expr, Or):
        return Or(_bind(schema, expr.left, case_sensitive, check), _bind(schema, expr.right, case_sensitive, check))
    if isinstance(expr, Not):
        return Not(_bind(schema, expr.child, case_sensitive, check))
    nan = nan_compared(_field(schema, expr.term.name, case_sensitive), expr) if isinstance(expr, (LiteralPredicate, SetPredicate)) else None
    if nan is not None:
        return _bind(schema, nan, case_sensitive, check)
    if isinstance(expr, SetPredicate):
        # Remembered alone too: the pruning and NOT-free forms of a filter share its leaves.
        return _remembered(
            "set" if check else "set-unchecked",
            schema,
            expr,
            case_sensitive,
            lambda: _bind_set_exactly(schema, expr, case_sensitive, check),
        )
    if isinstance(expr, LiteralPredicate):
        field = _field(schema, expr.term.name, case_sensitive)
        if field is not None:  # an unknown column is reported by bind
            if check and (exact := exact_predicate(field, expr)) is not expr:
                return _bind(schema, exact, case_sensitive, check)
            if check:
                _check_values(field, [expr.literal.value])
            if _is_float_infinity(expr.literal, field.field_type):
                expr = type(expr)(expr.term, FloatLiteral(expr.literal.value))
    return bind(schema, expr, case_sensitive)


def _bind_set_exactly(schema: Schema, expr: SetPredicate, case_sensitive: bool, check: bool) -> BooleanExpression:
    field = _field(schema, expr.term.name, case_sensitive) if check else None
    if field is not None and (exact := exact_predicate(field, expr)) is not expr:
        return _bind(schema, exact, case_sensitive, check)
    return _bind_set(schema, expr, case_sensitive, check)


def _bind_set(schema: Schema, expr: SetPredicate, case_sensitive: bool, check: bool) -> BooleanExpression:
    """`expr.bind(schema)` in one pass over the literals: pyiceberg converts each literal to the
    column type through a `singledispatchmethod` (about 2 us a literal) and makes the set twice;
    here a set of literals that convert to themselves (ints for an int column, strings for a
    string column, ...) is kept as it is, others convert once."""
    term = expr.term.bind(schema, case_sensitive)
    field = term.ref().field
    values = [lit.value for lit in expr.literals]
    if check:
        _check_values(field, values)
    kept = _converts_to_itself(expr.literals, field.field_type, values)
    literals = expr.literals if kept else _converted(expr.literals, field.field_type)
    bound = set_predicate(expr.as_bound, term, literals)
    if kept and isinstance(bound, BoundSetPredicate):
        bound.__dict__["value_set"] = set(values)  # pyiceberg's cached property, made from what we have
    return bound


# Literal classes whose `to(type)` returns the literal itself, for these column types (ints only
# within the type's range). tests/unit/expr/test_in_list_scale.py checks this table against pyiceberg.
_CONVERT_TO_THEMSELVES: dict[type, tuple[type, ...]] = {
    LongLiteral: (LongType, IntegerType),
    DoubleLiteral: (DoubleType,),
    FloatLiteral: (FloatType,),
    StringLiteral: (StringType,),
    BooleanLiteral: (BooleanType,),
    DateLiteral: (DateType,),
    TimeLiteral: (TimeType,),
    TimestampLiteral: (TimestampType, TimestamptzType),
    TimestampNanoLiteral: (TimestampNanoType, TimestamptzNanoType),
    UUIDLiteral: (UUIDType,),
    BinaryLiteral: (BinaryType,),
}


def _converts_to_itself(literals: set[Literal[Any]], ftype: IcebergType, values: list[Any]) -> bool:
    classes = {type(lit) for lit in literals}
    if len(classes) != 1 or not isinstance(ftype, _CONVERT_TO_THEMSELVES.get(classes.pop(), ())):
        return False
    bounds = _INT_RANGES.get(type(ftype))
    return bounds is None or not values or (bounds[0] <= min(values) and max(values) <= bounds[1])


def _converted(literals: set[Literal[Any]], ftype: IcebergType) -> set[Literal[Any]]:
    """`{lit.to(ftype) for lit in literals}`, with the conversion looked up once per literal class."""
    convert: dict[type, Callable[[Literal[Any], IcebergType], Literal[Any]]] = {}
    out = set()
    for lit in literals:
        if _is_float_infinity(lit, ftype):
            out.add(FloatLiteral(lit.value))
            continue
        fn = convert.get(type(lit))
        if fn is None:
            dispatcher = getattr(inspect.getattr_static(type(lit), "to", None), "dispatcher", None)
            fn = convert[type(lit)] = dispatcher.dispatch(type(ftype)) if dispatcher is not None else _to
        out.add(fn(lit, ftype))
    return out


def _to(lit: Literal[Any], ftype: IcebergType) -> Literal[Any]:
    return lit.to(ftype)


def _is_float_infinity(lit: Literal[Any], ftype: IcebergType) -> bool:
    """An infinite double literal on a float column: a float value, though pyiceberg converts it
    to "above the float range" and so folds the predicate to always true or false."""
    return isinstance(ftype, FloatType) and isinstance(lit, DoubleLiteral) and math.isinf(lit.value)


def _not_rewritten(schema: Schema, expr: BooleanExpression, case_sensitive: bool) -> BooleanExpression:
    """`expr` with NOTs pushed to the leaves (pyiceberg's rewrite_not, residuals included), made
    once per filter (a NOT over an `in` list builds a new list)."""
    return _remembered("not", schema, expr, case_sensitive, lambda: pushed_not(expr))


def _inclusive_evaluator(schema: Schema, expr: BooleanExpression, case_sensitive: bool) -> MetricsEvaluator:
    """The inclusive metrics evaluator of `expr`'s pruning form, made once per filter."""

    def compute() -> MetricsEvaluator:
        pruning = _remembered("pruning", schema, expr, case_sensitive, lambda: pruning_filter(schema, expr, case_sensitive))
        return MetricsEvaluator(bind_filter(schema, pruning, case_sensitive))

    return _remembered("metrics", schema, expr, case_sensitive, compute)


def filter_field_ids(schema: Schema, expr: BooleanExpression, case_sensitive: bool = True) -> set[int]:
    return bound_field_ids(bind_filter(schema, expr, case_sensitive))


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
        self._manifest_evals: dict[int, Callable[[Any], bool]] = {}
        self._partition_evals: dict[int, Callable[[Any], bool]] = {}
        self._projections: dict[int, tuple[Schema, BooleanExpression]] = {}  # spec id -> (partition schema, filter)

    def manifest_may_match(self, manifest: ManifestFile) -> bool:
        spec_id = manifest.partition_spec_id
        if spec_id not in self._manifest_evals:
            spec = self.specs[spec_id]
            self._manifest_evals[spec_id] = _always if spec.is_unpartitioned() else self._manifest_evaluator(spec)
        return bool(self._manifest_evals[spec_id](manifest))

    def partition_may_match(self, spec_id: int, partition: PartitionValues) -> bool:
        if spec_id not in self._partition_evals:
            spec = self.specs[spec_id]
            self._partition_evals[spec_id] = _always if spec.is_unpartitioned() else self._partition_evaluator(spec)
        return bool(self._partition_evals[spec_id](as_record(partition)))

    def entries_may_match(self, columns: Mapping[str, Any], count: int) -> Mask | None:
        """A first pass over a manifest's columns (mor/expr/bounds_prefilter.py): False for the
        entries whose files `file_may_match` would rule out by their integer bounds alone; None
        when it rules out none. The files left are still asked `file_may_match`."""
        prefilter = _remembered(
            "prefilter", self.schema, self.expr, self.case_sensitive, lambda: BoundsPrefilter(self._metrics.expr, self.schema)
        )
        return prefilter.may_match(columns, count)

    def file_may_match(self, file: ContentFile) -> bool:
        return self.partition_may_match(file.spec_id, file.partition) and bool(self._metrics.eval(file))

    def file_must_match(self, file: ContentFile) -> bool:
        """True when every row of the file matches by its column metrics, in Iceberg's two-valued
        reading: trust it only for columns without nulls and NaNs (see RowMatcher)."""
        schema, expr, case_sensitive = self.schema, self.expr, self.case_sensitive

        def compute() -> StrictEvaluator:
            # pyiceberg's constructor would bind again: give it the binding made once.
            # A residual is not known to hold for every row: FALSE here.
            strict_form = without_residuals(_not_rewritten(schema, expr, case_sensitive), may_match=False)
            return strict_evaluator(_FieldsById(schema), bind_filter(schema, strict_form, case_sensitive))

        strict = _remembered("strict", schema, expr, case_sensitive, compute)
        return bool(strict.eval(file))

    @cached_property
    def field_ids(self) -> set[int]:
        """The ids of the columns the filter reads."""
        return bound_field_ids(bind_filter(self.schema, self.expr, self.case_sensitive))

    def every_row_matches(self, file: ContentFile) -> bool:
        """True when the file's metrics prove every row matches in SQL's reading, so it can be
        counted or dropped whole without a read. Iceberg's strict metrics test is two-valued (a
        null matches `!=` and `not in`) and leaves NaN out of bounds, where the row filter is
        SQL's (spec/predicates.md); without nulls and NaNs the two agree. So it is trusted only
        when the filter's columns hold none; a missing NaN count on a floating point column may
        hide NaNs."""
        nulls, nans = file.null_value_counts or {}, file.nan_value_counts or {}
        for field_id in self.field_ids:
            floating = isinstance(self.schema.find_field(field_id).field_type, (FloatType, DoubleType))
            if nulls.get(field_id) != 0 or (floating and nans.get(field_id) != 0):
                return False
        return self.file_must_match(file)

    # pyiceberg's projection and partition evaluators, over bindings made once (their
    # constructors bind with pyiceberg's `bind`, which converts an `in` list literal by literal).
    def _project(self, spec: PartitionSpec) -> tuple[Schema, BooleanExpression]:
        if spec.spec_id not in self._projections:
            projected = _Projection(self.schema, spec, self.case_sensitive).project(self._pruning)
            self._projections[spec.spec_id] = Schema(*spec.partition_type(self.schema).fields), projected
        return self._projections[spec.spec_id]

    def _manifest_evaluator(self, spec: PartitionSpec) -> Callable[[Any], bool]:
        partition_schema, projected = self._project(spec)
        return manifest_evaluator(_bind(partition_schema, rewrite_not(projected), self.case_sensitive, check=False))

    def _partition_evaluator(self, spec: PartitionSpec) -> Callable[[Any], bool]:
        partition_schema, projected = self._project(spec)
        return partition_evaluator(_bind(partition_schema, projected, self.case_sensitive, check=False))


class _FieldsById:
    """The schema's fields by id, nested ones too, for pyiceberg's strict evaluator: it looks
    fields up in the top-level struct only, and raises for a field of a struct column, which
    has bounds (mor.write.metrics) as Iceberg Java gives it."""

    def __init__(self, schema: Schema):
        self.schema = schema

    def field(self, field_id: int) -> NestedField | None:
        try:
            return self.schema.find_field(field_id)
        except ValueError:
            return None


class _Projection(InclusiveProjection):
    def project(self, expr: BooleanExpression) -> BooleanExpression:
        schema, case_sensitive = self.schema, self.case_sensitive
        return visit(bind_filter(schema, _not_rewritten(schema, expr, case_sensitive), case_sensitive), self)

    def visit_bound_predicate(self, predicate: BoundPredicate[Any]) -> BooleanExpression:
        """pyiceberg's inclusive projection (every partition field of the column narrows it), where
        a truncate partition of an int/long column also keeps its wrapped partition value."""
        field = predicate.term.ref().field
        result: BooleanExpression = AlwaysTrue()
        for part in self.spec.fields_by_source_id(field.field_id):
            projected = part.transform.project(name=part.name, pred=predicate)
            if projected is None:
                continue
            wrapped = _wrapped_truncation(part.transform, field.field_type)
            if wrapped is not None:
                projected = Or(projected, EqualTo(part.name, wrapped))
            result = And(result, projected)
        return result


def _wrapped_truncation(transform: Any, source_type: IcebergType) -> int | None:
    """truncate(W) of the int/long values just above the type's minimum lies below it: Iceberg
    Java's (and pyiceberg-core's) integer arithmetic wraps it around to one value near the
    maximum, which their files carry as the partition value. pyiceberg projects a filter with
    unbounded Python ints, so it would prune those files: keep that one value too."""
    bounds = _INT_RANGES.get(type(source_type))
    if not isinstance(transform, TruncateTransform) or bounds is None:
        return None
    lowest, highest = bounds
    truncated = lowest - lowest % transform.width  # Python's % is never negative: as the spec asks
    return None if truncated >= lowest else truncated + (highest - lowest + 1)


def _always(_: Any) -> bool:
    return True  # an unpartitioned spec projects every filter to true: skip binding it again


def metrics_evaluator(schema: Schema, expr: BooleanExpression, case_sensitive: bool = True) -> Callable[[Any], bool]:
    """Tests whether an object with column metrics (a file, a row group) may hold matches."""
    return _inclusive_evaluator(schema, expr, case_sensitive).eval


def pruning_filter(schema: Schema, expr: BooleanExpression, case_sensitive: bool = True) -> BooleanExpression:
    """`expr` for pyiceberg's metrics and partition evaluators. NaN sorts above every number, so
    `x > c` and `x >= c` hold for NaN; but column bounds leave NaN out (and pyiceberg rules out a
    file of NaNs only), so on floating point columns ask for `x > c or x is nan`. NOTs are pushed
    to the leaves first (by De Morgan, which Kleene logic keeps) so that `not x <= c` is seen;
    then a residual (arithmetic, functions: metadata cannot judge it) reads as TRUE."""

    def widen(e: BooleanExpression) -> BooleanExpression:
        if isinstance(e, And):
            return And(widen(e.left), widen(e.right))
        if isinstance(e, Or):
            return Or(widen(e.left), widen(e.right))
        if isinstance(e, (GreaterThan, GreaterThanOrEqual)):
            field = _field(schema, e.term.name, case_sensitive)
            if field is not None and isinstance(field.field_type, (FloatType, DoubleType)):
                return Or(e, IsNaN(e.term))
        return e

    return widen(without_residuals(_not_rewritten(schema, expr, case_sensitive), may_match=True))


def _check_values(field: NestedField, values: list[Any]) -> None:
    """Refuse literals that pyiceberg would turn into another value or into an always-true or
    always-false predicate (`i > 1.5` bound as `i > 2`; `i < 2**70` as true, null rows included),
    and NaN, which compares as nothing (Iceberg refuses it too: use is_nan / not_nan). A long
    list of plain ints or floats is checked by its extremes."""
    ftype: IcebergType = field.field_type
    if isinstance(ftype, (FloatType, DoubleType)):
        floats = all(type(v) is float for v in values)
        if not floats or any(v != v for v in values) or (isinstance(ftype, FloatType) and _largest(values) > _FLOAT32_MAX):
            _check_floats(field, values)
    bounds = _INT_RANGES.get(type(ftype))
    if bounds is None:
        return
    if values and all(type(v) is int for v in values) and bounds[0] <= min(values) and max(values) <= bounds[1]:
        return
    for v in values:
        if isinstance(v, bool) or not isinstance(v, (int, float, Decimal)):
            continue  # not a number: bind says whether it converts
        if not _is_whole(v):
            raise InvalidFilterError(f"{v} is not a whole number, and column {field.name!r} holds {ftype} values")
        if not bounds[0] <= v <= bounds[1]:
            raise InvalidFilterError(f"{v} is out of range for column {field.name!r} of type {ftype}")


def _largest(values: list[float]) -> float:
    return max(max(values), -min(values)) if values else 0.0


def _check_floats(field: NestedField, values: Iterable[Any]) -> None:
    for v in values:
        if is_nan_value(v):
            raise InvalidFilterError(
                f"NaN cannot be compared with column {field.name!r}: use '{field.name} is nan' or '{field.name} is not nan'"
            )
        if (
            isinstance(field.field_type, FloatType)
            and isinstance(v, (int, float, Decimal))
            and _FLOAT32_MAX < cast(float | Decimal, abs(v)) < math.inf  # mypy types abs() of this union as object
        ):
            raise InvalidFilterError(f"{v} is out of range for column {field.name!r} of type float")


def _is_whole(v: float | Decimal) -> bool:
    if isinstance(v, int):
        return True
    if isinstance(v, float):
        return v.is_integer()
    return v.is_finite() and v == v.to_integral_value()


def _field(schema: Schema, name: str, case_sensitive: bool) -> NestedField | None:
    try:
        return schema.find_field(name, case_sensitive)
    except ValueError:
        return None
