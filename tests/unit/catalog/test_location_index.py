"""The catalog remembers each table's location (mor/catalog/locations.py, issue 53 item 4), so
the check that no two tables share a folder (`Catalog.check_unshared`) reads no other table's
metadata: a few indexed lookups, whatever the catalog holds.

What is remembered follows every write of mor's (create, commit, set-location, rename, drop,
register, a multi-table transaction), in the write's own transaction; what other writers do to
the same database (pyiceberg's SqlCatalog, which never fills mor's table) is queued by triggers
and read by the next check, which records it (self-healing). A recorded location is believed
only while the table still points at the metadata file it was read from.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog as PyIcebergSqlCatalog
from pyiceberg.table.update import AssertTableUUID, SetLocationUpdate
from unit_helpers import SCHEMA, make_rows, scan_ids

import mor
from mor.api.catalog_types import sqlite_url
from mor.catalog.sql import SqlCatalogStore
from mor.catalog.sql_operations import PlannedCommit, commit_many
from mor.format.apply import apply_updates
from mor.format.metadata import with_previous_file
from mor.format.updates import SetLocation, SetProperties, TableCommit
from mor.io.fileio import FileIO, to_uri


class CountingIO(FileIO):
    """Local files, each read noted."""

    def __init__(self) -> None:
        super().__init__()
        self.reads: list[str] = []

    def read_bytes(self, location: str) -> bytes:
        self.reads.append(location)
        return super().read_bytes(location)

    def metadata_reads(self) -> list[str]:
        return [r for r in self.reads if r.endswith(".metadata.json")]


@pytest.fixture
def io() -> CountingIO:
    return CountingIO()


@pytest.fixture
def catalog(warehouse: Path, io: CountingIO) -> mor.Catalog:
    catalog = mor.load_catalog(warehouse)
    catalog.io = io
    return catalog


def rows(warehouse: Path, table: str) -> list[tuple[str, ...]]:
    with sqlite3.connect(warehouse / "catalog.db") as conn:
        return conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2, 3").fetchall()


def recorded(warehouse: Path) -> dict[str, str]:
    """table name -> the location recorded for it (current or not)."""
    return {f"{ns}.{name}": location for _, ns, name, _, _, location in rows(warehouse, "mor_table_locations")}


def pending(warehouse: Path) -> list[str]:
    return [f"{ns}.{name}" for _, ns, name, _ in rows(warehouse, "mor_table_locations_pending")]


def shared(catalog: mor.Catalog, location: str, identifier: str = "db.new") -> bool:
    try:
        catalog.check_unshared(identifier, location, None, "create")
    except mor.SharedTableError:
        return True
    return False


def pyiceberg(warehouse: Path) -> PyIcebergSqlCatalog:
    return PyIcebergSqlCatalog("default", uri=sqlite_url(warehouse / "catalog.db"), warehouse=to_uri(warehouse))


def test_the_check_reads_no_other_tables_metadata(catalog: mor.Catalog, io: CountingIO, warehouse: Path) -> None:
    tables = [catalog.create_table(f"db.t{i}", SCHEMA) for i in range(12)]
    tables[3].append(make_rows(range(3)))
    assert set(recorded(warehouse)) == {f"db.t{i}" for i in range(12)} and pending(warehouse) == []
    io.reads.clear()
    assert shared(catalog, tables[5].location)  # the same folder
    assert shared(catalog, f"{tables[3].location}/inner")  # inside one
    assert shared(catalog, f"{warehouse}/db.db")  # holding them
    assert shared(catalog, f"{warehouse}/db.db/../db.db/t7")  # another spelling of one
    assert not shared(catalog, f"{warehouse}/db.db/t1x")  # beside them: a name that only begins like one
    assert not shared(catalog, f"{warehouse}/elsewhere")
    catalog.check_unshared("db.t4", tables[4].location, None, "create")  # a table does not share with itself
    assert io.metadata_reads() == []


def test_the_check_works_with_other_tables_metadata_unreadable(catalog: mor.Catalog, warehouse: Path) -> None:
    """What the check knows comes from the catalog's database, not from the files."""
    table = catalog.create_table("db.t", SCHEMA)
    for file in (Path(table.location.removeprefix("file://")) / "metadata").glob("*.metadata.json"):
        file.unlink()
    assert shared(catalog, table.location)
    assert shared(catalog, f"{table.location}/inner")


