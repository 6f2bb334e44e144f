"""Catalogs: `load_catalog`, the `Catalog` base every catalog implements, and the names and
parts of new tables. The SQL catalog (SQLite by default) is mor/api/sql_catalog.py, the REST
catalog mor/api/rest_catalog.py."""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Iterator
from itertools import chain
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema

from mor.api.catalog_names import existing_identifier, new_identifier, split_identifier, table_location_of
from mor.api.inputs import ACCEPTED, Rows, as_tables, is_rows, new_table_schema
from mor.api.table import Table
from mor.catalog.metadata_files import read_metadata
from mor.errors import (
    CommitStateUnknownError,
    InvalidArgumentError,
    MorError,
    SchemaMismatchError,
    SharedTableError,
    TableAlreadyExistsError,
    UnsupportedFeatureError,
)
from mor.format.arrow_types import RESERVED_COLUMNS, from_arrow_schema, reserved_message
from mor.format.metadata import new_table_metadata, parse_format_version
from mor.format.properties import DELETE_MODE_PROPERTY, FORMAT_VERSION_PROPERTY, MERGE_ON_READ, check_properties
from mor.format.spec import FORMAT_VERSION
from mor.io.fileio import FileIO, is_object_store
from mor.maintenance.ownership import CatalogView, OtherTable, database_files, overlaps, same_file, touched
from mor.maintenance.purge import PurgeResult
from mor.progress import Progress
from mor.write.partitioning import parse_partition_by

if TYPE_CHECKING:
    from mor.catalog.table_operations import TableOperations
    from mor.format.metadata import TableMetadata

DEFAULT_PROPERTIES = {
    DELETE_MODE_PROPERTY: MERGE_ON_READ,
    "write.update.mode": MERGE_ON_READ,
    "write.merge.mode": MERGE_ON_READ,
    "write.parquet.compression-codec": "zstd",
}


