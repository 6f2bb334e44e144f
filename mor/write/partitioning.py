"""Split Arrow data by partition value (transforms run on Arrow arrays via pyiceberg-core)."""

from __future__ import annotations

from typing import Iterator

import pyarrow as pa
import pyarrow.compute as pc
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import parse_transform

from mor.errors import InvalidFilterError, UnsupportedFeatureError
from mor.format.content_file import PartitionValues
from mor.format.partition_values import to_internal
from mor.format.spec import PARTITION_FIELD_ID_START

_ROW = "__mor_row"


def parse_partition_by(schema: Schema, partition_by: list[str] | None) -> PartitionSpec:
    """`["category", "day(ts)", "bucket(16, id)", "truncate(4, name)"]` -> a PartitionSpec."""
    fields = []
    for i, text in enumerate(partition_by or []):
        name, transform_text, args = _split_term(text)
        try:
            source = schema.find_field(name)
            transform = parse_transform(f"{transform_text}[{args}]" if args else transform_text)
        except ValueError as e:
            raise InvalidFilterError(f"bad partition term {text!r}: {e}") from e
        if not transform.can_transform(source.field_type):
            raise InvalidFilterError(f"partition term {text!r}: {transform} cannot apply to {source.field_type}")
        suffix = "" if transform_text == "identity" else f"_{transform_text}" + (f"_{args}" if args else "")
        fields.append(PartitionField(source.field_id, PARTITION_FIELD_ID_START + i, transform, f"{source.name}{suffix}"))
    return PartitionSpec(*fields, spec_id=0)


def split_partition_terms(text: str) -> list[str]:
    """`"category, day(ts), bucket(16, id)"` -> `["category", "day(ts)", "bucket(16, id)"]`:
    split on the commas outside parentheses."""
    if not text.strip():
        return []
    terms, depth, start = [], 0, 0
    for i, char in enumerate(text + ","):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth < 0 or (i == len(text) and depth):
            raise InvalidFilterError(f"unbalanced parentheses in partition terms {text!r}")
        if char == "," and depth == 0:
            terms.append(text[start:i].strip())
            start = i + 1
    if not all(terms):
        raise InvalidFilterError(f"empty partition term in {text!r}")
    return terms


def _split_term(text: str) -> tuple[str, str, str]:
    text = text.strip()
    if "(" not in text:
        return text, "identity", ""
    if not text.endswith(")"):
        raise InvalidFilterError(f"bad partition term {text!r}")
    transform, inner = text[:-1].split("(", 1)
    parts = [p.strip() for p in inner.split(",")]
    transform = {"years": "year", "months": "month", "days": "day", "hours": "hour"}.get(transform.strip(), transform.strip())
    if len(parts) == 1:
        return parts[0], transform, ""
    if len(parts) == 2:
        return parts[1], transform, parts[0]
    raise InvalidFilterError(f"bad partition term {text!r}")


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
