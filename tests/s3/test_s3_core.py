"""The core of the DML and read suite on object storage: every table file an s3:// object on
moto's S3 server (tests/servers/s3.py), the catalog a SQLite file or a PostgreSQL server
(tests/servers/postgres.py). Each test of the core runs on S3 + SQLite, S3 + PostgreSQL and
local files + SQLite with the same steps and must give the same rows."""

from __future__ import annotations

import datetime as dt
import pickle
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import mor
from mor.io.fileio import FileIO, s3_options
from mor.maintenance.orphans import reachable_files

SCHEMA = pa.schema([("id", pa.int64()), ("cat", pa.string()), ("n", pa.int64())])


def rows(ids) -> pa.Table:
    ids = list(ids)
    return pa.table({"id": ids, "cat": [("a", "b", "c")[i % 3] for i in ids], "n": [i * 10 for i in ids]}, schema=SCHEMA)


@pytest.fixture(params=["s3", pytest.param("s3-postgres", marks=pytest.mark.postgres), "local"])
def catalog(request, tmp_path: Path):
    if request.param == "local":
        return mor.load_catalog(tmp_path / "warehouse", create=True)
    if request.param == "s3-postgres":
        server, s3 = request.getfixturevalue("postgres_server"), request.getfixturevalue("s3_server")
        uri = server.uri(server.create_database())
        catalog = mor.load_catalog(s3.fresh_prefix(), uri=uri, properties=s3.properties)
        request.addfinalizer(getattr(catalog.store, "dispose", lambda: None))  # its pooled connections
        return catalog
    return request.getfixturevalue("s3_catalog")


def sorted_rows(table: mor.Table, **scan) -> list[dict]:
    return sorted(table.scan(**scan).to_arrow().to_pylist(), key=lambda r: r["id"])


def expect(ids, changes=None) -> list[dict]:
    out = sorted(rows(ids).to_pylist(), key=lambda r: r["id"])
    for r in out:
        r.update((changes or {}).get(r["id"], {}))
    return out


def assert_files_where_expected(catalog, table: mor.Table) -> None:
    """Every file the table references (metadata, manifest lists, manifests, data, deletes) is
    in the warehouse: s3:// objects for an S3 warehouse."""
    files = reachable_files(table.io, table.metadata, table.metadata_location)
    assert files
    if catalog.warehouse.startswith("s3://"):
        assert all(f.startswith(catalog.warehouse + "/") for f in files), sorted(files)[:5]
        assert table.metadata_location.startswith("s3://")
        for task in table.scan().plan_files():
            assert task.data_file.file_path.startswith("s3://")
            assert all(d.file_path.startswith("s3://") for d in task.delete_files)


def new_table(catalog, name="db.t", format_version=2, partition_by=("cat",)) -> mor.Table:
    table = catalog.create_table(name, SCHEMA, partition_by=list(partition_by), format_version=format_version)
    table.append(rows(range(0, 60)))
    table.append(rows(range(60, 100)))
    return table


@pytest.mark.parametrize("mode", ["merge-on-read", "copy-on-write"])
def test_append_delete(catalog, mode):
    table = new_table(catalog)
    table.delete("id < 10", mode=mode)
    table.delete("cat = 'b' and id < 50", mode=mode)
    gone = set(range(10)) | {i for i in range(50) if i % 3 == 1}
    assert sorted_rows(table) == expect(i for i in range(100) if i not in gone)
    reloaded = catalog.load_table("db.t")
    assert sorted_rows(reloaded) == sorted_rows(table)
    assert_files_where_expected(catalog, table)


def test_delete_rows_update_upsert_merge(catalog):
    table = new_table(catalog)
    table.delete_rows(pa.table({"id": [3, 7]}))
    table.update({"n": pc.field("n") + 1}, where="id in (10, 11)")
    table.upsert(rows([20, 200]).set_column(2, "n", pa.array([-20, -200])), on=["id"])
    table.upsert(rows([21, 201]).set_column(2, "n", pa.array([-21, -201])), on=["id"], strategy="equality")
    source = pa.table({"id": [30, 31, 300], "op": ["D", "U", "I"], "cat": ["a", "b", "c"], "n": [0, -31, -300]})
    table.merge(
        source,
        on=["id"],
        when_matched_delete=pc.field("source.op") == "D",
        when_matched_update={"n": pc.field("source.n")},
        when_not_matched_insert={"id": pc.field("source.id"), "cat": pc.field("source.cat"), "n": pc.field("source.n")},
    )
    want = expect(
        [i for i in range(100) if i not in (3, 7, 30)] + [200, 201, 300],
        {10: {"n": 101}, 11: {"n": 111}, 20: {"n": -20}, 200: {"n": -200}, 21: {"n": -21}, 201: {"n": -201},
         31: {"n": -31}, 300: {"n": -300, "cat": "c"}},
    )  # fmt: skip
    assert sorted_rows(table) == want
    assert_files_where_expected(catalog, table)


