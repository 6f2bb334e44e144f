"""Maintenance owns only its table (issue 23, part 1): orphan removal, expiry and a purging drop
delete only files under the table's own location, compared in one normalised form, never through
a symbolic link, never the catalog database, never another table's files; tables that share a
location refuse; a metadata file or location registered twice needs `allow_shared=True`.
Victims live in pytest's tmp folders only."""

from __future__ import annotations

import datetime as dt
import json
import os
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from unit_helpers import SCHEMA, files_under, local, make_rows, reachable_files, scan_ids

import mor
from mor.io.fileio import to_uri

NOW = dt.timedelta(0)
EXPIRE_NOW = {"older_than": NOW, "retain_last": 1, "allow_short_retention": True}


def future() -> dt.datetime:
    """A threshold that makes every file old enough to be an orphan."""
    return dt.datetime.now(dt.UTC) + dt.timedelta(minutes=1)


def rewrite_metadata(path: str, change: Callable[[dict], None]) -> None:
    """Edit a metadata JSON file in place, as another writer (or an adversary) could have written it."""
    with open(local(path)) as f:
        document = json.load(f)
    change(document)
    with open(local(path), "w") as f:
        json.dump(document, f)


def attempt(call: Callable[[], object]) -> Exception | None:
    """Run a call that must refuse, returning its error: the files are checked before the error
    is, so the test shows what an unguarded call would have deleted."""
    try:
        call()
    except mor.MorError as e:
        return e
    return None


def copy_with_location(table: mor.Table, location: Path) -> str:
    """A metadata file of a table at `location` whose snapshots are `table`'s: it names `table`'s
    manifest lists, manifests and data files, all outside its own folder."""
    with open(local(table.metadata_location)) as f:
        document = json.load(f)
    document["location"] = to_uri(location)
    document["metadata-log"] = []
    target = location / "metadata" / f"00001-{uuid.uuid4()}.metadata.json"
    target.parent.mkdir(parents=True)
    target.write_text(json.dumps(document))
    return to_uri(target)


# -- the findings ------------------------------------------------------------------------------


def test_a_table_at_the_warehouse_root_refuses_orphan_removal(catalog: mor.Catalog, warehouse: Path) -> None:
    """Finding: remove_orphan_files on a table located at the warehouse root deleted another
    table's files and catalog.db. Now the table holding another refuses, deleting nothing."""
    a = catalog.create_table("db.a", SCHEMA)
    a.append(make_rows(range(10)))
    root = catalog.create_table("db.root", SCHEMA, location=str(warehouse))
    root.append(make_rows(range(3)))
    before = files_under(str(warehouse))
    refused = attempt(lambda: root.remove_orphan_files(older_than=future()))
    assert files_under(str(warehouse)) == before
    assert isinstance(refused, mor.MaintenanceRefusedError) and "db.a" in str(refused)
    assert files_under(str(warehouse)) == before
    assert scan_ids(mor.load_catalog(warehouse).load_table("db.a")) == list(range(10))


def test_nested_tables_expire_their_own_files_and_the_inner_one_removes_its_orphans(catalog: mor.Catalog, warehouse: Path) -> None:
    """The outer table's expiry deletes its own expired files and nothing under the inner
    table's folder; the inner table's orphan removal deletes only its own orphans."""
    a = catalog.create_table("db.a", SCHEMA)
    a.append(make_rows(range(10)))
    a.delete("id < 5", mode="copy-on-write")  # a data file only the older snapshot reads
    root = catalog.create_table("db.root", SCHEMA, location=str(warehouse))
    root.append(make_rows(range(3)))
    root.delete("id = 0", mode="copy-on-write")
    a_files = files_under(a.location)
    expired = root.expire_snapshots(**EXPIRE_NOW)
    assert expired.deleted_data_files == 1
    assert files_under(a.location) == a_files
    assert all(not p.startswith(a.location.removeprefix("file://")) for p in expired.deleted_paths)
    orphan = Path(a.location.removeprefix("file://")) / "data" / "orphan.parquet"
    orphan.write_bytes(b"left by a dead writer")
    root_files = files_under(str(warehouse)) - files_under(a.location)
    removed = a.remove_orphan_files(older_than=future())
    assert list(removed) == [str(orphan)]
    assert files_under(str(warehouse)) - files_under(a.location) == root_files
    assert scan_ids(mor.load_catalog(warehouse).load_table("db.a")) == list(range(5, 10))
    assert scan_ids(mor.load_catalog(warehouse).load_table("db.root")) == [1, 2]


