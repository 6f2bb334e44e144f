"""The ASGI application: the REST catalog's routes over mor's catalog (`create_app`).

Every request passes the gate first: it is routed on its raw path, so a name with an encoded
"/" (`a%2Fb`) stays one path segment and is decoded once, by names.py; and when the server has
tokens, a request without an accepted `Authorization: Bearer` token is answered 401 before
anything reads its body or the catalog (the token endpoint excepted).

Handlers are plain functions run in Starlette's thread pool (the catalog is blocking SQL and
file access); each takes the request's parts and returns a status and a JSON body. Request
bodies are read up to `max_body_bytes` (413 above it) and must be a JSON object. Whatever a
handler raises becomes the spec's ErrorModel (errors.py); nothing answers with a traceback.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from mor.api.catalog import Catalog
from mor.catalog.sql import SqlCatalogStore
from mor.commit.updates import TableCommit
from mor.errors import InvalidArgumentError
from mor.server.auth import OAuthError, Tokens, token_response
from mor.server.commits import Committer, TableChange
from mor.server.errors import (
    BadRequestError,
    MethodNotAllowedError,
    NotAuthorizedError,
    NotFoundError,
    PayloadTooLargeError,
    error_response,
)
from mor.server.names import identifier_from_json, namespace_from_path, table_from_path
from mor.server.namespaces import Namespaces
from mor.server.tables import Tables

MAX_BODY_BYTES = 10 << 20
TOKEN_PATH = "/v1/oauth/tokens"
_PREFIX = re.compile(r"^[A-Za-z0-9_-]+$")

ENDPOINTS = [
    "GET /v1/{prefix}/namespaces",
    "POST /v1/{prefix}/namespaces",
    "GET /v1/{prefix}/namespaces/{namespace}",
    "HEAD /v1/{prefix}/namespaces/{namespace}",
    "DELETE /v1/{prefix}/namespaces/{namespace}",
    "POST /v1/{prefix}/namespaces/{namespace}/properties",
    "GET /v1/{prefix}/namespaces/{namespace}/tables",
    "POST /v1/{prefix}/namespaces/{namespace}/tables",
    "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "POST /v1/{prefix}/namespaces/{namespace}/register",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/metrics",
    "POST /v1/{prefix}/tables/rename",
    "POST /v1/{prefix}/transactions/commit",
]


@dataclass
class Call:
    """What a handler sees of a request."""

    params: dict[str, str]
    query: dict[str, str]
    headers: dict[str, str]
    body: Any = None

    def namespace(self) -> str:
        return namespace_from_path(self.params["namespace"])

    def table(self) -> str:
        return table_from_path(self.params["table"])

    def vend(self) -> bool:
        """Did the client ask for credentials with the table (`X-Iceberg-Access-Delegation`)?"""
        asked = self.headers.get("x-iceberg-access-delegation", "")
        return "vended-credentials" in [a.strip() for a in asked.split(",")]


Answer = tuple[int, Any]
Handler = Callable[[Call], Answer]


@dataclass
class Op:
    handler: Handler
    body: bool = False  # reads a JSON object body


@dataclass
class Service:
    """The handlers, bound to one catalog."""

    catalog: Catalog
    prefix: str | None = None
    namespaces: Namespaces = field(init=False)
    tables: Tables = field(init=False)
    committer: Committer = field(init=False)

    def __post_init__(self) -> None:
        self.namespaces = Namespaces(self.catalog)
        self.tables = Tables(self.catalog)
        self.committer = Committer(self.catalog.store, self.catalog.io, self.catalog.warehouse, self.tables.default_location)

    def routes(self) -> dict[str, dict[str, Op]]:
        """Paths under `/v1/` (or `/v1/<prefix>/`) -> method -> operation."""
        return {
            "namespaces": {"GET": Op(self.list_namespaces), "POST": Op(self.create_namespace, body=True)},
            "namespaces/{namespace}": {
                "GET": Op(self.load_namespace),
                "HEAD": Op(self.namespace_exists),
                "DELETE": Op(self.drop_namespace),
            },
            "namespaces/{namespace}/properties": {"POST": Op(self.update_namespace, body=True)},
            "namespaces/{namespace}/tables": {"GET": Op(self.list_tables), "POST": Op(self.create_table, body=True)},
            "namespaces/{namespace}/tables/{table}": {
                "GET": Op(self.load_table),
                "HEAD": Op(self.table_exists),
                "POST": Op(self.commit_table, body=True),
                "DELETE": Op(self.drop_table),
            },
            "namespaces/{namespace}/tables/{table}/metrics": {"POST": Op(self.report_metrics, body=True)},
            "namespaces/{namespace}/register": {"POST": Op(self.register_table, body=True)},
            "tables/rename": {"POST": Op(self.rename_table, body=True)},
            "transactions/commit": {"POST": Op(self.commit_transaction, body=True)},
        }

    def config(self, call: Call) -> Answer:
        overrides = {"prefix": self.prefix} if self.prefix else {}
        return 200, {"defaults": {}, "overrides": overrides, "endpoints": ENDPOINTS}

    # -- namespaces ----------------------------------------------------------------------------
    def list_namespaces(self, call: Call) -> Answer:
        parent = call.query.get("parent") or None  # the spec: an empty parent is no parent
        return 200, self.namespaces.list(None if parent is None else namespace_from_path(parent))

    def create_namespace(self, call: Call) -> Answer:
        return 200, self.namespaces.create(call.body)

    def load_namespace(self, call: Call) -> Answer:
        return 200, self.namespaces.load(call.namespace())

    def namespace_exists(self, call: Call) -> Answer:
        if not self.namespaces.exists(call.namespace()):
            return 404, None
        return 204, None

    def drop_namespace(self, call: Call) -> Answer:
        self.namespaces.drop(call.namespace())
        return 204, None

    def update_namespace(self, call: Call) -> Answer:
        return 200, self.namespaces.update_properties(call.namespace(), call.body)

    # -- tables --------------------------------------------------------------------------------
    def list_tables(self, call: Call) -> Answer:
        return 200, self.tables.list(call.namespace())

    def create_table(self, call: Call) -> Answer:
        return 200, self.tables.create(call.namespace(), call.body, call.vend())

    def load_table(self, call: Call) -> Answer:
        return 200, self.tables.load(call.namespace(), call.table(), call.vend())

    def table_exists(self, call: Call) -> Answer:
        return (204 if self.tables.exists(call.namespace(), call.table()) else 404), None

    def drop_table(self, call: Call) -> Answer:
        purge = call.query.get("purgeRequested", "false").lower()
        if purge not in ("true", "false"):
            raise BadRequestError(f"purgeRequested is true or false, got {purge!r}")
        self.tables.drop(call.namespace(), call.table(), purge == "true")
        return 204, None

    def register_table(self, call: Call) -> Answer:
        return 200, self.tables.register(call.namespace(), call.body, call.vend())

    def rename_table(self, call: Call) -> Answer:
        self.tables.rename(call.body)
        return 204, None

    def report_metrics(self, call: Call) -> Answer:
        return 204, None  # accepted and not kept: the server has no metrics store

    # -- commits -------------------------------------------------------------------------------
    def commit_table(self, call: Call) -> Answer:
        namespace, name = call.namespace(), call.table()
        if call.body.get("identifier") is not None and identifier_from_json(call.body["identifier"], "identifier") != (namespace, name):
            raise BadRequestError("the body's identifier is not the table of the path")
        (done,) = self.committer.commit([TableChange(namespace, name, TableCommit.from_dict(call.body))])
        return 200, {"metadata-location": done.metadata_location, "metadata": done.metadata}

    def commit_transaction(self, call: Call) -> Answer:
        changes = call.body.get("table-changes")
        if not isinstance(changes, list) or not changes:
            raise BadRequestError("table-changes is a non-empty list of table commits")
        parsed = []
        for change in changes:
            if not isinstance(change, dict) or change.get("identifier") is None:
                raise BadRequestError("each table change has an identifier")
            parsed.append(TableChange(*identifier_from_json(change["identifier"], "identifier"), TableCommit.from_dict(change)))
        self.committer.commit(parsed)
        return 204, None


def create_app(
    catalog: Catalog, token: str | Tokens | None = None, prefix: str | None = None, max_body_bytes: int = MAX_BODY_BYTES
) -> ASGIApp:
    """The REST catalog application over `catalog`. `token`: the bearer token (or Tokens) every
    request must carry; None serves without authentication (run.py binds loopback only then).
    `prefix`: also serve every catalog route under `/v1/<prefix>/`, and tell clients so."""
    if not isinstance(getattr(catalog, "store", None), SqlCatalogStore):
        raise InvalidArgumentError("mor serve serves a SQL catalog (a warehouse and its database), not a REST catalog")
    tokens = Tokens((token,)) if isinstance(token, str) else token
    if prefix is not None and not _PREFIX.match(prefix):
        raise InvalidArgumentError(f"prefix is letters, digits, '-' and '_', got {prefix!r}")
    service = Service(catalog, prefix)

    async def oauth_tokens(request: Request) -> Response:
        try:
            body = await _read_body(request, max_body_bytes)
            return JSONResponse(token_response(tokens, body, request.headers.get("authorization")))
        except OAuthError as e:
            return JSONResponse(e.body(), status_code=e.status)
        except PayloadTooLargeError as e:
            return JSONResponse({"error": "invalid_request", "error_description": str(e)}, status_code=413)

    routes = [
        Route("/v1/config", _endpoint({"GET": Op(service.config)}, max_body_bytes), methods=["GET"]),
        Route(TOKEN_PATH, oauth_tokens, methods=["POST"]),
    ]
    bases = ["/v1"] + ([f"/v1/{prefix}"] if prefix else [])
    for base in bases:
        for path, ops in service.routes().items():
            routes.append(Route(f"{base}/{path}", _endpoint(ops, max_body_bytes), methods=list(ops)))
    app = Starlette(routes=routes, exception_handlers={HTTPException: _routing_error})
    return _Gate(app, tokens)


def _endpoint(ops: dict[str, Op], max_body_bytes: int) -> Callable[[Request], Any]:
    async def endpoint(request: Request) -> Response:
        head = request.method == "HEAD"
        try:
            op = ops.get(request.method)
            if op is None:
                raise MethodNotAllowedError(f"{request.method} is not allowed here")
            call = Call(dict(request.path_params), dict(request.query_params), dict(request.headers))
            if op.body:
                call.body = _json_object(await _read_body(request, max_body_bytes))
            status, body = await run_in_threadpool(_guarded, op.handler, call)
        except Exception as e:
            status, body = error_response(e)
        if head or body is None or status == 204:
            return Response(status_code=status)
        return JSONResponse(body, status_code=status)

    return endpoint


def _guarded(handler: Handler, call: Call) -> Answer:
    try:
        return handler(call)
    except RecursionError:  # a body nested too deeply for the parsers
        raise BadRequestError("the request is nested too deeply") from None


async def _read_body(request: Request, limit: int) -> bytes:
    """The body, up to `limit` bytes. A larger one is PayloadTooLargeError; what is left of it
    is read and dropped up to another `limit` bytes, so the client hears the answer instead
    of a reset connection (beyond that, the connection is simply closed)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > 2 * limit:
        raise PayloadTooLargeError(f"the request body is {declared} bytes; at most {limit}")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > 2 * limit:
            break
    if len(body) > limit:
        raise PayloadTooLargeError(f"the request body is over {limit} bytes")
    return bytes(body)


