"""A SQLite catalog file opened for reading first, without SQLAlchemy.

Importing SQLAlchemy costs about 0.2 s, a fifth of what `mor scan db.t --limit 10` may take in
all (issue 26). Loading a table needs one row, its metadata location, which Python's own
sqlite3 reads from the file opened read-only. Everything else (commits, namespaces, listings)
goes to the full `SqlCatalogStore` (mor/catalog/sql.py), built on first use: the same database
through SQLAlchemy. So does a lookup that cannot read the file (locked, damaged), so that its
error is the store's own; one that finds no row says so as the store would.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from contextlib import closing
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from mor.catalog.store import no_such_table

if TYPE_CHECKING:
    from mor.catalog.locations import LocationForms
    from mor.catalog.sql import SqlCatalogStore

_POINTER = (
    "SELECT metadata_location FROM iceberg_tables WHERE catalog_name = ? AND table_namespace = ? AND table_name = ? "
    "AND (iceberg_type = 'TABLE' OR iceberg_type IS NULL)"
)  # the condition of SqlCatalogStore.metadata_location, in SQL
_CATALOG_TABLES = ("iceberg_tables", "iceberg_namespace_properties")


class SqliteCatalogReader:
    """The catalog in SQLite file `path`, as `SqlCatalogStore` offers it: `metadata_location`
    is read with sqlite3; every other attribute is the full store's (`full`), which `open_full`
    builds when first needed."""

    is_server = False

    def __init__(self, path: Path, catalog_name: str, open_full: Callable[[], SqlCatalogStore]):
        self.path = path
        self.catalog_name = catalog_name
        self.server = str(path)
        self._open_full = open_full
        self._location_forms: LocationForms | None = None

    @classmethod
    def open(cls, path: Path, catalog_name: str, open_full: Callable[[], SqlCatalogStore]) -> SqliteCatalogReader | None:
        """A reader for `path`, or None when the file is not a catalog sqlite3 can read as it
        stands (missing, without the catalog's tables yet, locked, not a database): the full
        store then opens it, making the tables or saying what is wrong."""
        reader = cls(path, catalog_name, open_full)
        try:
            with reader._connect() as conn:
                found = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        except sqlite3.Error:
            return None
        return reader if found.issuperset(_CATALOG_TABLES) else None

    @cached_property
    def full(self) -> SqlCatalogStore:
        store = self._open_full()
        store.location_forms = self._location_forms
        return store

    @property
    def location_forms(self) -> LocationForms | None:
        return self._location_forms

    @location_forms.setter
    def location_forms(self, forms: LocationForms | None) -> None:
        # Kept for the full store (SqlCatalogStore.location_forms) without building it now.
        self._location_forms = forms
        if "full" in self.__dict__:
            self.full.location_forms = forms

    def __getattr__(self, name: str) -> Any:
        # Called only for what this class does not define: the full store's methods.
        if name.startswith("__") or name in ("full", "_open_full", "_location_forms"):
            raise AttributeError(name)
        return getattr(self.full, name)

    @property
    def database_file(self) -> str:
        return str(self.path)

    def dispose(self) -> None:
        if "full" in self.__dict__:  # nothing to close otherwise: sqlite3 connections are closed after each read
            self.full.dispose()

    def metadata_location(self, namespace: str, name: str) -> str:
        try:
            with self._connect() as conn:
                row = conn.execute(_POINTER, (self.catalog_name, namespace, name)).fetchone()
        except sqlite3.Error:
            return self.full.metadata_location(namespace, name)  # its answer after a lock, or its error
        if row is None or row[0] is None:
            raise no_such_table(namespace, name)  # the store's own answer to the same query
        return str(row[0])

    def _connect(self) -> closing[sqlite3.Connection]:
        # Read-only, so that a lookup never creates or changes the file; closed on exit.
        return closing(sqlite3.connect(f"file:{quote(str(self.path))}?mode=ro", uri=True, timeout=5.0))