def test_the_catalog_database_is_never_an_orphan(catalog: mor.Catalog, warehouse: Path) -> None:
    root = catalog.create_table("db.root", SCHEMA, location=str(warehouse))
    root.append(make_rows(range(3)))
    journal = warehouse / "catalog.db-journal"  # as SQLite leaves one beside its database
    journal.write_bytes(b"")
    result = root.remove_orphan_files(older_than=future())
    assert (warehouse / "catalog.db").exists() and journal.exists()
    assert {str(warehouse / "catalog.db"), str(journal)} <= set(result.skipped_paths)
    assert scan_ids(mor.load_catalog(warehouse).load_table("db.root")) == [0, 1, 2]


def test_orphan_removal_never_follows_a_symbolic_link(make_table: Callable[..., mor.Table], tmp_path: Path) -> None:
    """Finding: it followed a directory symlink inside the table folder and deleted the files
    outside. Links are neither entered nor deleted, and their targets stay."""
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "precious.parquet").write_bytes(b"not the table's")
    (victim / "single.parquet").write_bytes(b"not the table's either")
    table = make_table(range(5))
    data = Path(local(table.location)) / "data"
    os.symlink(victim, data / "linked-folder")
    os.symlink(victim / "single.parquet", data / "linked-file.parquet")
    result = table.remove_orphan_files(older_than=future())
    assert result == []
    assert (victim / "precious.parquet").exists() and (victim / "single.parquet").exists()
    assert os.path.islink(data / "linked-folder") and os.path.islink(data / "linked-file.parquet")
    assert {str(data / "linked-folder"), str(data / "linked-file.parquet")} <= set(result.skipped_paths)
    assert scan_ids(table) == list(range(5))


@pytest.mark.parametrize("spelling", ["{parent}//{name}", "{parent}/./{name}", "{parent}/{name}/../{name}", "file:{parent}/{name}/"])
def test_a_non_canonical_location_keeps_every_live_file(catalog: mor.Catalog, spelling: str) -> None:
    """Finding: a location spelled with `//`, `/./` or `x/../` in the metadata made every live
    file, the current metadata file included, look orphaned, and they were deleted."""
    table = catalog.create_table("db.t", SCHEMA)
    table.append(make_rows(range(10)))
    table.delete("id < 3")
    folder = local(table.location)
    parent, name = os.path.split(folder)
    rewrite_metadata(table.metadata_location, lambda d: d.update(location=spelling.format(parent=parent, name=name)))
    before = files_under(folder)
    assert catalog.load_table("db.t").remove_orphan_files(older_than=future()) == []
    assert files_under(folder) == before
    assert scan_ids(catalog.load_table("db.t")) == list(range(3, 10))


def test_a_percent_encoded_spelling_of_a_live_file_keeps_it(catalog: mor.Catalog, tmp_path: Path) -> None:
    table = catalog.create_table("db.t", SCHEMA, location=str(tmp_path / "my table"))
    table.append(make_rows(range(4)))
    table.append(make_rows(range(4, 8)))

    def encode(document: dict) -> None:
        for entry in document["metadata-log"]:
            entry["metadata-file"] = entry["metadata-file"].replace("my table", "my%20table")

    rewrite_metadata(table.metadata_location, encode)
    before = files_under(table.location)
    assert catalog.load_table("db.t").remove_orphan_files(older_than=future()) == []
    assert files_under(table.location) == before


@pytest.mark.parametrize("prefix", ["file://otherhost", "s3://another-bucket"])
def test_a_prefix_mismatch_is_an_error(catalog: mor.Catalog, prefix: str) -> None:
    """As Iceberg's DeleteOrphanFiles (PrefixMismatchMode.ERROR): a live file the metadata spells
    with another scheme or authority than the listing found it under raises, deleting nothing."""
    table = catalog.create_table("db.t", SCHEMA)
    table.append(make_rows(range(4)))
    table.append(make_rows(range(4, 8)))

    def respell(document: dict) -> None:
        for entry in document["metadata-log"]:
            entry["metadata-file"] = prefix + local(entry["metadata-file"])

    rewrite_metadata(table.metadata_location, respell)
    before = files_under(table.location)
    refused = attempt(lambda: catalog.load_table("db.t").remove_orphan_files(older_than=future()))
    assert files_under(table.location) == before
    assert isinstance(refused, mor.MaintenanceRefusedError) and "prefix mismatch" in str(refused)


