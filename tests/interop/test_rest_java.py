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
from typing import Any

import pyarrow as pa
import pytest
from oracle_rest import JavaSql, java_sql

import mor
from mor.format.spec import FileContent
from mor.server.clients import TOKEN_PLACEHOLDER, client_recipes
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
    # The catalog settings `mor serve` prints for Iceberg's Spark (its token swapped for OAuth2)
    recipe = client_recipes(served.url, served.warehouse.name, secured=True)["spark (Iceberg's runtime jar; spark-defaults.conf or --conf)"]
    settings = dict(line.removeprefix("spark.sql.catalog.mor").split("=", 1) for line in recipe.splitlines())
    assert settings.pop("") == "org.apache.iceberg.spark.SparkCatalog" and settings.pop(".type") == "rest"
    assert settings.pop(".uri") == served.url and settings.pop(".token") == TOKEN_PLACEHOLDER
    printed = {"warehouse": settings.pop(".warehouse")}
    assert settings == {}
    # Listings in pages of two: Java's client follows the server's page tokens.
    with java_sql(served.url, tmp_path_factory.mktemp("java"), **oauth, **printed, **{"rest-page-size": "2"}) as session:
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
    return {"dv" if f.is_deletion_vector else FileContent(f.content).name for task in table.scan().plan_files() for f in task.delete_files}


def test_java_writes_branches_and_tags_mor_reads_maintains_and_java_reads_again(java: JavaSql, client: mor.Catalog) -> None:
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

    # mor writes on the branch Java made; Java reads it, and its own write on it follows mor's.
    table = client.load_table(f"db.{name}")
    table.delete("id < 20", branch="audit")
    table.append(pa.table({"id": [2000], "status": ["mor"], "amount": [2.0]}, SCHEMA), branch="audit")
    on_branch = rows(table.scan(branch="audit").to_arrow())
    assert java_rows(java, name, "audit") == on_branch and (2000, "mor", 2.0) in on_branch
    java.sql(f"INSERT INTO rc.db.{name}.branch_audit VALUES (3000, 'java', 3.0)")
    assert rows(client.load_table(f"db.{name}").scan(branch="audit").to_arrow()) == sorted([*on_branch, (3000, "java", 3.0)])


def test_mor_writes_on_a_v3_branch_java_made(java: JavaSql, client: mor.Catalog) -> None:
    name = unique("v3branch")
    java.sql(f"CREATE TABLE rc.db.{name} (id bigint, status string, amount double) USING iceberg "
             f"TBLPROPERTIES ('format-version'='3', {MERGE_ON_READ})")  # fmt: skip
    java.sql(f"INSERT INTO rc.db.{name} SELECT id, 'open', id * 0.5 FROM range(0, 30)")
    java.sql(f"ALTER TABLE rc.db.{name} CREATE BRANCH dev")
    java.sql(f"DELETE FROM rc.db.{name}.branch_dev WHERE id % 3 = 0")  # a deletion vector on the branch
    table = client.load_table(f"db.{name}")
    table.delete("id % 3 = 1", branch="dev")  # mor's vector merges Java's
    table.update({"status": "'x'"}, where="id = 2", branch="dev")
    assert java_rows(java, name, "dev") == rows(table.scan(branch="dev").to_arrow())
    assert [r[0] for r in java_rows(java, name, "dev")] == [i for i in range(30) if i % 3 == 2]
    assert len(java_rows(java, name)) == 30  # main untouched


def test_java_reads_mor_deletion_vectors_and_replaces_them(java: JavaSql, client: mor.Catalog) -> None:
    name = unique("dv")
    table = client.create_table(f"db.{name}", schema=SCHEMA, properties={"format-version": "3"})
    table.append(pa.table({"id": range(50), "status": ["open"] * 50, "amount": [i * 1.5 for i in range(50)]}, SCHEMA))
    table.delete("id < 10")
    table.update({"status": "'closed'"}, where="id between 40 and 44")
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
    table.upsert(
        pa.table({"id": [3, 7, 100], "status": ["up", "up", "new"], "amount": [0.0, 0.0, 0.0]}, SCHEMA), on=["id"], strategy="equality"
    )
    assert delete_contents(table) == {"EQUALITY_DELETES"}
    assert java_rows(java, name) == mor_rows(client, name)


