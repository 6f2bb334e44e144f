"""The SQL catalog: namespaces and tables in a warehouse folder, each table's current metadata
file a row of a SQL database (SQLite at `warehouse/catalog.db` by default, PostgreSQL when
several machines write; mor/catalog/sql.py). mor commits by writing a metadata file and moving
the row's pointer by compare-and-swap (mor/catalog/sql_operations.py)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pyarrow as pa
from pyiceberg.schema import Schema

from mor.api.catalog import Catalog, new_table_parts
from mor.api.catalog_names import (
    check_new_name,
    existing_identifier,
    new_identifier,
    new_namespace_properties,
    split_identifier,
    table_location_of,
)
from mor.api.table import Table
from mor.catalog.located import LocatedMetadata
from mor.catalog.metadata_files import read_metadata
from mor.catalog.sql_operations import CatalogTableOperations, NewTableOperations, create_in_catalog
from mor.catalog.views import (
    DEFAULT_DIALECT,
    View,
    commit_view,
    create_view_in_catalog,
    read_view_metadata,
    replace_updates,
    sql_version,
    view_schema,
)
from mor.errors import InvalidArgumentError, MorError, NoSuchNamespaceError, NoSuchTableError, NoSuchViewError, TableAlreadyExistsError
from mor.format.view_metadata import apply_view_updates, create_view_metadata
from mor.io.fileio import FileIO
from mor.maintenance.ownership import CatalogView, OtherTable, storage_forms
from mor.maintenance.purge import PurgeResult, delete_purged, plan_purge

if TYPE_CHECKING:
    from mor.catalog.locations import Unindexed
    from mor.catalog.sql import SqlCatalogStore
    from mor.catalog.sqlite_reads import SqliteCatalogReader
    from mor.catalog.table_operations import TableOperations


class SqlCatalog(Catalog):
    """A catalog whose tables' pointers live in a SQL database (see the module docstring)."""

    def __init__(self, store: SqlCatalogStore | SqliteCatalogReader, warehouse_uri: str, io: FileIO | None = None):
        self.store = store
        self.warehouse = warehouse_uri
        self.io = io if io is not None else FileIO()  # its properties configure object storage
        store.location_forms = location_forms  # so that the store records locations as the check compares them

    def __repr__(self) -> str:
        return f"Catalog({self.name!r}, warehouse={self.warehouse!r})"  # the default catalog keeps its short name

    @property
    def name(self) -> str:
        return self.store.catalog_name

    def table_operations(self, identifier: str) -> TableOperations:
        """How commits to the table are made (mor/catalog/sql_operations.py)."""
        return CatalogTableOperations(self.store, *existing_identifier(identifier), self.io)

    # -- namespaces ------------------------------------------------------------------------
    def create_namespace(self, namespace: str, properties: dict[str, str] | None = None) -> None:
        self.store.create_namespace(namespace, new_namespace_properties(namespace, properties))

    def create_namespace_if_not_exists(self, namespace: str) -> None:
        """Idempotent, also against another process creating the same namespace meanwhile."""
        check_new_name("namespace", namespace)
        self.store.create_namespace_if_absent(namespace)

    def list_namespaces(self) -> list[str]:
        return self.store.list_namespaces()

    def namespace_properties(self, namespace: str) -> dict[str, str]:
        return self.store.namespace_properties(namespace)

    def drop_namespace(self, namespace: str) -> None:
        self.store.drop_namespace(namespace)

    # -- tables ----------------------------------------------------------------------------
    def list_tables(self, namespace: str) -> list[str]:
        if not isinstance(namespace, str):
            raise InvalidArgumentError(f"a namespace name is a string, got {type(namespace).__name__} {namespace!r}")
        if not self.store.namespace_exists(namespace):
            raise NoSuchNamespaceError(f"namespace {namespace!r} does not exist")
        return [f"{namespace}.{t}" for t in self.store.list_tables(namespace)]

    def table_exists(self, identifier: str) -> bool:
        try:
            self.store.metadata_location(*existing_identifier(identifier))
            return True
        except NoSuchTableError:
            return False

    def _create_empty_table(
        self,
        identifier: str,
        schema: pa.Schema | Schema,
        partition_by: list[str] | None,
        properties: dict[str, str] | None,
        location: str | None,
        format_version: int | None,
    ) -> Table:
        """A new empty table: its first metadata file, and the catalog row pointing at it."""
        namespace, name = new_identifier(identifier)
        if self.table_exists(identifier):
            raise TableAlreadyExistsError(f"table {identifier} already exists")
        iceberg_schema, spec, properties, version = new_table_parts(schema, partition_by, properties, format_version)
        metadata = self.metadata_for_new_table(identifier, iceberg_schema, spec, properties, location, version)
        create_in_catalog(self.io, self.store, namespace, name, metadata, lambda: self.create_namespace_if_not_exists(namespace))
        return self._table(identifier, namespace, name)

    def default_location(self, identifier: str) -> str:
        """Where `create_table` puts a table when no location is given."""
        namespace, name = split_identifier(identifier)
        return f"{self.warehouse}/{namespace}.db/{name}"

    def register_table(self, identifier: str, metadata_location: str, allow_shared: bool = False) -> Table:
        """Adopt a table another engine wrote, by its current metadata file. A metadata file or
        table location another table of this catalog already has (the same folder, or one
        inside the other) is SharedTableError unless `allow_shared=True`: two names for one set
        of files, whose maintenance would delete each other's files. Registered shared, both
        tables refuse expiry and orphan removal (MaintenanceRefusedError)."""
        namespace, name = new_identifier(identifier)
        if not isinstance(metadata_location, str) or not metadata_location:
            raise InvalidArgumentError(f"metadata_location is the location of a metadata file, got {metadata_location!r}")
        metadata = read_metadata(self.io, metadata_location)  # refuse what we cannot read
        self.check_location(metadata.location, holding=False)  # never on the catalog's own database, shared or not
        if not allow_shared:
            self.check_unshared(identifier, metadata.location, metadata_location)
        self.create_namespace_if_not_exists(namespace)
        self.store.create_table_row(namespace, name, LocatedMetadata(metadata_location, metadata.location))
        return self._table(identifier, namespace, name)

    def rename_table(self, identifier: str, new_identifier_: str) -> Table:
        """Give the table another name (also in another namespace, created when missing); its
        files stay where they are."""
        namespace, name = existing_identifier(identifier)
        new_namespace, new_name = new_identifier(new_identifier_)
        if new_namespace != namespace:
            self.create_namespace_if_not_exists(new_namespace)
        self.store.rename_table_row(namespace, name, new_namespace, new_name)
        return self._table(new_identifier_, new_namespace, new_name)

    def drop_table(self, identifier: str, purge: bool = False) -> PurgeResult | None:
        """Remove the table from the catalog; its files stay where they are. `purge=True` then
        deletes the files that are its own (mor/maintenance/purge.py): every file its metadata
        names under its location that no other table references, and returns what it deleted
        and left. The files are read before the table is removed: metadata that cannot be read
        drops nothing."""
        namespace, name = existing_identifier(identifier)
        if not purge:
            self.store.drop_table_row(namespace, name)
            return None
        table = self._table(identifier, namespace, name)
        plan = plan_purge(self.io, identifier, table.metadata, table.metadata_location, table.catalog_view)
        self.store.drop_table_row(namespace, name)
        return delete_purged(self.io, plan)

    def new_table_operations(self, identifier: str) -> TableOperations:
        namespace, name = new_identifier(identifier)
        return NewTableOperations(self.io, self.store, namespace, name, lambda: self.create_namespace_if_not_exists(namespace))

    def _table(self, identifier: str, namespace: str, name: str) -> Table:
        ops = CatalogTableOperations(self.store, namespace, name, self.io)
        metadata, location = ops.refresh()
        table = Table(identifier, metadata, location, self.io, ops)
        table.catalog_view = self._view((namespace, name))
        return table

    def _view(self, table: tuple[str, str] | None) -> CatalogView:
        """The catalog as maintenance of `table` sees it: every other table, and the database file."""

        def others() -> list[OtherTable]:
            return [
                OtherTable(self._other_name(catalog, ns, t), location)
                for catalog, ns, t, location in self.store.table_rows()
                if (catalog, (ns, t)) != (self.name, table)
            ]

        database = self.store.database_file
        return CatalogView(others, os.path.abspath(database) if database else None)

    def _other_name(self, catalog: str, namespace: str, name: str) -> str:
        return f"{namespace}.{name}" if catalog == self.name else f"{catalog}:{namespace}.{name}"

    def _tables_beside(
        self, table: tuple[str, str], location: str, metadata_location: str | None
    ) -> Iterator[tuple[OtherTable, str | None]]:
        """The tables whose recorded location is `location`'s folder, above it or inside it
        (mor/catalog/locations.py), or that of `metadata_location`'s table: a few indexed
        lookups, once the tables other writers created or moved are read and recorded. Without
        the index (a read-only database): every other table."""
        index = self.store.locations
        if index is None:
            yield from super()._tables_beside(table, location, metadata_location)
            return
        places = [location]
        if metadata_location is not None:  # a table pointing at that file is at the location written in it
            try:
                places.append(read_metadata(self.io, metadata_location).location)
            except (MorError, OSError):
                pass
        read: dict[Unindexed, str] = {}  # the tables other writers created or moved, read now
        for pending in index.unindexed():
            try:
                read[pending] = read_metadata(self.io, pending.metadata_location).location
            except (MorError, OSError):
                continue  # not ours to judge here (as for every table before); it stays pending
        for left in index.heal([(pending, theirs, location_forms(theirs)) for pending, theirs in read.items()]):
            if left.key != (self.name, *table):  # not in the index: compared here
                yield OtherTable(self._other_name(*left.key), left.metadata_location), read[left]
        for found in index.near(*location_probes(places)):
            if (found.catalog_name, (found.namespace, found.name)) != (self.name, table):
                yield OtherTable(self._other_name(found.catalog_name, found.namespace, found.name), found.metadata_location), found.location

    # -- views ------------------------------------------------------------------------------
    def create_view(
        self,
        identifier: str,
        sql: str,
        schema: pa.Schema | Schema,
        dialect: str = DEFAULT_DIALECT,
        properties: dict[str, str] | None = None,
        location: str | None = None,
    ) -> View:
        """A new view: `sql` in `dialect`, producing `schema`, its names resolved in the
        view's own namespace. ViewAlreadyExistsError when a view or a table has the name."""
        namespace, name = new_identifier(identifier)
        where = table_location_of(location) if location is not None else self.default_location(identifier)
        self.check_location(where, holding=False)  # never on the catalog's own database files
        fresh = view_schema(schema)
        metadata = create_view_metadata(where, fresh, sql_version(sql, dialect, namespace.split(".")), dict(properties or {}))
        self.create_namespace_if_not_exists(namespace)
        return create_view_in_catalog(self.io, self.store, namespace, name, metadata)

    def load_view(self, identifier: str) -> View:
        namespace, name = existing_identifier(identifier)
        location = self.store.view_metadata_location(namespace, name)
        return View(identifier, location, read_view_metadata(self.io, location))

    def list_views(self, namespace: str) -> list[str]:
        return [f"{namespace}.{v}" for v in self.store.list_views(namespace)]

    def view_exists(self, identifier: str) -> bool:
        try:
            self.store.view_metadata_location(*existing_identifier(identifier))
        except NoSuchViewError:
            return False
        return True

    def drop_view(self, identifier: str) -> None:
        """Forget the view (its metadata files stay, as a dropped table's do without purge)."""
        self.store.drop_view_row(*existing_identifier(identifier))

    def rename_view(self, identifier: str, new_identifier_: str) -> View:
        source = existing_identifier(identifier)
        destination = new_identifier(new_identifier_)
        self.create_namespace_if_not_exists(destination[0])
        self.store.rename_view_row(*source, *destination)
        return self.load_view(new_identifier_)

    def replace_view(self, identifier: str, sql: str, schema: pa.Schema | Schema, dialect: str = DEFAULT_DIALECT) -> View:
        """A new current version of the view (`CREATE OR REPLACE VIEW`); the old ones stay in
        its history (`version.history.num-entries` of them)."""
        namespace, name = existing_identifier(identifier)
        updates = replace_updates(namespace, sql, schema, dialect)
        return commit_view(self.io, self.store, namespace, name, lambda current: apply_view_updates(current, updates))


def location_forms(location: str) -> list[str]:
    """The spellings the catalog records a table location as: those `overlaps` compares."""
    return [str(form) for form in storage_forms(location)]


def location_probes(locations: list[str]) -> tuple[list[str], list[str]]:
    """What a table at one of `locations` may share a folder with, as recorded forms: its own
    folder and those above it (`exact`), and the beginnings of the folders inside it (`below`)."""
    exact, below = [], []
    for form in (form for location in locations for form in storage_forms(location)):
        levels = form.path.split("/")  # "/a/b" -> ["", "a", "b"]; a relative "a/b" -> ["a", "b"]
        exact += [form.prefix + ("/".join(levels[:i]) or "/") for i in range(1, len(levels) + 1)]
        below.append(form.prefix + form.path.rstrip("/") + "/")
    return exact, below
