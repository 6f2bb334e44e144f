"""The definition verbs of a Table: schema and partition spec evolution, the sort order,
properties, CHECK and NOT NULL constraints, and format upgrades. Each is a metadata-only commit
(`commit_metadata`), made again on the fresh table after a lost race.

Each function takes the Table first and is a method of it (`Table.add_column = add_column`,
mor/api/table.py). The builders and commits are imported on first use: a read changes no
definition.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pyarrow as pa
from pyiceberg.expressions import IsNull
from pyiceberg.schema import Schema
from pyiceberg.types import IcebergType

from mor.api.scan import Scan
from mor.commit.retry import RetryPolicy, commit_with_retry
from mor.dml.constraints import check_live_rows, new_constraint, table_constraints
from mor.errors import ConstraintViolationError, InvalidArgumentError
from mor.format.metadata import TableMetadata, parse_format_version, upgraded
from mor.format.properties import FORMAT_VERSION_PROPERTY, check_properties

if TYPE_CHECKING:
    from pyiceberg.table.sorting import SortOrder

    from mor.api.schema_update import UpdateSchema
    from mor.api.spec_update import UpdateSpec
    from mor.dml.handle import TableHandle
    from mor.format.updates import TableCommit


# -- schema evolution (mor/api/schema_update.py) ----------------------------------------
def update_schema(table: TableHandle) -> UpdateSchema:
    """A builder of schema changes, committed together by `.commit()` or on leaving a
    `with` block without an error: add_column, rename_column, drop_column, make_optional,
    widen, set_doc, move_first, move_before, move_after (dotted paths, "info.c")."""
    from mor.api.schema_update import UpdateSchema  # imported on first use: a read changes no schema

    return UpdateSchema(table, table.operations())


def add_column(table: TableHandle, path: str, type: pa.DataType | IcebergType, doc: str | None = None, required: bool = False) -> Schema:
    """Add one optional column (a commit of its own); returns the new schema."""
    return update_schema(table).add_column(path, type, doc, required).commit()


def rename_column(table: TableHandle, path: str, new_name: str) -> Schema:
    return update_schema(table).rename_column(path, new_name).commit()


def drop_column(table: TableHandle, path: str) -> Schema:
    return update_schema(table).drop_column(path).commit()


# -- partition spec evolution (mor/api/spec_update.py) ----------------------------------
def update_spec(table: TableHandle) -> UpdateSpec:
    """A builder of partition spec changes, committed together by `.commit()` or on
    leaving a `with` block without an error: add_field("ts", "day") (or "day(ts)"),
    remove_field(name), rename_field(name, new_name). Metadata only: files keep their
    spec, new writes use the new default spec."""
    from mor.api.spec_update import UpdateSpec  # imported on first use: a read changes no partition spec

    return UpdateSpec(table, table.operations())


def replace_sort_order(table: TableHandle, *terms: str) -> SortOrder:
    """Make the table sorted by `terms` ("ts", "id desc", "name asc nulls last", "day(ts)",
    "bucket(16, id)"); no terms: unsorted. Appends and compaction then sort each file they
    write by it. Metadata only: an identical order already known keeps its id, another is
    added with the next one. See mor/write/sort_order.py."""
    from mor.commit.table_commits import sort_order_commit  # imported on first use: a read commits nothing
    from mor.write.sort_order import parse_sort_order

    table.operations()
    parse_sort_order(table.schema(), terms)  # bad terms raise before any commit
    commit_metadata(table, lambda base: sort_order_commit(base, parse_sort_order(base.schema(), terms)), "replace the sort order")
    return table.metadata.sort_order


def sort_order(table: TableHandle) -> SortOrder:
    """The table's default sort order (order id 0 and no fields: unsorted)."""
    return table.metadata.sort_order


def set_properties(table: TableHandle, **updates: str) -> None:
    """Set table properties, e.g. `set_properties(**{"write.delete.mode": "copy-on-write"})`.
    `format-version` is no property but the table's format: "3" upgrades it, as Iceberg's
    `ALTER TABLE ... SET TBLPROPERTIES` does."""
    from mor.commit.table_commits import properties_commit  # imported on first use: a read commits nothing

    table.operations()
    bad = {k: v for k, v in updates.items() if not isinstance(v, str)}
    if bad:
        raise InvalidArgumentError(f"property values must be strings: {bad}")
    version = updates.pop(FORMAT_VERSION_PROPERTY, None)
    target = None if version is None else parse_format_version(version)
    check_properties(updates)
    commit_metadata(table, lambda base: properties_commit(base, updates, format_version=_upgrade_to(base, target)), "set properties")


