"""Table operations of the REST protocol over mor's SQL catalog: list, create (and staged
create), load, register, rename, drop (and purge).

A table created here has the properties its client sent over the one Iceberg Java's metadata
builder persists for every new table (`write.parquet.compression-codec=zstd`; mor's merge-on-read
preference reaches clients as `table-default.*` in /v1/config, which they apply themselves, as
mor's own client does), the default location `<warehouse>/<ns>.db/<name>` unless given; its
schema (empty too: Iceberg lets a table start without columns), partition spec and sort order
come from the client and get fresh ids as
Iceberg assigns them (columns from 1, partition fields from 1000), so the ids a client chose
do not matter. Loading returns the metadata file as stored, every key kept (keys mor does not
model included), since the client reads it as its own.

Creating a table, staged or not, makes its `metadata/` folder on a local file system: clients
that write their own manifests (DuckDB) write them there before the create commit.

A table to register is held to what a commit is (the metadata validator, and manifest lists
inside its location: client_files.py); a file it names that cannot be read is the client's
error (400), never a 500.

Locations a client gives (a new table's, a registered metadata file and the table location it
names) must lie inside the warehouse, clear of the catalog's own files, and a table location
must be able to become a folder (locations.py, `Catalog.check_location`); a table to purge must
lie inside the warehouse too.
"""

from __future__ import annotations

import builtins
import json
import logging
from typing import Any

from pyiceberg.partitioning import PartitionSpec, assign_fresh_partition_spec_ids
from pyiceberg.schema import Schema, assign_fresh_schema_ids
from pyiceberg.table.sorting import UNSORTED_SORT_ORDER, SortOrder, assign_fresh_sort_order_ids

from mor.api.sql_catalog import SqlCatalog
from mor.catalog.metadata_files import read_metadata
from mor.catalog.sql_operations import create_in_catalog
from mor.errors import (
    CorruptMetadataError,
    InvalidArgumentError,
    InvalidMetadataError,
    MorError,
    NoSuchNamespaceError,
    NoSuchTableError,
    SchemaMismatchError,
    TableAlreadyExistsError,
    UnsupportedFeatureError,
)
from mor.format.arrow_types import RESERVED_COLUMNS, reserved_message
from mor.format.commit_validation import validate_change
from mor.format.metadata import new_table_metadata, parse_format_version
from mor.format.properties import FORMAT_VERSION_PROPERTY, NEW_TABLE_PROPERTIES
from mor.format.spec import FORMAT_VERSION
from mor.io.fileio import unreadable
from mor.server.client_files import check_registered_files
from mor.server.credentials import CredentialVendor
from mor.server.errors import BadRequestError
from mor.server.locations import check_inside, normal_location
from mor.server.names import check_new_names, escaped, identifier_from_json, identifier_to_json
from mor.server.namespaces import namespace_known
from mor.server.pages import PageRequest

log = logging.getLogger("mor.server")


