"""Spark's pushed filters -> a mor row filter, used to prune partitions, files and row groups.

Only what selects the same rows in both (spec/predicates.md) is taken: comparisons, IN, null
checks and prefix matches on top-level columns that are not float/double (Spark takes NaN
literals, `x = NaN` true for NaN, which Iceberg refuses), and NOT only of null checks (NOT of
`x <=> 5` converted as `x = 5` would drop the null rows Spark keeps). Every filter is still
handed back to Spark, which evaluates it again on the rows we return, so pruning may keep too
much, never drop a row Spark would keep.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyiceberg import expressions as ice
from pyiceberg.schema import Schema
from pyiceberg.types import DoubleType, FloatType, NestedField, PrimitiveType
from pyspark.sql import datasource as sf

from mor.errors import InvalidFilterError
from mor.expr.filters import bind_filter

_Comparison = sf.EqualTo | sf.GreaterThan | sf.GreaterThanOrEqual | sf.LessThan | sf.LessThanOrEqual
_COMPARISONS: dict[type[_Comparison], type] = {
    sf.EqualTo: ice.EqualTo,
    sf.GreaterThan: ice.GreaterThan,
    sf.GreaterThanOrEqual: ice.GreaterThanOrEqual,
    sf.LessThan: ice.LessThan,
    sf.LessThanOrEqual: ice.LessThanOrEqual,
}


def to_row_filter(filters: Sequence[sf.Filter], schema: Schema) -> ice.BooleanExpression:
    """The AND of the filters that convert (AlwaysTrue when none does)."""
    out: ice.BooleanExpression = ice.AlwaysTrue()
    for f in filters:
        try:
            converted = convert(f, schema)
        except (ValueError, TypeError):
            continue  # a value pyiceberg takes no literal of: leave it to Spark
        if converted is not None and _binds(converted, schema):
            out = converted if isinstance(out, ice.AlwaysTrue) else ice.And(out, converted)
    return out


def convert(f: sf.Filter, schema: Schema) -> ice.BooleanExpression | None:
    if isinstance(f, sf.Not):
        inner = convert(f.child, schema)
        # NOT of a comparison is not safe with nulls in every evaluator; keep it simple.
        return ice.Not(inner) if inner is not None and isinstance(f.child, (sf.IsNull, sf.IsNotNull)) else None
    column = _column(getattr(f, "attribute", ()), schema)
    if column is None:
        return None
    name = column.name
    if isinstance(f, sf.IsNull):
        return ice.IsNull(name)
    if isinstance(f, sf.IsNotNull):
        return ice.NotNull(name)
    if isinstance(column.field_type, (FloatType, DoubleType)):
        return None
    if isinstance(f, sf.EqualNullSafe):
        return ice.IsNull(name) if f.value is None else ice.EqualTo(name, f.value)
    if isinstance(f, _Comparison) and type(f) in _COMPARISONS:  # exactly these types, not subclasses
        return None if f.value is None else _COMPARISONS[type(f)](name, f.value)
    if isinstance(f, sf.In):
        values = [v for v in f.value if v is not None]
        return ice.In(name, values) if values else None
    if isinstance(f, sf.StringStartsWith):
        return ice.StartsWith(name, f.value)
    return None


def _binds(expr: ice.BooleanExpression, schema: Schema) -> bool:
    try:
        bind_filter(schema, expr, case_sensitive=False)
        return True
    except InvalidFilterError:
        return False  # e.g. a literal that does not fit the column: leave it to Spark


def _column(path: tuple[str, ...], schema: Schema) -> NestedField | None:
    if len(path) != 1:
        return None
    try:
        field = schema.find_field(path[0], case_sensitive=False)
    except ValueError:
        return None
    return field if isinstance(field.field_type, PrimitiveType) else None
