"""`load_catalog`: a catalog chosen by its type (`CATALOG_TYPES`: the SQL catalog over a
warehouse folder and its database, or an Iceberg REST catalog), from a path, a URI and
properties as pyiceberg's `load_catalog` takes them."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from mor.catalog.sqlite_reads import SqliteCatalogReader
from mor.errors import CorruptMetadataError, InvalidArgumentError, StorageError
from mor.io.fileio import FileIO, is_object_store, to_uri

if TYPE_CHECKING:
    from mor.api.catalog import Catalog
    from mor.catalog.sql import SqlCatalogStore


class _DefaultWarehouse(str):
    """The `warehouse` argument when none is given: `./warehouse` for the SQL catalog, no
    warehouse name for a REST catalog. (An explicit None stays an error.)"""


DEFAULT_WAREHOUSE = _DefaultWarehouse("warehouse")


def load_catalog(
    warehouse: str | os.PathLike[str] | None = DEFAULT_WAREHOUSE,
    uri: str | None = None,
    name: str = "default",
    create: bool | None = None,
    properties: Mapping[str, str] | None = None,
    *,
    token: str | None = None,
    credential: str | None = None,
    type: str | None = None,
    **more_properties: str,
) -> Catalog:
    """A catalog over `warehouse` (default `./warehouse`): tables under it, the SQL catalog at
    `warehouse/catalog.db` unless `uri` names another SQLAlchemy database.

    `create` guards against a mistyped path silently becoming a new, empty warehouse:
      None (default)  the folder must exist; its catalog.db is made if it has none;
      True            the folder is made if missing (a new warehouse);
      False           the warehouse must exist with its catalog (read-only use).

    An Iceberg REST catalog when `uri` is an http(s) URL or `type="rest"`:
    `load_catalog(uri="https://host/catalog", warehouse="wh", token=...)` or
    `credential="client-id:secret"` (OAuth2 client credentials); `warehouse` is then the name
    the server knows the warehouse by, and other properties go to pyiceberg's REST client
    (`scope`, `prefix`, `oauth2-server-uri`, `header.*`, ...) and to file access
    (mor/api/rest_catalog.py). `token`, `credential` and `type` may also be given in `properties`.

    `warehouse` may be object storage, `s3://bucket/prefix` (then `uri` names the catalog
    database). `properties` configure file access as pyiceberg's do (`s3.endpoint`,
    `s3.access-key-id`, `s3.secret-access-key`, `s3.region`, ...; `mor/io/fileio.py`); they may
    also be given as keywords, as pyiceberg's `load_catalog` takes them:
    `load_catalog(..., **{"s3.endpoint": ...})`."""
    unknown = sorted(k for k in more_properties if "." not in k)
    if unknown:  # a property name always has a dot: anything else is a mistyped argument
        raise InvalidArgumentError(f"load_catalog() got unexpected arguments {unknown}")
    if more_properties:
        if properties is not None and not isinstance(properties, Mapping):
            raise InvalidArgumentError(f"properties is a dict of strings, got {properties!r}")
        properties = {**(properties or {}), **more_properties}
    given = {"token": token, "credential": credential, "type": type}
    if any(v is not None for v in given.values()):
        if properties is not None and not isinstance(properties, Mapping):
            raise InvalidArgumentError(f"properties is a dict of strings, got {properties!r}")
        properties = {**(properties or {}), **{k: v for k, v in given.items() if v is not None}}
    return CATALOG_TYPES[catalog_type(uri, properties)](warehouse, uri, name, create, properties)


def _rest_catalog(
    warehouse: str | os.PathLike[str] | None, uri: str | None, name: str, create: bool | None, properties: Mapping[str, str] | None
) -> Catalog:
    from mor.api.rest_catalog import load_rest_catalog  # the REST client is imported only when used

    warehouse_name = None if warehouse is None or isinstance(warehouse, _DefaultWarehouse) else str(warehouse)
    return load_rest_catalog(uri, warehouse_name, name, dict(properties or {}))


def _sql_catalog(
    warehouse: str | os.PathLike[str] | None, uri: str | None, name: str, create: bool | None, properties: Mapping[str, str] | None
) -> Catalog:
    from mor.api.sql_catalog import SqlCatalog

    if not isinstance(warehouse, (str, os.PathLike)) or not str(warehouse).strip():
        raise InvalidArgumentError(f"warehouse is a folder path, got {warehouse!r}")
    if uri is not None and not isinstance(uri, str):
        raise InvalidArgumentError(f"uri is a SQLAlchemy database URL string, got {uri!r}")
    io = FileIO(properties)
    if isinstance(warehouse, str) and is_object_store(warehouse):
        if uri is None:
            raise InvalidArgumentError(
                f"warehouse {warehouse} is object storage: give uri= for the catalog database (a SQLite file cannot live there)"
            )
        io.path(warehouse)  # InvalidArgumentError unless a well-formed object storage location
        return SqlCatalog(_open_store(uri, name), warehouse.rstrip("/"), io)
    root = Path(warehouse).resolve()
    if root.exists() and not root.is_dir():
        raise InvalidArgumentError(f"warehouse {root} is a file, not a folder")
    if create is None and not root.exists():
        raise InvalidArgumentError(f"no warehouse at {root} (no such folder); mor.load_catalog({str(root)!r}, create=True) makes a new one")
    if create is False and uri is None and not (root / "catalog.db").is_file():
        what = "no such folder" if not root.exists() else "no catalog.db in it"
        raise InvalidArgumentError(f"no warehouse at {root} ({what}); mor.load_catalog({str(root)!r}, create=True) makes a new one")
    if create:
        try:
            root.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise StorageError(f"cannot create warehouse {root}: {e.strerror or e}") from e
    if uri is not None:
        return SqlCatalog(_open_store(uri, name), to_uri(root), io)
    database = root / "catalog.db"

    def open_full() -> SqlCatalogStore:
        return _open_store(sqlite_url(database), name)

    return SqlCatalog(SqliteCatalogReader.open(database, name, open_full) or open_full(), to_uri(root), io)


# The catalog types `load_catalog` chooses from, by the `type` property (or an http(s) uri):
# each makes a catalog from load_catalog's checked arguments.
CATALOG_TYPES: dict[str, Callable[[str | os.PathLike[str] | None, str | None, str, bool | None, Mapping[str, str] | None], Catalog]] = {
    "sql": _sql_catalog,
    "rest": _rest_catalog,
}


def catalog_type(uri: object, properties: Mapping[str, str] | None) -> str:
    """The key of `CATALOG_TYPES` a catalog is: its `type` property when given, else `rest` for an
    http(s) URI, else `sql`."""
    kind = (properties or {}).get("type") if isinstance(properties, Mapping) else None
    if kind is None:
        return "rest" if isinstance(uri, str) and uri.lower().startswith(("http://", "https://")) else "sql"
    if kind not in CATALOG_TYPES:
        raise InvalidArgumentError(f"catalog type {kind!r} is not supported: one of {sorted(CATALOG_TYPES)}")
    return str(kind)


def is_rest_catalog(uri: object, properties: Mapping[str, str] | None) -> bool:
    return catalog_type(uri, properties) == "rest"


def sqlite_url(path: Path) -> str:
    """The SQLAlchemy URL of a SQLite file, any folder name escaped (`?`, `%`, `#` in a path
    would otherwise start a query or an escape and name another file)."""
    from sqlalchemy.engine import URL

    return URL.create("sqlite", database=str(path)).render_as_string(hide_password=False)


def _open_store(uri: str, name: str) -> SqlCatalogStore:
    from sqlalchemy.exc import ArgumentError, DatabaseError, OperationalError  # SQLAlchemy only when used

    from mor.catalog.sql import SqlCatalogStore

    try:
        return SqlCatalogStore(uri, name)
    except ArgumentError as e:  # also an unknown dialect
        raise InvalidArgumentError(f"catalog uri {uri!r} is not a usable SQLAlchemy URL: {e}") from e
    except OperationalError as e:
        raise StorageError(f"cannot open the catalog database {uri}: {e.orig or e}") from e
    except DatabaseError as e:
        raise CorruptMetadataError(f"the catalog database {uri} is unreadable: {e.orig or e}") from e
