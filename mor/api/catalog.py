"""Catalog: namespaces and tables in a warehouse folder, with a SQL catalog (SQLite default)."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
from pyiceberg.schema import Schema
from pyiceberg.table.sorting import UNSORTED_SORT_ORDER

from mor.api.delete import DELETE_MODE_PROPERTY
from mor.api.row_changes import MERGE_ON_READ
from mor.api.table import Table
from mor.catalog.sql import SqlCatalogStore
from mor.commit.table_ops import CatalogTableOperations, new_metadata_location, read_metadata, write_metadata
from mor.errors import NoSuchNamespaceError, NoSuchTableError, TableAlreadyExistsError
from mor.format.metadata import new_table_metadata
from mor.io.fileio import FileIO, to_uri
from mor.write.arrow_schema import from_arrow_schema
from mor.write.partitioning import parse_partition_by

DEFAULT_PROPERTIES = {
    DELETE_MODE_PROPERTY: MERGE_ON_READ,
    "write.update.mode": MERGE_ON_READ,
    "write.merge.mode": MERGE_ON_READ,
    "write.parquet.compression-codec": "zstd",
}


def load_catalog(warehouse: str | os.PathLike[str] = "warehouse", uri: str | None = None, name: str = "default") -> Catalog:
    """A catalog over `warehouse`: tables under it, the SQL catalog at `warehouse/catalog.db`
    unless `uri` names another SQLAlchemy database."""
    root = Path(warehouse).resolve()
    root.mkdir(parents=True, exist_ok=True)
    return Catalog(SqlCatalogStore(uri or f"sqlite:///{root}/catalog.db", name), to_uri(root))


def split_identifier(identifier: str) -> tuple[str, str]:
    parts = identifier.split(".")
    if len(parts) < 2 or not all(parts):
        raise NoSuchTableError(f"table names are 'namespace.table', got {identifier!r}")
    return ".".join(parts[:-1]), parts[-1]


class Catalog:
    def __init__(self, store: SqlCatalogStore, warehouse_uri: str):
        self.store = store
        self.warehouse = warehouse_uri
        self.io = FileIO()

    @property
    def name(self) -> str:
        return self.store.catalog_name

    # -- namespaces ------------------------------------------------------------------------
    def create_namespace(self, namespace: str, properties: dict[str, str] | None = None) -> None:
        self.store.create_namespace(namespace, properties)

    def create_namespace_if_not_exists(self, namespace: str) -> None:
        if not self.store.namespace_exists(namespace):
            self.store.create_namespace(namespace)

    def list_namespaces(self) -> list[str]:
        return self.store.list_namespaces()

    def drop_namespace(self, namespace: str) -> None:
        self.store.drop_namespace(namespace)

    # -- tables ----------------------------------------------------------------------------
    def list_tables(self, namespace: str) -> list[str]:
        if not self.store.namespace_exists(namespace):
            raise NoSuchNamespaceError(f"namespace {namespace!r} does not exist")
        return [f"{namespace}.{t}" for t in self.store.list_tables(namespace)]

    def table_exists(self, identifier: str) -> bool:
        try:
            self.store.metadata_location(*split_identifier(identifier))
            return True
        except NoSuchTableError:
            return False

    def create_table(
        self,
        identifier: str,
        schema: pa.Schema | Schema,
        partition_by: list[str] | None = None,
        properties: dict[str, str] | None = None,
        location: str | None = None,
    ) -> Table:
        namespace, name = split_identifier(identifier)
        if self.table_exists(identifier):
            raise TableAlreadyExistsError(f"table {identifier} already exists")
        iceberg_schema = from_arrow_schema(schema) if isinstance(schema, pa.Schema) else schema
        spec = parse_partition_by(iceberg_schema, partition_by)
        table_location = location or self.default_location(identifier)
        metadata = new_table_metadata(
            iceberg_schema, spec, UNSORTED_SORT_ORDER, table_location, {**DEFAULT_PROPERTIES, **(properties or {})}
        )
        metadata_location = new_metadata_location(table_location, None)
        write_metadata(self.io, metadata_location, metadata)
        try:
            self.create_namespace_if_not_exists(namespace)
            self.store.create_table_row(namespace, name, metadata_location)
        except BaseException:
            self.io.delete(metadata_location)
            raise
        return self._table(identifier, namespace, name)

    def default_location(self, identifier: str) -> str:
        """Where `create_table` puts a table when no location is given."""
        namespace, name = split_identifier(identifier)
        return f"{self.warehouse}/{namespace}.db/{name}"

    def load_table(self, identifier: str) -> Table:
        namespace, name = split_identifier(identifier)
        return self._table(identifier, namespace, name)

    def register_table(self, identifier: str, metadata_location: str) -> Table:
        """Adopt a table another engine wrote, by its current metadata file."""
        namespace, name = split_identifier(identifier)
        read_metadata(self.io, metadata_location)  # refuse what we cannot read
        self.create_namespace_if_not_exists(namespace)
        self.store.create_table_row(namespace, name, metadata_location)
        return self._table(identifier, namespace, name)

    def drop_table(self, identifier: str) -> None:
        """Remove the table from the catalog; its files stay where they are."""
        self.store.drop_table_row(*split_identifier(identifier))

    def _table(self, identifier: str, namespace: str, name: str) -> Table:
        ops = CatalogTableOperations(self.store, namespace, name, self.io)
        metadata, location = ops.refresh()
        return Table(identifier, metadata, location, self.io, ops)
