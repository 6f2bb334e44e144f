"""The swap's two failure kinds on the embedded SQLite catalog: an UPDATE that fails inside its
transaction certainly did not commit (CatalogUnavailableError; the writer's files are removed)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from unit_helpers import SCHEMA, files_under, make_rows, scan_ids

import mor
from mor.catalog.sql import SqlCatalogStore
from mor.io.fileio import to_uri


def test_a_locked_sqlite_catalog_fails_the_commit_cleanly(tmp_path: Path) -> None:
    warehouse = tmp_path / "warehouse"
    mor.load_catalog(warehouse, create=True).create_table("db.t", schema=SCHEMA).append(make_rows(range(10)))
    store = SqlCatalogStore(f"sqlite:///{warehouse}/catalog.db", connect_args={"timeout": 0.1})
    try:
        table = mor.SqlCatalog(store, to_uri(warehouse)).load_table("db.t")
        before_files, before_location = files_under(table.location), table.metadata_location
        locker = sqlite3.connect(warehouse / "catalog.db", isolation_level=None)
        try:
            locker.execute("BEGIN IMMEDIATE")  # holds the write lock
            with pytest.raises(mor.CatalogUnavailableError, match="locked"):
                table.append(make_rows(range(10, 20)))
            locker.execute("ROLLBACK")
        finally:
            locker.close()
        names = {Path(f).name for f in files_under(table.location) - before_files}
        assert all(n.endswith(".metadata.json") or n.startswith("snap-") for n in names), names  # no data file left
        again = mor.load_catalog(warehouse).load_table("db.t")
        assert again.metadata_location == before_location and scan_ids(again) == list(range(10))
    finally:
        store.dispose()