class Tables:
    def __init__(self, catalog: SqlCatalog):
        self.catalog = catalog
        self.store = catalog.store
        self.io = catalog.io
        self.vendor = CredentialVendor(catalog.properties)  # InvalidArgumentError for wrong settings, before serving

    def default_location(self, namespace: str, name: str) -> str:
        return self.catalog.default_location(f"{namespace}.{name}")

    def list(self, namespace: str, page: PageRequest | None = None) -> dict[str, Any]:
        return name_listing(self.store, namespace, page, views=False)

    def exists(self, namespace: str, name: str) -> bool:
        return self.catalog.table_exists(f"{namespace}.{name}")

    def load(self, namespace: str, name: str, vend: bool) -> dict[str, Any]:
        location = self.store.metadata_location(namespace, name)
        return self.load_result(location, self.metadata_json(location), vend)

    def metadata_json(self, location: str) -> dict[str, Any]:
        """The metadata file as stored (every key), CorruptMetadataError if it is not a JSON object."""
        try:
            text = self.io.read_bytes(location)
        except OSError as e:
            raise unreadable("table metadata file", location, e) from e
        try:
            metadata = json.loads(text)
        except ValueError as e:
            raise CorruptMetadataError(f"table metadata file {location} is not JSON: {e}") from None
        if not isinstance(metadata, dict):
            raise CorruptMetadataError(f"table metadata file {location} is not a JSON object")
        return metadata

    def load_result(self, location: str | None, metadata: dict[str, Any], vend: bool) -> dict[str, Any]:
        result: dict[str, Any] = {"metadata-location": location, "metadata": metadata, "config": {}}
        if vend:
            table_location = str(metadata.get("location", ""))
            result["config"] = self.vendor.config(table_location)
            result["storage-credentials"] = self.vendor.storage_credentials(table_location)
        return result

    def credentials(self, namespace: str, name: str) -> dict[str, Any]:
        """`GET .../tables/{table}/credentials`: the table's storage credentials."""
        location = self.store.metadata_location(namespace, name)
        return {"storage-credentials": self.vendor.storage_credentials(str(self.metadata_json(location).get("location", "")))}

    def create(self, namespace: str, body: dict[str, Any], vend: bool) -> dict[str, Any]:
        name = new_name(self.store, namespace, body, "table")
        if self.exists(namespace, name):
            raise TableAlreadyExistsError(f"table {namespace}.{name} already exists")
        properties = body.get("properties") or {}
        if not isinstance(properties, dict):
            raise BadRequestError(f"properties is an object of strings, got {properties!r}")
        properties = {**NEW_TABLE_PROPERTIES, **properties}  # what Iceberg Java's builder persists for a new table
        version = parse_format_version(properties.pop(FORMAT_VERSION_PROPERTY, FORMAT_VERSION))
        given = body.get("location")
        location = self.default_location(namespace, name) if given is None else normal_location(given, "table location")
        check_inside(self.catalog.warehouse, location, "table location")
        self.catalog.check_unshared(f"{namespace}.{name}", location, None, "create")  # SharedTableError (409)
        schema, spec, order = _fresh_ids(body)
        metadata = new_table_metadata(schema, spec, order, location, properties, version)
        # A client may write manifests there before its first commit (DuckDB's CREATE TABLE AS
        # does, and does not make the folder itself).
        try:
            self.io.make_parent_dirs(f"{location}/metadata/manifest.avro")
        except (FileExistsError, NotADirectoryError) as e:  # a file appeared there since check_inside
            raise BadRequestError(f"table location {location} cannot be a folder: {e.strerror or e}") from None
        if body.get("stage-create") is True:  # the client commits it later, with assert-create
            return self.load_result(None, json.loads(metadata.to_json()), vend)
        metadata_location = create_in_catalog(self.io, self.store, namespace, name, metadata)
        return self.load_result(metadata_location, json.loads(metadata.to_json()), vend)

    def register(self, namespace: str, body: dict[str, Any], vend: bool) -> dict[str, Any]:
        name, location = body.get("name"), body.get("metadata-location")
        if not isinstance(name, str):
            raise BadRequestError(f"name is the table's name, got {name!r}")
        name = escaped(name)
        check_new_names(namespace, name)
        location = normal_location(location, "metadata-location")
        check_inside(self.catalog.warehouse, location, "metadata-location", folder=False)
        if not self.store.namespace_exists(namespace):
            raise NoSuchNamespaceError(f"namespace {namespace!r} does not exist")
        if body.get("overwrite") is True and self.exists(namespace, name):
            raise UnsupportedFeatureError("register with overwrite=true of an existing table is not supported: drop it first")
        try:
            metadata = read_metadata(self.io, location)
        except NoSuchTableError:
            raise
        except (MorError, OSError) as e:  # the client named the file: its error, not ours (4xx)
            raise InvalidArgumentError(f"cannot register {namespace}.{name}: {e}") from None
        check_inside(self.catalog.warehouse, metadata.location, "the registered table's location")
        try:
            validate_change(None, metadata)
        except InvalidMetadataError as e:
            raise InvalidMetadataError(f"cannot register {namespace}.{name}: {e}", e.java_type) from None
        check_registered_files(self.io, metadata)
        self.catalog.register_table(f"{namespace}.{name}", location)
        return self.load_result(location, self.metadata_json(location), vend)

    def rename(self, body: dict[str, Any]) -> None:
        source = identifier_from_json(body.get("source"), "source")
        namespace, name = identifier_from_json(body.get("destination"), "destination")
        check_new_names(namespace, name)
        if not self.store.namespace_exists(namespace):
            raise NoSuchNamespaceError(f"namespace {namespace!r} does not exist")
        self.store.rename_table_row(*source, namespace, name)

    def drop(self, namespace: str, name: str, purge: bool) -> None:
        identifier = f"{namespace}.{name}"
        if purge:
            location = read_metadata(self.io, self.store.metadata_location(namespace, name)).location
            check_inside(self.catalog.warehouse, location, "the location of the table to purge", folder=False)
        result = self.catalog.drop_table(identifier, purge=purge)
        if result is not None:
            log.info("purged %s: deleted %d files, left %d", identifier, len(result.deleted_paths), len(result.skipped_paths))


