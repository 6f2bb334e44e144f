"""Tables keep to their own folders and off the catalog's database (issue 52, items 3 and 4).

Two tables may not share a folder, but distinct names have distinct folders: the namespace
level "a.b" (spelled `a%2Eb`), the levels "a", "b" and the level "a%2Eb" (spelled `a%252Eb`) are
three folders to every file system and object store, which do not decode percent escapes. So
the sharing check and maintenance's view of other tables compare locations as storage reads them
(`..`, `//`, `file:` spellings, links); a file maintenance deletes must still lie under its own
table decoded and as written. And no table, through
the Python API either, may sit on the catalog's SQLite database or SQLite's files beside it.
"""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

import pytest
from unit_helpers import SCHEMA, local, make_rows, scan_ids

import mor
from mor.errors import InvalidArgumentError
from mor.io.fileio import to_uri
from mor.maintenance.ownership import DATABASE_SUFFIXES, keys, location_forms, overlaps, place, same_file, touched


def test_percent_spellings_are_other_folders() -> None:
    for a, b in [
        ("file:///wh/a%2Eb.db/t", "file:///wh/a.b.db/t"),
        ("file:///wh/a%252Eb.db/t", "file:///wh/a%2Eb.db/t"),
        ("/wh/ns.db/t%2Ex", "/wh/ns.db/t.x"),
        ("s3://bucket/a%2Eb.db/t", "s3://bucket/a.b.db/t"),
        ("file:///wh/a%2Fb", "file:///wh/a/b"),  # not one inside the other either
    ]:
        assert not overlaps(a, b) and not overlaps(b, a)
        assert not same_file(f"{a}/metadata/1.metadata.json", f"{b}/metadata/1.metadata.json")
    # what decides deletion is unchanged: a file is matched decoded and as written
    assert place("/wh/a.b.db/t") in location_forms("file:///wh/a%2Eb.db/t")
    assert "/wh/a.b.db/t/f" in keys("/wh/a%2Eb.db/t/f")


def test_spellings_storage_reads_as_one_folder_still_overlap(tmp_path: Path) -> None:
    (tmp_path / "real" / "t").mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "real")
    t = str(tmp_path / "real" / "t")
    for other in (
        f"file://{t}",
        f"file:{t}",
        f"file://localhost{t}",
        f"{tmp_path}//real/./t/",
        f"{tmp_path}/real/x/../t",
        f"{tmp_path}/link/t",  # through a symbolic link
        f"{tmp_path}/real",  # holds it
        f"{t}/data",  # lies in it
    ):
        assert overlaps(t, other) and overlaps(other, t), other
    assert overlaps("s3a://bucket/wh/t", "s3://bucket//wh/t/") and not overlaps("s3://bucket/wh/t", "s3://other/wh/t")
    assert same_file(f"{t}/m.json", f"file://{tmp_path}/link/t/m.json")


def test_touched_names_the_database_file_a_location_touches() -> None:
    database = "/wh/catalog.db"
    files = [database, "/wh/catalog.db-journal"]
    assert touched("file:///wh/catalog.db", files) == database
    assert touched("/wh/catalog.db/t", files) == database  # through it
    assert touched("/wh", files) == database and touched("/wh", files, holding=False) is None  # holds it
    assert touched("/wh/catalog%2Edb", files) == database  # a decoding reader: refused too
    assert touched("/wh/catalog.db-journal", files) == "/wh/catalog.db-journal"
    assert touched("/wh/catalog.db-wal", files) is None and touched("/wh/catalog.dbx", files) is None
    assert touched("/wh/catalog.db", []) is None


@pytest.mark.parametrize("suffix", DATABASE_SUFFIXES)
def test_create_table_refuses_the_catalog_database(catalog: mor.Catalog, warehouse: Path, suffix: str) -> None:
    before = (warehouse / "catalog.db").read_bytes()
    for location in (str(warehouse / f"catalog.db{suffix}"), to_uri(warehouse / f"catalog.db{suffix}") + "/t"):
        with pytest.raises(InvalidArgumentError, match="catalog's database file"):
            catalog.create_table("db.t", SCHEMA, location=location)
        with pytest.raises(InvalidArgumentError, match="catalog's database file"):
            catalog.create_table("db.t", data=make_rows(range(3)), location=location)
    assert sorted(p.name for p in warehouse.iterdir()) == ["catalog.db"]
    assert (warehouse / "catalog.db").read_bytes() == before
    catalog.create_table("db.u", SCHEMA).append(make_rows(range(3)))  # the catalog goes on working
    # a folder holding the database: the user's own table may (maintenance never deletes the
    # database), a server's client may not (check_unshared judges what they ask for)
    with pytest.raises(InvalidArgumentError, match="catalog's database file"):
        catalog.check_unshared("db.root", to_uri(warehouse), None, "create")
    assert scan_ids(mor.load_catalog(warehouse).load_table("db.u")) == [0, 1, 2]