def test_mor_branches_tags_and_undo_read_the_same_in_java(java: JavaSql, client: mor.Catalog) -> None:
    """mor's tags, branches (with retention), rollback and set-current, as Java reads them:
    each ref's rows, main's rows, and Java's `refs` metadata table."""
    name = unique("refs")
    table = client.create_table(f"db.{name}", schema=SCHEMA)
    table.append(pa.table({"id": range(10), "status": ["a"] * 10, "amount": [1.0] * 10}, SCHEMA))
    s1 = table.metadata.current_snapshot_id
    table.append(pa.table({"id": range(10, 20), "status": ["b"] * 10, "amount": [2.0] * 10}, SCHEMA))
    s2 = table.metadata.current_snapshot_id
    table.delete("id < 5")
    s3 = table.metadata.current_snapshot_id
    assert s1 is not None and s2 is not None and s3 is not None
    with table.manage_snapshots() as refs:
        refs.create_tag("first", s1, max_ref_age_ms=7 * 86_400_000)
        refs.create_branch("audit", s2, min_snapshots_to_keep=2, max_snapshot_age_ms=86_400_000)
        refs.rollback_to(s2)
    assert java_rows(java, name) == mor_rows(client, name) == mor_rows(client, name, s2)
    assert java_rows(java, name, "first") == mor_rows(client, name, s1)
    assert java_rows(java, name, "audit") == mor_rows(client, name, s2)
    java_refs = {
        r["name"]: (r["type"], r["snapshot_id"], r["max_reference_age_in_ms"], r["min_snapshots_to_keep"], r["max_snapshot_age_in_ms"])
        for r in java.rows(f"SELECT * FROM rc.db.{name}.refs").to_pylist()
    }
    assert java_refs == {
        "main": ("BRANCH", s2, None, None, None),
        "first": ("TAG", s1, 7 * 86_400_000, None, None),
        "audit": ("BRANCH", s2, None, 2, 86_400_000),
    }
    table.delete("id < 3", branch="audit")  # a write on the branch, through mor's REST client
    table.append(pa.table({"id": [99], "status": ["c"], "amount": [9.0]}, SCHEMA), branch="audit")
    assert java_rows(java, name, "audit") == rows(table.scan(branch="audit").to_arrow())
    assert [r[0] for r in java_rows(java, name, "audit")] == [*range(3, 20), 99]
    table.set_current_snapshot(s3)  # undo the rollback
    assert java_rows(java, name) == mor_rows(client, name, s3)
    history = java.rows(f"SELECT snapshot_id, is_current_ancestor FROM rc.db.{name}.history").to_pylist()
    assert [r["snapshot_id"] for r in history] == [s1, s2, s3, s2, s3]


def test_publishing_a_dynamic_partition_overwrite_agrees_with_java(java: JavaSql, client: mor.Catalog) -> None:
    """Twin partitioned tables: Java stages a dynamic INSERT OVERWRITE (`replace-partitions`)
    under a wap.id while main gains rows in another partition; Java publishes it on one, mor on
    the other, with the same rows and summaries. When main has written into a replaced
    partition meanwhile, both refuse."""
    twins = [unique("dyn_java"), unique("dyn_mor"), unique("dyn_conflict")]
    for name in twins:
        java.sql(f"CREATE TABLE rc.db.{name} (id bigint, region string) USING iceberg PARTITIONED BY (region) "
                 f"TBLPROPERTIES ('format-version'='2', 'write.wap.enabled'='true')")  # fmt: skip
        java.sql(f"INSERT INTO rc.db.{name} VALUES (1, 'eu'), (2, 'eu'), (3, 'us'), (4, 'ap')")
        java.sql("SET spark.sql.sources.partitionOverwriteMode = dynamic")
        java.sql("SET spark.wap.id = rewrite-eu")
        java.sql(f"INSERT OVERWRITE rc.db.{name} VALUES (10, 'eu'), (11, 'ap')")  # replaces eu and ap only
        java.sql("RESET spark.wap.id")
        java.sql("RESET spark.sql.sources.partitionOverwriteMode")
        other = "'ap'" if name == twins[2] else "'us'"  # the third twin writes into a replaced partition
        java.sql(f"INSERT INTO rc.db.{name} VALUES (5, {other})")
        staged = next(s for s in client.load_table(f"db.{name}").snapshots() if s.summary.get("wap.id") == "rewrite-eu")
        assert staged.operation == "overwrite" and staged.summary.get("replace-partitions") == "true"
    by_java, by_mor, conflicting = twins

    java.sql(f"CALL rc.system.publish_changes('db.{by_java}', 'rewrite-eu')")
    published = client.load_table(f"db.{by_mor}").publish("rewrite-eu")
    assert java_rows(java, by_mor) == java_rows(java, by_java) == mor_rows(client, by_mor)
    assert {r[0] for r in mor_rows(client, by_mor)} == {3, 5, 10, 11}
    java_published = client.load_table(f"db.{by_java}").current_snapshot()
    assert published.operation == java_published.operation == "overwrite"
    for key in ("published-wap-id", "added-data-files", "deleted-data-files", "added-records", "deleted-records"):
        assert published.summary.get(key) == java_published.summary.get(key), key

    before = client.load_table(f"db.{conflicting}").metadata_location
    with pytest.raises(mor.CommitConflictError, match="changed partition"):
        client.load_table(f"db.{conflicting}").publish("rewrite-eu")
    assert client.load_table(f"db.{conflicting}").metadata_location == before
    with pytest.raises(Exception, match="changed partition"):
        java.sql(f"CALL rc.system.publish_changes('db.{conflicting}', 'rewrite-eu')")


