"""An Iceberg REST catalog server (`mor serve`'s application) on loopback, in this process, over
a SQL catalog in a fresh warehouse; with a hook to answer a request otherwise (fault injection).
tests/servers/rest.py runs the real `mor serve` command in a subprocess instead."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import uvicorn

import mor
from mor.server.app import create_app

TOKEN = "test-token-0123456789"

# A fault: given the request (method, path), None to serve it as usual, or a status to answer
# with, before ("before") or after ("after") the server handled it.
Fault = Callable[[str, str], tuple[str, int] | None]


@dataclass
class RestServer:
    url: str
    warehouse: Path
    catalog: mor.Catalog  # the SQL catalog the server serves, opened directly
    faults: list[Fault] = field(default_factory=list)

    def client(self, **properties: Any) -> mor.Catalog:
        return mor.load_catalog(uri=self.url, token=properties.pop("token", TOKEN), **properties)


class _Faulty:
    """ASGI middleware answering a status instead of (or after) the app, as the faults say."""

    def __init__(self, app: Any, faults: list[Fault]):
        self.app, self.faults = app, faults

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        fault = None
        if scope["type"] == "http":
            fault = next((f for f in (rule(scope["method"], scope["path"]) for rule in self.faults) if f), None)
        if fault is None:
            await self.app(scope, receive, send)
            return
        when, status = fault
        if when == "after":

            async def swallow(message: dict) -> None:  # the app's answer is lost on the way back
                return None

            await self.app(scope, receive, swallow)
        body = b'{"error": {"message": "injected", "type": "ServerError", "code": %d}}' % status
        await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": body})


class _Server(uvicorn.Server):
    """Says when it listens (an event to wait for, not a sleep)."""

    def __init__(self, config: uvicorn.Config):
        super().__init__(config)
        self.ready = threading.Event()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        self.ready.set()


@contextmanager
def serving_in_process(warehouse: Path) -> Iterator[RestServer]:
    catalog = mor.load_catalog(warehouse, create=True)
    faults: list[Fault] = []
    app = _Faulty(create_app(catalog, token=TOKEN), faults)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    server = _Server(uvicorn.Config(app, lifespan="off", log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    assert server.ready.wait(60), "the REST server did not start"
    host, port = sock.getsockname()[:2]
    try:
        yield RestServer(f"http://{host}:{port}", warehouse, catalog, faults)
    finally:
        server.should_exit = True
        thread.join(30)
        sock.close()
        catalog.store.dispose()
