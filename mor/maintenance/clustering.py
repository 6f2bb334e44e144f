"""Clustering compaction: `compact(sort_by=[...])` and `compact(zorder_by=[...])` rewrite the
files in scope with each output partition's live rows ordered as a whole, then cut into files
of the target size, so the files get narrow, mostly disjoint min/max ranges on the ordering
columns and a selective filter on them plans few files (Iceberg's rewrite_data_files with
strategy `sort` or `zorder`).

- `sort_by`: sort terms as `replace_sort_order` takes them (`"a"`, `"b desc nulls first"`,
  `"day(ts)"`). The files record the id of the table's sort order with the same fields, when
  there is one, else 0 (unsorted: an order the table does not know).
- `zorder_by`: two to four distinct primitive columns, ordered by their Z-order key
  (mor/write/zorder.py); files record sort order 0 (a Z-order is no Iceberg sort order).

Each partition's rows are held in memory while they are ordered (a Spark job shuffles them
instead); compact a partition at a time with `where` when that is too much. Bad input raises
InvalidArgumentError before anything is read or written.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
from pyiceberg.schema import Schema
from pyiceberg.table.sorting import SortOrder
from pyiceberg.types import PrimitiveType

from mor.errors import InvalidArgumentError
from mor.format.metadata import TableMetadata
from mor.write.partitioning import source_values
from mor.write.sort_order import parse_sort_order, same_fields, sort_indices
from mor.write.zorder import MAX_COLUMNS, MIN_COLUMNS, zorder_indices


@dataclass(frozen=True)
class Clustering:
    """How a clustering compaction orders each output partition's rows: by `sort_order`, or by
    the Z-order of the columns `zorder_ids`."""

    sort_order: SortOrder | None = None
    zorder_ids: tuple[int, ...] = ()
    recorded_order_id: int = 0  # the data files' sort_order_id

    @classmethod
    def of(cls, metadata: TableMetadata, sort_by: object, zorder_by: object) -> Clustering | None:
        if sort_by is None and zorder_by is None:
            return None
        if sort_by is not None and zorder_by is not None:
            raise InvalidArgumentError("compact takes sort_by or zorder_by, not both")
        schema = metadata.schema()
        if sort_by is not None:
            terms = _terms(sort_by, "sort_by")
            if not terms:
                raise InvalidArgumentError("sort_by needs at least one sort term")
            order = parse_sort_order(schema, terms)
            known = next((o for o in metadata.sort_orders if o.fields and same_fields(o, order)), None)
            return cls(sort_order=order, recorded_order_id=known.order_id if known is not None else 0)
        columns = _terms(zorder_by, "zorder_by")
        if not MIN_COLUMNS <= len(columns) <= MAX_COLUMNS:
            raise InvalidArgumentError(f"zorder_by takes {MIN_COLUMNS} to {MAX_COLUMNS} columns, got {len(columns)}")
        ids = []
        for name in columns:
            try:
                field = schema.find_field(name)
            except ValueError:
                raise InvalidArgumentError(f"zorder_by: the table has no column {name!r}") from None
            if not isinstance(field.field_type, PrimitiveType):
                raise InvalidArgumentError(f"zorder_by: column {name!r} is a {field.field_type}, not a primitive column")
            if field.field_id in ids:
                raise InvalidArgumentError(f"zorder_by names column {name!r} twice")
            ids.append(field.field_id)
        return cls(zorder_ids=tuple(ids))

    def order(self, rows: pa.Table, schema: Schema) -> pa.Table:
        """`rows` (columns named as in `schema`) in this clustering's order."""
        if rows.num_rows < 2:
            return rows
        if self.sort_order is not None:
            return rows.take(sort_indices(rows, self.sort_order, schema))
        columns = [source_values(schema, i, rows) for i in self.zorder_ids]
        return rows.take(pa.array(zorder_indices(columns)))


def _terms(value: object, name: str) -> list[str]:
    if isinstance(value, str):
        return [value]
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise InvalidArgumentError(f"{name} is a list of column names or terms, got {value!r}")
    return list(value)
