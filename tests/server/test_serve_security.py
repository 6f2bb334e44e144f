"""What `mor serve` refuses: requests without an accepted token (401, nothing changed), locations
outside the warehouse (403, nothing written), malformed, oversized and badly named requests
(the spec's ErrorModel, never a traceback). Raw HTTP, as an attacker would send it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import requests
from pyiceberg.exceptions import OAuthError
from servers.rest import Served, running_rest_server, unique

from mor.cli import main
from mor.server.app import MAX_BODY_BYTES
from mor.server.auth import client_token

TOKEN = "s3cret-token-of-the-tests"
CLIENT_ID, CLIENT_SECRET = "reader", "pa55word"
SCHEMA_JSON = {
    "type": "struct",
    "schema-id": 0,
    "fields": [{"id": 1, "name": "id", "type": "long", "required": True}, {"id": 2, "name": "s", "type": "string", "required": False}],
}


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("rest-secured")
    token_file = root / "tokens"
    token_file.write_text(f"# who may use the test server\n{TOKEN}\n\n{CLIENT_ID}:{CLIENT_SECRET}\n")
    warehouse = root / "warehouse"
    with running_rest_server(warehouse, token_file=token_file) as server:
        yield Served(server, warehouse, None, TOKEN)


def send(served: Served, method: str, path: str, body: Any = None, token: str | None = "default", **kwargs: Any) -> requests.Response:
    headers = dict(kwargs.pop("headers", {}))
    if token == "default":
        headers.update(served.headers())
    elif token is not None:
        headers["Authorization"] = f"Bearer {token}"
    if body is not None and not isinstance(body, (bytes, str)):
        body = json.dumps(body)
    return requests.request(method, served.url + path, data=body, headers=headers, timeout=60, **kwargs)


def error_of(response: requests.Response, status: int, type_: str | None = None) -> str:
    """The ErrorModel's message, after checking the status, the code and the type."""
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["code"] == status and set(error) >= {"message", "type", "code"}
    if type_ is not None:
        assert error["type"] == type_
    assert "Traceback" not in response.text
    return str(error["message"])


# -- authentication ----------------------------------------------------------------------------


@pytest.mark.parametrize("token", [None, "wrong", TOKEN[:-1], ""])
def test_requests_without_an_accepted_token_are_refused_and_change_nothing(secured: Served, token: str | None) -> None:
    ns = unique("ns")
    for method, path, body in [
        ("GET", "/v1/config", None),
        ("GET", "/v1/namespaces", None),
        ("POST", "/v1/namespaces", {"namespace": [ns]}),
        ("DELETE", "/v1/namespaces/x", None),
        ("POST", "/v1/transactions/commit", {"table-changes": []}),
        ("GET", "/v1/no/such/route", None),
    ]:
        response = send(secured, method, path, body, token=token)
        error_of(response, 401, "NotAuthorizedException")
        assert response.headers["www-authenticate"] == "Bearer"
    assert ns not in secured.mor().list_namespaces()
    # a Basic header or another scheme is no bearer token either
    response = send(secured, "GET", "/v1/namespaces", token=None, headers={"Authorization": f"Basic {TOKEN}"})
    error_of(response, 401)


def test_the_token_opens_every_route(secured: Served) -> None:
    assert send(secured, "GET", "/v1/config").status_code == 200
    assert send(secured, "GET", "/v1/namespaces").status_code == 200


def test_pyiceberg_with_token_and_with_oauth2_credentials(secured: Served) -> None:
    ns = unique("ns")
    secured.rest().create_namespace(ns)
    token_uri = secured.url + "/v1/oauth/tokens"
    for credential in (TOKEN, f"{CLIENT_ID}:{CLIENT_SECRET}", f"anyone:{TOKEN}"):
        client = secured.rest(credential=credential, **{"oauth2-server-uri": token_uri})
        assert (ns,) in client.list_namespaces()
    for credential in ("wrong", f"{CLIENT_ID}:wrong", f"someone:{CLIENT_SECRET}"):
        with pytest.raises(OAuthError):
            secured.rest(credential=credential, **{"oauth2-server-uri": token_uri})