def test_register_refuses_a_metadata_file_or_location_another_table_has(catalog: mor.Catalog) -> None:
    """Finding: register_table of one metadata file under a second name, then expiry on the
    second, deleted the first table's files."""
    a = catalog.create_table("db.a", SCHEMA)
    a.append(make_rows(range(5)))
    first_metadata = a.metadata_location
    a.append(make_rows(range(5, 10)))
    before = files_under(a.location)

    def register_then_expire() -> None:
        b = catalog.register_table("db.b", a.metadata_location)
        b.truncate()
        b.expire_snapshots(**EXPIRE_NOW)

    refused = attempt(register_then_expire)
    assert before <= files_under(a.location) and scan_ids(catalog.load_table("db.a")) == list(range(10))
    assert isinstance(refused, mor.SharedTableError) and "allow_shared=True" in str(refused)
    for spelled in (a.metadata_location, local(a.metadata_location), "file:" + local(a.metadata_location)):
        with pytest.raises(mor.SharedTableError, match="db.a"):
            catalog.register_table("db.b", spelled)
    with pytest.raises(mor.SharedTableError, match="location"):  # an older metadata file: the same folder
        catalog.register_table("db.b", first_metadata)
    assert not catalog.table_exists("db.b")
    assert isinstance(mor.SharedTableError("x"), mor.TableAlreadyExistsError)


def test_tables_registered_shared_refuse_maintenance_that_deletes(catalog: mor.Catalog) -> None:
    a = catalog.create_table("db.a", SCHEMA)
    a.append(make_rows(range(5)))
    a.delete("id = 0")
    b = catalog.register_table("db.b", a.metadata_location, allow_shared=True)
    b.truncate()  # b's history now has a snapshot only a reads
    before = files_under(a.location)
    for table in (a, b):
        with pytest.raises(mor.MaintenanceRefusedError, match="db.a" if table is b else "db.b"):
            table.expire_snapshots(**EXPIRE_NOW)
        with pytest.raises(mor.MaintenanceRefusedError):
            table.expire_snapshots(**EXPIRE_NOW, dry_run=True)
        with pytest.raises(mor.MaintenanceRefusedError):
            table.remove_orphan_files(older_than=future())
    assert files_under(a.location) == before
    assert scan_ids(catalog.load_table("db.a")) == [1, 2, 3, 4] and scan_ids(catalog.load_table("db.b")) == []


def test_expiry_keeps_a_file_outside_the_table_location(catalog: mor.Catalog, tmp_path: Path) -> None:
    """Finding: expiry deleted any path a manifest names, even outside the table. Such a file is
    left and reported in `skipped_paths`."""
    t = catalog.create_table("db.t", SCHEMA)
    t.append(make_rows(range(10)))
    outside = {p for p in reachable_files(t) if not p.endswith(".metadata.json")}  # manifest list, manifest, data file
    registered = copy_with_location(t, tmp_path / "u")
    catalog.drop_table("db.t")  # its files stay, now no table's
    u = catalog.register_table("db.u", registered)
    u.truncate()
    result = u.expire_snapshots(**EXPIRE_NOW)
    assert result.expired_snapshots == 1
    assert result.deleted_data_files == 0 and result.deleted_manifest_lists == 0 and result.deleted_manifests == 0
    assert {local(p) for p in result.skipped_paths} == outside
    assert all(os.path.exists(p) for p in outside)


def test_maintenance_keeps_files_another_table_references(catalog: mor.Catalog, tmp_path: Path) -> None:
    """A file under this table's location that another table of the catalog reads stays, through
    expiry, orphan removal and a purging drop."""
    u = catalog.create_table("db.u", SCHEMA)
    u.append(make_rows(range(10)))
    shared = {p for p in reachable_files(u) if not p.endswith(".metadata.json")}
    catalog.register_table("db.t", copy_with_location(u, tmp_path / "t"))  # reads u's files
    u.truncate()
    result = u.expire_snapshots(**EXPIRE_NOW)
    assert result.deleted_data_files == 0 and {local(p) for p in result.skipped_paths} == shared
    orphans = u.remove_orphan_files(older_than=future())
    assert list(orphans) == [] and orphans.skipped_paths and set(orphans.skipped_paths) <= shared  # u's DELETED entry names the data file
    purged = catalog.drop_table("db.u", purge=True)
    assert purged is not None and not {local(p) for p in purged.deleted_paths} & shared
    assert all(os.path.exists(p) for p in shared)
    assert scan_ids(catalog.load_table("db.t")) == list(range(10))