def test_time_travel(catalog):
    table = new_table(catalog)
    first = table.snapshots()[0].snapshot_id
    table.delete("id >= 50")
    after_delete = table.current_snapshot().snapshot_id
    table.append(rows([500]))
    assert sorted_rows(table, snapshot_id=first) == expect(range(60))
    assert sorted_rows(table, snapshot_id=after_delete) == expect(range(50))
    assert sorted_rows(table) == expect([*range(50), 500])


def test_maintenance(catalog):
    table = new_table(catalog)
    table.set_properties(**{"history.expire.max-snapshot-age-ms": "1"})
    for k in range(5):
        table.delete(f"id = {k}")
    table.append(rows([1000]))
    want = expect([*range(5, 100), 1000])
    result = table.rewrite_position_deletes()
    assert sorted_rows(table) == want
    compacted = table.compact(min_input_files=1)
    assert compacted.to_dict()
    assert sorted_rows(table) == want
    assert not any(t.delete_files for t in table.scan().plan_files())
    expired = table.expire_snapshots(older_than=dt.timedelta(0), retain_last=1, allow_short_retention=True)
    assert expired.to_dict()
    assert len(table.snapshots()) == 1
    assert sorted_rows(table) == want
    assert_files_where_expected(catalog, table)
    # Orphan search lists the table location (the one operation that lists, by design).
    orphans = table.remove_orphan_files(older_than=dt.timedelta(0), dry_run=True)
    location = table.io.path(table.location)
    assert all(p.startswith(location + "/") for p in orphans), list(orphans)
    assert not set(orphans) & reachable_files(table.io, table.metadata, table.metadata_location)
    assert result.to_dict()


def test_v3_deletion_vectors(catalog):
    table = new_table(catalog, format_version=3)
    table.delete("id < 5")
    table.delete("id in (50, 51)")
    table.update({"n": 0}, where="id = 60")
    tasks = table.scan().plan_files()
    vectors = [d for t in tasks for d in t.delete_files]
    assert vectors and all(d.file_path.endswith(".puffin") for d in vectors)
    assert sorted_rows(table) == expect([i for i in range(5, 100) if i not in (50, 51)], {60: {"n": 0}})
    lineage = table.scan(columns=["id", "_row_id"], filter="id = 60").to_arrow().to_pylist()
    assert lineage == [{"id": 60, "_row_id": 60}]
    assert_files_where_expected(catalog, table)


def test_v2_upgrade_rewrite_position_deletes(catalog):
    table = new_table(catalog)
    table.delete("id < 3")
    table.upgrade(format_version=3)
    table.rewrite_position_deletes()
    assert all(d.file_path.endswith(".puffin") for t in table.scan().plan_files() for d in t.delete_files)
    assert sorted_rows(table) == expect(range(3, 100))


