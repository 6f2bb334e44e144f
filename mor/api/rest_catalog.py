"""The catalog API over an Iceberg REST catalog: the verbs of every `Catalog`, as the SQL catalog has them,
the same Table, reads, DML and maintenance; every commit goes to the server as requirements +
updates (mor/catalog/rest.py), which applies it atomically on the table as it is then.

File access: the catalog's own properties (`s3.*`, ...), overridden per table by what the
server hands out in loadTable's `config` (vended credentials).
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from pyiceberg.schema import Schema
from pyiceberg.table.sorting import UNSORTED_SORT_ORDER

from mor.api.catalog import Catalog, new_table_parts
from mor.api.catalog_names import existing_identifier, new_identifier, new_namespace_properties, table_location_of
from mor.api.table import Table
from mor.catalog.rest import LoadedTable, RestCatalogClient, RestTableOperations
from mor.catalog.table_operations import TableOperations
from mor.catalog.views import DEFAULT_DIALECT, View, replace_updates, sql_version, view_of, view_schema
from mor.errors import InvalidArgumentError, NamespaceAlreadyExistsError, NoSuchTableError, NoSuchViewError
from mor.format.properties import FORMAT_VERSION_PROPERTY
from mor.io.fileio import FileIO
from mor.maintenance.ownership import CatalogView, OtherTable
from mor.maintenance.purge import PurgeResult

# Properties that configure the REST client, not file access.
_CLIENT_KEYS = ("uri", "type", "token", "credential", "warehouse", "scope", "prefix", "oauth2-server-uri", "audience", "resource")


def load_rest_catalog(uri: str | None, warehouse: str | None, name: str, properties: dict[str, str]) -> RestCatalog:
    uri = uri or properties.get("uri")
    if not isinstance(uri, str) or not uri.lower().startswith(("http://", "https://")):
        raise InvalidArgumentError(f"a REST catalog needs uri='http(s)://host[:port][/path]', got {uri!r}")
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in properties.items()):
        raise InvalidArgumentError(f"properties are a dict of strings, got {properties!r}")
    client_properties = {k: v for k, v in properties.items() if k != "type"}
    if warehouse is not None:
        client_properties["warehouse"] = warehouse
    client = RestCatalogClient(name, uri.rstrip("/"), client_properties)
    io = FileIO({k: v for k, v in properties.items() if k not in _CLIENT_KEYS and not k.startswith(("header.", "rest.", "auth"))})
    return RestCatalog(client, name, io)


class RestCatalog(Catalog):
    """A catalog whose tables live in an Iceberg REST catalog server."""

    def __init__(self, client: RestCatalogClient, name: str, io: FileIO):
        self.client = client
        self._name = name
        self.io = io
        self.warehouse = client.properties.get("warehouse", "")

    def __repr__(self) -> str:
        return f"RestCatalog({self._name!r}, uri={self.client.uri!r})"

    creates_tables_with_first_commit = False

    @property
    def name(self) -> str:
        return self._name

    def table_operations(self, identifier: str) -> TableOperations:
        return RestTableOperations(self.client, *existing_identifier(identifier))

    # -- namespaces ------------------------------------------------------------------------
    def create_namespace(self, namespace: str, properties: dict[str, str] | None = None) -> None:
        self.client.create_namespace(namespace, new_namespace_properties(namespace, properties))

    def create_namespace_if_not_exists(self, namespace: str) -> None:
        if self.client.namespace_exists(namespace):
            return
        try:
            self.create_namespace(namespace)
        except NamespaceAlreadyExistsError:
            pass  # created meanwhile by someone else: what we wanted

    def list_namespaces(self) -> list[str]:
        return self.client.list_namespaces()

    def namespace_properties(self, namespace: str) -> dict[str, str]:
        return self.client.namespace_properties(namespace)

    def drop_namespace(self, namespace: str) -> None:
        self.client.drop_namespace(namespace)

    # -- tables ----------------------------------------------------------------------------
    def list_tables(self, namespace: str) -> list[str]:
        if not isinstance(namespace, str):
            raise InvalidArgumentError(f"a namespace name is a string, got {type(namespace).__name__} {namespace!r}")
        return [f"{namespace}.{t}" for t in self.client.list_tables(namespace)]

    def table_exists(self, identifier: str) -> bool:
        try:
            namespace, name = existing_identifier(identifier)
        except NoSuchTableError:
            return False
        return self.client.table_exists(namespace, name)

    def _create_empty_table(
        self,
        identifier: str,
        schema: pa.Schema | Schema,
        partition_by: list[str] | None,
        properties: dict[str, str] | None,
        location: str | None,
        format_version: int | None,
    ) -> Table:
        """A new empty table, created by the server (which assigns its location unless given)."""
        namespace, name = new_identifier(identifier)
        iceberg_schema, spec, table_properties, version = new_table_parts(schema, partition_by, properties, format_version)
        table_properties[FORMAT_VERSION_PROPERTY] = str(version)
        self.create_namespace_if_not_exists(namespace)
        where = table_location_of(location) if location is not None else None
        loaded = self.client.create(namespace, name, iceberg_schema, spec, UNSORTED_SORT_ORDER, table_properties, where)
        return self._opened(identifier, namespace, name, loaded)

    # -- views (mor/catalog/views.py): the server keeps them ----------------------------------
    def create_view(
        self,
        identifier: str,
        sql: str,
        schema: pa.Schema | Schema,
        dialect: str = DEFAULT_DIALECT,
        properties: dict[str, str] | None = None,
        location: str | None = None,
    ) -> View:
        """A new view, created by the server (see `SqlCatalog.create_view`)."""
        namespace, name = new_identifier(identifier)
        fresh = view_schema(schema)
        version = sql_version(sql, dialect, namespace.split("."), schema_id=fresh.schema_id)
        body: dict[str, Any] = {
            "name": name,
            "schema": fresh.model_dump(by_alias=True, mode="json"),
            "view-version": version.model_dump(by_alias=True, mode="json", exclude_none=True),
            "properties": dict(properties or {}),
        }
        if location is not None:
            body["location"] = table_location_of(location)
        self.create_namespace_if_not_exists(namespace)
        return view_of(identifier, self.client.create_view(namespace, body))

    def load_view(self, identifier: str) -> View:
        return view_of(identifier, self.client.load_view(*existing_identifier(identifier)))

    def list_views(self, namespace: str) -> list[str]:
        return [f"{namespace}.{v}" for v in self.client.list_views(namespace)]

    def view_exists(self, identifier: str) -> bool:
        try:
            self.load_view(identifier)
        except NoSuchViewError:
            return False
        return True

    def replace_view(self, identifier: str, sql: str, schema: pa.Schema | Schema, dialect: str = DEFAULT_DIALECT) -> View:
        namespace, name = existing_identifier(identifier)
        current = self.load_view(identifier)
        body = {
            "requirements": [{"type": "assert-view-uuid", "uuid": current.metadata.view_uuid}],
            "updates": replace_updates(namespace, sql, schema, dialect),
        }
        return view_of(identifier, self.client.commit_view(namespace, name, body))

    def rename_view(self, identifier: str, new_identifier_: str) -> View:
        source, destination = existing_identifier(identifier), new_identifier(new_identifier_)
        self.create_namespace_if_not_exists(destination[0])
        self.client.rename_view(source, destination)
        return self.load_view(new_identifier_)

    def drop_view(self, identifier: str) -> None:
        self.client.drop_view(*existing_identifier(identifier))

    def default_location(self, identifier: str) -> str:
        raise InvalidArgumentError("a REST catalog's server chooses where a new table goes; create it and read table.location")

    def register_table(self, identifier: str, metadata_location: str, allow_shared: bool = False) -> Table:
        """Adopt a table by its metadata file; the server decides whether it may (a file
        another of its tables has, or outside its warehouse, may be refused)."""
        namespace, name = new_identifier(identifier)
        if not isinstance(metadata_location, str) or not metadata_location:
            raise InvalidArgumentError(f"metadata_location is the location of a metadata file, got {metadata_location!r}")
        self.create_namespace_if_not_exists(namespace)
        return self._opened(identifier, namespace, name, self.client.register(namespace, name, metadata_location))

    def rename_table(self, identifier: str, new_identifier_: str) -> Table:
        source = existing_identifier(identifier)
        destination = new_identifier(new_identifier_)
        if destination[0] != source[0]:
            self.create_namespace_if_not_exists(destination[0])  # as the SQL catalog's rename does
        self.client.rename(source, destination)
        return self.load_table(new_identifier_)

    def drop_table(self, identifier: str, purge: bool = False) -> PurgeResult | None:
        """Remove the table; `purge=True` asks the server to delete its files too (it answers
        nothing about which, so None is returned either way)."""
        namespace, name = existing_identifier(identifier)
        self.client.drop(namespace, name, purge)
        return None

    def _table(self, identifier: str, namespace: str, name: str) -> Table:
        return self._opened(identifier, namespace, name, self.client.load(namespace, name))

    def _opened(self, identifier: str, namespace: str, name: str, loaded: LoadedTable) -> Table:
        io = FileIO({**self.io.properties, **loaded.config})
        ops = RestTableOperations(self.client, namespace, name)
        table = Table(identifier, loaded.metadata, loaded.metadata_location, io, ops)
        table.catalog_view = self._view((namespace, name))
        return table

    def _view(self, table: tuple[str, str] | None) -> CatalogView:
        """Every other table of the server, for maintenance to leave their files alone."""

        def others() -> list[OtherTable]:
            found = []
            for namespace in self.client.list_namespaces():
                for name in self.client.list_tables(namespace):
                    if (namespace, name) == table:
                        continue
                    try:
                        location = self.client.load(namespace, name).metadata_location
                    except NoSuchTableError:
                        continue  # dropped while we looked
                    found.append(OtherTable(f"{namespace}.{name}", location))
            return found

        return CatalogView(others, None)
