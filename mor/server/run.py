"""Running the server: `mor serve` binds a socket and hands it to uvicorn.

The socket is bound and listening before the URL is printed, so whoever reads the URL (a
test, a script) can connect at once: connections wait in the listen queue until uvicorn
accepts them. Port 0 takes a free port; the printed URL names the one taken. After it come
the clients' recipes (clients.py): what to paste into mor, pyiceberg, DuckDB, Spark or Trino.

Without tokens the server accepts every request, so it binds only a loopback address
(127.0.0.0/8, ::1, localhost), where only this machine reaches it, and says it is
unauthenticated.
"""

from __future__ import annotations

import ipaddress
import logging
import socket
from collections.abc import Callable, Mapping
from pathlib import Path

import uvicorn

from mor.api.sql_catalog import SqlCatalog
from mor.errors import InvalidArgumentError
from mor.server.app import create_app
from mor.server.auth import Tokens
from mor.server.clients import client_configuration
from mor.server.credentials import MintingSettings
from mor.server.locations import warehouse_name

log = logging.getLogger("mor.server")
URL_LINE = "mor serve: listening on "  # the line the URL is printed on, for whoever waits for it


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on `host:port` (port 0: a free one)."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host.strip("[]"), port, type=socket.SOCK_STREAM)[0]
    except socket.gaierror as e:
        raise InvalidArgumentError(f"cannot resolve host {host!r}: {e}") from e
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as e:
        sock.close()
        raise InvalidArgumentError(f"cannot listen on {host}:{port}: {e.strerror or e}") from e
    sock.set_inheritable(True)
    return sock


def url_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def serve(
    open_catalog: Callable[[], SqlCatalog],
    host: str = "127.0.0.1",
    port: int = 8181,
    token_file: str | Path | None = None,
    prefix: str | None = None,
    properties: Mapping[str, str] | None = None,
) -> None:
    """Serve the catalog `open_catalog` opens (or creates) until interrupted (SIGINT/SIGTERM end
    it cleanly). Everything that can be checked without it is checked first (the token file,
    the address, the server's own `properties`, the port), so a refusal leaves no new
    warehouse behind."""
    tokens = Tokens.from_file(token_file) if token_file is not None else None
    if tokens is None and not is_loopback(host):
        raise InvalidArgumentError(
            f"refusing to serve {host} without authentication: give --token-file, or bind a loopback address (127.0.0.1, ::1)"
        )
    MintingSettings.of(properties or {})  # InvalidArgumentError naming a wrong server.vend.* setting
    sock = bind(host, port)
    try:
        address = sock.getsockname()[0]
        if tokens is None and not is_loopback(address):  # a name such as "localhost" resolved elsewhere
            raise InvalidArgumentError(f"refusing to serve {host} without authentication: it resolves to {address}, not loopback")
        catalog = open_catalog()
        app = create_app(catalog, tokens, prefix=prefix)
    except BaseException:
        sock.close()
        raise
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if tokens is None:
        log.warning("serving WITHOUT authentication (no --token-file): anyone on this machine can change every table")
    log.info("serving the catalog of warehouse %s", catalog.warehouse)
    url = url_of(sock)
    print(URL_LINE + url, flush=True)
    print(client_configuration(url, warehouse_name(catalog.warehouse), secured=tokens is not None), flush=True)
    # log_config=None: uvicorn's records (its access log too) go where ours do, to stderr;
    # stdout carries only the URL line.
    config = uvicorn.Config(app, lifespan="off", log_level="info", log_config=None, server_header=False)
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()
