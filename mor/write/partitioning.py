"""Split Arrow data by partition value (transforms run on Arrow arrays via pyiceberg-core)."""

from __future__ import annotations

from typing import Any, Iterator

import pyarrow as pa
import pyarrow.compute as pc
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import Transform, parse_transform
from pyiceberg.types import NestedField

from mor.errors import InvalidArgumentError, UnsupportedFeatureError
from mor.format.content_file import PartitionValues
from mor.format.partition_values import to_internal
from mor.format.spec import PARTITION_FIELD_ID_START

_ROW = "__mor_row"


TRANSFORMS = ("identity", "bucket", "truncate", "year", "month", "day", "hour")
_WITH_NUMBER = ("bucket", "truncate")
_SYNTAX = "a column, or year/month/day/hour(col), bucket(N, col), truncate(W, col)"


def parse_partition_by(schema: Schema, partition_by: list[str] | None) -> PartitionSpec:
    """`["category", "day(ts)", "bucket(16, id)", "truncate(4, name)"]` -> a PartitionSpec.
    InvalidArgumentError naming the term (and the column) that is wrong."""
    if partition_by is None:
        partition_by = []
    if isinstance(partition_by, str) or not isinstance(partition_by, (list, tuple)):
        raise InvalidArgumentError(f"partition_by is a list of terms like ['category', 'day(ts)'], got {partition_by!r}")
    fields: list[PartitionField] = []
    for i, text in enumerate(partition_by):
        source, transform, name = _partition_term(schema, text)
        for f in fields:
            if (f.source_id, f.transform) == (source.field_id, transform) or f.name == name:
                raise InvalidArgumentError(f"partition term {text!r} repeats an earlier term ({f.name})")
        fields.append(PartitionField(source.field_id, PARTITION_FIELD_ID_START + i, transform, name))
    return PartitionSpec(*fields, spec_id=0)


def _partition_term(schema: Schema, text: object) -> tuple[NestedField, Transform[Any, Any], str]:
    """(source column, transform, partition field name) of one term."""
    if not isinstance(text, str) or not text.strip():
        raise InvalidArgumentError(f"partition term {text!r} is not a term: write {_SYNTAX}")
    column, transform_name, number = _split_term(text)
    if transform_name not in TRANSFORMS:
        raise InvalidArgumentError(f"partition term {text!r}: unknown transform {transform_name!r}; write {_SYNTAX}")
    if (transform_name in _WITH_NUMBER) != bool(number):
        raise InvalidArgumentError(f"partition term {text!r}: write {_SYNTAX}")
    if number and (not number.isdigit() or int(number) < 1):
        raise InvalidArgumentError(f"partition term {text!r}: {transform_name} needs a whole number of at least 1, got {number!r}")
    try:
        source = schema.find_field(column)
    except ValueError:
        raise InvalidArgumentError(f"partition term {text!r}: the table has no column {column!r}") from None
    if source.field_id not in {f.field_id for f in schema.fields}:
        raise UnsupportedFeatureError(f"partition term {text!r}: partitioning by a nested column is not supported")
    transform = parse_transform(f"{transform_name}[{number}]" if number else transform_name)
    if not transform.can_transform(source.field_type):
        raise InvalidArgumentError(f"partition term {text!r}: {transform_name} cannot apply to column {column!r} of type {source.field_type}")
    suffix = "" if transform_name == "identity" else f"_{transform_name}" + (f"_{number}" if number else "")
    return source, transform, f"{source.name}{suffix}"


def split_partition_terms(text: str) -> list[str]:
    """`"category, day(ts), bucket(16, id)"` -> `["category", "day(ts)", "bucket(16, id)"]`:
    split on the commas outside parentheses."""
    if not text.strip():
        return []
    terms, depth, start = [], 0, 0
    for i, char in enumerate(text + ","):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth < 0 or (i == len(text) and depth):
            raise InvalidArgumentError(f"unbalanced parentheses in partition terms {text!r}")
        if char == "," and depth == 0:
            terms.append(text[start:i].strip())
            start = i + 1
    if not all(terms):
        raise InvalidArgumentError(f"empty partition term in {text!r}")
    return terms


def _split_term(text: str) -> tuple[str, str, str]:
    text = text.strip()
    if "(" not in text:
        return text, "identity", ""
    if not text.endswith(")"):
        raise InvalidArgumentError(f"partition term {text!r}: write {_SYNTAX}")
    transform, inner = text[:-1].split("(", 1)
    parts = [p.strip() for p in inner.split(",")]
    transform = {"years": "year", "months": "month", "days": "day", "hours": "hour"}.get(transform.strip(), transform.strip())
    if len(parts) == 1:
        return parts[0], transform, ""
    if len(parts) == 2:
        return parts[1], transform, parts[0]
    raise InvalidArgumentError(f"partition term {text!r}: write {_SYNTAX}")


def partition_column(field: PartitionField, schema: Schema, data: pa.Table) -> pa.Array:
    source = schema.find_field(field.source_id)
    try:
        fn = field.transform.pyarrow_transform(source.field_type)
    except (NotImplementedError, ModuleNotFoundError) as e:
        raise UnsupportedFeatureError(f"partition transform {field.transform} on Arrow data: {e}") from e
    return fn(data.column(source.name).combine_chunks())


def split_by_partition(spec: PartitionSpec, schema: Schema, data: pa.Table) -> Iterator[tuple[PartitionValues, pa.Table]]:
    """(partition values, rows) for each partition present in `data`, in a stable order."""
    if not spec.fields:
        yield (), data
        return
    keys = {f"p{i}": partition_column(f, schema, data) for i, f in enumerate(spec.fields)}
    key_table = pa.table({**keys, _ROW: pa.array(range(data.num_rows), pa.int64())})
    groups = key_table.group_by(list(keys), use_threads=False).aggregate([(_ROW, "list")])
    groups = groups.sort_by([(k, "ascending") for k in keys])
    for row in range(groups.num_rows):
        values = tuple(to_internal(groups.column(k)[row].as_py()) for k in keys)
        indices = groups.column(f"{_ROW}_list")[row].values
        yield values, data.take(pc.cast(indices, pa.int64()))
