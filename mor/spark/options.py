"""Options of `spark.read/write.format("mor")`: which table, which snapshot, what to read.

A table is named by the load/save path: either `namespace.table` in a catalog (option
`warehouse`, and/or `uri` for another SQLAlchemy catalog database, or an http(s) `uri` of an
Iceberg REST catalog with options `token` or `credential`, `warehouse`, `scope`, `prefix`,
`header.*` as `mor.load_catalog` takes them), or a metadata location
(`.../metadata/v5.metadata.json`, or a table folder) for a read-only table. Options named
`s3.*`, `gcs.*`, `adls.*` (and `client.*`) configure object storage, as pyiceberg's properties
do (`s3.endpoint`, `gcs.service.host`, `adls.account-name`, ...); they travel with the table
reference to the executors.

Option `columns` (comma-separated) selects columns; on a format v3 table it may name the row
lineage columns `_row_id` and `_last_updated_sequence_number`, as `table.scan(columns=...)`
does (a user's `.schema(...)` may name them too).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mor.api.table import StaticTable, Table
from mor.errors import InvalidArgumentError
from mor.expr.filters import FilterLike, parse_filter
from mor.io.fileio import FileIO

if TYPE_CHECKING:
    from mor.api.catalog import Catalog

TABLE_OPTIONS = ("path", "table")
# Options passed on as file access properties, named as pyiceberg names them (`s3.endpoint`, ...).
FILE_IO_OPTION_PREFIXES = ("s3.", "gcs.", "adls.", "client.")
# Options of a REST catalog (`uri` is http(s)), as load_catalog takes them.
REST_OPTIONS = ("type", "token", "credential", "scope", "prefix", "oauth2-server-uri", "audience", "resource")
REST_OPTION_PREFIXES = ("header.",)


@dataclass(frozen=True)
class TableRef:
    """Where a table is: picklable, so executors can open the same table again."""

    name: str
    warehouse: str | None = None
    uri: str | None = None
    properties: tuple[tuple[str, str], ...] = ()  # file access (`s3.endpoint`, ...), as load_catalog's

    def with_io_of(self, table: Table) -> TableRef:
        """This reference, carrying the file access the catalog gave `table` (a REST catalog
        vends storage credentials per table), so executors read and write as the driver does."""
        return self.with_io(table.io.properties)

    def with_io(self, properties: Mapping[str, str]) -> TableRef:
        merged = {**dict(self.properties), **properties}
        return TableRef(self.name, self.warehouse, self.uri, tuple(sorted(merged.items())))

    def file_io(self) -> FileIO:
        """A FileIO configured as the table's catalog is: what executors read and write with."""
        return FileIO(dict(self.properties))

    @property
    def is_metadata_location(self) -> bool:
        return is_metadata_location(self.name)

    def open(self) -> Table:
        """The table, to read: a missing warehouse is an error, never created."""
        if self.is_metadata_location:
            return StaticTable.from_metadata(self.name, dict(self.properties))
        return self.catalog(create=False).load_table(self.name)

    def catalog(self, create: bool = True) -> Catalog:
        from mor.api.catalog_types import is_rest_catalog, load_catalog  # on the driver only: executors get tables

        if self.warehouse is None and self.uri is None:
            raise InvalidArgumentError(
                f"table {self.name!r}: give option 'warehouse' (or 'uri' for a catalog database), or load a metadata location instead"
            )
        properties = dict(self.properties)
        if is_rest_catalog(self.uri, properties):  # the warehouse is a name the server knows, or none
            return load_catalog(self.warehouse, uri=self.uri, properties=properties)
        return load_catalog(self.warehouse or ".", uri=self.uri, create=create, properties=properties)


def is_metadata_location(name: str) -> bool:
    return name.endswith(".metadata.json") or "/" in name or name.startswith("file:")


def table_ref(options: Mapping[str, str]) -> TableRef:
    name = next((options[k] for k in TABLE_OPTIONS if options.get(k)), None)
    if not name:
        raise InvalidArgumentError('name the table: .load("db.table") or .load(".../metadata/vN.metadata.json")')
    properties = tuple(
        sorted(
            (k, str(v))
            for k, v in options.items()
            if k.lower().startswith(FILE_IO_OPTION_PREFIXES + REST_OPTION_PREFIXES) or k.lower() in REST_OPTIONS
        )
    )
    return TableRef(name, options.get("warehouse") or None, options.get("uri") or None, properties)


@dataclass(frozen=True)
class ReadOptions:
    snapshot_id: int | None = None
    as_of_ms: int | None = None
    columns: tuple[str, ...] | None = None
    filter: FilterLike = None
    partitions: int | None = None
    metadata_columns: bool = False  # add _file and _pos (row position in the data file)
    data_files: frozenset[str] | None = None  # read only these data files (the fast path's share)
    branch: str | None = None  # the head of a branch, or a tag's snapshot (options "branch", "tag")


def read_options(options: Mapping[str, str]) -> ReadOptions:
    columns = options.get("columns")
    return ReadOptions(
        snapshot_id=int_option(options, "snapshot-id"),
        as_of_ms=int_option(options, "as-of-timestamp"),
        columns=tuple(c.strip() for c in columns.split(",") if c.strip()) if columns else None,
        filter=parse_filter(options["filter"]) if options.get("filter") else None,
        partitions=positive_option(options, "partitions"),
        metadata_columns=bool_option(options, "metadata-columns"),
        data_files=string_set_option(options, "data-files"),
        branch=ref_option(options),
    )


def ref_option(options: Mapping[str, str]) -> str | None:
    """The `branch` or `tag` option (Iceberg's names), at most one of them."""
    given = [options[k] for k in ("branch", "tag") if options.get(k)]
    if len(given) > 1:
        raise InvalidArgumentError("give the branch option or the tag option, not both")
    return given[0] if given else None


def int_option(options: Mapping[str, str], key: str) -> int | None:
    raw = options.get(key)
    if raw is None or raw == "":
        return None
    try:
        return int(raw)
    except ValueError:
        raise InvalidArgumentError(f"option {key!r} must be an integer, got {raw!r}") from None


def string_set_option(options: Mapping[str, str], key: str) -> frozenset[str] | None:
    raw = options.get(key)
    if raw is None:
        return None
    try:
        values = json.loads(raw)
    except ValueError:
        values = None
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise InvalidArgumentError(f"option {key!r} must be a JSON list of strings")
    return frozenset(values)


def bool_option(options: Mapping[str, str], key: str, default: bool = False) -> bool:
    raw = (options.get(key) or str(default)).strip().lower()
    if raw not in ("true", "false"):
        raise InvalidArgumentError(f"option {key!r} must be true or false, got {raw!r}")
    return raw == "true"


def positive_option(options: Mapping[str, str], key: str) -> int | None:
    value = int_option(options, key)
    if value is not None and value < 1:
        raise InvalidArgumentError(f"option {key!r} must be at least 1, got {value}")
    return value
