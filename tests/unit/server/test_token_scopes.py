"""Scoped tokens (mor/server/auth.py): the token file's options, the grant each token carries
(also one an OAuth2 client obtains or exchanges), and what the server decides with it, through
the ASGI application in process (no network, no server process). The same against a running
`mor serve` with real clients: tests/server/test_serve_token_scopes.py."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlencode

import pyarrow as pa
import pytest

import mor
from mor.errors import ForbiddenError, InvalidArgumentError
from mor.server.app import create_app
from mor.server.auth import EVERYTHING, Grant, Tokens, client_token, token_response
from mor.server.credentials import CredentialVendor, session_policy
from mor.server.routes import Service, path_namespace

ADMIN, READER, SALES = "admin-token", "reader-token", "sales-token"
TOKEN_FILE = f"""# who may do what
{ADMIN}
{READER} read-only
{SALES} namespaces=sales,finance.eu   # a team's two namespaces
dashboards:pa55word read-only namespaces=sales
"""
SCHEMA = pa.schema([pa.field("id", pa.int64())])
SCHEMA_JSON = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "type": "long", "required": False}]}


# -- the token file ----------------------------------------------------------------------------


def test_options_give_each_token_its_grant() -> None:
    tokens = Tokens.parse(TOKEN_FILE)
    assert tokens.grant(ADMIN) == EVERYTHING == Grant(read_only=False, namespaces=None)
    assert tokens.grant(READER) == Grant(read_only=True)
    assert tokens.grant(SALES) == Grant(namespaces=("sales", "finance.eu"))
    assert tokens.grant(client_token("dashboards", "pa55word")) == Grant(read_only=True, namespaces=("sales",))
    assert tokens.grant("pa55word") is None  # a client's secret is no bearer token
    assert tokens.grant("") is None and tokens.grant(ADMIN[:-1]) is None


def test_options_come_in_any_order_and_namespaces_are_written_as_users_write_them() -> None:
    tokens = Tokens.parse("t1 namespaces=a%2Eb.c,x%2Cy,50%25,a%2Eb.c read-only\nt2\tnamespaces=s%20p")
    # "a%2Eb.c": the level "a.b", then "c" (mor spells the level a%2Eb); "x%2Cy": the level "x,y"
    assert tokens.grant("t1") == Grant(read_only=True, namespaces=("a%2Eb.c", "x,y", "50%25"))
    assert tokens.grant("t2") == Grant(namespaces=("s p",))


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ("tok read-onyl", "unknown option 'read-onyl'"),
        ("tok readonly=true", "unknown option 'readonly'"),
        ("tok read-only read-only", "option 'read-only' is given twice"),
        ("tok namespaces=a namespaces=b", "option 'namespaces' is given twice"),
        ("tok read-only=yes", "read-only takes no value"),
        ("tok namespaces", "namespaces needs a value"),
        ("tok namespaces=", "namespaces= holds ''"),
        ("tok namespaces=a,,b", "namespaces= holds ''"),
        ("tok namespaces=a..b", "namespaces= holds 'a..b'"),
        ("tok namespaces=.a", "namespaces= holds '.a'"),
        ("tok namespaces=a/b", "namespaces= holds 'a/b'"),
        ("tok namespaces=a%2Fb", "namespaces= holds 'a%2Fb'"),
        ("tok namespaces=%FF", "namespaces= holds '%FF'"),
        ("tok namespaces=%20", "namespaces= holds '%20'"),
        (":secret read-only", "CLIENT_ID:SECRET, both non-empty"),
        ("client: read-only", "CLIENT_ID:SECRET, both non-empty"),
    ],
)
def test_a_malformed_line_is_refused_naming_it(line: str, words: str) -> None:
    with pytest.raises(InvalidArgumentError, match="tokens line 3: ") as refused:
        Tokens.parse(f"# comment\n{ADMIN}\n{line}\n", "tokens")
    assert words in str(refused.value)
    assert "secret" not in str(refused.value).replace("CLIENT_ID:SECRET", "")  # never the secret


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("tok\ntok read-only", "lines 1 and 2 give the same token"),
        ("tok namespaces=a\nother\ntok namespaces=a", "lines 1 and 3 give the same token"),
        ("c:one\nc:two read-only", "lines 1 and 2 give the same client id"),
        ("c:shared read-only\nshared", "lines 1 and 2 give the same secret"),
        (f"c:s namespaces=a\n{client_token('c', 's')}", "lines 1 and 2 give the same token"),
    ],
)
def test_a_token_on_two_lines_is_refused(text: str, words: str) -> None:
    with pytest.raises(InvalidArgumentError, match=words):
        Tokens.parse(text, "tokens")


def test_a_file_of_comments_only_holds_no_token(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError, match="holds no token"):
        Tokens.parse("# nobody\n\n   # yet\n")
    (tmp_path / "tokens").write_text("two:clients\nshare:clients read-only\n")  # one secret for two ids is no ambiguity
    tokens = Tokens.from_file(tmp_path / "tokens")
    assert tokens.grant(client_token("share", "clients")) == Grant(read_only=True)


def test_secrets_stay_out_of_reprs() -> None:
    text = repr(Tokens.parse(TOKEN_FILE))
    assert not any(secret in text for secret in (ADMIN, READER, SALES, "pa55word", client_token("dashboards", "pa55word")))


# -- grants of headers and of the token endpoint ------------------------------------------------


def test_the_grant_of_an_authorization_header() -> None:
    tokens = Tokens.parse(TOKEN_FILE)
    assert tokens.grant_of_header(f"Bearer {READER}") == Grant(read_only=True)
    assert tokens.grant_of_header(f"bearer   {SALES} ") == Grant(namespaces=("sales", "finance.eu"))
    for header in (None, "", "Bearer", f"Basic {ADMIN}", f"Bearer {ADMIN}x", ADMIN):
        assert tokens.grant_of_header(header) is None


def test_an_oauth2_client_gets_a_token_with_its_lines_grant_and_exchanging_keeps_it() -> None:
    tokens = Tokens.parse(TOKEN_FILE)
    form = urlencode({"grant_type": "client_credentials", "client_id": "dashboards", "client_secret": "pa55word"}).encode()
    token = token_response(tokens, form, None)["access_token"]
    assert tokens.grant(token) == Grant(read_only=True, namespaces=("sales",))
    exchange = urlencode({"grant_type": "urn:ietf:params:oauth:grant-type:token-exchange", "subject_token": token}).encode()
    exchanged = token_response(tokens, exchange, None)["access_token"]
    assert tokens.grant(exchanged) == Grant(read_only=True, namespaces=("sales",))
    # a bearer token used as a client secret (any id) is given itself, with its own grant
    form = urlencode({"grant_type": "client_credentials", "client_id": "anyone", "client_secret": SALES}).encode()
    assert tokens.grant(token_response(tokens, form, None)["access_token"]) == Grant(namespaces=("sales", "finance.eu"))


# -- decisions ---------------------------------------------------------------------------------


def test_a_namespace_covers_those_below_it_level_by_level() -> None:
    grant = Grant(namespaces=("sales", "finance.eu"))
    assert all(grant.covers(n) for n in ("sales", "sales.eu", "sales.eu.q1", "finance.eu", "finance.eu.de"))
    assert not any(grant.covers(n) for n in ("salesforce", "sales%2Eeu", "finance", "finance.us", "finance.eur", "hr"))
    assert grant.may_list("finance") and grant.may_list("sales.eu") and not grant.may_list("fin") and not grant.may_list("hr")
    assert EVERYTHING.covers("anything") and EVERYTHING.may_list("anything")


def test_refusals_say_what_and_why() -> None:
    Grant(namespaces=("sales",)).check_write("POST /v1/namespaces")  # writing in scope is fine
    with pytest.raises(ForbiddenError, match=r"^DELETE /v1/namespaces/x is refused: it writes, and this token is read-only$"):
        Grant(read_only=True).check_write("DELETE /v1/namespaces/x")
    grant = Grant(namespaces=("sales", "finance.eu"))
    grant.check_namespaces(["sales.eu", "finance.eu"], "POST /v1/tables/rename")
    with pytest.raises(
        ForbiddenError, match=r"rename is refused: namespace finance is outside this token's namespaces \(sales, finance.eu\)"
    ):
        grant.check_namespaces(["sales", "finance"], "POST /v1/tables/rename")
    with pytest.raises(ForbiddenError, match="listing the namespaces under hr is refused"):
        grant.check_listing("hr")


def test_every_post_and_delete_writes_but_a_metrics_report_and_every_operation_names_its_namespaces(tmp_path: Path) -> None:
    service = Service(mor.load_catalog(tmp_path, create=True))
    for path, ops in service.routes().items():
        for method, op in ops.items():
            assert op.writes == (method in ("POST", "DELETE") and not path.endswith("/metrics")), (method, path)
            if "{namespace}" in path:
                assert op.touches is path_namespace, (method, path)
            else:  # from the body, or (listing namespaces) filtered by the handler
                assert (op.touches is None) == (path == "namespaces" and method == "GET"), (method, path)


def test_a_read_only_token_is_vended_nothing_that_writes() -> None:
    server = {"s3.endpoint": "http://127.0.0.1:9000", "s3.access-key-id": "admin", "s3.secret-access-key": "secret", "s3.region": "r"}
    reading = CredentialVendor(server).read_only()
    assert reading.config("s3://b/wh/t") == {"s3.endpoint": "http://127.0.0.1:9000", "s3.region": "r"}
    objects = session_policy("s3://b/wh/t", writes=False)["Statement"][0]
    assert objects["Action"] == ["s3:GetObject"]
    assert "s3:PutObject" in session_policy("s3://b/wh/t")["Statement"][0]["Action"]


# -- the application, in process ---------------------------------------------------------------


def call(app: Any, method: str, path: str, body: Any = None, token: str = ADMIN, **headers: str) -> tuple[int, Any]:
    """One request through the ASGI app: (status, JSON body or None)."""
    payload = b"" if body is None else json.dumps(body).encode()
    raw_path, _, query = path.partition("?")
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": payload, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    headers = {"authorization": f"Bearer {token}", **{k.lower(): v for k, v in headers.items()}}
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method, "scheme": "http",
        "path": unquote(raw_path), "raw_path": raw_path.encode(), "query_string": query.encode(), "root_path": "",
        "headers": [(k.encode(), v.encode()) for k, v in headers.items()], "server": ("test", 80), "client": ("test", 1),
    }  # fmt: skip
    asyncio.run(app(scope, receive, send))
    status = next(m["status"] for m in sent if m["type"] == "http.response.start")
    content = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return status, json.loads(content) if content else None


@pytest.fixture
def served(tmp_path: Path) -> tuple[Any, mor.Catalog]:
    """The app over a catalog with tables sales.t, sales.eu.t, finance.eu.t, finance.us.t, hr.t."""
    catalog = mor.load_catalog(tmp_path, create=True, properties={"s3.access-key-id": "server-key", "s3.region": "r"})
    for namespace in ("sales", "sales.eu", "finance.eu", "finance.us", "hr"):
        catalog.create_table(f"{namespace}.t", schema=SCHEMA)
    return create_app(catalog, Tokens.parse(TOKEN_FILE)), catalog


def forbidden(answer: tuple[int, Any], *words: str) -> None:
    status, body = answer
    assert status == 403 and body["error"]["type"] == "ForbiddenException", answer
    assert all(w in body["error"]["message"] for w in words), body
    assert not any(secret in json.dumps(body) for secret in (ADMIN, READER, SALES, "pa55word"))


def test_a_read_only_token_reads_and_every_write_is_refused(served: tuple[Any, mor.Catalog]) -> None:
    app, catalog = served
    assert call(app, "GET", "/v1/config", token=READER)[0] == 200
    assert call(app, "GET", "/v1/namespaces", token=READER)[1]["namespaces"] == [["finance"], ["hr"], ["sales"]]
    assert call(app, "GET", "/v1/namespaces/hr/tables/t", token=READER)[0] == 200
    assert call(app, "HEAD", "/v1/namespaces/hr/tables/t", token=READER)[0] == 204
    assert call(app, "POST", "/v1/namespaces/hr/tables/t/metrics", {"report-type": "scan-report"}, token=READER)[0] == 204
    before = catalog.load_table("hr.t").metadata_location
    writes = [
        ("POST", "/v1/namespaces", {"namespace": ["new"]}),
        ("DELETE", "/v1/namespaces/hr", None),
        ("POST", "/v1/namespaces/hr/properties", {"updates": {"k": "v"}}),
        ("POST", "/v1/namespaces/hr/tables", {"name": "u", "schema": SCHEMA_JSON}),
        ("POST", "/v1/namespaces/hr/tables", {"name": "u", "schema": SCHEMA_JSON, "stage-create": True}),
        ("POST", "/v1/namespaces/hr/tables/t", {"requirements": [], "updates": [{"action": "set-properties", "updates": {"k": "v"}}]}),
        ("DELETE", "/v1/namespaces/hr/tables/t?purgeRequested=true", None),
        ("POST", "/v1/namespaces/hr/register", {"name": "u", "metadata-location": before}),
        ("POST", "/v1/tables/rename", {"source": {"namespace": ["hr"], "name": "t"}, "destination": {"namespace": ["hr"], "name": "u"}}),
        ("POST", "/v1/transactions/commit", {"table-changes": []}),
        ("POST", "/v1/namespaces/hr/views", {}),
        ("DELETE", "/v1/namespaces/hr/views/v", None),
        ("POST", "/v1/views/rename", {}),
    ]
    for method, path, body in writes:
        forbidden(call(app, method, path, body, token=READER), f"{method} {path.partition('?')[0]} is refused", "read-only")
    assert catalog.list_namespaces() == ["finance.eu", "finance.us", "hr", "sales", "sales.eu"]
    assert catalog.list_tables("hr") == ["hr.t"] and catalog.load_table("hr.t").metadata_location == before
    assert call(app, "POST", "/v1/namespaces", {"namespace": ["new"]})[0] == 200  # the admin's token writes


def test_a_read_only_token_loads_tables_without_the_servers_keys(served: tuple[Any, mor.Catalog]) -> None:
    app, _ = served
    vended = {"X-Iceberg-Access-Delegation": "vended-credentials"}
    assert call(app, "GET", "/v1/namespaces/hr/tables/t", **vended)[1]["config"]["s3.access-key-id"] == "server-key"
    for token in (READER, client_token("dashboards", "pa55word")):
        namespace = "sales" if token != READER else "hr"
        status, loaded = call(app, "GET", f"/v1/namespaces/{namespace}/tables/t", token=token, **vended)
        assert status == 200 and loaded["config"] == {"s3.region": "r"}, loaded
        status, credentials = call(app, "GET", f"/v1/namespaces/{namespace}/tables/t/credentials", token=token)
        assert status == 200 and "server-key" not in json.dumps(credentials)


def test_a_scoped_token_sees_and_changes_its_namespaces_only(served: tuple[Any, mor.Catalog]) -> None:
    app, catalog = served
    listing = call(app, "GET", "/v1/namespaces", token=SALES)
    assert listing == (200, {"namespaces": [["finance"], ["sales"]]})  # finance: the way to finance.eu
    assert call(app, "GET", "/v1/namespaces?parent=finance", token=SALES)[1]["namespaces"] == [["finance", "eu"]]
    assert call(app, "GET", "/v1/namespaces?parent=sales", token=SALES)[1]["namespaces"] == [["sales", "eu"]]
    paged = call(app, "GET", "/v1/namespaces?pageSize=1", token=SALES)[1]
    assert paged["namespaces"] == [["finance"]] and "next-page-token" in paged
    forbidden(call(app, "GET", "/v1/namespaces?parent=hr", token=SALES), "listing the namespaces under hr is refused")
    forbidden(call(app, "GET", "/v1/namespaces?parent=fin", token=SALES))
    assert call(app, "GET", "/v1/namespaces/finance%1Feu/tables", token=SALES)[0] == 200
    assert call(app, "GET", "/v1/namespaces/sales%1Feu/tables/t", token=SALES)[0] == 200
    for method, path in [
        ("GET", "/v1/namespaces/finance"),  # a level above its own: listing only
        ("HEAD", "/v1/namespaces/finance"),
        ("GET", "/v1/namespaces/finance%1Fus/tables"),
        ("GET", "/v1/namespaces/hr/tables/t"),
        ("HEAD", "/v1/namespaces/hr/tables/t"),
        ("HEAD", "/v1/namespaces/nowhere/tables/t"),  # 403 whether or not it exists: nothing leaks
        ("GET", "/v1/namespaces/hr/tables/t/credentials"),
        ("GET", "/v1/namespaces/hr/views"),
        ("DELETE", "/v1/namespaces/hr/tables/t"),
    ]:
        status, body = call(app, method, path, token=SALES)
        assert status == 403 and (method == "HEAD" or "namespace" in body["error"]["message"]), (method, path, body)
    identifier = {"namespace": ["sales"], "name": "t"}
    forbidden(call(app, "POST", "/v1/namespaces", {"namespace": ["finance"]}, token=SALES), "namespace finance is outside")
    forbidden(call(app, "POST", "/v1/namespaces/hr/tables", {"name": "u", "schema": SCHEMA_JSON}, token=SALES))
    rename_out = {"source": identifier, "destination": {"namespace": ["hr"], "name": "t2"}}
    forbidden(call(app, "POST", "/v1/tables/rename", rename_out, token=SALES), "namespace hr is outside")
    rename_in = {"source": {"namespace": ["hr"], "name": "t"}, "destination": {"namespace": ["sales"], "name": "t2"}}
    forbidden(call(app, "POST", "/v1/tables/rename", rename_in, token=SALES), "namespace hr is outside")
    change = {"requirements": [], "updates": [{"action": "set-properties", "updates": {"k": "v"}}]}
    transaction = {"table-changes": [{"identifier": identifier, **change}, {"identifier": {"namespace": ["hr"], "name": "t"}, **change}]}
    forbidden(call(app, "POST", "/v1/transactions/commit", transaction, token=SALES), "namespace hr is outside")
    assert catalog.load_table("sales.t").properties.get("k") is None and catalog.list_tables("hr") == ["hr.t"]
    assert catalog.list_tables("sales") == ["sales.t"]
    # inside its scope it writes: a namespace below its own, a table, a rename, a transaction
    assert call(app, "POST", "/v1/namespaces", {"namespace": ["sales", "us"]}, token=SALES)[0] == 200
    assert call(app, "POST", "/v1/namespaces/sales%1Fus/tables", {"name": "u", "schema": SCHEMA_JSON}, token=SALES)[0] == 200
    rename = {"source": identifier, "destination": {"namespace": ["finance", "eu"], "name": "moved"}}
    assert call(app, "POST", "/v1/tables/rename", rename, token=SALES)[0] == 204
    transaction["table-changes"] = [{"identifier": {"namespace": ["finance", "eu"], "name": "moved"}, **change}]
    assert call(app, "POST", "/v1/transactions/commit", transaction, token=SALES)[0] == 204
    assert catalog.load_table("finance.eu.moved").properties["k"] == "v"
    assert call(app, "GET", "/v1/namespaces?parent=sales", token=SALES)[1]["namespaces"] == [["sales", "eu"], ["sales", "us"]]


def test_a_token_scoped_below_the_top_finds_its_way_down(tmp_path: Path) -> None:
    catalog = mor.load_catalog(tmp_path, create=True)
    for namespace in ("a.b.c", "a.x", "a%2Eb"):  # a%2Eb: the one level "a.b", not a.b
        catalog.create_namespace(namespace)
    app = create_app(catalog, Tokens.parse("deep namespaces=a.b\nodd namespaces=a%2Eb"))
    assert call(app, "GET", "/v1/namespaces", token="deep")[1]["namespaces"] == [["a"]]
    assert call(app, "GET", "/v1/namespaces?parent=a", token="deep")[1]["namespaces"] == [["a", "b"]]  # not a.x
    assert call(app, "GET", "/v1/namespaces?parent=a%1Fb", token="deep")[1]["namespaces"] == [["a", "b", "c"]]
    assert call(app, "GET", "/v1/namespaces?parent=a%1Fx", token="deep")[0] == 403
    assert call(app, "GET", "/v1/namespaces", token="odd")[1]["namespaces"] == [["a.b"]]
    assert call(app, "GET", "/v1/namespaces/a.b", token="odd")[1]["namespace"] == ["a.b"]
    assert call(app, "GET", "/v1/namespaces/a%1Fb", token="odd")[0] == 403
    # a level above no namespace in scope that exists answers as if nothing were there
    catalog.drop_namespace("a.b.c")
    assert call(app, "GET", "/v1/namespaces?parent=a", token="deep")[0] == 404