# -- drop_table(purge=True) ----------------------------------------------------------------------


def test_drop_with_purge_deletes_exactly_the_tables_own_files(catalog: mor.Catalog, tmp_path: Path) -> None:
    a = catalog.create_table("db.a", SCHEMA, partition_by=["category"])
    a.append(make_rows(range(20)))
    a.delete("id < 3")
    a.delete_rows(make_rows([10]).select(["id"]))
    a.append(make_rows(range(20, 30)))
    b = catalog.create_table("db.b", SCHEMA)
    b.append(make_rows(range(5)))
    stray = Path(local(a.location)) / "data" / "stray.parquet"  # named by no metadata: an orphan, not purged
    stray.write_bytes(b"")
    own = reachable_files(a)
    b_files = files_under(b.location)
    result = catalog.drop_table("db.a", purge=True)
    assert result is not None and {local(p) for p in result.deleted_paths} == own and result.skipped_paths == ()
    assert files_under(a.location) == {str(stray)}
    assert files_under(b.location) == b_files and scan_ids(catalog.load_table("db.b")) == list(range(5))
    assert not catalog.table_exists("db.a") and (Path(local(catalog.warehouse)) / "catalog.db").exists()


def test_drop_without_purge_keeps_every_file(catalog: mor.Catalog) -> None:
    a = catalog.create_table("db.a", SCHEMA)
    a.append(make_rows(range(5)))
    before = files_under(a.location)
    assert catalog.drop_table("db.a") is None
    assert files_under(a.location) == before and not catalog.table_exists("db.a")


def test_purge_of_a_table_sharing_its_files_deletes_none_of_them(catalog: mor.Catalog) -> None:
    a = catalog.create_table("db.a", SCHEMA)
    a.append(make_rows(range(5)))
    catalog.register_table("db.b", a.metadata_location, allow_shared=True)
    before = files_under(a.location)
    result = catalog.drop_table("db.a", purge=True)
    assert result is not None and result.deleted_paths == ()
    assert files_under(a.location) == before and scan_ids(catalog.load_table("db.b")) == list(range(5))


def test_purge_reads_the_table_before_dropping_it(catalog: mor.Catalog) -> None:
    """Metadata that cannot be read drops nothing: the files could not be told apart."""
    a = catalog.create_table("db.a", SCHEMA)
    a.append(make_rows(range(5)))
    os.remove(local(a.current_snapshot().manifest_list))  # type: ignore[union-attr]
    with pytest.raises(mor.CorruptMetadataError):
        catalog.drop_table("db.a", purge=True)
    assert catalog.table_exists("db.a")


def test_expiry_never_deletes_through_a_symbolic_link(make_table: Callable[..., mor.Table], tmp_path: Path) -> None:
    """The table's data folder is a link to a folder elsewhere: the files reached through it
    are not deleted, though an expired manifest names them."""
    table = make_table(range(5))
    data = Path(local(table.location)) / "data"
    elsewhere = tmp_path / "elsewhere"
    data.rename(elsewhere)
    os.symlink(elsewhere, data)
    victims = set(files_under(str(elsewhere)))
    table.truncate()
    result = table.expire_snapshots(**EXPIRE_NOW)
    assert result.expired_snapshots == 1 and result.deleted_data_files == 0
    assert {local(p) for p in result.skipped_paths} == {str(data / os.path.relpath(v, elsewhere)) for v in victims}
    assert all(os.path.exists(v) for v in victims)


def test_another_table_that_cannot_be_read_stops_maintenance(catalog: mor.Catalog) -> None:
    """Its files could not be told from ours: nothing is deleted until it is repaired or dropped."""
    a = catalog.create_table("db.a", SCHEMA)
    a.append(make_rows(range(5)))
    b = catalog.create_table("db.b", SCHEMA)
    os.remove(local(b.metadata_location))
    before = files_under(a.location)
    with pytest.raises(mor.MaintenanceRefusedError, match="db.b"):
        a.remove_orphan_files(older_than=future())
    assert files_under(a.location) == before
    catalog.drop_table("db.b")
    assert list(a.remove_orphan_files(older_than=future())) == []
