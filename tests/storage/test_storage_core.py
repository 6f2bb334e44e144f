"""One table's life on Google Cloud Storage and on Azure (emulated: tests/storage/conftest.py):
create (partitioned), append, delete merge-on-read (position deletes), delete by key (equality
deletes), compact, expire snapshots, remove orphan files. After each step mor's rows are the
expected ones, and pyiceberg reading the same metadata from the store gets the same rows."""

from __future__ import annotations

import datetime as dt
import pickle
import uuid

import pyarrow as pa

import mor
from mor.io.fileio import FileIO
from mor.maintenance.orphans import reachable_files

SCHEMA = pa.schema([("id", pa.int64()), ("cat", pa.string()), ("n", pa.int64())])
POSITION, EQUALITY = 1, 2  # Iceberg's delete file contents


def rows(ids) -> pa.Table:
    ids = list(ids)
    return pa.table({"id": ids, "cat": [("a", "b", "c")[i % 3] for i in ids], "n": [i * 10 for i in ids]}, schema=SCHEMA)


def by_id(table: pa.Table) -> list[dict]:
    return sorted(table.select(["id", "cat", "n"]).to_pylist(), key=lambda r: r["id"])


def check(store, table: mor.Table, ids) -> None:
    """mor's rows are rows(ids), and pyiceberg reads the same from the store."""
    want = by_id(rows(ids))
    assert by_id(table.scan().to_arrow()) == want
    assert by_id(store.pyiceberg_rows(table.metadata_location)) == want


def delete_contents(table: mor.Table) -> set[int]:
    return {int(d.content) for t in table.scan().plan_files() for d in t.delete_files}


def listed(table: mor.Table) -> set[str]:
    return {f.path for f in table.io.list_files(table.location)}


def live_files(table: mor.Table) -> set[str]:
    """The current metadata file and the current snapshot's data and delete files."""
    tasks = table.scan().plan_files()
    files = {table.metadata_location, *(t.data_file.file_path for t in tasks), *(d.file_path for t in tasks for d in t.delete_files)}
    return {table.io.path(f) for f in files}


def test_table_life(store, catalog) -> None:
    scheme = "gs://" if store.name == "gcs" else "abfss://"
    table = catalog.create_table("db.t", SCHEMA, partition_by=["cat"])
    assert table.location.startswith(scheme) and table.metadata_location.startswith(scheme)
    table.append(rows(range(0, 60)))
    table.append(rows(range(60, 100)))
    live = set(range(100))
    check(store, table, live)
    assert all(t.data_file.file_path.startswith(table.location + "/") for t in table.scan().plan_files())

    table.delete("id < 10 or id in (50, 51)", mode="merge-on-read")
    live -= {*range(10), 50, 51}
    assert delete_contents(table) == {POSITION}
    check(store, table, live)

    table.delete_rows(pa.table({"id": [20, 21, 77]}))
    live -= {20, 21, 77}
    assert delete_contents(table) == {POSITION, EQUALITY}
    check(store, table, live)
    reloaded = catalog.load_table("db.t")
    assert by_id(reloaded.scan().to_arrow()) == by_id(rows(live))

    compacted = table.compact(min_input_files=1)
    assert compacted.to_dict()
    assert delete_contents(table) == set()
    check(store, table, live)

    before_expiry = listed(table)
    expired = table.expire_snapshots(older_than=dt.timedelta(0), retain_last=1, allow_short_retention=True)
    assert expired.to_dict()
    assert len(table.snapshots()) == 1
    after_expiry = listed(table)
    assert before_expiry - after_expiry  # the expired snapshots' files are gone from the store
    assert after_expiry - before_expiry == {table.io.path(table.metadata_location)}  # expiry's own commit
    assert live_files(table) <= after_expiry
    reachable = reachable_files(table.io, table.metadata, table.metadata_location)
    check(store, table, live)

    # An orphan: a file under the table location no metadata names (a writer killed mid-commit).
    orphan = f"{table.location}/data/cat=a/orphan-{uuid.uuid4().hex}.parquet"
    table.io.write_bytes_exclusive(orphan, b"not referenced")
    later = dt.datetime.now(dt.UTC) + dt.timedelta(minutes=5)  # every unreferenced file is old enough
    found = table.remove_orphan_files(older_than=later, dry_run=True)
    assert table.io.path(orphan) in found
    assert not set(found) & reachable
    removed = table.remove_orphan_files(older_than=later)
    assert table.io.path(orphan) in removed
    assert not table.io.exists(orphan)
    assert live_files(table) <= listed(table)
    check(store, table, live)

    table.append(rows([1000]))
    check(store, table, live | {1000})


def test_file_io_pickles_as_its_properties_and_reads_there(store) -> None:
    """Spark ships a FileIO to executors: it travels as its properties and opens its own
    connection there."""
    io = FileIO(store.properties)
    location = f"{store.fresh_prefix()}/x/file.bin"
    io.write_bytes_exclusive(location, b"payload")
    copy = pickle.loads(pickle.dumps(io))
    assert copy.properties == store.properties
    assert copy.read_bytes(location) == b"payload"
    assert [f.path for f in copy.list_files(location.rsplit("/", 2)[0])] == [copy.path(location)]
    copy.delete(location)
    assert not io.exists(location)


def test_azure_blob_spelling_reads_the_same_table(azurite_server, tmp_path) -> None:
    """`wasbs://container@account.blob...` names the objects `abfss://container@account.dfs...`
    names: a table written under one spelling reads under the other."""
    properties = azurite_server.properties
    catalog = mor.load_catalog(azurite_server.fresh_prefix(), uri=f"sqlite:///{tmp_path}/catalog.db", properties=properties)
    table = catalog.create_table("db.t", SCHEMA)
    table.append(rows(range(5)))
    blob = table.metadata_location.replace("abfss://", "wasbs://").replace(".dfs.core.windows.net", ".blob.core.windows.net")
    static = mor.StaticTable.from_metadata(blob, properties=properties)
    assert by_id(static.scan().to_arrow()) == by_id(rows(range(5)))
    assert table.io.path(blob) == table.metadata_location
