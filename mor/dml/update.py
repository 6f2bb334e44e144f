"""UPDATE ... SET ... WHERE: remove the matching rows, add them back with new values.

Merge-on-read writes position deletes for the old rows and a data file with the new ones, in
one `overwrite` snapshot; copy-on-write rewrites the touched files. A row whose partition
column changes lands in its new partition.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
from pyiceberg.expressions import BooleanExpression
from pyiceberg.schema import Schema

from mor.commit.snapshot_producer import Changes, Validator
from mor.dml.expressions import Assignments, as_expression, project
from mor.dml.row_changes import build_changes, find_matches, rows_validator, with_row_ids
from mor.errors import InvalidArgumentError, SchemaMismatchError
from mor.expr.values import is_null_value, table_scope
from mor.format.arrow_types import to_arrow_schema
from mor.progress import Progress
from mor.write.arrow_schema import conform

if TYPE_CHECKING:
    from mor.dml.handle import TableHandle


def updated_columns(table: TableHandle, assignments: Assignments) -> dict[str, pc.Expression]:
    """Every table column as an expression of the old row; checked on an empty table so a
    bad column or type fails before anything is written."""
    if not isinstance(assignments, Mapping):
        raise InvalidArgumentError(
            f"UPDATE's set is a dict of column -> value or expression, got {type(assignments).__name__} {assignments!r}"
        )
    if not assignments:
        raise InvalidArgumentError("UPDATE needs at least one column to set")
    not_names = [c for c in assignments if not isinstance(c, str)]
    if not_names:
        raise InvalidArgumentError(f"UPDATE sets columns by name (strings), got {not_names}")
    arrow_schema = to_arrow_schema(table.schema())
    unknown = [c for c in assignments if arrow_schema.get_field_index(c) < 0]
    if unknown:
        raise SchemaMismatchError(f"UPDATE sets columns the table does not have: {unknown}")
    nulled = [f.name for f in arrow_schema if not f.nullable and f.name in assignments and is_null_value(assignments[f.name])]
    if nulled:
        raise SchemaMismatchError(f"UPDATE sets required columns to null: {nulled}")
    scope = table_scope(table.schema())
    columns = {
        f.name: as_expression(assignments[f.name], f.type, scope, f.name) if f.name in assignments else pc.field(f.name)
        for f in arrow_schema
    }
    conform(project(arrow_schema.empty_table(), columns), table.schema())
    return columns


def updated_rows(old_rows: pa.Table, columns: dict[str, pc.Expression], schema: Schema) -> pa.Table:
    """The new versions of `old_rows` (matched rows), with the old rows' `_row_id` when they
    carry one (v3)."""
    return with_row_ids(conform(project(old_rows, columns), schema), old_rows)


def update_where(
    table: TableHandle, assignments: Assignments, row_filter: BooleanExpression, mode: str, progress: Progress
) -> tuple[Changes, Validator] | None:
    columns = updated_columns(table, assignments)
    matches = find_matches(table, row_filter, progress, with_rows=True)
    if not matches:
        return None
    old_rows = pa.concat_tables([m.rows for m in matches if m.rows is not None])
    new_rows = updated_rows(old_rows, columns, table.schema())
    changes, removals = build_changes(table, matches, new_rows, mode, progress)
    return changes, rows_validator(table, "update", row_filter, removals)
