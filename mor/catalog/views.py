"""Views in a SQL catalog: a named SQL query (per dialect) with the schema it produces, stored
as Iceberg view metadata (mor/format/view_metadata.py) in the table's catalog database (rows of
type VIEW, as Iceberg Java's JDBC catalog keeps them; a view and a table never share a name).

mor does not run a view's SQL: it keeps the definition for engines that do (Spark, Trino,
DuckDB through `mor serve`) and hands it out (`View.sql(dialect)`). A change writes a new
metadata file and moves the catalog's pointer by compare-and-swap, as a table commit does; a
lost swap is tried again on the view as it is then.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from pyiceberg.schema import Schema, assign_fresh_schema_ids
from pyiceberg.view.metadata import SQLViewRepresentation, ViewMetadata, ViewRepresentation, ViewVersion

from mor.catalog.metadata_files import new_metadata_location, point_at_new_file
from mor.errors import CommitConflictError, CorruptMetadataError, InvalidArgumentError
from mor.format.arrow_types import from_arrow_schema
from mor.format.view_metadata import (
    apply_view_updates,
    check_view_requirements,
    parse_view_metadata,
    view_metadata_json,
)
from mor.io.fileio import FileIO, unreadable, write_errors

if TYPE_CHECKING:
    from mor.catalog.store import CatalogStore

DEFAULT_DIALECT = "spark"
MAX_ATTEMPTS = 10  # lost swaps before a view commit gives up


@dataclass(frozen=True)
class View:
    """A view as loaded: its name, metadata file and metadata (pyiceberg's model)."""

    identifier: str
    metadata_location: str
    metadata: ViewMetadata

    @property
    def version(self) -> ViewVersion:
        """The current version."""
        return next(v for v in self.metadata.versions if v.version_id == self.metadata.current_version_id)

    @property
    def schema(self) -> Schema:
        """The schema the current version's query produces."""
        return next(s for s in self.metadata.schemas if s.schema_id == self.version.schema_id)

    @property
    def properties(self) -> dict[str, str]:
        return dict(self.metadata.properties)

    def sql(self, dialect: str | None = None) -> str:
        """The current SQL text in `dialect` (the only one when None); InvalidArgumentError
        naming the dialects there are."""
        texts = {r.root.dialect.lower(): r.root.sql for r in self.version.representations}
        if dialect is None and len(texts) == 1:
            return next(iter(texts.values()))
        if dialect is not None and dialect.lower() in texts:
            return texts[dialect.lower()]
        raise InvalidArgumentError(f"view {self.identifier} has SQL in {sorted(texts)}, not {dialect!r}")


def sql_version(sql: str, dialect: str, default_namespace: list[str], schema_id: int = -1) -> ViewVersion:
    """A view version of one SQL text, created now."""
    if not isinstance(sql, str) or not sql.strip():
        raise InvalidArgumentError(f"a view's sql is a non-empty string, got {sql!r}")
    representation = ViewRepresentation(SQLViewRepresentation(type="sql", sql=sql, dialect=dialect))
    return ViewVersion(
        version_id=1,
        schema_id=schema_id,
        timestamp_ms=int(time.time() * 1000),
        summary={"engine-name": "mor"},
        representations=[representation],
        default_namespace=default_namespace,
    )


def view_schema(schema: pa.Schema | Schema) -> Schema:
    """A view's schema from Arrow or pyiceberg, with ids assigned afresh."""
    if isinstance(schema, pa.Schema):
        schema = from_arrow_schema(schema)
    if not isinstance(schema, Schema):
        raise InvalidArgumentError(f"schema is a pyarrow.Schema or a pyiceberg Schema, got {type(schema).__name__}")
    return assign_fresh_schema_ids(schema)


def replace_updates(namespace: str, sql: str, schema: pa.Schema | Schema, dialect: str) -> list[dict[str, Any]]:
    """The view updates of `CREATE OR REPLACE VIEW`: a schema, a version on it, made current."""
    version = sql_version(sql, dialect, namespace.split("."))
    return [
        {"action": "add-schema", "schema": view_schema(schema).model_dump(by_alias=True, mode="json")},
        {"action": "add-view-version", "view-version": version.model_dump(by_alias=True, mode="json", exclude_none=True)},
        {"action": "set-current-view-version", "view-version-id": -1},
    ]


def view_of(identifier: str, answer: dict[str, Any]) -> View:
    """A view from a REST catalog's LoadViewResult."""
    location, metadata = answer.get("metadata-location"), answer.get("metadata")
    if not isinstance(location, str) or not isinstance(metadata, dict):
        raise CorruptMetadataError(f"view {identifier}: the REST catalog's answer lacks metadata-location or metadata")
    return View(identifier, location, parse_view_metadata(json.dumps(metadata)))


def read_view_metadata(io: FileIO, location: str) -> ViewMetadata:
    try:
        return parse_view_metadata(io.read_bytes(location))
    except OSError as e:
        raise unreadable("view metadata file", location, e) from e


def create_view_in_catalog(io: FileIO, store: CatalogStore, namespace: str, name: str, metadata: ViewMetadata) -> View:
    """Write the first metadata file and add the view's row (the file goes again if the row
    certainly was not added)."""
    location = new_metadata_location(metadata.location, None)
    with write_errors(location):
        point_at_new_file(io, location, view_metadata_json(metadata).encode(), lambda: store.create_view_row(namespace, name, location))
    return View(f"{namespace}.{name}", location, metadata)


def commit_view(io: FileIO, store: CatalogStore, namespace: str, name: str, change: Callable[[ViewMetadata], ViewMetadata]) -> View:
    """`change` applied to the view as it is now, committed by compare-and-swap; tried again on
    the new state after a lost swap. `change` raises to refuse (requirements)."""
    for _ in range(MAX_ATTEMPTS):
        current_location = store.view_metadata_location(namespace, name)
        new = change(read_view_metadata(io, current_location))
        location = new_metadata_location(new.location, current_location)
        data = view_metadata_json(new).encode()
        with write_errors(location):
            swap = partial(store.swap, namespace, name, current_location, location)
            swapped = point_at_new_file(io, location, data, swap)
        if swapped:
            return View(f"{namespace}.{name}", location, new)
        io.delete_quietly(location)  # a lost swap: nothing points at it
    raise CommitConflictError(f"view {namespace}.{name} kept changing: {MAX_ATTEMPTS} attempts lost their swap; try again")


def commit_view_changes(io: FileIO, store: CatalogStore, namespace: str, name: str, requirements: list[Any], updates: list[Any]) -> View:
    """A REST view commit: `requirements` checked and `updates` applied on the current view."""

    def change(current: ViewMetadata) -> ViewMetadata:
        check_view_requirements(requirements, current)
        return apply_view_updates(current, updates)

    return commit_view(io, store, namespace, name, change)
