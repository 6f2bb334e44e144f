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
from mor.expr.values import Scope, is_null_value, table_scope
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
    nested = {tuple(c.split(".")): v for c, v in assignments.items() if arrow_schema.get_field_index(c) < 0 and "." in c}
    unknown = [c for c in assignments if arrow_schema.get_field_index(c) < 0 and tuple(c.split(".")) not in nested]
    if unknown:
        raise SchemaMismatchError(f"UPDATE sets columns the table does not have: {unknown}")
    nulled = [f.name for f in arrow_schema if not f.nullable and f.name in assignments and is_null_value(assignments[f.name])]
    if nulled:
        raise SchemaMismatchError(f"UPDATE sets required columns to null: {nulled}")
    scope = table_scope(table.schema())
    columns = {}
    for f in arrow_schema:
        inside = {path: v for path, v in nested.items() if path[0] == f.name}
        if f.name in assignments:
            if inside:
                raise InvalidArgumentError(f"UPDATE sets {f.name!r} and fields inside it ({', '.join('.'.join(p) for p in inside)})")
            columns[f.name] = as_expression(assignments[f.name], f.type, scope, f.name)
        elif inside:
            columns[f.name] = _struct_with((f.name,), f.type, inside, scope)
        else:
            columns[f.name] = pc.field(f.name)
    conform(project(arrow_schema.empty_table(), columns), table.schema())
    return columns


def _struct_with(prefix: tuple[str, ...], struct: pa.DataType, sets: dict[tuple[str, ...], object], scope: Scope) -> pc.Expression:
    """The struct column at `prefix` with the fields `sets` names (paths through it) set: Spark's
    SET of a nested field (`addr.city`); a null struct stays null, as Spark's `withField`."""
    if not pa.types.is_struct(struct):
        raise SchemaMismatchError(f"UPDATE sets a field inside {'.'.join(prefix)!r}, which is {struct}, not a struct")
    names = [struct.field(i).name for i in range(struct.num_fields)]
    for path in sets:
        if path[len(prefix)] not in names:
            raise SchemaMismatchError(
                f"UPDATE sets {'.'.join(path)!r}: {'.'.join(prefix)!r} has no field {path[len(prefix)]!r} ({', '.join(names)})"
            )
    children = []
    for i in range(struct.num_fields):
        f = struct.field(i)
        path = (*prefix, f.name)
        below = {p: v for p, v in sets.items() if p[: len(path)] == path}
        if path in below:
            if len(below) > 1:
                raise InvalidArgumentError(f"UPDATE sets {'.'.join(path)!r} and fields inside it")
            children.append(as_expression(below[path], f.type, scope, ".".join(path)))
        elif below:
            children.append(_struct_with(path, f.type, below, scope))
        else:
            children.append(pc.field(*path))
    made = pc.make_struct(*children, field_names=names, field_nullability=[struct.field(i).nullable for i in range(struct.num_fields)])
    return pc.if_else(pc.field(*prefix).is_valid(), made, pa.scalar(None, struct))


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
