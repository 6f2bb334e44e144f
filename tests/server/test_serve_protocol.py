"""`mor serve` held to the REST protocol where pyiceberg's own catalog tests found it wanting
(issue 42): table properties exactly as the client sent them (mor's merge-on-read preference
offered as `table-default.*` in /v1/config), tables with an empty schema, dots in namespace and
table names, 404 for names that cannot exist, paginated listings, and conflict messages in
Iceberg Java's words."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import requests
from pyiceberg.exceptions import CommitFailedException, NoSuchNamespaceError, NoSuchTableError
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType
from servers.rest import Served, unique

import mor
from mor.format.requirements import (
    AssertCreate,
    AssertCurrentSchemaId,
    AssertDefaultSortOrderId,
    AssertDefaultSpecId,
    AssertLastAssignedFieldId,
    AssertLastAssignedPartitionId,
    AssertRefSnapshotId,
    AssertTableUuid,
)
from mor.format.updates import SetProperties, TableCommit

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False)])


def get(served: Served, path: str, **params: str) -> requests.Response:
    return requests.get(served.url + path, params=params, headers=served.headers(), timeout=60)


def test_config_offers_mor_defaults_and_a_table_keeps_its_clients_properties_over_javas_persisted_ones(served: Served) -> None:
    config = get(served, "/v1/config").json()
    assert config["defaults"]["table-default.write.delete.mode"] == "merge-on-read"
    assert config["defaults"]["table-default.write.merge.mode"] == "merge-on-read"
    client = served.rest()
    ns = unique("props")
    client.create_namespace(ns)
    created = client.create_table(f"{ns}.t", schema=Schema(NestedField(1, "id", LongType())), properties={"owner": "ana"})
    zstd = {"write.parquet.compression-codec": "zstd"}  # what Iceberg Java's builder persists for every new table
    assert dict(client.load_table(f"{ns}.t").properties) == dict(created.properties) == {**zstd, "owner": "ana"}
    staged = client.create_table_transaction(f"{ns}.staged", schema=Schema(NestedField(1, "id", LongType())), properties={"k": "v"})
    staged.commit_transaction()
    assert dict(client.load_table(f"{ns}.staged").properties) == {**zstd, "k": "v"}
    given = client.create_table(
        f"{ns}.gzip", schema=Schema(NestedField(1, "id", LongType())), properties={"write.parquet.compression-codec": "gzip"}
    )
    assert dict(given.properties) == {"write.parquet.compression-codec": "gzip"}  # the client's own value wins
    # mor's own client applies mor's defaults itself, on this server as on any other
    ours = mor.load_catalog(uri=served.url, properties={"token": served.token} if served.token else {})
    assert ours.create_table(f"{ns}.m", schema=SCHEMA).metadata.properties["write.delete.mode"] == "merge-on-read"


def test_a_table_may_start_without_columns(served: Served) -> None:
    client = served.rest()
    ns = unique("empty")
    client.create_namespace(ns)
    table = client.create_table(f"{ns}.t", schema=Schema())
    assert table.schema().fields == ()
    with table.update_schema() as update:
        update.add_column("id", LongType())
    table = client.load_table(f"{ns}.t")
    table.append(pa.table({"id": pa.array([1, 2], pa.int64())}))
    ours = served.mor().load_table(f"{ns}.t")
    assert sorted(ours.scan().to_arrow()["id"].to_pylist()) == [1, 2]
    assert len(ours.metadata.schemas) == 2 and ours.metadata.schemas[0].fields == ()


def test_dots_in_namespace_levels_and_table_names(served: Served) -> None:
    """("a.b",) is one level, not ("a", "b"); a table may be named "t.x"; both kept apart from
    their dot-free look-alikes, listed and loaded as the client named them."""
    client = served.rest()
    top = unique("dots")
    dotted, nested = (f"{top}.a.b",), (top, "a", "b")
    client.create_namespace(dotted)
    client.create_namespace(nested)
    assert dotted in client.list_namespaces() and (top,) in client.list_namespaces()
    assert client.list_namespaces((top,)) == [(top, "a")]
    client.create_table((*dotted, "t.x"), schema=Schema(NestedField(1, "id", LongType())))
    client.create_table((*nested, "t"), schema=Schema(NestedField(1, "s", StringType())))
    assert client.list_tables(dotted) == [(*dotted, "t.x")] and client.list_tables(nested) == [(*nested, "t")]
    table = client.load_table((*dotted, "t.x"))
    table.append(pa.table({"id": pa.array([7], pa.int64())}))
    assert client.table_exists((*dotted, "t.x")) and not client.table_exists((*dotted, "t"))
    assert client.load_table((*dotted, "t.x")).scan().to_arrow()["id"].to_pylist() == [7]
    assert "%2E" in table.location()  # one folder: the dot escaped, not a level
    client.rename_table((*dotted, "t.x"), (*nested, "u.v"))
    assert client.list_tables(nested) == [(*nested, "t"), (*nested, "u.v")]
    client.drop_table((*nested, "u.v"))
    client.drop_table((*nested, "t"))
    client.drop_namespace(dotted)
    assert dotted not in client.list_namespaces()


def test_names_that_cannot_exist_are_not_found(served: Served) -> None:
    ns = unique("nf")
    served.rest().create_namespace(ns)
    for path in (f"/v1/namespaces/{ns}/tables/a%2Fb", f"/v1/namespaces/{ns}%1F%1Fx", f"/v1/namespaces/{ns}/tables/a.b.c"):
        assert requests.head(served.url + path, headers=served.headers(), timeout=60).status_code == 404, path
        assert get(served, path).status_code == 404, path
    with pytest.raises(NoSuchTableError):
        served.rest().load_table((ns, "x.y"))
    with pytest.raises(NoSuchNamespaceError):
        served.rest().list_tables((ns, "no.such"))


def test_listings_come_in_pages_without_loss_or_repeat(served: Served) -> None:
    client = served.rest()
    top = unique("pages")
    for i in range(7):
        client.create_namespace((top, f"n{i}"))
    client.create_namespace((top, "n3", "inner"))
    names = [f"t{i}" for i in range(11)]
    for name in names:
        client.create_table((top, "n0", name), schema=Schema(NestedField(1, "id", LongType())))
    paged = served.rest(**{"rest-page-size": "3"})
    assert paged.list_tables((top, "n0")) == [(top, "n0", n) for n in sorted(names)]
    assert paged.list_namespaces((top,)) == [(top, f"n{i}") for i in range(7)]
    # one page by hand: a token, then the rest; a table made in between is listed once
    first = get(served, f"/v1/namespaces/{top}%1Fn0/tables", pageSize="4").json()
    assert [t["name"] for t in first["identifiers"]] == sorted(names)[:4] and first["next-page-token"]
    client.create_table((top, "n0", "t00"), schema=Schema(NestedField(1, "id", LongType())))  # sorts before the token
    client.create_table((top, "n0", "zz"), schema=Schema(NestedField(1, "id", LongType())))  # after it
    rest = get(served, f"/v1/namespaces/{top}%1Fn0/tables", pageSize="100", pageToken=first["next-page-token"]).json()
    assert [t["name"] for t in rest["identifiers"]] == [*sorted(names)[4:], "zz"] and "next-page-token" not in rest
    # an empty token asks for pages (the server's size); a bad size or token is a 400
    assert "identifiers" in get(served, f"/v1/namespaces/{top}%1Fn0/tables", pageToken="").json()
    assert get(served, f"/v1/namespaces/{top}%1Fn0/tables", pageSize="0").status_code == 400
    assert get(served, f"/v1/namespaces/{top}%1Fn0/tables", pageToken="not-ours").status_code == 400


def post_commit(served: Served, ns: str, name: str, commit: TableCommit) -> dict[str, Any]:
    response = requests.post(
        f"{served.url}/v1/namespaces/{ns}/tables/{name}", data=json.dumps(commit.to_dict()), headers=served.headers(), timeout=60
    )
    assert response.status_code == 409, response.text
    error: dict[str, Any] = response.json()["error"]
    assert error["type"] == "CommitFailedException"
    return error


def test_conflicts_are_worded_as_iceberg_java_words_them(served: Served) -> None:
    ns = unique("words")
    # pyiceberg would refresh and retry an append on its own: see the 409 itself
    table = served.mor().create_table(f"{ns}.t", schema=SCHEMA, properties={"commit.retry.num-retries": "0"})
    table.append(pa.table({"id": pa.array([1], pa.int64())}))
    head = table.current_snapshot().snapshot_id
    uuid = table.metadata.table_uuid
    wrong_uuid = "00000000-0000-0000-0000-000000000000"
    cases = [
        (AssertCreate(), "Requirement failed: table already exists"),
        (AssertTableUuid(wrong_uuid), f"Requirement failed: UUID does not match: expected {uuid} != {wrong_uuid}"),
        (AssertRefSnapshotId("main", head + 1), f"Requirement failed: branch main has changed: expected id {head + 1} != {head}"),
        (AssertRefSnapshotId("main", None), "Requirement failed: branch main was created concurrently"),
        (AssertRefSnapshotId("dev", 5), "Requirement failed: branch or tag dev is missing, expected 5"),
        (AssertCurrentSchemaId(9), "Requirement failed: current schema changed: expected id 9 != 0"),
        (AssertLastAssignedFieldId(9), "Requirement failed: last assigned field id changed: expected id 9 != 1"),
        (AssertLastAssignedPartitionId(9), "Requirement failed: last assigned partition id changed: expected id 9 != 999"),
        (AssertDefaultSpecId(9), "Requirement failed: default partition spec changed: expected id 9 != 0"),
        (AssertDefaultSortOrderId(9), "Requirement failed: default sort order changed: expected id 9 != 0"),
    ]
    for requirement, message in cases:
        assert post_commit(served, ns, "t", TableCommit([requirement], [SetProperties({"k": "v"})]))["message"] == message
    stale = served.rest().load_table(f"{ns}.t")
    table.append(pa.table({"id": pa.array([2], pa.int64())}))
    with pytest.raises(CommitFailedException, match="Requirement failed: branch main has changed: expected id"):
        stale.append(pa.table({"id": pa.array([3], pa.int64())}, schema=SCHEMA))


def test_a_client_naming_another_warehouse_is_refused(served: Served) -> None:
    """Any name used to reach the same catalog; a typo must be an error, not a quiet success."""
    refused = get(served, "/v1/config", warehouse="wharehouse")
    assert refused.status_code == 400
    assert "does not serve warehouse 'wharehouse'" in refused.json()["error"]["message"]
    for name in (str(served.warehouse), served.warehouse.resolve().as_uri(), served.warehouse.name, ""):
        assert get(served, "/v1/config", warehouse=name).status_code == 200, name
    token = {"token": served.token} if served.token else {}
    with pytest.raises(mor.InvalidArgumentError, match="does not serve warehouse 'wharehouse'"):
        mor.load_catalog(uri=served.url, warehouse="wharehouse", properties=token)
    assert mor.load_catalog(uri=served.url, warehouse=served.warehouse.name, properties=token).list_namespaces() is not None


def test_a_location_outside_the_warehouse_is_a_policy_refusal(served: Served, tmp_path: Path) -> None:
    ours = mor.load_catalog(uri=served.url, properties={"token": served.token} if served.token else {})
    ns = unique("policy")
    ours.create_namespace(ns)
    with pytest.raises(mor.ForbiddenError, match="not inside the warehouse"):
        ours.create_table(f"{ns}.t", schema=SCHEMA, location=str(tmp_path / "elsewhere"))
    assert not ours.table_exists(f"{ns}.t") and not (tmp_path / "elsewhere").exists()