def test_the_default_folder_of_namespace_catalog_is_refused_not_broken(catalog: mor.Catalog, warehouse: Path) -> None:
    """`<warehouse>/catalog.db/t` would be a path through the database file."""
    with pytest.raises(InvalidArgumentError, match="catalog's database file"):
        catalog.create_table("catalog.t", SCHEMA)
    table = catalog.create_table("catalog.t", SCHEMA, location=str(warehouse / "elsewhere"))
    assert table.location == to_uri(warehouse / "elsewhere")


def test_register_refuses_metadata_naming_the_database(catalog: mor.Catalog, warehouse: Path, tmp_path: Path) -> None:
    table = catalog.create_table("db.t", SCHEMA)
    moved = tmp_path / "moved.metadata.json"
    text = Path(local(table.metadata_location)).read_text()
    moved.write_text(text.replace(table.location, to_uri(warehouse / "catalog.db-journal")))
    for allow_shared in (False, True):
        with pytest.raises(InvalidArgumentError, match="catalog's database file"):
            catalog.register_table("db.r", str(moved), allow_shared=allow_shared)
    assert not catalog.table_exists("db.r")


def test_names_with_dots_and_percents_may_each_hold_a_table(catalog: mor.Catalog, warehouse: Path) -> None:
    """The server's namespaces ["a.b"], ["a", "b"] and ["a%2Eb"] are mor's "a%2Eb", "a.b" and
    "a%252Eb": three folders. Registering (or creating through the server) one beside another
    is not sharing."""
    names = ["a%2Eb.t", "a.b.t", "a%252Eb.t", "ns.t%2Ex", "ns.t.x"]
    for i, name in enumerate(names):
        table = catalog.create_table(name, SCHEMA)
        table.append(make_rows([i]))
        catalog.check_unshared(name, table.location, table.metadata_location, "create")  # itself excluded
    locations = {local(catalog.load_table(n).location) for n in names}
    assert len(locations) == len(names)
    # registered again after a drop: no other table's folder or metadata file is judged the same
    for i, name in enumerate(names):
        table = catalog.load_table(name)
        catalog.drop_table(name)
        catalog.register_table(name, table.metadata_location)
        assert scan_ids(catalog.load_table(name)) == [i]


def test_a_table_in_another_spelling_of_a_folder_is_still_shared(catalog: mor.Catalog, warehouse: Path) -> None:
    table = catalog.create_table("db.t", SCHEMA)
    folder = local(table.location)
    shutil.copytree(folder, warehouse / "copy")
    (warehouse / "link").symlink_to(warehouse / "db.db")
    for location in (f"file://{folder}", f"{warehouse}//db.db/./t", f"{warehouse}/x/../db.db/t", f"{warehouse}/link/t"):
        with pytest.raises(mor.SharedTableError, match="same folder"):
            catalog.check_unshared("db.u", location, None, "create")
    with pytest.raises(mor.SharedTableError, match="already table db.t's"):
        catalog.check_unshared(
            "db.u", f"{warehouse}/copy", f"{warehouse}/link/t/{Path(local(table.metadata_location)).relative_to(folder)}"
        )
    catalog.check_unshared("db.u", f"{warehouse}/copy", None, "create")  # a copy is a folder of its own


def test_tables_in_percent_spellings_of_one_name_are_each_maintained_alone(catalog: mor.Catalog, warehouse: Path) -> None:
    """`a.b` and `a%2Eb` are two folders: neither refuses expiry or orphan removal for the
    other, and each deletes only its own files."""
    tables = {}
    for i, name in enumerate(["a.b.t", "a%2Eb.t"]):
        table = catalog.create_table(name, SCHEMA)
        for k in range(3):
            table.append(make_rows([10 * i + k]))
        tables[name] = table
        (Path(local(table.location)) / "data" / "stray.parquet").write_bytes(b"orphan")
    for name in tables:
        table = catalog.load_table(name)
        other = next(t for n, t in tables.items() if n != name)
        others_files = sorted(p for p in Path(local(other.location)).rglob("*") if p.is_file())
        table.expire_snapshots(retain_last=1)
        result = table.remove_orphan_files(older_than=dt.timedelta(0))
        assert [Path(p).name for p in result] == ["stray.parquet"], result
        assert all(p.exists() for p in others_files)  # nothing of the other table went
    assert scan_ids(catalog.load_table("a.b.t")) == [0, 1, 2] and scan_ids(catalog.load_table("a%2Eb.t")) == [10, 11, 12]
