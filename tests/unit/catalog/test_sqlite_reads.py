"""A SQLite catalog is read with sqlite3 until something needs SQLAlchemy
(mor/catalog/sqlite_reads.py): the answers and errors must be the full store's."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

import mor
from mor.catalog.sql import SqlCatalogStore
from mor.catalog.sqlite_reads import SqliteCatalogReader

ROWS = pa.table({"id": pa.array([1, 2, 3], pa.int64())})


def made(warehouse: Path) -> mor.Table:
    table = mor.load_catalog(warehouse).create_table("db.t", schema=ROWS.schema)
    table.append(ROWS)
    return table


def test_an_existing_catalog_is_opened_for_reading(warehouse: Path) -> None:
    made(warehouse)
    catalog = mor.load_catalog(warehouse)
    assert isinstance(catalog.store, SqliteCatalogReader) and "full" not in vars(catalog.store)
    assert catalog.load_table("db.t").scan().to_arrow().column("id").to_pylist() == [1, 2, 3]
    assert "full" not in vars(catalog.store)  # a read needed no SQLAlchemy


def test_a_new_catalog_gets_the_full_store(tmp_path: Path, warehouse: Path) -> None:
    assert isinstance(mor.load_catalog(tmp_path / "new", create=True).store, SqlCatalogStore)
    assert isinstance(mor.load_catalog(warehouse).store, SqlCatalogStore)  # no catalog.db yet: it is made
    assert (warehouse / "catalog.db").is_file()


def test_writes_and_listings_go_through_the_full_store(warehouse: Path) -> None:
    made(warehouse)
    catalog = mor.load_catalog(warehouse)
    table = catalog.load_table("db.t")
    table.append(ROWS)
    assert "full" in vars(catalog.store)
    assert catalog.list_tables("db") == ["db.t"] and catalog.list_namespaces() == ["db"]
    assert catalog.load_table("db.t").scan().count() == 6


def test_a_missing_table_is_the_stores_error(warehouse: Path) -> None:
    made(warehouse)
    catalog = mor.load_catalog(warehouse)
    with pytest.raises(mor.NoSuchTableError, match="db.nope"):
        catalog.load_table("db.nope")
    assert catalog.table_exists("db.t") and not catalog.table_exists("db.nope")


@pytest.mark.subprocess
def test_each_lookup_sees_the_latest_pointer(warehouse: Path) -> None:
    """Another process's commit, rename and drop are seen by the next lookup."""
    made(warehouse)
    reader = mor.load_catalog(warehouse)
    before = reader.load_table("db.t").metadata_location
    script = (
        "import sys, mor, pyarrow as pa\n"
        "c = mor.load_catalog(sys.argv[1])\n"
        "c.load_table('db.t').append(pa.table({'id': pa.array([4], pa.int64())}))\n"
    )
    subprocess.run([sys.executable, "-c", script, str(warehouse)], check=True, timeout=120)
    after = reader.load_table("db.t")
    assert after.metadata_location != before and after.scan().count() == 4
    mor.load_catalog(warehouse).rename_table("db.t", "db.u")
    with pytest.raises(mor.NoSuchTableError):
        reader.load_table("db.t")
    assert reader.load_table("db.u").scan().count() == 4


def test_other_catalog_names_and_views_are_not_seen(warehouse: Path) -> None:
    """Rows of another catalog name in the same file, and views (iceberg_type VIEW), are not
    tables of this catalog."""
    made(warehouse)
    location = mor.load_catalog(warehouse).load_table("db.t").metadata_location
    with sqlite3.connect(warehouse / "catalog.db") as conn:
        conn.execute(
            "INSERT INTO iceberg_tables VALUES ('other', 'db', 'x', ?, NULL, 'TABLE'), ('default', 'db', 'v', ?, NULL, 'VIEW')",
            (location, location),
        )
    catalog = mor.load_catalog(warehouse)
    for missing in ("db.x", "db.v"):
        with pytest.raises(mor.NoSuchTableError):
            catalog.load_table(missing)
    assert mor.load_catalog(warehouse, name="other").load_table("db.x").scan().count() == 3


def test_a_file_that_is_not_a_catalog_is_refused_at_load(warehouse: Path) -> None:
    (warehouse / "catalog.db").write_bytes(b"garbage" * 100)
    with pytest.raises(mor.CorruptMetadataError, match="not a database"):
        mor.load_catalog(warehouse)


def test_pyiceberg_reads_a_catalog_opened_for_reading(warehouse: Path) -> None:
    from pyiceberg.catalog.sql import SqlCatalog

    made(warehouse)
    mor.load_catalog(warehouse).load_table("db.t").append(ROWS)  # committed through the reader's full store
    theirs = SqlCatalog("default", uri=f"sqlite:///{warehouse}/catalog.db", warehouse=str(warehouse))
    assert sorted(theirs.load_table("db.t").scan().to_arrow().column("id").to_pylist()) == [1, 1, 2, 2, 3, 3]
