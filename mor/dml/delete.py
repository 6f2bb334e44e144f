"""DELETE by predicate: find the live matching rows' positions, then remove them.

Only the predicate's columns are read; files and partitions are skipped by metadata, and a
file whose metrics prove every row matches is dropped without being read. An overwrite is
such a delete that also adds the data files written for it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

import pyarrow as pa
from pyiceberg.expressions import AlwaysTrue, BooleanExpression
from pyiceberg.schema import Schema

from mor.commit.snapshot_producer import Changes, Validator
from mor.dml.row_changes import build_changes, find_matches, rows_validator
from mor.errors import RowsOutsideWhereError
from mor.expr.filters import bind_filter
from mor.format.content_file import DataFile
from mor.progress import Progress

if TYPE_CHECKING:
    from mor.dml.handle import TableHandle


def delete_where(table: TableHandle, row_filter: BooleanExpression, mode: str, progress: Progress) -> tuple[Changes, Validator] | None:
    """Write the files for a DELETE; None when no live row matches."""
    matches = find_matches(table, row_filter, progress)
    if not matches:
        return None
    changes, removals = build_changes(table, matches, None, mode, progress)
    return changes, rows_validator(table, "delete", row_filter, removals)


def overwrite_where(
    table: TableHandle, row_filter: BooleanExpression, mode: str, added: Sequence[DataFile], progress: Progress
) -> tuple[Changes, Validator] | None:
    """Remove the rows matching `row_filter` and add the data files `added`, in one commit;
    None when no row matches and nothing is added."""
    matches = find_matches(table, row_filter, progress)
    if not matches and not added:
        return None
    changes, removals = build_changes(table, matches, None, mode, progress, added)
    return changes, rows_validator(table, "delete", row_filter, removals)


def rows_within(rows: Iterable[pa.Table], row_filter: BooleanExpression, schema: Schema, where: object) -> Iterator[pa.Table]:
    """`rows`, each checked to lie within the overwrite's `row_filter` (TRUE for every row, in
    SQL's reading: a row where it is NULL lies outside), as Iceberg's overwrite validates its
    added files against the overwrite filter and Delta's replaceWhere its rows.
    RowsOutsideWhereError naming a row otherwise: the next overwrite of the same `where` would
    leave it in place, so a rerun would hold it twice."""
    from mor.expr.arrow_rows import to_arrow_filter  # pyarrow compute only when an overwrite checks rows

    if isinstance(row_filter, AlwaysTrue):
        yield from rows
        return
    holds = to_arrow_filter(bind_filter(schema, row_filter), schema)
    outside = ~(holds.is_valid() & holds)
    for table in rows:
        bad = table.filter(outside)
        if bad.num_rows:
            row = bad.slice(0, 1).to_pylist()[0]
            raise RowsOutsideWhereError(
                f"{bad.num_rows} of the rows to overwrite with lie outside where={where!r}, e.g. {row}: the next overwrite "
                "of the same rows would keep them; nothing was written (allow_rows_outside_where=True writes them anyway)"
            )
        yield table