def add_constraint(table: TableHandle, name: str, expression: str) -> None:
    """A CHECK constraint every row mor writes must satisfy (`expression` TRUE for it),
    stored as the property `mor.constraint.<name>` (mor/dml/constraints.py). Refused with
    ConstraintViolationError, naming a row, when a live row breaks it."""
    from mor.commit.table_commits import constraint_commit  # imported on first use: a read commits nothing

    table.operations()
    constraint = new_constraint(name, expression, table.schema(), table.metadata.properties)

    def change(base: TableMetadata) -> TableCommit:
        check_live_rows(table, constraint)  # on `base`: the handle was refreshed to it
        return constraint_commit(base, constraint.properties())

    commit_metadata(table, change, f"add constraint {name!r}")


def drop_constraint(table: TableHandle, name: str) -> None:
    """Remove a CHECK constraint; InvalidArgumentError if the table has none of that name."""
    from mor.commit.table_commits import properties_commit  # imported on first use: a read commits nothing

    table.operations()
    names = {c.name: c for c in table_constraints(table.metadata.properties)}
    if name not in names:
        raise InvalidArgumentError(f"the table has no constraint {name!r}; it has {sorted(names)}")
    removed = tuple(k for k in names[name].properties() if k in table.metadata.properties)
    commit_metadata(table, lambda base: properties_commit(base, {}, removed), f"drop constraint {name!r}")


def set_not_null(table: TableHandle, column: str) -> Schema:
    """NOT NULL: make `column` (a dotted path for a struct field) required in the schema,
    which every write then enforces. Refused with ConstraintViolationError while a live row
    holds a null there; the commit asserts the snapshot it checked, so rows committed
    meanwhile are checked again. Returns the new schema."""
    from mor.commit.table_commits import schema_commit
    from mor.dml.schema_rules import SchemaEditor  # imported on first use: a read changes no schema
    from mor.format.updates import TableCommit

    table.operations()

    def change(base: TableMetadata) -> TableCommit:
        editor = SchemaEditor(base.schema(), base.last_column_id)
        editor.make_required(column)  # SchemaEvolutionError for an unknown column
        if editor.schema().find_field(column).required == base.schema().find_field(column).required:
            return TableCommit([], [])  # required already
        nulls = Scan(table, IsNull(column)).count()
        if nulls:
            raise ConstraintViolationError(f"cannot make {column!r} NOT NULL: {nulls} live rows hold a null there")
        return schema_commit(base, editor.schema(), snapshot_id=base.current_snapshot_id)

    commit_metadata(table, change, f"make {column!r} NOT NULL")
    return table.schema()


def constraints(table: TableHandle) -> dict[str, str]:
    """The CHECK constraints, name -> predicate."""
    return {c.name: c.expression for c in table_constraints(table.metadata.properties)}


def upgrade(table: TableHandle, format_version: int = 3) -> None:
    """Raise the table's format version (2 -> 3): later writes use deletion vectors and
    track row lineage. Metadata only: files already written stay as they are, and their
    position delete files still apply until a deletion vector replaces them."""
    from mor.commit.table_commits import properties_commit  # imported on first use: a read commits nothing

    table.operations()
    commit_metadata(table, lambda base: properties_commit(base, {}, format_version=_upgrade_to(base, format_version)), "upgrade the table")


def commit_metadata(table: TableHandle, change: Callable[[TableMetadata], TableCommit], what: str) -> None:
    """A commit without a snapshot, made again on the fresh table after a lost race."""
    ops = table.operations()

    def attempt(_: int) -> None:
        commit = change(table.metadata)
        if commit.updates:
            table.metadata, table.metadata_location = ops.commit(table.metadata, table.metadata_location, commit)

    commit_with_retry(RetryPolicy.of(table.metadata.properties), attempt, what, before_retry=table.refresh)


def _upgrade_to(base: TableMetadata, format_version: int | None) -> int | None:
    """The format version to upgrade `base` to, None when it has it already;
    InvalidArgumentError for a downgrade or an unknown version."""
    if format_version is None:
        return None
    return None if upgraded(base, format_version) is base else format_version