def _json_object(body: bytes) -> dict[str, Any]:
    try:
        value = json.loads(body)
    except RecursionError:
        raise BadRequestError("the request body is nested too deeply") from None
    except ValueError as e:  # also bytes that are not UTF-8
        raise BadRequestError(f"the request body is not JSON: {e}") from None
    if not isinstance(value, dict):
        raise BadRequestError(f"the request body is a JSON object, got a JSON {type(value).__name__}")
    return value


async def _routing_error(request: Request, exc: Exception) -> Response:
    status = getattr(exc, "status_code", 500)
    error = MethodNotAllowedError if status == 405 else NotFoundError
    status, body = error_response(error(f"no route {request.method} {request.url.path}"))
    return JSONResponse(body, status_code=status)


class _Gate:
    """Routing on the raw path, and the bearer token check (module docstring)."""

    def __init__(self, app: ASGIApp, tokens: Tokens | None):
        self.app = app
        self.tokens = tokens

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        raw = scope.get("raw_path")
        if raw is not None:
            try:
                scope = {**scope, "path": raw.decode("utf-8")}
            except UnicodeDecodeError:
                await _send_error(send, BadRequestError("the request path is not UTF-8"))
                return
        if self.tokens is not None and scope["path"] != TOKEN_PATH:
            headers = dict(scope.get("headers") or [])
            authorization = headers.get(b"authorization", b"").decode("latin-1")
            if not self.tokens.allows_header(authorization):
                await _send_error(send, NotAuthorizedError("a valid 'Authorization: Bearer <token>' header is required"))
                return
        await self.app(scope, receive, send)


async def _send_error(send: Send, error: Exception) -> None:
    status, body = error_response(error)
    payload = json.dumps(body).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
    if status == 401:
        headers.append((b"www-authenticate", b"Bearer"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})
