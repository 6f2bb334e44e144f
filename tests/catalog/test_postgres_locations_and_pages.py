"""The location index (mor/catalog/locations.py) and paged listings (mor/catalog/listings.py)
on PostgreSQL: its trigger queues what pyiceberg writes to the same database, the check reads no
other table's metadata once the index is filled, and pages come in byte order whatever the
database's collation."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog
from sqlalchemy import text
from unit_helpers import SCHEMA

import mor
from mor.io.fileio import FileIO, to_uri

pytestmark = pytest.mark.postgres


class CountingIO(FileIO):
    def __init__(self) -> None:
        super().__init__()
        self.reads: list[str] = []

    def read_bytes(self, location: str) -> bytes:
        self.reads.append(location)
        return super().read_bytes(location)


@pytest.fixture
def pg_catalog(warehouse: Path, pg_uri: str) -> Iterator[mor.Catalog]:
    catalog = mor.load_catalog(warehouse, uri=pg_uri)
    yield catalog
    catalog.store.dispose()


def shared(catalog: mor.Catalog, location: str) -> bool:
    try:
        catalog.check_unshared("db.new", location, None, "create")
    except mor.SharedTableError:
        return True
    return False


def pending(catalog: mor.Catalog) -> list[str]:
    with catalog.store.engine.connect() as conn:
        rows = conn.execute(text("SELECT table_namespace, table_name FROM mor_table_locations_pending ORDER BY 1, 2")).all()
    return [f"{ns}.{name}" for ns, name in rows]


def test_the_index_on_postgresql(pg_catalog: mor.Catalog, warehouse: Path, pg_uri: str) -> None:
    index = pg_catalog.store.locations
    assert index is not None and index.watching  # the trigger is there
    tables = [pg_catalog.create_table(f"db.t{i}", SCHEMA) for i in range(5)]
    tables[0].append(pa.table({"id": [1], "category": ["a"], "name": ["x"], "value": [1.0]}))
    index.unindexed()  # (takes off what earlier tests left: their tables were truncated away)
    assert pending(pg_catalog) == []
    io = CountingIO()
    pg_catalog.io = io
    assert shared(pg_catalog, tables[2].location) and shared(pg_catalog, f"{tables[3].location}/inner")
    assert not shared(pg_catalog, f"{warehouse}/db.db/t1x")
    assert [r for r in io.reads if r.endswith(".metadata.json")] == []
    pg_catalog.rename_table("db.t4", "db.u4")
    pg_catalog.drop_table("db.t3")
    assert not shared(pg_catalog, tables[3].location)
    with pytest.raises(mor.SharedTableError, match="table db.u4's"):
        pg_catalog.check_unshared("db.new", tables[4].location, None, "create")
    # pyiceberg writes the same database: its trigger queues the table, the next check reads it once
    other = SqlCatalog("default", uri=pg_uri, warehouse=to_uri(warehouse))
    try:
        theirs = other.create_table("db.theirs", schema=pa.schema([("id", pa.int64())]))
    finally:
        other.engine.dispose()
    assert pending(pg_catalog) == ["db.theirs"]
    io.reads.clear()
    assert shared(pg_catalog, f"{theirs.location()}/inner")
    assert [r for r in io.reads if r.endswith(".metadata.json")] == [theirs.metadata_location]
    assert pending(pg_catalog) == []


def test_pages_on_postgresql_are_in_byte_order(pg_catalog: mor.Catalog) -> None:
    names = ["B", "a", "a-b", "a_b", "ab", "Z", "é"]
    for name in names:
        pg_catalog.create_table(f"db.{name}", SCHEMA)
    store = pg_catalog.store
    listed, after = [], None
    while True:
        page = store.table_names("db", after, 2)
        listed += page
        if len(page) < 2:
            break
        after = page[-1]
    assert listed == sorted(names)  # Python's order is the bytes' (code points)
    for namespace in ["n-1", "n.x", "n", "o", "n.x.y"]:
        pg_catalog.create_namespace(namespace)
    assert list(store.namespace_names("n", True, "o")) == ["n", "n-1", "n.x", "n.x.y"]
