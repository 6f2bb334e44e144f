"""Spark on a table in object storage: moto's S3 server on loopback (tests/servers/s3.py), the
catalog a SQLite file or a PostgreSQL server (tests/servers/postgres.py); the executors reach
the table only through s3:// URIs, configured by the `s3.*` options (read and write) or the
table's FileIO (DML jobs)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

import mor
import mor.spark

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # for tests.servers
from tests.servers.postgres import postgres_server_fixture  # noqa: F401  (the session fixture postgres_server)
from tests.servers.s3 import MotoProcess

pytestmark = pytest.mark.cluster  # every test here also runs on the standalone cluster

SCHEMA = pa.schema([("id", pa.int64()), ("cat", pa.string()), ("n", pa.int64())])


def rows(ids) -> pa.Table:
    ids = list(ids)
    return pa.table({"id": ids, "cat": [("a", "b", "c")[i % 3] for i in ids], "n": [i * 10 for i in ids]}, schema=SCHEMA)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def s3_table(request, s3_server, tmp_path: Path):
    if request.param == "postgres":
        server = request.getfixturevalue("postgres_server")
        uri = server.uri(server.create_database())
    else:
        uri = f"sqlite:///{tmp_path}/catalog.db"
    warehouse = s3_server.fresh_prefix()
    catalog = mor.load_catalog(warehouse, uri=uri, properties=s3_server.properties)
    request.addfinalizer(getattr(catalog.store, "dispose", lambda: None))  # its pooled connections
    table = catalog.create_table("db.t", SCHEMA, partition_by=["cat"])
    table.append(rows(range(50)))
    table.append(rows(range(50, 100)))
    return catalog, table, warehouse, uri


def _options(s3_server, warehouse: str, uri: str) -> dict[str, str]:
    return {"warehouse": warehouse, "uri": uri, **s3_server.properties}


def test_spark_reads_and_writes_s3(spark, s3_server, s3_table):
    catalog, table, warehouse, uri = s3_table
    options = _options(s3_server, warehouse, uri)
    table.delete("id < 10")
    df = spark.read.format("mor").options(**options).load("db.t")
    assert sorted(r["id"] for r in df.collect()) == list(range(10, 100))
    fast = mor.spark.read_table(spark, "db.t", warehouse=warehouse, uri=uri, properties=s3_server.properties, filter="id >= 90")
    assert sorted(r["id"] for r in fast.collect()) == list(range(90, 100))

    new = spark.createDataFrame(rows(range(100, 120)).to_pandas())
    new.write.format("mor").options(**options).mode("append").save("db.t")
    table.refresh()
    assert sorted(table.scan().to_arrow().column("id").to_pylist()) == list(range(10, 120))
    assert all(t.data_file.file_path.startswith("s3://") for t in table.scan().plan_files())


def test_spark_dml_on_s3(spark, s3_server, s3_table):
    catalog, table, warehouse, uri = s3_table
    mor.spark.delete(spark, table, "id < 10")
    mor.spark.update(spark, table, {"n": "n + 1"}, where="id = 50")
    source = spark.createDataFrame(pa.table({"id": [60, 500], "cat": ["a", "c"], "n": [-60, -500]}).to_pandas())
    mor.spark.upsert(spark, table, source, on=["id"])
    got = {r["id"]: r for r in catalog.load_table("db.t").scan().to_arrow().to_pylist()}
    assert sorted(got) == [*range(10, 100), 500]
    assert got[50]["n"] == 501 and got[60]["n"] == -60 and got[500]["cat"] == "c"
    tasks = table.scan().plan_files()
    assert any(t.delete_files for t in tasks)
    paths = [t.data_file.file_path for t in tasks] + [d.file_path for t in tasks for d in t.delete_files]
    assert all(p.startswith(warehouse + "/") for p in paths)


@pytest.fixture(scope="module")
def later_s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MotoProcess]:
    """A second S3 server that the session was not started with: moto in a process of its own
    (a second server in this process would share the first one's buckets and objects)."""
    try:
        server = MotoProcess(str(tmp_path_factory.mktemp("moto-later") / "moto.log"))
    except RuntimeError as e:
        pytest.fail(str(e), pytrace=False)
    yield server
    server.stop()


@pytest.mark.parametrize("where", ["session", "context"])
def test_s3a_settings_made_on_the_running_session_reach_the_delete_reads(spark, later_s3_server, tmp_path: Path, where: str):
    """The executors open delete files with the Hadoop configuration the driver had when the read
    was made, as Spark's own scan does: a bucket on a server the session learns of only now
    (its endpoint set with `spark.conf.set`, or on the context's Hadoop configuration) reads with
    its position deletes applied. Hadoop's filesystem cache is off meanwhile: with it, the delete
    reads would borrow the filesystem object Spark's scan made and hide which settings they got
    (a jar with only the start-up settings asked the session's first server, which has no such
    bucket)."""
    server = later_s3_server.server
    warehouse, uri = server.fresh_prefix(), f"sqlite:///{tmp_path}/catalog.db"
    properties = server.properties
    table = mor.load_catalog(warehouse, uri=uri, properties=properties).create_table("db.t", SCHEMA, partition_by=["cat"])
    table.append(rows(range(30)))
    table.delete("id % 4 = 0")
    assert any(d.content.name == "POSITION_DELETES" for t in table.scan().plan_files() for d in t.delete_files)
    settings = {f"fs.s3a.bucket.{server.bucket}.endpoint": server.endpoint, "fs.s3a.impl.disable.cache": "true"}
    conf = spark.conf if where == "session" else spark.sparkContext._jsc.hadoopConfiguration()
    for key, value in settings.items():
        conf.set(key, value)
    try:
        df = mor.spark.read_table(spark, "db.t", warehouse=warehouse, uri=uri, properties=properties, path="jvm")
        assert sorted(r["id"] for r in df.collect()) == [i for i in range(30) if i % 4]
    finally:
        for key in settings:
            conf.unset(key)
