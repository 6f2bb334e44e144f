"""What a scan and the writes cost in requests to the object store, counted from the S3 test
server's access log (tests/servers/s3.py): a cold scan fetches every file it needs once, in one
GET (plus the HEAD pyarrow sends when it opens an object: its Python API takes no size), a warm
scan fetches only the manifest list and the data (manifests and decoded delete files are cached
in the process), and nothing lists a prefix to find table state."""

from __future__ import annotations

import pyarrow as pa
import pytest

from mor.format.manifest_list import read_manifest_list
from mor.planning import manifest_cache
from mor.read.decoded_cache import SHARED

SCHEMA = pa.schema([("id", pa.int64()), ("cat", pa.string()), ("n", pa.int64())])


def rows(ids) -> pa.Table:
    ids = list(ids)
    return pa.table({"id": ids, "cat": [("a", "b", "c")[i % 3] for i in ids], "n": [i * 10 for i in ids]}, schema=SCHEMA)


def cold() -> None:
    manifest_cache.clear()
    SHARED.clear()


@pytest.fixture
def table(s3_catalog):
    table = s3_catalog.create_table("db.t", SCHEMA, partition_by=["cat"])
    table.append(rows(range(0, 300)))  # three partitions: three data files per append
    table.append(rows(range(300, 600)))
    table.delete("n >= 1000 and n < 2000")  # position deletes, in every data file
    table.delete_rows(pa.table({"id": pa.array([1, 2, 301], pa.int64())}))  # equality deletes
    return table


def test_a_cold_scan_fetches_each_file_once(s3_server, table) -> None:
    tasks = table.scan().plan_files()
    manifests = read_manifest_list(table.io, table.current_snapshot().manifest_list)
    data = {t.data_file.file_path for t in tasks}
    deletes = {d.file_path for t in tasks for d in t.delete_files}
    equality = {d.file_path for t in tasks for d in t.equality_deletes}
    assert len(data) == 6 and len(deletes) > len(equality) > 0
    files = 1 + len(manifests) + len(data) + len(deletes)  # and the manifest list

    cold()
    s3_server.requests.reset()
    result = table.scan().to_arrow()
    assert s3_server.requests.snapshot() == {"GET": files, "HEAD": files}
    gone = set(range(100, 200)) | {1, 2, 301}
    assert sorted(result["id"].to_pylist()) == [i for i in range(600) if i not in gone]

    s3_server.requests.reset()  # warm: manifests and decoded deletes are cached in the process
    assert table.scan().to_arrow().num_rows == result.num_rows
    assert s3_server.requests.snapshot() == {"GET": 1 + len(data), "HEAD": 1 + len(data)}


def test_planning_reads_only_the_manifest_list_and_manifests(s3_server, table) -> None:
    manifests = read_manifest_list(table.io, table.current_snapshot().manifest_list)
    cold()
    s3_server.requests.reset()
    table.scan().plan_files()
    assert s3_server.requests.snapshot() == {"GET": 1 + len(manifests), "HEAD": 1 + len(manifests)}


def test_writes_and_reads_never_list_a_prefix(s3_server, s3_catalog) -> None:
    s3_server.requests.reset()
    table = s3_catalog.create_table("db.w", SCHEMA, partition_by=["cat"])
    table.append(rows(range(0, 100)))
    table.delete("id < 10")
    table.delete("id < 20", mode="copy-on-write")
    table.update({"n": 0}, "id = 50")
    table.upsert(rows(range(90, 110)), on=["id"])
    table.delete_rows(pa.table({"id": pa.array([95], pa.int64())}))
    reloaded = s3_catalog.load_table("db.w")
    assert reloaded.scan().to_arrow().num_rows == 89
    table.compact()
    counts = s3_server.requests.snapshot()
    assert "LIST" not in counts, counts
    assert counts["PUT"] > 0 and "DELETE" not in counts  # nothing written is ever removed by a commit


def test_a_streaming_scan_fetches_each_file_once_too(s3_server, table) -> None:
    """to_batches() reads task by task, its delete files fetched ahead (DeleteFileCache.prefetch)."""
    expected = sorted(table.scan().to_arrow()["id"].to_pylist())
    tasks = table.scan().plan_files()
    manifests = read_manifest_list(table.io, table.current_snapshot().manifest_list)
    files = 1 + len(manifests) + len({t.data_file.file_path for t in tasks}) + len({d.file_path for t in tasks for d in t.delete_files})
    cold()
    s3_server.requests.reset()
    got = sorted(i for batch in table.scan().to_batches() for i in batch.column("id").to_pylist())
    assert got == expected
    assert s3_server.requests.snapshot() == {"GET": files, "HEAD": files}


def test_an_update_fetches_a_small_data_file_once(s3_server, s3_catalog, table) -> None:
    """UPDATE finds rows on the predicate's columns, then reads the other columns of the
    matches; an object small enough to arrive in one GET is read in one pass instead, so an
    UPDATE costs the requests of a DELETE of the same rows (the same files, each once)."""
    twin = s3_catalog.create_table("db.u", SCHEMA, partition_by=["cat"])
    twin.append(rows(range(0, 300)))
    twin.append(rows(range(300, 600)))
    twin.delete("n >= 1000 and n < 2000")
    twin.delete_rows(pa.table({"id": pa.array([1, 2, 301], pa.int64())}))

    cold()
    s3_server.requests.reset()
    table.delete("id in (50, 53)")
    deleting = s3_server.requests.snapshot()
    cold()
    s3_server.requests.reset()
    twin.update({"n": -1}, "id in (50, 53)")
    updating = s3_server.requests.snapshot()
    assert updating["GET"] == deleting["GET"] and updating["HEAD"] == deleting["HEAD"], (updating, deleting)
    changed = twin.scan(filter="n = -1").to_arrow()
    assert sorted(changed["id"].to_pylist()) == [50, 53]