def test_a_move_rename_drop_and_register_follow(catalog: mor.Catalog, io: CountingIO, warehouse: Path) -> None:
    table = catalog.create_table("db.t", SCHEMA, data=make_rows(range(3)))
    old = table.location
    new = f"{warehouse}/moved"
    ops = catalog.table_operations("db.t")
    base, location = ops.refresh()
    ops.commit(base, location, TableCommit(updates=[SetLocation(new)]))  # set-location
    assert recorded(warehouse) == {"db.t": new} and pending(warehouse) == []
    io.reads.clear()
    assert shared(catalog, new) and not shared(catalog, old)
    catalog.rename_table("db.t", "other.u")
    assert recorded(warehouse) == {"other.u": new} and pending(warehouse) == []
    io.reads.clear()  # (rename_table loads the renamed table)
    with pytest.raises(mor.SharedTableError, match="table other.u's location"):
        catalog.check_unshared("db.new", f"{new}/x", None, "create")
    catalog.check_unshared("other.u", new, None, "create")  # itself, under its new name
    assert io.metadata_reads() == []
    metadata_location = catalog.load_table("other.u").metadata_location
    catalog.drop_table("other.u")
    assert recorded(warehouse) == {} and not shared(catalog, new)
    catalog.register_table("db.back", metadata_location)
    assert recorded(warehouse) == {"db.back": new} and pending(warehouse) == []
    io.reads.clear()
    with pytest.raises(mor.SharedTableError, match="already table db.back's"):
        catalog.register_table("db.again", metadata_location)  # the same metadata file
    assert set(io.metadata_reads()) == {metadata_location}  # its own, to learn its location; no other
    assert scan_ids(catalog.load_table("db.back")) == [0, 1, 2]


def test_a_transaction_records_every_table_it_moves(catalog: mor.Catalog, warehouse: Path) -> None:
    a, b, c = (catalog.create_table(f"db.{n}", SCHEMA) for n in "abc")
    planned = []
    for name, table, change in (("a", a, SetLocation(f"{warehouse}/a2")), ("b", b, SetProperties({"k": "v"}))):
        new = with_previous_file(apply_updates(table.metadata, [change]), table.metadata_location, table.metadata)
        planned.append(PlannedCommit("db", name, table.metadata_location, new, table.metadata))
    planned.append(PlannedCommit("db", "c", c.metadata_location, None, c.metadata))  # unchanged, still checked
    assert commit_many(catalog.io, catalog.store, planned) is not None
    assert recorded(warehouse) == {"db.a": f"{warehouse}/a2", "db.b": b.location, "db.c": c.location}
    assert pending(warehouse) == []
    assert shared(catalog, f"{warehouse}/a2") and not shared(catalog, a.location)


def test_a_table_pyiceberg_creates_is_read_once_then_recorded(catalog: mor.Catalog, io: CountingIO, warehouse: Path) -> None:
    catalog.create_table("db.mine", SCHEMA)
    theirs = pyiceberg(warehouse).create_table("db.theirs", schema=pa.schema([("id", pa.int64())]))
    assert "db.theirs" not in recorded(warehouse) and pending(warehouse) == ["db.theirs"]
    io.reads.clear()
    assert shared(catalog, f"{theirs.location()}/inner")
    assert io.metadata_reads() == [theirs.metadata_location]  # that table's, once
    assert recorded(warehouse)["db.theirs"] == theirs.location() and pending(warehouse) == []
    io.reads.clear()
    assert shared(catalog, theirs.location()) and io.metadata_reads() == []


def test_a_location_another_writer_moved_is_read_again(catalog: mor.Catalog, io: CountingIO, warehouse: Path) -> None:
    table = catalog.create_table("db.t", SCHEMA)
    assert recorded(warehouse) == {"db.t": table.location}
    other = pyiceberg(warehouse)
    loaded = other.load_table("db.t")
    moved = f"{warehouse}/moved-by-pyiceberg"
    other.commit_table(loaded, (AssertTableUUID(uuid=loaded.metadata.table_uuid),), (SetLocationUpdate(location=moved),))
    assert recorded(warehouse) == {"db.t": table.location}  # stale: no longer what the table points at
    assert not shared(catalog, table.location)  # so not believed
    assert shared(catalog, moved)
    assert recorded(warehouse) == {"db.t": moved} and pending(warehouse) == []


def test_a_rename_and_drop_by_another_writer(catalog: mor.Catalog, warehouse: Path) -> None:
    table = catalog.create_table("db.t", SCHEMA)
    with sqlite3.connect(warehouse / "catalog.db") as conn:
        conn.execute("UPDATE iceberg_tables SET table_name = 'u' WHERE table_name = 't'")
    with pytest.raises(mor.SharedTableError, match="table db.u's location"):
        catalog.check_unshared("db.new", table.location, None, "create")
    with sqlite3.connect(warehouse / "catalog.db") as conn:
        conn.execute("DELETE FROM iceberg_tables WHERE table_name = 'u'")
    assert not shared(catalog, table.location)