def _fresh_ids(body: dict[str, Any]) -> tuple[Schema, PartitionSpec, SortOrder]:
    """The request's schema, partition spec and sort order, with ids assigned afresh."""
    try:
        schema = Schema.model_validate(body["schema"])
        spec = PartitionSpec.model_validate(_with_field_ids(body.get("partition-spec")))
        raw_order = body.get("write-order")
        order = UNSORTED_SORT_ORDER if raw_order is None else SortOrder.model_validate(raw_order)
        fresh = assign_fresh_schema_ids(schema)
        fresh_spec = assign_fresh_partition_spec_ids(spec, schema, fresh)
        fresh_order = assign_fresh_sort_order_ids(order, schema, fresh)
    except KeyError:
        raise BadRequestError("a table needs a schema") from None
    except (ValueError, TypeError) as e:  # pydantic's ValidationError is a ValueError
        detail = " ".join(str(e).split())[:300]
        raise InvalidArgumentError(f"invalid schema, partition spec or sort order: {detail}") from None
    reserved = next((f.name for f in fresh.fields if f.name in RESERVED_COLUMNS), None)
    if reserved is not None:
        raise SchemaMismatchError(reserved_message(reserved))
    return fresh, fresh_spec, fresh_order


def _with_field_ids(spec: Any) -> Any:
    """A partition spec as the spec allows it in a create request: `field-id` and `spec-id`
    may be left out (they are assigned afresh anyway)."""
    if spec is None:
        return {"spec-id": 0, "fields": []}
    if not isinstance(spec, dict) or not isinstance(spec.get("fields", []), list):
        return spec  # model_validate says what is wrong
    fields = [{"field-id": 1000 + i, **f} if isinstance(f, dict) else f for i, f in enumerate(spec.get("fields", []))]
    return {"spec-id": 0, **spec, "fields": fields}


def new_name(store: Any, namespace: str, body: dict[str, Any], kind: str) -> str:
    """The name a create request gives (mor's spelling), checked: a name that can be a folder,
    in a namespace that exists."""
    name = body.get("name")
    if not isinstance(name, str):
        raise BadRequestError(f"name is the new {kind}'s name, got {name!r}")
    name = escaped(name)
    check_new_names(namespace, name)
    if not store.namespace_exists(namespace):
        raise NoSuchNamespaceError(f"namespace {namespace!r} does not exist")
    return name


def name_listing(store: Any, namespace: str, page: PageRequest | None, views: bool) -> dict[str, Any]:
    """The tables (`views`: the views) of `namespace`: all of them, or the page asked for, which
    the store finds by its names alone (the page's size and one more, to know whether more
    follow)."""
    if page is None:
        return identifiers(store, namespace, store.list_views(namespace) if views else store.list_tables(namespace))
    names = store.table_names(namespace, page.after_name, page.size + 1, views)
    listing = identifiers(store, namespace, names[: page.size])
    return page.answer(listing, [*namespace.split("."), names[page.size - 1]] if len(names) > page.size else None)


def identifiers(store: Any, namespace: str, names: builtins.list[str]) -> dict[str, Any]:
    """A listing's answer: `names` in `namespace` as identifiers; NoSuchNamespaceError when the
    namespace is empty because it does not exist (no level of it either)."""
    if not names and not namespace_known(store, namespace):
        raise NoSuchNamespaceError(f"namespace {namespace!r} does not exist")
    return {"identifiers": [identifier_to_json(namespace, n) for n in names]}
