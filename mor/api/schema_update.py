"""Schema evolution: `table.update_schema()` (the schema merge of `append(schema_mode="merge")` is
mor/dml/append_schema.py's, with the same SchemaEditor).

    with table.update_schema() as update:          # commits on a clean exit, nothing on an error
        update.add_column("info.c", pa.string()).rename_column("name", "label").widen("n", pa.int64())
    table.update_schema().drop_column("old").commit()

The changes are checked as they are made (mor/dml/schema_rules.py: SchemaEvolutionError, the
builder unchanged) and committed as one metadata-only change: the new schema (or an identical
one the table already has, with its id) becomes current, `last-column-id` rises; no snapshot.
A lost race is retried as `set_properties` is: the changes are made again on the new state if
its current schema is still the one they were built on; a concurrent schema change (or a
concurrent commit that makes a change invalid, e.g. a new equality delete on a column to drop)
raises CommitConflictError.
"""

from __future__ import annotations

from types import TracebackType
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from pyiceberg.schema import Schema
from pyiceberg.types import IcebergType

from mor.catalog.table_operations import TableOperations, refresh_same_table
from mor.commit.retry import RetryPolicy, commit_with_retry
from mor.commit.table_commits import schema_commit
from mor.dml.schema_rules import SchemaEditor, protected_fields
from mor.errors import CommitConflictError, InvalidArgumentError, SchemaEvolutionError
from mor.format.metadata import TableMetadata, same_schema

if TYPE_CHECKING:
    from mor.dml.handle import TableHandle


class UpdateSchema:
    """Schema changes to commit together; every method returns the builder (chainable)."""

    def __init__(self, table: TableHandle, ops: TableOperations):
        self._table = table
        self._ops = ops
        self._base = table.metadata
        self._base_location = table.metadata_location
        self._editor = self._new_editor(self._base)
        self._calls: list[tuple[str, tuple[Any, ...]]] = []
        self._committed = False

    def add_column(
        self, path: str, type: pa.DataType | IcebergType, doc: str | None = None, required: bool = False, default: Any = None
    ) -> UpdateSchema:
        """Add a column ("info.c": field c of struct info), at the end of its struct. `type` is a
        pyarrow DataType or a pyiceberg type; nested fields get new ids. `default` (format v3):
        the value rows written before read as (`initial-default`) and writes that leave the
        column out get (`write-default`); a required column needs one."""
        if default is not None:
            self._need_v3("a default value")
        return self._record("add_column", path, type, doc, required, default)

    def set_default(self, path: str, value: Any) -> UpdateSchema:
        """The value writes that leave the column out get from now on (`write-default`, format
        v3; None: none). Rows already written keep theirs."""
        self._need_v3("a default value")
        return self._record("set_default", path, value)

    def rename_column(self, path: str, new_name: str) -> UpdateSchema:
        return self._record("rename_column", path, new_name)

    def drop_column(self, path: str) -> UpdateSchema:
        return self._record("drop_column", path)

    def make_optional(self, path: str) -> UpdateSchema:
        return self._record("make_optional", path)

    def widen(self, path: str, new_type: pa.DataType | IcebergType) -> UpdateSchema:
        """int -> long, float -> double, decimal(P, S) -> decimal(P2 >= P, S)."""
        return self._record("widen", path, new_type)

    def set_doc(self, path: str, doc: str | None) -> UpdateSchema:
        return self._record("set_doc", path, doc)

    def move_first(self, path: str) -> UpdateSchema:
        return self._record("move_first", path)

    def move_before(self, path: str, other: str) -> UpdateSchema:
        return self._record("move_before", path, other)

    def move_after(self, path: str, other: str) -> UpdateSchema:
        return self._record("move_after", path, other)

    def apply(self) -> Schema:
        """The schema the changes so far make (not committed; its schema id is a placeholder)."""
        return self._editor.schema()

    def commit(self) -> Schema:
        """Commit the changes; returns the table's new current schema. No change, no commit."""
        self._check_open()
        self._committed = True
        if not self._calls:
            return self._table.schema()
        ops = self._ops
        base, location, editor = self._base, self._base_location, self._editor

        def attempt(_: int) -> Schema:
            schema = editor.schema()
            if same_schema(schema, base.schema()):
                return base.schema()
            self._table.metadata, self._table.metadata_location = ops.commit(
                base, location, schema_commit(base, schema, editor.last_column_id)
            )
            return self._table.schema()

        def refresh() -> None:  # the calls made again on the fresh schema
            nonlocal base, location, editor
            base, location = refresh_same_table(ops, self._base)
            self._table.metadata, self._table.metadata_location = base, location
            editor = self._replayed(base, location)

        return commit_with_retry(RetryPolicy.of(base.properties), attempt, "change the schema", before_retry=refresh)

    def __enter__(self) -> UpdateSchema:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        if kind is None:
            self.commit()

    def _record(self, method: str, *args: Any) -> UpdateSchema:
        self._check_open()
        getattr(self._editor, method)(*args)  # SchemaEvolutionError: the editor is unchanged
        self._calls.append((method, args))
        return self

    def _need_v3(self, what: str) -> None:
        if self._base.format_version < 3:
            raise SchemaEvolutionError(
                f"{what} needs table format v3; this table is v{self._base.format_version} (upgrade(format_version=3))"
            )

    def _check_open(self) -> None:
        if self._committed:
            raise InvalidArgumentError("this schema update was committed already; start another with table.update_schema()")

    def _new_editor(self, metadata: TableMetadata) -> SchemaEditor:
        return SchemaEditor(metadata.schema(), metadata.last_column_id, lambda: protected_fields(self._table.io, metadata))

    def _replayed(self, base: TableMetadata, location: str) -> SchemaEditor:
        """The changes made again on `base`, which a concurrent commit produced."""
        built_on = self._base.schema()
        if not same_schema(base.schema(), built_on):
            raise CommitConflictError(
                f"a concurrent commit changed the schema of {self._table.identifier}: schema {base.current_schema_id} is "
                f"current in {location}, this update was built on schema {built_on.schema_id}; load the table and try again"
            )
        editor = self._new_editor(base)
        try:
            for method, args in self._calls:
                getattr(editor, method)(*args)
        except SchemaEvolutionError as e:
            raise CommitConflictError(f"a concurrent commit made this schema change invalid: {e}") from None
        return editor
