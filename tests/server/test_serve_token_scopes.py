"""Scoped tokens against a running `mor serve` (one server for the module): a read-only token
reads and every write of it is 403 with nothing changed; a token scoped to namespaces sees and
touches only those (and the namespaces below them); an OAuth2 client's token carries its
line's scope; pyiceberg, a client no one here wrote, reads with a read-only token and gets its
own ForbiddenError when it appends. Raw HTTP where the request itself is the point. The
decisions one by one, in process: tests/unit/server/test_token_scopes.py."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import requests
from pyiceberg.exceptions import ForbiddenError
from servers.rest import Served, running_rest_server

import mor

ADMIN, READER, SALES = "admin-token-of-the-tests", "reader-token-of-the-tests", "sales-token-of-the-tests"
CLIENT_ID, CLIENT_SECRET = "dashboards", "pa55word-of-the-tests"
TOKEN_FILE = f"""# who may use the test server
{ADMIN}
{READER} read-only
{SALES} namespaces=sales,finance.eu
{CLIENT_ID}:{CLIENT_SECRET} read-only namespaces=sales   # the dashboards read sales only
"""
SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("s", pa.string())])
SCHEMA_JSON = {
    "type": "struct",
    "schema-id": 0,
    "fields": [{"id": 1, "name": "id", "type": "long", "required": False}, {"id": 2, "name": "s", "type": "string", "required": False}],
}
SET_K = {"requirements": [], "updates": [{"action": "set-properties", "updates": {"k": "v"}}]}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """The server, over tables sales.t, sales.eu.t, finance.eu.t, finance.us.t and hr.t (a row each)."""
    root = tmp_path_factory.mktemp("rest-scoped")
    (root / "tokens").write_text(TOKEN_FILE)
    warehouse = root / "warehouse"
    warehouse.mkdir()
    catalog = mor.load_catalog(warehouse)
    for namespace in ("sales", "sales.eu", "finance.eu", "finance.us", "hr"):
        catalog.create_table(f"{namespace}.t", schema=SCHEMA).append(pa.table({"id": [1], "s": [namespace]}, schema=SCHEMA))
    with running_rest_server(warehouse, token_file=root / "tokens") as server:
        yield Served(server, warehouse, None, ADMIN)


def send(served: Served, method: str, path: str, token: str, body: Any = None) -> requests.Response:
    data = None if body is None else json.dumps(body)
    return requests.request(method, served.url + path, data=data, headers={"Authorization": f"Bearer {token}"}, timeout=60)


def forbidden(response: requests.Response, *words: str) -> None:
    assert response.status_code == 403, (response.request.method, response.request.url, response.text)
    if response.request.method != "HEAD":
        error = response.json()["error"]
        assert error["type"] == "ForbiddenException" and error["code"] == 403
        assert all(w in error["message"] for w in words), error
        assert not any(secret in response.text for secret in (ADMIN, READER, SALES, CLIENT_SECRET))


def state(served: Served) -> dict[str, Any]:
    """What a write could change: namespaces and their properties, tables and their metadata files."""
    catalog = served.mor()
    namespaces = catalog.list_namespaces()
    tables = {t: catalog.load_table(t).metadata_location for n in namespaces for t in catalog.list_tables(n)}
    return {"namespaces": namespaces, "tables": tables, "views": [v for n in namespaces for v in catalog.list_views(n)]}


def identifier(namespace: str, name: str) -> dict[str, Any]:
    return {"namespace": namespace.split("."), "name": name}


def test_a_read_only_token_reads_and_every_write_is_refused_changing_nothing(served: Served) -> None:
    assert send(served, "GET", "/v1/namespaces", READER).json()["namespaces"] == [["finance"], ["hr"], ["sales"]]
    assert send(served, "GET", "/v1/namespaces/hr/tables", READER).json()["identifiers"] == [identifier("hr", "t")]
    assert send(served, "GET", "/v1/namespaces/hr/tables/t", READER).status_code == 200
    assert send(served, "HEAD", "/v1/namespaces/hr/tables/t", READER).status_code == 204
    before = state(served)
    hr_t = before["tables"]["hr.t"]
    rename = {"source": identifier("hr", "t"), "destination": identifier("hr", "u")}
    for method, path, body in [
        ("POST", "/v1/namespaces", {"namespace": ["new"]}),
        ("POST", "/v1/namespaces/hr/properties", {"updates": {"k": "v"}}),
        ("DELETE", "/v1/namespaces/finance%1Fus", None),
        ("POST", "/v1/namespaces/hr/tables", {"name": "u", "schema": SCHEMA_JSON}),
        ("POST", "/v1/namespaces/hr/tables", {"name": "u", "schema": SCHEMA_JSON, "stage-create": True}),
        ("POST", "/v1/namespaces/hr/tables/t", SET_K),
        ("POST", "/v1/transactions/commit", {"table-changes": [{"identifier": identifier("hr", "t"), **SET_K}]}),
        ("POST", "/v1/namespaces/hr/register", {"name": "u", "metadata-location": hr_t}),
        ("POST", "/v1/tables/rename", rename),
        ("DELETE", "/v1/namespaces/hr/tables/t", None),
        ("DELETE", "/v1/namespaces/hr/tables/t?purgeRequested=true", None),
        ("POST", "/v1/views/rename", rename),
    ]:
        forbidden(send(served, method, path, READER, body), "is refused", "read-only")
    assert state(served) == before
    assert Path(hr_t.removeprefix("file://")).exists() and served.mor().load_table("hr.t").scan().to_arrow().num_rows == 1


def test_pyiceberg_reads_with_a_read_only_token_and_its_append_is_forbidden(served: Served) -> None:
    client = served.rest(token=READER)
    assert ("sales",) in client.list_namespaces()
    table = client.load_table("finance.eu.t")
    assert table.scan().to_arrow().to_pylist() == [{"id": 1, "s": "finance.eu"}]
    before = state(served)
    with pytest.raises(ForbiddenError, match="read-only"):
        table.append(pa.table({"id": [2], "s": ["x"]}, schema=SCHEMA))
    with pytest.raises(ForbiddenError):
        client.create_namespace("from_pyiceberg")
    assert state(served) == before
    assert served.rest(token=ADMIN).load_table("finance.eu.t").scan().to_arrow().num_rows == 1


def test_a_scoped_token_sees_only_its_namespaces(served: Served) -> None:
    assert send(served, "GET", "/v1/namespaces", SALES).json()["namespaces"] == [["finance"], ["sales"]]
    assert send(served, "GET", "/v1/namespaces?parent=finance", SALES).json()["namespaces"] == [["finance", "eu"]]
    assert send(served, "GET", "/v1/namespaces?parent=sales", SALES).json()["namespaces"] == [["sales", "eu"]]
    assert send(served, "GET", "/v1/namespaces/sales%1Feu/tables", SALES).json()["identifiers"] == [identifier("sales.eu", "t")]
    assert send(served, "GET", "/v1/namespaces/finance%1Feu/tables/t", SALES).status_code == 200
    client = served.rest(token=SALES)
    assert sorted(client.list_namespaces()) == [("finance",), ("sales",)]
    assert client.list_namespaces("finance") == [("finance", "eu")]
    assert client.load_table("sales.eu.t").scan().to_arrow().num_rows == 1
    forbidden(send(served, "GET", "/v1/namespaces?parent=hr", SALES), "listing the namespaces under hr is refused")
    for method, path in [
        ("GET", "/v1/namespaces/hr/tables/t"),
        ("HEAD", "/v1/namespaces/hr/tables/t"),
        ("GET", "/v1/namespaces/hr/tables"),
        ("GET", "/v1/namespaces/finance%1Fus/tables"),
        ("GET", "/v1/namespaces/finance"),  # a level above its own is for listing only
        ("HEAD", "/v1/namespaces/no_such_namespace"),  # 403 too: the answer never depends on what exists
    ]:
        forbidden(send(served, method, path, SALES), "is outside this token's namespaces (sales, finance.eu)")
    with pytest.raises(ForbiddenError):
        client.load_table("hr.t")


def test_a_scoped_token_writes_only_inside_its_namespaces(served: Served) -> None:
    before = state(served)
    for method, path, body in [
        ("POST", "/v1/namespaces", {"namespace": ["finance"]}),
        ("POST", "/v1/namespaces", {"namespace": ["hr", "sub"]}),
        ("POST", "/v1/namespaces/hr/tables", {"name": "u", "schema": SCHEMA_JSON}),
        ("POST", "/v1/namespaces/hr/tables/t", SET_K),
        ("POST", "/v1/namespaces/finance%1Fus/properties", {"updates": {"k": "v"}}),
        ("DELETE", "/v1/namespaces/hr/tables/t?purgeRequested=true", None),
        ("POST", "/v1/tables/rename", {"source": identifier("sales", "t"), "destination": identifier("hr", "t2")}),  # out of scope
        ("POST", "/v1/tables/rename", {"source": identifier("hr", "t"), "destination": identifier("sales", "t2")}),  # into scope
        (
            "POST",
            "/v1/transactions/commit",
            {"table-changes": [{"identifier": identifier("sales", "t"), **SET_K}, {"identifier": identifier("hr", "t"), **SET_K}]},
        ),  # fmt: skip
    ]:
        forbidden(send(served, method, path, SALES, body), "namespace", "outside this token's namespaces")
    assert state(served) == before
    assert "k" not in served.mor().load_table("sales.t").properties
    # inside: a namespace below its own, a table there, a commit, a rename, a transaction, a drop
    assert send(served, "POST", "/v1/namespaces", SALES, {"namespace": ["sales", "apac"]}).status_code == 200
    assert send(served, "POST", "/v1/namespaces/sales%1Fapac/tables", SALES, {"name": "u", "schema": SCHEMA_JSON}).status_code == 200
    assert send(served, "POST", "/v1/namespaces/sales%1Fapac/tables/u", SALES, SET_K).status_code == 200
    rename = {"source": identifier("sales.apac", "u"), "destination": identifier("finance.eu", "u")}
    assert send(served, "POST", "/v1/tables/rename", SALES, rename).status_code == 204
    transaction = {
        "table-changes": [{"identifier": identifier("finance.eu", "u"), **SET_K}, {"identifier": identifier("sales.eu", "t"), **SET_K}]
    }
    assert send(served, "POST", "/v1/transactions/commit", SALES, transaction).status_code == 204
    assert served.mor().load_table("sales.eu.t").properties["k"] == "v"
    assert send(served, "DELETE", "/v1/namespaces/finance%1Feu/tables/u", SALES).status_code == 204
    assert send(served, "DELETE", "/v1/namespaces/sales%1Fapac", SALES).status_code == 204
    assert state(served)["namespaces"] == before["namespaces"]


def test_an_oauth2_clients_token_carries_its_scope(served: Served) -> None:
    form = {"grant_type": "client_credentials", "client_id": CLIENT_ID, "client_secret": CLIENT_SECRET, "scope": "catalog"}
    token = requests.post(served.url + "/v1/oauth/tokens", data=form, timeout=60).json()["access_token"]
    exchange = {"grant_type": "urn:ietf:params:oauth:grant-type:token-exchange", "subject_token": token,
                "subject_token_type": "urn:ietf:params:oauth:token-type:access_token"}  # fmt: skip
    exchanged = requests.post(served.url + "/v1/oauth/tokens", data=exchange, timeout=60).json()["access_token"]
    for bearer in (token, exchanged):
        assert send(served, "GET", "/v1/namespaces", bearer).json()["namespaces"] == [["sales"]]
        assert send(served, "GET", "/v1/namespaces/sales%1Feu/tables/t", bearer).status_code == 200
        forbidden(send(served, "GET", "/v1/namespaces/finance%1Feu/tables/t", bearer), "namespace finance.eu is outside")
        forbidden(send(served, "POST", "/v1/namespaces/sales/tables/t", bearer, SET_K), "read-only")
    client = served.rest(credential=f"{CLIENT_ID}:{CLIENT_SECRET}", **{"oauth2-server-uri": served.url + "/v1/oauth/tokens"})
    assert client.list_namespaces() == [("sales",)]
    table = client.load_table("sales.t")
    assert table.scan().to_arrow().num_rows == 1
    with pytest.raises(ForbiddenError):
        table.append(pa.table({"id": [2], "s": ["x"]}, schema=SCHEMA))
    with pytest.raises(ForbiddenError):
        client.load_table("hr.t")


def test_a_malformed_token_file_is_refused_before_serving(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text(f"{ADMIN}\n{READER} read-only namespaces=sales namespace=hr\n")
    command = [sys.executable, "-m", "mor", "serve", "--warehouse", str(tmp_path / "w"), "--port", "0", "--token-file", str(tokens)]
    # a process with a deadline: a server that took the line would serve until stopped
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done
    assert "line 2: unknown option 'namespace'" in done.stderr and READER not in done.stderr
    assert done.stdout == "" and not (tmp_path / "w").exists()
