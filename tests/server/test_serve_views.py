"""Views through `mor serve`: pyiceberg's RestCatalog creates, lists (in pages), loads and drops
them; a replace is a view commit with its requirement; rename; names shared with tables are
refused; mor's own catalog over the same database reads what the server wrote. (Iceberg Java
through the server: tests/interop/test_rest_java.py.)"""

from __future__ import annotations

import json
from typing import Any

import pytest
import requests
from pyiceberg.exceptions import NoSuchViewError, ViewAlreadyExistsError
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType
from pyiceberg.view.metadata import SQLViewRepresentation, ViewRepresentation, ViewVersion
from servers.rest import Served, unique

SCHEMA = Schema(NestedField(1, "id", LongType()), NestedField(2, "name", StringType()))


def version(sql: str, namespace: str) -> ViewVersion:
    return ViewVersion(
        schema_id=0, representations=[ViewRepresentation(SQLViewRepresentation(type="sql", sql=sql, dialect="spark"))],
        default_namespace=[namespace],
    )  # fmt: skip


def send(served: Served, method: str, path: str, body: Any = None) -> requests.Response:
    data = None if body is None else json.dumps(body)
    return requests.request(method, served.url + path, data=data, headers=served.headers(), timeout=60)


def test_views_through_pyiceberg_and_mor(served: Served) -> None:
    client = served.rest(**{"rest-page-size": "2"})
    ns = unique("views")
    client.create_namespace(ns)
    client.create_table(f"{ns}.t", schema=SCHEMA)
    created = client.create_view(f"{ns}.v", SCHEMA, version(f"SELECT * FROM {ns}.t", ns), properties={"comment": "all rows"})
    for i in range(3):
        client.create_view(f"{ns}.w{i}", SCHEMA, version(f"SELECT id FROM {ns}.t WHERE id > {i}", ns))
    assert client.list_views(ns) == [(ns, n) for n in ("v", "w0", "w1", "w2")]  # four views, in pages of two
    assert client.list_tables(ns) == [(ns, "t")]
    assert client.view_exists(f"{ns}.v") and not client.view_exists(f"{ns}.t") and not client.table_exists(f"{ns}.v")
    loaded = client.load_view(f"{ns}.v")
    assert loaded.metadata.view_uuid == created.metadata.view_uuid
    assert loaded.metadata.versions[0].representations[0].root.sql == f"SELECT * FROM {ns}.t"
    assert loaded.metadata.properties == {"comment": "all rows"}
    with pytest.raises(ViewAlreadyExistsError):
        client.create_view(f"{ns}.v", SCHEMA, version("SELECT 1", ns))
    with pytest.raises(ViewAlreadyExistsError):
        client.create_view(f"{ns}.t", SCHEMA, version("SELECT 1", ns))  # a table's name

    ours = served.mor().load_view(f"{ns}.v")
    assert ours.sql() == f"SELECT * FROM {ns}.t" and ours.schema.column_names == ["id", "name"]
    assert ours.metadata.view_uuid == loaded.metadata.view_uuid

    # CREATE OR REPLACE: a commit adding a version, asserting the view's uuid
    replace = {
        "requirements": [{"type": "assert-view-uuid", "uuid": created.metadata.view_uuid}],
        "updates": [
            {"action": "add-schema", "schema": {"type": "struct", "schema-id": 1,
                                                "fields": [{"id": 1, "name": "id", "type": "long", "required": False}]}},
            {"action": "add-view-version", "view-version": {"version-id": 2, "schema-id": -1, "timestamp-ms": 1, "summary": {},
             "representations": [{"type": "sql", "sql": f"SELECT id FROM {ns}.t", "dialect": "spark"}], "default-namespace": [ns]}},
            {"action": "set-current-view-version", "view-version-id": -1},
        ],
    }  # fmt: skip
    answer = send(served, "POST", f"/v1/namespaces/{ns}/views/v", replace)
    assert answer.status_code == 200, answer.text
    assert served.mor().load_view(f"{ns}.v").sql() == f"SELECT id FROM {ns}.t"
    assert [e.version_id for e in client.load_view(f"{ns}.v").metadata.version_log] == [1, 2]
    wrong = {**replace, "requirements": [{"type": "assert-view-uuid", "uuid": "00000000-0000-0000-0000-000000000000"}]}
    conflict = send(served, "POST", f"/v1/namespaces/{ns}/views/v", wrong)
    assert conflict.status_code == 409 and conflict.json()["error"]["message"].startswith("Requirement failed: view UUID does not match")

    rename = {"source": {"namespace": [ns], "name": "w0"}, "destination": {"namespace": [ns], "name": "renamed"}}
    assert send(served, "POST", "/v1/views/rename", rename).status_code == 204
    assert client.view_exists(f"{ns}.renamed") and not client.view_exists(f"{ns}.w0")
    client.drop_view(f"{ns}.renamed")
    with pytest.raises(NoSuchViewError):
        client.drop_view(f"{ns}.renamed")
    with pytest.raises(NoSuchViewError):
        client.load_view(f"{ns}.renamed")
    assert send(served, "HEAD", f"/v1/namespaces/{ns}/views/renamed").status_code == 404
    assert served.mor().list_views(ns) == [f"{ns}.{n}" for n in ("v", "w1", "w2")]


def test_views_through_mors_rest_client(served: Served) -> None:
    """mor's own REST client has the SQL catalog's view verbs, the server keeping the views."""
    import pyarrow as pa

    import mor

    client = mor.load_catalog(uri=served.url, properties={"token": served.token} if served.token else {})
    ns = unique("mviews")
    client.create_table(f"{ns}.t", schema=pa.schema([("id", pa.int64())]))
    view = client.create_view(f"{ns}.v", "SELECT id FROM t", pa.schema([("id", pa.int64())]), properties={"owner": "ana"})
    assert view.sql() == "SELECT id FROM t" and view.properties == {"owner": "ana"}
    assert client.list_views(ns) == [f"{ns}.v"] and client.view_exists(f"{ns}.v") and not client.view_exists(f"{ns}.t")
    replaced = client.replace_view(f"{ns}.v", "SELECT id FROM t WHERE id > 0", pa.schema([("id", pa.int64())]))
    assert replaced.sql() == "SELECT id FROM t WHERE id > 0" and [v.version_id for v in replaced.metadata.versions] == [1, 2]
    assert served.mor().load_view(f"{ns}.v").sql() == "SELECT id FROM t WHERE id > 0"
    with pytest.raises(mor.ViewAlreadyExistsError):
        client.create_view(f"{ns}.t", "SELECT 1", pa.schema([("x", pa.int32())]))
    moved = client.rename_view(f"{ns}.v", f"{ns}.w")
    assert moved.metadata.view_uuid == view.metadata.view_uuid
    client.drop_view(f"{ns}.w")
    with pytest.raises(mor.NoSuchViewError):
        client.load_view(f"{ns}.w")
    with pytest.raises(mor.NoSuchViewError):
        client.drop_view(f"{ns}.w")