def test_oauth_token_endpoint(secured: Served) -> None:
    form = {"grant_type": "client_credentials", "client_id": CLIENT_ID, "client_secret": CLIENT_SECRET, "scope": "catalog"}
    answer = requests.post(secured.url + "/v1/oauth/tokens", data=form, timeout=60)
    assert answer.status_code == 200
    body = answer.json()
    assert body["token_type"] == "bearer" and body["expires_in"] > 0
    assert body["issued_token_type"] == "urn:ietf:params:oauth:token-type:access_token"
    assert body["access_token"] == client_token(CLIENT_ID, CLIENT_SECRET) != CLIENT_SECRET
    assert send(secured, "GET", "/v1/namespaces", token=body["access_token"]).status_code == 200
    # credentials in a Basic header, as pyiceberg's OAuth2AuthManager sends them
    basic = requests.post(
        secured.url + "/v1/oauth/tokens", data={"grant_type": "client_credentials"}, auth=(CLIENT_ID, CLIENT_SECRET), timeout=60
    )
    assert basic.json()["access_token"] == body["access_token"]
    # a token exchange of an accepted token (Iceberg Java's refresh) gives it back
    exchange = {"grant_type": "urn:ietf:params:oauth:grant-type:token-exchange", "subject_token": TOKEN,
                "subject_token_type": "urn:ietf:params:oauth:token-type:access_token"}  # fmt: skip
    assert requests.post(secured.url + "/v1/oauth/tokens", data=exchange, timeout=60).json()["access_token"] == TOKEN
    for bad, status, code in [
        ({**form, "client_secret": "nope"}, 401, "invalid_client"),
        ({**form, "grant_type": "password"}, 400, "unsupported_grant_type"),
        ({"grant_type": "client_credentials"}, 400, "invalid_request"),
        ({**exchange, "subject_token": "forged"}, 401, "invalid_grant"),
    ]:
        answer = requests.post(secured.url + "/v1/oauth/tokens", data=bad, timeout=60)
        assert (answer.status_code, answer.json()["error"]) == (status, code)


# -- locations ---------------------------------------------------------------------------------


def test_create_outside_the_warehouse_is_forbidden(secured: Served, tmp_path: Path) -> None:
    ns = unique("ns")
    secured.rest().create_namespace(ns)
    outside = tmp_path / "elsewhere"
    inside_then_out = f"{secured.warehouse}/{ns}.db/../../{tmp_path.name}/x"
    for location in (str(outside), f"file://{outside}", inside_then_out, f"file://{secured.warehouse}/%2E%2E/x",
                     str(secured.warehouse), "s3://bucket/t", "hdfs://nn/t"):  # fmt: skip
        body = {"name": "t", "schema": SCHEMA_JSON, "location": location}
        error_of(send(secured, "POST", f"/v1/namespaces/{ns}/tables", body), 403, "ForbiddenException")
        body["stage-create"] = True
        error_of(send(secured, "POST", f"/v1/namespaces/{ns}/tables", body), 403)
    error_of(send(secured, "POST", f"/v1/namespaces/{ns}/tables", {"name": "t", "schema": SCHEMA_JSON, "location": "rel/x"}), 400)
    assert not outside.exists()
    assert secured.mor().list_tables(ns) == []
    # through a symbolic link inside the warehouse that leads out
    (secured.warehouse / "link").symlink_to(tmp_path)
    body = {"name": "t", "schema": SCHEMA_JSON, "location": f"{secured.warehouse}/link/t"}
    error_of(send(secured, "POST", f"/v1/namespaces/{ns}/tables", body), 403)
    assert list(tmp_path.iterdir()) == []


def test_register_outside_the_warehouse_is_forbidden(secured: Served, tmp_path: Path) -> None:
    ns = unique("ns")
    client = secured.rest()
    client.create_namespace(ns)
    table = client.create_table(f"{ns}.t", schema=pa.schema([pa.field("id", pa.int64())]))
    metadata_file = Path(table.metadata_location.removeprefix("file://"))
    copied = tmp_path / metadata_file.name
    copied.write_bytes(metadata_file.read_bytes())
    body = {"name": "r", "metadata-location": str(copied)}
    error_of(send(secured, "POST", f"/v1/namespaces/{ns}/register", body), 403, "ForbiddenException")
    # a metadata file inside the warehouse naming a table location outside it
    metadata = json.loads(metadata_file.read_text())
    metadata["location"] = f"file://{tmp_path}/t"
    lured = metadata_file.parent / "lured.metadata.json"
    lured.write_text(json.dumps(metadata))
    error_of(send(secured, "POST", f"/v1/namespaces/{ns}/register", {"name": "r", "metadata-location": str(lured)}), 403)
    # not metadata at all
    junk = metadata_file.parent / "junk.metadata.json"
    junk.write_text("{}")
    error_of(send(secured, "POST", f"/v1/namespaces/{ns}/register", {"name": "r", "metadata-location": str(junk)}), 400)
    assert client.list_tables(ns) == [(ns, "t")]


def test_set_location_outside_the_warehouse_is_forbidden(secured: Served, tmp_path: Path) -> None:
    ns = unique("ns")
    client = secured.rest()
    client.create_namespace(ns)
    before = client.create_table(f"{ns}.t", schema=pa.schema([pa.field("id", pa.int64())])).metadata_location
    commit = {"requirements": [], "updates": [{"action": "set-location", "location": f"file://{tmp_path}"}]}
    error_of(send(secured, "POST", f"/v1/namespaces/{ns}/tables/t", commit), 403)
    assert client.load_table(f"{ns}.t").metadata_location == before
    assert list(tmp_path.iterdir()) == []


# -- malformed requests ------------------------------------------------------------------------


