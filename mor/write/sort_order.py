"""Iceberg sort orders: parsed from terms, and applied to Arrow rows.

A term is a column (or a transform of one, as partition terms are written: `day(ts)`,
`bucket(16, id)`), then optionally `asc` or `desc`, then optionally `nulls first` or
`nulls last`: `"ts"`, `"id desc"`, `"id desc nulls first"`. The null order defaults as
Iceberg's does: nulls first when ascending, nulls last when descending. The order is stored in
table metadata as Java writes it: `{"order-id": 1, "fields": [{"transform": "identity",
"source-id": 2, "direction": "asc", "null-order": "nulls-first"}]}`; order 0 is unsorted.

Sorting is stable (rows equal under the order keep their input order) and follows the spec's
rules for a field: nulls where the null order says, and a transform's output compared, not the
source value.
"""

from __future__ import annotations

import re
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyiceberg.partitioning import PartitionField
from pyiceberg.schema import Schema
from pyiceberg.table.sorting import UNSORTED_SORT_ORDER, NullOrder, SortDirection, SortField, SortOrder

from mor.errors import InvalidArgumentError
from mor.write.partitioning import partition_column, partition_term

_TERM = re.compile(r"^\s*(?P<term>.+?)(?:\s+(?P<direction>asc|desc))?(?:\s+nulls\s+(?P<nulls>first|last))?\s*$", re.IGNORECASE)
_SYNTAX = "'column', 'column desc', 'column asc nulls last' or a transform such as 'day(ts)' or 'bucket(16, id) desc'"


def parse_sort_order(schema: Schema, terms: tuple[Any, ...] | list[Any]) -> SortOrder:
    """The sort order `terms` describe (order id 0 if none, else 1: the commit numbers it).
    InvalidArgumentError for a term that is not one, an unknown column, a transform the
    column's type does not take, or a field given twice."""
    if isinstance(terms, str):
        terms = [terms]
    if len(terms) == 1 and isinstance(terms[0], (list, tuple)):
        terms = list(terms[0])  # replace_sort_order(["a", "b desc"]) as well as ("a", "b desc")
    fields: list[SortField] = []
    for text in terms:
        field = parse_sort_field(schema, text)
        if any((f.source_id, str(f.transform)) == (field.source_id, str(field.transform)) for f in fields):
            raise InvalidArgumentError(f"sort term {text!r} repeats an earlier term")
        fields.append(field)
    return SortOrder(*fields, order_id=1) if fields else UNSORTED_SORT_ORDER


def parse_sort_field(schema: Schema, text: object) -> SortField:
    if not isinstance(text, str) or not text.strip():
        raise InvalidArgumentError(f"sort term {text!r} is not a term: write {_SYNTAX}")
    match = _TERM.match(text)
    if match is None:
        raise InvalidArgumentError(f"sort term {text!r} is not a term: write {_SYNTAX}")
    term = match.group("term")
    if re.search(r"\s(asc|desc|nulls|first|last)\b", term, re.IGNORECASE) or re.search(r"\s", term.split("(")[0].strip()):
        raise InvalidArgumentError(f"sort term {text!r}: write {_SYNTAX}")
    try:
        source, transform, _ = partition_term(schema, term)
    except InvalidArgumentError as e:
        raise InvalidArgumentError(str(e).replace("partition term", "sort term", 1)) from None
    direction = SortDirection.DESC if (match.group("direction") or "asc").lower() == "desc" else SortDirection.ASC
    nulls = match.group("nulls")
    if nulls is None:
        null_order = NullOrder.NULLS_FIRST if direction == SortDirection.ASC else NullOrder.NULLS_LAST
    else:
        null_order = NullOrder.NULLS_FIRST if nulls.lower() == "first" else NullOrder.NULLS_LAST
    return SortField(source_id=source.field_id, transform=transform, direction=direction, null_order=null_order)


def same_fields(a: SortOrder, b: SortOrder) -> bool:
    """Whether two orders sort alike (Iceberg's `sameOrder`: fields equal, ids aside)."""
    return _key(a) == _key(b)


def _key(order: SortOrder) -> list[tuple[int, str, str, str]]:
    return [(f.source_id, str(f.transform), f.direction.value, f.null_order.value) for f in order.fields]


def describe(order: SortOrder, schema: Schema) -> list[str]:
    """The order as terms `parse_sort_order` reads back: `["ts", "id desc"]` (null orders only
    when not the default one)."""
    out = []
    for f in order.fields:
        name = schema.find_column_name(f.source_id) or str(f.source_id)
        text = name if str(f.transform) == "identity" else _transform_term(str(f.transform), name)
        default_nulls = NullOrder.NULLS_FIRST if f.direction == SortDirection.ASC else NullOrder.NULLS_LAST
        text += " desc" if f.direction == SortDirection.DESC else ""
        if f.null_order != default_nulls:
            text += " nulls first" if f.null_order == NullOrder.NULLS_FIRST else " nulls last"
        out.append(text)
    return out


def _transform_term(transform: str, column: str) -> str:
    if "[" in transform:
        name, number = transform.rstrip("]").split("[")
        return f"{name}({number}, {column})"
    return f"{transform}({column})"


def sort_indices(rows: pa.Table, order: SortOrder, schema: Schema) -> pa.Array:
    """Indices that put `rows` (columns named as in `schema`) in `order`, stably."""
    keys: dict[str, pa.Array] = {}
    sort_keys = []
    for i, f in enumerate(order.fields):
        name = f"k{i}"
        keys[name] = partition_column(PartitionField(f.source_id, 1000 + i, f.transform, name), schema, rows)
        placement = "at_start" if f.null_order == NullOrder.NULLS_FIRST else "at_end"
        sort_keys.append((name, "descending" if f.direction == SortDirection.DESC else "ascending", placement))
    if not keys:
        return pa.array(range(rows.num_rows), pa.uint64())
    return pc.sort_indices(pa.table(keys), sort_keys=sort_keys)


def sort_rows(rows: pa.Table, order: SortOrder, schema: Schema) -> pa.Table:
    """`rows` in `order` (unchanged when the order is unsorted)."""
    if not order.fields or rows.num_rows < 2:
        return rows
    return rows.take(sort_indices(rows, order, schema))