@pytest.mark.parametrize("database", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_pyiceberg_reads_the_same_rows(request, s3_server, tmp_path: Path, database: str):
    from pyiceberg.catalog.sql import SqlCatalog

    if database == "postgres":
        server = request.getfixturevalue("postgres_server")
        uri = server.uri(server.create_database())
    else:
        uri = f"sqlite:///{tmp_path}/catalog.db"
    catalog = mor.load_catalog(s3_server.fresh_prefix(), uri=uri, properties=s3_server.properties)
    request.addfinalizer(getattr(catalog.store, "dispose", lambda: None))
    table = new_table(catalog)
    table.delete("id < 10")
    table.update({"n": -1}, where="id = 42")
    ours = sorted_rows(table)
    theirs_catalog = SqlCatalog("default", uri=uri, warehouse=catalog.warehouse, **s3_server.properties)
    try:
        theirs_table = theirs_catalog.load_table("db.t")
        assert theirs_table.metadata_location == table.metadata_location
        theirs = theirs_table.scan().to_arrow().to_pylist()
    finally:
        theirs_catalog.engine.dispose()  # its pooled connections: a PostgreSQL one left open warns
    assert sorted(theirs, key=lambda r: r["id"]) == ours


def test_we_read_what_pyiceberg_writes(s3_server, s3_catalog, tmp_path: Path):
    from pyiceberg.catalog.sql import SqlCatalog

    theirs_catalog = SqlCatalog("default", uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=s3_catalog.warehouse, **s3_server.properties)
    theirs_catalog.create_namespace("db")
    theirs = theirs_catalog.create_table("db.p", SCHEMA)
    theirs.append(rows(range(20)))
    table = s3_catalog.load_table("db.p")
    assert table.metadata_location.startswith("s3://")
    table.delete("id < 5")
    assert sorted_rows(table) == expect(range(5, 20))


def test_static_table_and_missing_metadata(s3_server, s3_catalog):
    table = new_table(s3_catalog)
    static = mor.StaticTable.from_metadata(table.metadata_location, s3_server.properties)
    assert sorted_rows(static) == expect(range(100))
    folder = mor.StaticTable.from_metadata(table.location, s3_server.properties)  # lists metadata/: the newest file
    assert folder.metadata_location == table.metadata_location
    with pytest.raises(mor.MetadataFileNotFoundError, match="no table metadata file at s3://"):
        mor.StaticTable.from_metadata(table.location + "/metadata/00099-nope.metadata.json", s3_server.properties)


def test_scan_request_counts(s3_server, s3_catalog, tmp_path: Path):
    """A scan costs a bounded number of requests (small objects are fetched whole, one GET)."""
    table = new_table(s3_catalog)
    table.delete("id < 10")
    tasks = table.scan().plan_files()
    objects = 1 + len({t.data_file.file_path for t in tasks}) + len({d.file_path for t in tasks for d in t.delete_files})
    s3_server.requests.reset()
    fresh = mor.load_catalog(s3_catalog.warehouse, uri=f"sqlite:///{tmp_path}/catalog.db", properties=s3_server.properties)
    fresh = fresh.load_table("db.t")
    assert sorted_rows(fresh) == expect(range(10, 100))
    counts = s3_server.requests.snapshot()
    print(f"requests for one scan of {objects} objects (+ manifests, maybe cached): {counts}")
    assert counts.get("PUT", 0) == counts.get("POST", 0) == counts.get("DELETE", 0) == 0
    manifests = 9  # a manifest list and a few manifests
    assert counts.get("GET", 0) <= objects + manifests
    assert counts.get("HEAD", 0) <= 2 * (objects + manifests)


def test_writes_are_single_puts(s3_server, s3_catalog):
    table = s3_catalog.create_table("db.w", SCHEMA)
    s3_server.requests.reset()
    table.append(rows(range(10)))
    counts = s3_server.requests.snapshot()
    # a data file, a manifest, a manifest list, a metadata file: one PUT each, no multipart upload
    assert counts.get("POST", 0) == 0, counts
    assert counts.get("PUT", 0) == 4, counts


def test_fileio_pickles_as_its_properties(s3_server, s3_catalog):
    table = new_table(s3_catalog)
    io = pickle.loads(pickle.dumps(table.io))
    assert isinstance(io, FileIO) and io.properties == s3_server.properties
    assert io.read_bytes(table.metadata_location) == table.io.read_bytes(table.metadata_location)


def test_s3_options_from_properties_and_environment():
    props = {
        "s3.endpoint": "http://127.0.0.1:9000",
        "s3.access-key-id": "k",
        "s3.secret-access-key": "s",
        "s3.session-token": "t",
        "s3.region": "eu-west-1",
        "s3.path-style-access": "true",
        "s3.connect-timeout": "5",
    }
    options = s3_options(props, environ={})
    assert options == {
        "allow_delayed_open": True, "scheme": "http", "endpoint_override": "127.0.0.1:9000", "access_key": "k",
        "secret_key": "s", "session_token": "t", "region": "eu-west-1", "force_virtual_addressing": False,
        "connect_timeout": 5.0,
    }  # fmt: skip
    env = {
        "AWS_ACCESS_KEY_ID": "ek",
        "AWS_SECRET_ACCESS_KEY": "es",
        "AWS_DEFAULT_REGION": "us-west-2",
        "AWS_ENDPOINT_URL": "https://s3.example",
    }
    assert s3_options({}, environ=env) == {
        "allow_delayed_open": True, "scheme": "https", "endpoint_override": "s3.example", "access_key": "ek",
        "secret_key": "es", "region": "us-west-2",
    }  # fmt: skip
    assert s3_options({"s3.region": "eu-central-1"}, environ=env)["region"] == "eu-central-1"  # properties win
    with pytest.raises(mor.InvalidArgumentError):
        s3_options({"s3.path-style-access": "maybe"}, environ={})


def test_object_store_warehouse_needs_a_catalog_uri(s3_server):
    with pytest.raises(mor.InvalidArgumentError, match="uri"):
        mor.load_catalog(s3_server.fresh_prefix(), properties=s3_server.properties)
    with pytest.raises(mor.UnsupportedFeatureError):
        FileIO().read_bytes("hdfs://nn/x")


def test_local_catalog_with_a_table_in_s3(s3_server, tmp_path: Path):
    """One FileIO serves both: a local warehouse configured for S3 holds a table in s3:// too."""
    catalog = mor.load_catalog(tmp_path / "warehouse", properties=s3_server.properties, create=True)
    local = catalog.create_table("db.local", SCHEMA)
    remote = catalog.create_table("db.remote", SCHEMA, location=s3_server.fresh_prefix() + "/remote/")
    for table in (local, remote):
        table.append(rows(range(10)))
        table.delete("id < 3")
        assert sorted_rows(catalog.load_table(table.identifier)) == expect(range(3, 10))
    assert local.metadata_location.startswith("file:") and remote.metadata_location.startswith("s3://")
    assert not remote.location.endswith("/")


def test_properties_as_keywords_as_pyiceberg_takes_them(s3_server, tmp_path: Path):
    warehouse = s3_server.fresh_prefix()
    catalog = mor.load_catalog(warehouse=warehouse, uri=f"sqlite:///{tmp_path}/c.db", **s3_server.properties)
    table = catalog.create_table("db.t", SCHEMA)
    table.append(rows(range(5)))
    assert table.io.properties == s3_server.properties
    assert sorted_rows(catalog.load_table("db.t")) == expect(range(5))
    with pytest.raises(mor.InvalidArgumentError, match="unexpected arguments"):
        mor.load_catalog(warehouse, uri=f"sqlite:///{tmp_path}/c.db", wharehouse="typo")


def test_s3_configured_by_the_environment_alone(s3_server, tmp_path: Path, monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", s3_server.properties["s3.access-key-id"])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", s3_server.properties["s3.secret-access-key"])
    monkeypatch.setenv("AWS_REGION", s3_server.properties["s3.region"])
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", s3_server.endpoint)
    catalog = mor.load_catalog(s3_server.fresh_prefix(), uri=f"sqlite:///{tmp_path}/c.db")
    table = catalog.create_table("db.t", SCHEMA)
    table.append(rows(range(8)))
    table.delete("id < 2")
    assert sorted_rows(catalog.load_table("db.t")) == expect(range(2, 8))
    assert table.metadata_location.startswith("s3://")


def test_a_commit_on_a_missing_manifest_object_is_refused(s3_catalog):
    from mor.format.manifest_list import read_manifest_list

    table = s3_catalog.create_table("db.gone", SCHEMA)
    table.append(rows(range(5)))
    table.append(rows(range(5, 10)))
    before = table.metadata_location
    snapshot = table.current_snapshot()
    # The last append's manifest: no commit carried it yet. (One this process has carried once
    # is not looked at again: objects are never replaced in place.)
    manifest = next(m for m in read_manifest_list(table.io, snapshot.manifest_list) if m.added_snapshot_id == snapshot.snapshot_id)
    table.io.delete(manifest.manifest_path)
    with pytest.raises(mor.CorruptMetadataError, match="is missing: refusing to commit"):
        table.append(rows(range(10, 15)))
    assert s3_catalog.load_table("db.gone").metadata_location == before