class Catalog(ABC):
    """What every catalog offers: namespaces, tables, and the Table handles that read and write
    them. Two implementations stand side by side: `SqlCatalog` (mor/api/sql_catalog.py: a SQL
    database holds each table's pointer, mor commits by compare-and-swap) and `RestCatalog`
    (mor/api/rest_catalog.py: an Iceberg REST server holds it and applies commits)."""

    io: FileIO  # file access; its properties configure object storage
    warehouse: str
    # A new table can be created by the commit of its first snapshot (Spark's create-on-write,
    # create_table_from_files); a REST catalog's server creates tables itself.
    creates_tables_with_first_commit = True

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, warehouse={self.warehouse!r})"

    @property
    def properties(self) -> dict[str, str]:
        """The file access properties this catalog was loaded with (`load_catalog(properties=)`)."""
        return dict(self.io.properties)

    @property
    @abstractmethod
    def name(self) -> str: ...

    @abstractmethod
    def table_operations(self, identifier: str) -> TableOperations:
        """How commits to the table are made (mor/catalog/sql_operations.py, mor/catalog/rest.py)."""

    # -- namespaces ------------------------------------------------------------------------
    @abstractmethod
    def create_namespace(self, namespace: str, properties: dict[str, str] | None = None) -> None: ...

    @abstractmethod
    def create_namespace_if_not_exists(self, namespace: str) -> None:
        """Idempotent, also against another process creating the same namespace meanwhile."""

    @abstractmethod
    def list_namespaces(self) -> list[str]: ...

    @abstractmethod
    def namespace_properties(self, namespace: str) -> dict[str, str]: ...

    @abstractmethod
    def drop_namespace(self, namespace: str) -> None: ...

    # -- tables ----------------------------------------------------------------------------
    @abstractmethod
    def list_tables(self, namespace: str) -> list[str]: ...

    @abstractmethod
    def table_exists(self, identifier: str) -> bool: ...

    def create_table(
        self,
        identifier: str,
        schema: pa.Schema | Schema | Rows | None = None,
        partition_by: list[str] | None = None,
        properties: dict[str, str] | None = None,
        location: str | None = None,
        format_version: int | None = None,
        *,
        data: Rows | None = None,
    ) -> Table:
        """A new table: empty, of `schema` (a pyarrow or pyiceberg schema), or holding `data`
        (a pandas or polars DataFrame, a pyarrow Table, RecordBatch or RecordBatchReader, or
        anything `append` takes), given as `data=` or in the place of the schema:
        `create_table("db.t", df)`. The schema is then the data's (decimals pyarrow infers from
        Python Decimal objects in a pandas column become decimal(38, S), so that later appends
        of larger values fit), or `schema=` when given too (the data must fit it); the table
        appears with its first snapshot or not at all (`_create_with_rows`).
        `format_version` 2 (the default) or 3: v3 tables delete with deletion vectors and
        track row lineage (also given as the `format-version` property)."""
        if data is None and not isinstance(schema, (pa.Schema, Schema)) and is_rows(schema):
            schema, data = None, schema  # create_table(name, df)
        if schema is not None and not isinstance(schema, (pa.Schema, Schema)):
            raise InvalidArgumentError(f"schema is a pyarrow.Schema or a pyiceberg Schema, got {type(schema).__name__}")
        if data is not None:
            return self._create_with_rows(identifier, schema, data, partition_by, properties, location, format_version)
        if schema is None:
            raise InvalidArgumentError(
                f"create_table needs a schema (a pyarrow.Schema or a pyiceberg Schema) or data ({ACCEPTED}), got NoneType"
            )
        return self._create_empty_table(identifier, schema, partition_by, properties, location, format_version)

    @abstractmethod
    def _create_empty_table(
        self,
        identifier: str,
        schema: pa.Schema | Schema,
        partition_by: list[str] | None,
        properties: dict[str, str] | None,
        location: str | None,
        format_version: int | None,
    ) -> Table:
        """A new empty table (see create_table)."""

    @abstractmethod
    def default_location(self, identifier: str) -> str:
        """Where `create_table` puts a table when no location is given."""

    @abstractmethod
    def register_table(self, identifier: str, metadata_location: str, allow_shared: bool = False) -> Table:
        """Adopt a table another engine wrote, by its current metadata file."""

    @abstractmethod
    def rename_table(self, identifier: str, new_identifier_: str) -> Table: ...

    @abstractmethod
    def drop_table(self, identifier: str, purge: bool = False) -> PurgeResult | None: ...

    def load_table(self, identifier: str) -> Table:
        namespace, name = existing_identifier(identifier)
        return self._table(identifier, namespace, name)

    def create_table_from_files(
        self,
        identifier: str,
        paths: str | os.PathLike[str] | list[str | os.PathLike[str]],
        partition_by: list[str] | None = None,
        properties: dict[str, str] | None = None,
        location: str | None = None,
        format_version: int | None = None,
        *,
        check_partitions: bool = True,
    ) -> Table:
        """A new table holding existing Parquet files as they are (Delta's CONVERT TO DELTA):
        its schema is the files' (unified; with their field ids when they carry them, else new
        ids and a name mapping), and the files are checked and added as `Table.add_files` does.
        The table appears with its first snapshot in one catalog operation, or not at all (in
        a REST catalog, whose server creates tables: created, then dropped if adding fails)."""
        from mor.api.add_files import adoption_paths, infer_schema, name_mapping_json, plan_adoption, read_footer  # only when used
        from mor.commit.snapshot_producer import Changes, commit_changes
        from mor.format.properties import NAME_MAPPING_PROPERTY
        from mor.format.spec import Operation

        namespace, name = new_identifier(identifier)
        if self.table_exists(identifier):
            raise TableAlreadyExistsError(f"table {identifier} already exists")
        footers = [read_footer(self.io, p) for p in adoption_paths(self.io, paths)]
        schema, with_ids = infer_schema(footers)
        iceberg_schema, spec, properties, version = new_table_parts(schema, partition_by, properties, format_version)
        if not with_ids:
            properties.setdefault(NAME_MAPPING_PROPERTY, name_mapping_json(iceberg_schema))
        if not self.creates_tables_with_first_commit:  # a REST server creates tables (and chooses where)
            table = self._create_empty_table(identifier, iceberg_schema, partition_by, properties, location, version)
            try:
                table.add_files([f.location for f in footers], check_partitions=check_partitions)
            except BaseException:
                self.drop_table(identifier)
                raise
            return table
        table_location = table_location_of(location) if location is not None else self.default_location(identifier)
        self.check_location(table_location, holding=False)
        metadata = new_table_metadata(iceberg_schema, spec, None, table_location, properties, version)
        adoption = plan_adoption(self.io, metadata, footers, check_partitions)
        changes = Changes(Operation.APPEND, added_data=adoption.files)
        commit_changes(self.io, self.new_table_operations(identifier), metadata, "", changes)
        return self._table(identifier, namespace, name)

    def metadata_for_new_table(
        self, identifier: str, schema: Schema, spec: PartitionSpec, properties: dict[str, str], location: str | None, format_version: int
    ) -> TableMetadata:
        """The first metadata of a new table `identifier` (its parts from `new_table_parts`), at
        `location` or the default one; UnsupportedFeatureError for an object storage location
        this catalog has no configuration for, InvalidArgumentError for one on the catalog's
        own database (`check_location`)."""
        table_location = table_location_of(location) if location is not None else self.default_location(identifier)
        self.check_location(table_location, holding=False)
        if is_object_store(table_location) and not (is_object_store(self.warehouse) or self.io.s3_configured):
            raise UnsupportedFeatureError(
                f"table location {table_location} is in object storage, but this catalog has no object storage configuration: "
                "load_catalog(..., properties={...}) with s3.*, gcs.* or adls.* properties, or the environment (AWS_*, "
                "GOOGLE_APPLICATION_CREDENTIALS, AZURE_STORAGE_*)"
            )
        return new_table_metadata(schema, spec, None, table_location, properties, format_version)

    def new_table_operations(self, identifier: str) -> TableOperations:
        """Operations whose first commit creates the table `identifier` (when
        `creates_tables_with_first_commit`: Spark's create-on-write, create_table_from_files)."""
        raise UnsupportedFeatureError(f"{type(self).__name__} does not create a table by its first commit")

    def check_unshared(self, identifier: str, location: str, metadata_location: str | None = None, verb: str = "register") -> None:
        """SharedTableError when `location` is another table's location, holds it or lies in
        it, or `metadata_location` is another table's metadata file: two tables over one set
        of files, whose maintenance would delete each other's files. `identifier`: the table
        that would get them (itself excluded); `verb`: what is refused, for the message.
        InvalidArgumentError when `location` is on the catalog's own files (`check_location`)."""
        anyway = " (pass allow_shared=True to register it anyway: then neither table can expire snapshots or remove orphan files)"
        hint = anyway if verb == "register" else ""
        self.check_location(location)
        namespace, name = split_identifier(identifier)
        # Compared as storage reads them (`..`, `//`, `file:` spellings, links), percent-escapes
        # as written: `a%2Eb.db/t` (the level "a.b") and `a.b.db/t` (levels "a", "b") are two folders.
        for other, theirs in self._tables_beside((namespace, name), location, metadata_location):
            if metadata_location is not None and same_file(other.metadata_location, metadata_location):
                raise SharedTableError(
                    f"cannot {verb} {identifier}: metadata file {metadata_location} is already table {other.name}'s{hint}"
                )
            if theirs is None:
                try:
                    theirs = read_metadata(self.io, other.metadata_location).location
                except (MorError, OSError):
                    continue  # not ours to judge here; maintenance refuses while it cannot be read
            if overlaps(location, theirs):
                raise SharedTableError(
                    f"cannot {verb} {identifier}: its location {location} and table {other.name}'s location {theirs} "
                    f"are the same folder or one holds the other{hint}"
                )

    def _tables_beside(
        self, table: tuple[str, str], location: str, metadata_location: str | None
    ) -> Iterator[tuple[OtherTable, str | None]]:
        """The tables other than `table` that `check_unshared` must compare with a table at
        `location` (and metadata file `metadata_location`), each with its location when known
        (None: read from its metadata). Here every other table; a catalog that remembers
        locations (the SQL catalog) finds the few near it, and near the location written in
        `metadata_location`, where any table pointing at that file is."""
        return ((other, None) for other in self._view(table).others())

    def check_location(self, location: str, holding: bool = True) -> None:
        """InvalidArgumentError when `location`, a new table's or view's folder, is one of the
        catalog's own files (its SQLite database, or SQLite's files beside it) or lies in one:
        a folder there breaks the catalog for every table (a `-journal` folder stops SQLite
        from writing), or cannot be made. With `holding`, a folder holding one is refused too:
        so it is for a server's clients and for what `check_unshared` judges; the Python API
        lets a user's own new table hold it (at the warehouse root), as maintenance never
        deletes the database."""
        database = self._view(None).database
        file = touched(location, database_files(database), holding) if database else None
        if file is not None:
            raise InvalidArgumentError(f"location {location} is, holds or lies in the catalog's database file {file}: choose another")

    @abstractmethod
    def _table(self, identifier: str, namespace: str, name: str) -> Table:
        """The table's handle, loaded."""

    @abstractmethod
    def _view(self, table: tuple[str, str] | None) -> CatalogView:
        """The catalog as maintenance of `table` sees it: every other table (and a database file
        to keep)."""

    def _create_with_rows(
        self,
        identifier: str,
        schema: pa.Schema | Schema | None,
        data: Any,
        partition_by: list[str] | None,
        properties: dict[str, str] | None,
        location: str | None,
        format_version: int | None,
    ) -> Table:
        """`self.create_table(name, data)`: a new table whose schema is the data's, holding the data.

        The schema is the data's Arrow schema (its first batch), mapped to Iceberg types as
        `create_table(schema=...)` maps one, except that decimals pyarrow infers from Python Decimal
        objects in a pandas column become decimal(38, S) (mor/api/inputs.py `new_table_schema`), so
        that later appends of larger values fit. With `schema=` too, that schema is the table's and
        the data must fit it, as an append's must (mor/write/arrow_schema.py `conform`).

        The table appears with its first snapshot in one catalog operation or not at all: the data
        files are written first and the commit that creates the table adds them
        (`Catalog.new_table_operations`, as `create_table_from_files` and Spark's create-on-write do);
        data that does not fit leaves no table and no file. A REST catalog's server creates tables
        itself: the table is created empty, the rows appended, and the table dropped again if the
        append fails (a reader may see the empty table meanwhile)."""
        new_identifier(identifier)
        if self.table_exists(identifier):
            raise TableAlreadyExistsError(f"table {identifier} already exists")
        tables = as_tables(data, "the data of the new table")
        first = next(tables, None)
        if schema is None:
            if first is None:
                raise SchemaMismatchError("the data of the new table holds no batches, so it has no schema: pass schema= too")
            schema = new_table_schema(data, first.schema)
        rows: Iterator[pa.Table] = iter(()) if first is None else chain([first], tables)
        iceberg_schema, spec, table_properties, version = new_table_parts(schema, partition_by, properties, format_version)
        if not self.creates_tables_with_first_commit:  # a REST server creates tables (and chooses where)
            table = self.create_table(identifier, iceberg_schema, partition_by, properties, location, version)
            try:
                table.append(rows)
            except BaseException:
                self.drop_table(identifier)
                raise
            return table
        metadata = self.metadata_for_new_table(identifier, iceberg_schema, spec, table_properties, location, version)
        return self._created_by_first_commit(identifier, metadata, rows)

    def _created_by_first_commit(self, identifier: str, metadata: TableMetadata, rows: Iterator[pa.Table]) -> Table:
        """The data files written against the new table's metadata, then one commit that creates
        the table with them (nothing left behind when the rows do not fit or the commit fails)."""
        from mor.commit.snapshot_producer import Changes, commit_changes
        from mor.dml.append_schema import prepare_append
        from mor.dml.insert import write_table_rows
        from mor.format.spec import Operation

        table_schema, conformed, _ = prepare_append(metadata, rows, None)
        files = write_table_rows(self.io, metadata, table_schema, conformed, Progress("create_table", False), None)
        try:  # no rows: an append snapshot of no files, as append() commits for them
            changes = Changes(Operation.APPEND, added_data=files)
            commit_changes(self.io, self.new_table_operations(identifier), metadata, "", changes)
        except CommitStateUnknownError:
            raise  # the table may exist with these files: never delete them
        except BaseException:
            for f in files:
                self.io.delete_quietly(f.file_path)
            raise
        return self.load_table(identifier)


