"""Row filters: pyiceberg's filter language and evaluators, behind mor's errors.

pyiceberg parses `"id < 10 and region = 'eu'"`, binds it to a schema, projects it onto
partitions and evaluates it against column metrics; this module is the one place that calls
those, so a pyiceberg change touches one file.
"""

from __future__ import annotations

from typing import Any, Callable

from pyiceberg.expressions import AlwaysTrue, BooleanExpression
from pyiceberg.expressions import parser as _parser
from pyiceberg.expressions.visitors import (
    _InclusiveMetricsEvaluator,
    _StrictMetricsEvaluator,
    bind,
    expression_evaluator,
    extract_field_ids,
    inclusive_projection,
    manifest_evaluator,
)
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema

from mor.errors import InvalidFilterError
from mor.format.content_file import ContentFile, PartitionValues
from mor.format.manifest import ManifestFile
from mor.format.partition_values import as_record

FilterLike = str | BooleanExpression | None


def parse_filter(row_filter: FilterLike) -> BooleanExpression:
    if row_filter is None:
        return AlwaysTrue()
    if isinstance(row_filter, BooleanExpression):
        return row_filter
    if not isinstance(row_filter, str) or not row_filter.strip():
        raise InvalidFilterError(f"a filter must be predicate text or an expression, got {row_filter!r}")
    try:
        return _parser.parse(row_filter)
    except Exception as e:  # pyparsing raises its own exception types
        raise InvalidFilterError(f"cannot parse filter {row_filter!r}: {e}") from e


def bind_filter(schema: Schema, expr: BooleanExpression, case_sensitive: bool = True) -> BooleanExpression:
    try:
        return bind(schema, expr, case_sensitive)
    except (ValueError, TypeError) as e:
        raise InvalidFilterError(f"filter {expr} does not fit the table schema: {e}") from e


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
        self._metrics = _InclusiveMetricsEvaluator(schema, expr, case_sensitive)
        self._strict = _StrictMetricsEvaluator(schema, expr, case_sensitive)
        self._manifest_evals: dict[int, Callable[[Any], bool]] = {}
        self._partition_evals: dict[int, Callable[[Any], bool]] = {}

    def manifest_may_match(self, manifest: ManifestFile) -> bool:
        spec_id = manifest.partition_spec_id
        if spec_id not in self._manifest_evals:
            spec = self.specs[spec_id]
            self._manifest_evals[spec_id] = manifest_evaluator(spec, self.schema, self._project(spec), self.case_sensitive)
        return bool(self._manifest_evals[spec_id](manifest))

    def partition_may_match(self, spec_id: int, partition: PartitionValues) -> bool:
        if spec_id not in self._partition_evals:
            spec = self.specs[spec_id]
            partition_schema = Schema(*spec.partition_type(self.schema).fields)
            self._partition_evals[spec_id] = expression_evaluator(partition_schema, self._project(spec), self.case_sensitive)
        return bool(self._partition_evals[spec_id](as_record(partition)))

    def file_may_match(self, file: ContentFile) -> bool:
        return self.partition_may_match(file.spec_id, file.partition) and bool(self._metrics.eval(file))  # type: ignore[arg-type]

    def file_must_match(self, file: ContentFile) -> bool:
        """True when every row of the file matches, by its column metrics."""
        return bool(self._strict.eval(file))  # type: ignore[arg-type]

    def _project(self, spec: PartitionSpec) -> BooleanExpression:
        return inclusive_projection(self.schema, spec, self.case_sensitive)(self.expr)


def metrics_evaluator(schema: Schema, expr: BooleanExpression, case_sensitive: bool = True) -> Callable[[Any], bool]:
    """Tests whether an object with column metrics (a file, a row group) may hold matches."""
    evaluator = _InclusiveMetricsEvaluator(schema, expr, case_sensitive)
    return lambda metrics: bool(evaluator.eval(metrics))