def test_tables_written_before_the_index_existed_are_read_by_the_first_check(warehouse: Path, io: CountingIO) -> None:
    """A database pyiceberg made (or an older mor): every table is queued when mor opens it."""
    other = pyiceberg(warehouse)
    other.create_namespace("db")
    made = [other.create_table(f"db.t{i}", schema=pa.schema([("id", pa.int64())])) for i in range(3)]
    catalog = mor.load_catalog(warehouse)
    catalog.io = io
    assert catalog.store.locations is not None  # (opening the catalog fully: a lookup alone does not)
    assert sorted(pending(warehouse)) == ["db.t0", "db.t1", "db.t2"]
    assert shared(catalog, made[1].location())
    assert len(io.metadata_reads()) == 3 and pending(warehouse) == []
    io.reads.clear()
    assert shared(catalog, made[2].location()) and io.metadata_reads() == []


def test_without_triggers_other_writers_are_found_by_a_scan(warehouse: Path, io: CountingIO) -> None:
    catalog = mor.load_catalog(warehouse)
    catalog.create_table("db.mine", SCHEMA)
    catalog.io = io
    with sqlite3.connect(warehouse / "catalog.db") as conn:
        for name in ("mor_table_locations_insert", "mor_table_locations_update"):
            conn.execute(f"DROP TRIGGER {name}")
    index = catalog.store.locations
    assert index is not None
    index.watching = False  # as when the database refuses triggers
    theirs = pyiceberg(warehouse).create_table("db.theirs", schema=pa.schema([("id", pa.int64())]))
    assert pending(warehouse) == []  # nothing queued it
    assert shared(catalog, theirs.location())
    assert io.metadata_reads() == [theirs.metadata_location]
    io.reads.clear()
    assert shared(catalog, theirs.location()) and io.metadata_reads() == []


def test_a_pending_row_another_writer_renewed_stays(warehouse: Path) -> None:
    """A check that read a table's metadata takes its pending row off only if it still names
    the file read: a writer that moved the table meanwhile set another one."""
    catalog = mor.load_catalog(warehouse)
    table = catalog.create_table("db.t", SCHEMA)
    with sqlite3.connect(warehouse / "catalog.db") as conn:  # another writer points elsewhere
        conn.execute("UPDATE iceberg_tables SET metadata_location = metadata_location || '.x'")
    index = catalog.store.locations
    assert index is not None
    (stale,) = index.unindexed()
    with sqlite3.connect(warehouse / "catalog.db") as conn:  # and again, while the check reads
        conn.execute("UPDATE iceberg_tables SET metadata_location = metadata_location || '.y'")
    assert index.heal([(stale, table.location, [table.location.removeprefix("file://")])]) == []
    assert pending(warehouse) == ["db.t"]  # still pending, for the newer pointer
    (current,) = index.unindexed()
    assert current.metadata_location.endswith(".x.y")


def test_a_store_without_location_forms_leaves_tables_to_the_next_check(warehouse: Path, io: CountingIO) -> None:
    """A store used without the SQL catalog (which says how locations are spelled) records
    nothing; what it writes is read by the next check."""
    catalog = mor.load_catalog(warehouse)
    table = catalog.create_table("db.t", SCHEMA)
    copy = table.metadata_location.replace(".metadata.json", "-copy.metadata.json")
    Path(table.metadata_location.removeprefix("file://")).rename(copy.removeprefix("file://"))
    bare = SqlCatalogStore(sqlite_url(warehouse / "catalog.db"))
    assert bare.swap("db", "t", table.metadata_location, copy)
    assert pending(warehouse) == ["db.t"]
    catalog.io = io
    assert shared(catalog, table.location)
    assert io.metadata_reads() == [copy] and pending(warehouse) == []


def test_a_location_too_long_to_record_is_read_by_every_check(catalog: mor.Catalog, io: CountingIO, warehouse: Path) -> None:
    long = warehouse / "/".join("x" * 250 for _ in range(5))  # over the columns' 1,000 characters
    table = catalog.create_table("db.long", SCHEMA, location=str(long))
    assert "db.long" not in recorded(warehouse) and pending(warehouse) == ["db.long"]
    for _ in range(2):
        io.reads.clear()
        assert shared(catalog, f"{long}/inner") and not shared(catalog, f"{warehouse}/elsewhere")
        assert set(io.metadata_reads()) == {table.metadata_location}
    assert pending(warehouse) == ["db.long"]