def new_table_parts(
    schema: pa.Schema | Schema, partition_by: list[str] | None, properties: dict[str, str] | None, format_version: int | None
) -> tuple[Schema, PartitionSpec, dict[str, str], int]:
    """A new table's schema, partition spec, properties (mor's defaults under the given ones)
    and format version, checked."""
    iceberg_schema = _iceberg_schema(schema)
    spec = parse_partition_by(iceberg_schema, partition_by)
    check_properties(properties or {})
    given = dict(properties or {})
    version = _format_version(format_version, given.pop(FORMAT_VERSION_PROPERTY, None))
    return iceberg_schema, spec, {**default_properties(version), **given}, version


def default_properties(format_version: int) -> dict[str, str]:
    """mor's properties for a table it creates: merge-on-read, except on format v1, which has
    no delete files (its writes rewrite the rows, as Iceberg's default copy-on-write does)."""
    if format_version == 1:
        return {k: v for k, v in DEFAULT_PROPERTIES.items() if v != MERGE_ON_READ}
    return dict(DEFAULT_PROPERTIES)


def _iceberg_schema(schema: pa.Schema | Schema) -> Schema:
    if isinstance(schema, pa.Schema):
        iceberg_schema = from_arrow_schema(schema)
    elif isinstance(schema, Schema):
        iceberg_schema = schema
    else:
        raise InvalidArgumentError(f"schema is a pyarrow.Schema or a pyiceberg Schema, got {type(schema).__name__}")
    if not iceberg_schema.fields:
        raise SchemaMismatchError("a table needs at least one column; the schema has none")
    reserved = next((f.name for f in iceberg_schema.fields if f.name in RESERVED_COLUMNS), None)
    if reserved is not None:  # a pyarrow schema was checked by from_arrow_schema; a pyiceberg one here
        raise SchemaMismatchError(reserved_message(reserved))
    return iceberg_schema


def _format_version(argument: int | None, property_value: str | None) -> int:
    if property_value is None:
        return FORMAT_VERSION if argument is None else parse_format_version(argument)
    from_property = parse_format_version(property_value)
    if argument is not None and parse_format_version(argument) != from_property:
        raise InvalidArgumentError(f"format_version={argument} but the format-version property says {property_value}")
    return from_property
