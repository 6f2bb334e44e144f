"""The ASGI application: the catalog's routes (routes.py) served over HTTP (`create_app`).

Every request passes the gate first: it is routed on its raw path, so a name with an encoded
"/" (`a%2Fb`) stays one path segment and is decoded once, by names.py; and when the server has
tokens, a request without an accepted `Authorization: Bearer` token is answered 401 before
anything reads its body or the catalog (the token endpoint excepted). The gate hands on the
token's grant (auth.py); each route then refuses (403) what the grant does not allow before
its handler runs: a write of a read-only token before the body is read, a namespace outside
the token's after (routes.py says which namespaces each operation touches).

Routes run in Starlette's thread pool (the catalog is blocking SQL and file access). Request
bodies are read up to `max_body_bytes` (413 above it) and must be a JSON object. Whatever a
handler raises becomes the spec's ErrorModel (errors.py); nothing answers with a traceback.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from mor.api.sql_catalog import SqlCatalog
from mor.catalog.sql import SqlCatalogStore
from mor.catalog.sqlite_reads import SqliteCatalogReader
from mor.errors import InvalidArgumentError, NotAuthorizedError
from mor.server.auth import EVERYTHING, Grant, OAuthError, Tokens, token_response
from mor.server.errors import (
    BadRequestError,
    MethodNotAllowedError,
    PayloadTooLargeError,
    RouteNotFoundError,
    error_response,
)
from mor.server.routes import Answer, Call, Op, Service

MAX_BODY_BYTES = 10 << 20
TOKEN_PATH = "/v1/oauth/tokens"
GRANT = "mor.grant"  # where the gate puts the token's grant in the ASGI scope
_PREFIX = re.compile(r"^[A-Za-z0-9_-]+$")


def create_app(
    catalog: SqlCatalog, token: str | Tokens | None = None, prefix: str | None = None, max_body_bytes: int = MAX_BODY_BYTES
) -> ASGIApp:
    """The REST catalog application over `catalog`. `token`: the bearer token (or Tokens) every
    request must carry; None serves without authentication (run.py binds loopback only then).
    `prefix`: also serve every catalog route under `/v1/<prefix>/`, and tell clients so."""
    if not isinstance(getattr(catalog, "store", None), (SqlCatalogStore, SqliteCatalogReader)):
        raise InvalidArgumentError("mor serve serves a SQL catalog (a warehouse and its database), not a REST catalog")
    tokens = Tokens.of(token) if isinstance(token, str) else token
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
        Route("/v1/config", _endpoint({"GET": Op(service.config, writes=False, touches=None)}, max_body_bytes), methods=["GET"]),
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
            grant: Grant = request.scope[GRANT]
            what = f"{request.method} {request.url.path}"
            if op.writes:
                grant.check_write(what)  # before the body is read: a read-only token writes nothing
            call = Call(dict(request.path_params), dict(request.query_params), dict(request.headers), grant)
            if op.body:
                call.body = _json_object(await _read_body(request, max_body_bytes))
            status, body = await run_in_threadpool(_guarded, op, call, what)
        except Exception as e:
            status, body = error_response(e)
        if head or body is None or status == 204:
            return Response(status_code=status)
        return JSONResponse(body, status_code=status)

    return endpoint


def _guarded(op: Op, call: Call, what: str) -> Answer:
    try:
        if op.touches is not None:
            call.grant.check_namespaces(op.touches(call), what)
        return op.handler(call)
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
    error = MethodNotAllowedError if status == 405 else RouteNotFoundError
    status, body = error_response(error(f"no route {request.method} {request.url.path}"))
    return JSONResponse(body, status_code=status)


class _Gate:
    """Routing on the raw path, the bearer token check, and its grant handed on (module docstring)."""

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
        grant: Grant | None = EVERYTHING
        if self.tokens is not None and scope["path"] != TOKEN_PATH:
            headers = dict(scope.get("headers") or [])
            grant = self.tokens.grant_of_header(headers.get(b"authorization", b"").decode("latin-1"))
            if grant is None:
                await _send_error(send, NotAuthorizedError("a valid 'Authorization: Bearer <token>' header is required"))
                return
        await self.app({**scope, GRANT: grant}, receive, send)


async def _send_error(send: Send, error: Exception) -> None:
    status, body = error_response(error)
    payload = json.dumps(body).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
    if status == 401:
        headers.append((b"www-authenticate", b"Bearer"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})