def test_views_and_paged_listings_between_java_and_mor(java: JavaSql, served: Served) -> None:
    """Java creates a view through the server and reads through it; mor reads its definition,
    creates one of its own and replaces it; Java reads through mor's view; Java lists tables
    and views in pages of two."""
    ns = unique("vw")
    java.sql(f"CREATE NAMESPACE rc.{ns}")
    java.sql(f"CREATE TABLE rc.{ns}.t (id bigint, region string) USING iceberg")
    java.sql(f"INSERT INTO rc.{ns}.t VALUES (1, 'eu'), (2, 'us'), (3, 'eu')")
    java.sql(f"CREATE VIEW rc.{ns}.eu_rows AS SELECT id FROM rc.{ns}.t WHERE region = 'eu'")
    assert rows(java.rows(f"SELECT * FROM rc.{ns}.eu_rows")) == [(1,), (3,)]
    local = served.mor()
    view = local.load_view(f"{ns}.eu_rows")
    assert "region = 'eu'" in view.sql("spark") and view.schema.column_names == ["id"]

    local.create_view(f"{ns}.big", "SELECT id, region FROM t WHERE id > 1", pa.schema([("id", pa.int64()), ("region", pa.string())]))
    assert rows(java.rows(f"SELECT * FROM rc.{ns}.big")) == [(2, "us"), (3, "eu")]
    local.replace_view(f"{ns}.big", "SELECT id FROM t WHERE id > 2", pa.schema([("id", pa.int64())]))
    assert rows(java.rows(f"SELECT * FROM rc.{ns}.big")) == [(3,)]

    for i in range(3):
        java.sql(f"CREATE TABLE rc.{ns}.more{i} (id bigint) USING iceberg")
    tables = sorted(r[1] for r in rows(java.rows(f"SHOW TABLES IN rc.{ns}")))
    assert tables == ["more0", "more1", "more2", "t"]  # Spark lists tables and, separately, views
    views = sorted(r[1] for r in rows(java.rows(f"SHOW VIEWS IN rc.{ns}")))
    assert views == ["big", "eu_rows"]
    java.sql(f"DROP VIEW rc.{ns}.eu_rows")
    assert local.list_views(ns) == [f"{ns}.big"]


def test_publish_and_cherrypick_agree_with_java(java: JavaSql, client: mor.Catalog) -> None:
    """Twin tables: Java stages a write-audit-publish append and a branch's append on both,
    then publishes and cherry-picks on one with its procedures while mor does it on the other.
    Java reads the same rows from both, and both new snapshots name their source alike."""
    twins = [unique("wap_java"), unique("wap_mor")]
    staged: dict[str, int] = {}
    for name in twins:
        java.sql(f"CREATE TABLE rc.db.{name} (id bigint, status string, amount double) USING iceberg "
                 f"TBLPROPERTIES ('format-version'='2', 'write.wap.enabled'='true')")  # fmt: skip
        java.sql(f"INSERT INTO rc.db.{name} VALUES (1, 'main', 1.0), (2, 'main', 2.0)")
        java.sql(f"ALTER TABLE rc.db.{name} CREATE BRANCH dev")
        java.sql(f"INSERT INTO rc.db.{name}.branch_dev VALUES (30, 'dev', 3.0)")
        java.sql("SET spark.wap.id = nightly-1")
        java.sql(f"INSERT INTO rc.db.{name} VALUES (10, 'staged', 10.0)")
        java.sql("RESET spark.wap.id")
        java.sql(f"INSERT INTO rc.db.{name} VALUES (3, 'main', 3.0)")  # main moves on meanwhile
        table = client.load_table(f"db.{name}")
        staged[name] = next(s.snapshot_id for s in table.snapshots() if s.summary.get("wap.id") == "nightly-1")
        assert java_rows(java, name) == [(1, "main", 1.0), (2, "main", 2.0), (3, "main", 3.0)]
    by_java, by_mor = twins
    dev_head = {name: client.load_table(f"db.{name}").metadata.refs["dev"]["snapshot-id"] for name in twins}

    java.sql(f"CALL rc.system.publish_changes('db.{by_java}', 'nightly-1')")
    java.sql(f"CALL rc.system.cherrypick_snapshot('db.{by_java}', {dev_head[by_java]})")
    table = client.load_table(f"db.{by_mor}")
    published = table.publish("nightly-1")
    picked = table.cherrypick(dev_head[by_mor])
    assert java_rows(java, by_mor) == java_rows(java, by_java) == mor_rows(client, by_mor)
    assert {r[0] for r in mor_rows(client, by_mor)} == {1, 2, 3, 10, 30}
    assert published.summary["published-wap-id"] == "nightly-1"
    assert published.summary["source-snapshot-id"] == str(staged[by_mor])
    assert picked.summary["source-snapshot-id"] == str(dev_head[by_mor])
    java_summaries = [s.summary for s in client.load_table(f"db.{by_java}").snapshots()[-2:]]
    assert java_summaries[0]["published-wap-id"] == "nightly-1" and java_summaries[0]["source-snapshot-id"] == str(staged[by_java])
    with pytest.raises(mor.InvalidArgumentError, match="published already"):
        table.publish("nightly-1")