def test_malformed_bodies_get_an_error_model(secured: Served) -> None:
    ns = unique("ns")
    secured.rest().create_namespace(ns)
    for body in (b"{not json", b"[1, 2]", b"\xff\xfe", b"", b"[" * 100_000 + b"]" * 100_000):
        error_of(send(secured, "POST", "/v1/namespaces", body), 400, "BadRequestException")
        error_of(send(secured, "POST", f"/v1/namespaces/{ns}/tables", body), 400)
    for body in (
        {"namespace": "flat"},
        {"namespace": []},
        {"namespace": [ns + "2"], "properties": {"k": 1}},
        {"namespace": [ns + "2"], "properties": {"exists": "false"}},
    ):
        error_of(send(secured, "POST", "/v1/namespaces", body), 400)
    for body in ({"name": "t"}, {"name": "t", "schema": {"type": "struct", "fields": "x"}}, {"name": 5, "schema": SCHEMA_JSON},
                 {"name": "t", "schema": SCHEMA_JSON, "properties": {"format-version": "4"}},
                 {"name": "t", "schema": SCHEMA_JSON,
                  "partition-spec": {"fields": [{"source-id": 9, "name": "p", "transform": "identity"}]}}):  # fmt: skip
        error_of(send(secured, "POST", f"/v1/namespaces/{ns}/tables", body), 400)
    error_of(send(secured, "DELETE", f"/v1/namespaces/{ns}/tables/t?purgeRequested=maybe"), 400)
    error_of(send(secured, "PUT", "/v1/namespaces"), 405)
    error_of(send(secured, "POST", f"/v1/namespaces/{ns}/properties", {"updates": {"a": "1"}, "removals": ["a"]}), 422)
    assert secured.mor().list_tables(ns) == []


def test_oversized_body_is_413(secured: Served) -> None:
    ns = unique("ns")
    body = json.dumps({"namespace": [ns], "properties": {"pad": "x" * MAX_BODY_BYTES}})
    error_of(send(secured, "POST", "/v1/namespaces", body), 413, "PayloadTooLargeException")
    assert ns not in secured.mor().list_namespaces()
    assert send(secured, "GET", "/v1/namespaces").status_code == 200  # and the server is fine


@pytest.mark.parametrize(
    "namespace, table",
    [
        ("a%2Fb", None),  # '/' in a level
        ("..%2F..%2Fetc", None),
        ("a%00b", None),  # control characters
        ("a%0Ab", None),
        ("a%1F", None),  # an empty level
        ("ok", "x%2Fy"),
        ("ok", "x%01"),
        ("ok", "%20"),
    ],
)
def test_bad_identifiers_are_400(secured: Served, namespace: str, table: str | None) -> None:
    before = (secured.mor().list_namespaces(), sorted(p.name for p in secured.warehouse.iterdir()))
    if table is None:
        levels = namespace.replace("%2F", "/").replace("%00", "\x00").replace("%0A", "\n").replace("%1F", "\x1f").split("\x1f")
        error_of(send(secured, "POST", "/v1/namespaces", {"namespace": levels}), 400)
        error_of(send(secured, "POST", f"/v1/namespaces/{namespace}/tables", {"name": "t", "schema": SCHEMA_JSON}), 400)
    else:
        send(secured, "POST", "/v1/namespaces", {"namespace": [namespace]})
        name = table.replace("%2F", "/").replace("%01", "\x01").replace("%20", " ")
        error_of(send(secured, "POST", f"/v1/namespaces/{namespace}/tables", {"name": name, "schema": SCHEMA_JSON}), 400)
        rename = {"source": {"namespace": [namespace], "name": "t"}, "destination": {"namespace": [namespace], "name": name}}
        error_of(send(secured, "POST", "/v1/tables/rename", rename), 400)
        error_of(send(secured, "GET", f"/v1/namespaces/{namespace}/tables/{table}"), 404)  # a lookup: no such table
    after = (secured.mor().list_namespaces(), sorted(p.name for p in secured.warehouse.iterdir()))
    assert [n for n in after[0] if n not in before[0]] in ([], ["ok"])
    assert [p for p in after[1] if p not in before[1]] == []


# -- binding -----------------------------------------------------------------------------------


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.1", "example.com"])
def test_without_tokens_only_loopback_is_served(tmp_path: Path, host: str, capsys: pytest.CaptureFixture[str]) -> None:
    # refused before anything binds, so in process
    assert main(["serve", "--warehouse", str(tmp_path / "w"), "--host", host, "--port", "0"]) == 2
    out, err = capsys.readouterr()
    assert "refusing to serve" in err and "--token-file" in err
    assert out == ""  # never listened
    assert not (tmp_path / "w").exists()  # nor made a warehouse


def test_an_empty_token_file_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "tokens"
    empty.write_text("# nothing but a comment\n\n")
    assert main(["serve", "--warehouse", str(tmp_path / "w"), "--port", "0", "--token-file", str(empty)]) == 2
    assert "holds no token" in capsys.readouterr().err


def test_the_log_says_whether_requests_are_authenticated(secured: Served, tmp_path: Path) -> None:
    with running_rest_server(tmp_path / "w") as open_server:
        assert "WITHOUT authentication" in open_server.log()
    assert "WITHOUT authentication" not in secured.server.log()
