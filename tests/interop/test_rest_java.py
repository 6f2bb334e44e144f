"""Iceberg Java (Spark SQL with Iceberg 1.10's RESTCatalog) and mor on the same tables, through
one `mor serve` server.

Java is the reference implementation of both the REST protocol and the table format, and a
client no one here wrote: it signs in with OAuth2 client credentials, creates tables, commits
its merge-on-read DELETE and UPDATE (position deletes on v2, deletion vectors on v3), branches
and tags as requirements + updates. mor then reads every snapshot as Java does, DELETEs,
compacts and expires snapshots through the same server; the branch and the tag must survive
that, Java must still read them and the main branch alike, and mor's deletion vectors must
read the same in Java.

One Spark session (one JVM start, about 15 s) serves the whole module (oracle_rest.py).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import mor
from mor.format.spec import FileContent
from oracle_rest import JavaSql, java_sql
from tests.servers.rest import Served, running_rest_server, unique

pytestmark = [pytest.mark.interop, pytest.mark.oracle]

TOKEN = "mor-client-token"  # mor's client
CLIENT_ID, SECRET = "iceberg-java", "java-secret"  # Java's OAuth2 client credentials
SCHEMA = pa.schema([("id", pa.int64()), ("status", pa.string()), ("amount", pa.float64())])
MERGE_ON_READ = ", ".join(f"'write.{verb}.mode'='merge-on-read'" for verb in ("delete", "update", "merge"))
Row = tuple[Any, ...]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("java-rest")
    (root / "tokens").write_text(f"{TOKEN}\n{CLIENT_ID}:{SECRET}\n")
    with running_rest_server(root / "warehouse", token_file=root / "tokens") as server:
        yield Served(server, root / "warehouse", None, TOKEN)


@pytest.fixture(scope="module")
def java(served: Served, tmp_path_factory: pytest.TempPathFactory) -> Iterator[JavaSql]:
    oauth = {"credential": f"{CLIENT_ID}:{SECRET}", "oauth2-server-uri": f"{served.url}/v1/oauth/tokens"}
    with java_sql(served.url, tmp_path_factory.mktemp("java"), **oauth) as session:
        session.sql("CREATE NAMESPACE IF NOT EXISTS rc.db")
        yield session


@pytest.fixture(scope="module")
def client(served: Served) -> mor.Catalog:
    return mor.load_catalog(uri=served.url, token=TOKEN)


def rows(table: pa.Table) -> list[Row]:
    return sorted(tuple(r.values()) for r in table.to_pylist())


def java_rows(java: JavaSql, name: str, version: int | str | None = None) -> list[Row]:
    at = "" if version is None else f" VERSION AS OF {version!r}" if isinstance(version, str) else f" VERSION AS OF {version}"
    return rows(java.rows(f"SELECT * FROM rc.db.{name}{at}"))


def mor_rows(client: mor.Catalog, name: str, snapshot_id: int | None = None) -> list[Row]:
    return rows(client.load_table(f"db.{name}").scan(snapshot_id=snapshot_id).to_arrow())


def delete_contents(table: mor.Table) -> set[str]:
    return {
        "dv" if f.is_deletion_vector else FileContent(f.content).name
        for task in table.scan().plan_files()
        for f in task.delete_files
    }


def test_java_writes_branches_and_tags_mor_reads_maintains_and_java_reads_again(
    java: JavaSql, client: mor.Catalog
) -> None:
    name = unique("java")
    java.sql(f"CREATE TABLE rc.db.{name} (id bigint, status string, amount double) USING iceberg "
             f"TBLPROPERTIES ('format-version'='2', {MERGE_ON_READ})")  # fmt: skip
    java.sql(f"INSERT INTO rc.db.{name} SELECT id, 'open', id * 0.5 FROM range(0, 40)")
    java.sql(f"INSERT INTO rc.db.{name} SELECT id, 'late', NULL FROM range(40, 60)")
    java.sql(f"DELETE FROM rc.db.{name} WHERE id % 5 = 0")
    java.sql(f"UPDATE rc.db.{name} SET status = 'closed', amount = amount + 1 WHERE id < 12")
    java.sql(f"ALTER TABLE rc.db.{name} CREATE TAG before_mor")
    java.sql(f"ALTER TABLE rc.db.{name} CREATE BRANCH audit")
    java.sql(f"INSERT INTO rc.db.{name}.branch_audit VALUES (1000, 'audit', 1.0)")

    table = client.load_table(f"db.{name}")
    assert delete_contents(table) == {"POSITION_DELETES"}
    assert set(table.metadata.refs) == {"main", "before_mor", "audit"}
    for snapshot in table.snapshots():  # main's history and the branch's own snapshot
        assert mor_rows(client, name, snapshot.snapshot_id) == java_rows(java, name, snapshot.snapshot_id)
    tagged = java_rows(java, name, "before_mor")
    branch = java_rows(java, name, "audit")
    assert branch == sorted([*tagged, (1000, "audit", 1.0)])
    assert mor_rows(client, name) == java_rows(java, name) == tagged

    table.delete("id between 20 and 44")
    table.compact()
    expired = table.expire_snapshots(older_than=dt.timedelta(0), retain_last=1, allow_short_retention=True)
    assert expired.expired_snapshot_ids
    after = mor_rows(client, name)
    assert [r[0] for r in after] == [i for i in range(60) if i % 5 and not 20 <= i <= 44]
    assert delete_contents(client.load_table(f"db.{name}")) == set()  # compacted away
    assert java_rows(java, name) == after
    assert java_rows(java, name, "before_mor") == tagged  # the tag and the branch survived expiry
    assert java_rows(java, name, "audit") == branch
    refs = {r["name"] for r in java.rows(f"SELECT name FROM rc.db.{name}.refs").to_pylist()}
    assert refs == {"main", "before_mor", "audit"}

    java.sql(f"DELETE FROM rc.db.{name} WHERE id = 1")  # Java on top of mor's commits
    assert mor_rows(client, name) == java_rows(java, name) == [r for r in after if r[0] != 1]


def test_java_reads_mor_deletion_vectors_and_replaces_them(java: JavaSql, client: mor.Catalog) -> None:
    name = unique("dv")
    table = client.create_table(f"db.{name}", schema=SCHEMA, properties={"format-version": "3"})
    table.append(pa.table({"id": range(50), "status": ["open"] * 50, "amount": [i * 1.5 for i in range(50)]}, SCHEMA))
    table.delete("id < 10")
    table.update({"status": "closed"}, where="id between 40 and 44")
    table.delete("id in (15, 25, 35)")  # the vector of the same file, replaced
    assert delete_contents(table) == {"dv"}
    for snapshot in table.snapshots():
        assert java_rows(java, name, snapshot.snapshot_id) == mor_rows(client, name, snapshot.snapshot_id)
    java.sql(f"DELETE FROM rc.db.{name} WHERE id in (11, 41)")  # Java merges mor's vector into its own
    expected = java_rows(java, name)
    assert [r[0] for r in expected] == [i for i in range(10, 50) if i not in (11, 15, 25, 35, 41)]
    assert mor_rows(client, name) == expected
    assert delete_contents(client.load_table(f"db.{name}")) == {"dv"}


def test_java_reads_mor_equality_deletes(java: JavaSql, client: mor.Catalog) -> None:
    name = unique("eq")
    table = client.create_table(f"db.{name}", schema=SCHEMA)
    table.append(pa.table({"id": range(20), "status": ["open"] * 20, "amount": [float(i) for i in range(20)]}, SCHEMA))
    table.upsert(pa.table({"id": [3, 7, 100], "status": ["up", "up", "new"], "amount": [0.0, 0.0, 0.0]}, SCHEMA), on=["id"], strategy="equality")
    assert delete_contents(table) == {"EQUALITY_DELETES"}
    assert java_rows(java, name) == mor_rows(client, name)
