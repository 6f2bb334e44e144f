"""`mor serve` for the tests: the REST catalog server as a subprocess on 127.0.0.1, on a free
port (`--port 0`); its URL is read from the line it prints once its socket listens, so a test
never waits on a clock. Its log (stderr) goes to a file, shown when it fails to start.

    with running_rest_server(warehouse, uri=None, token_file=None) as server:
        RestCatalog("rest", uri=server.url, token=...)

`server.process` is the Popen (a fault-injection test sets `env={"MOR_FAULT_POINT": ...}`, see tests/faults
and waits for it to die); `server.stop()` ends it with SIGTERM (uvicorn shuts down cleanly).
`Served` bundles a server with what its clients need: pyiceberg's RestCatalog on it, mor's own
catalog on the same warehouse and database.
"""

from __future__ import annotations

import os
import selectors
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyiceberg.catalog.rest import RestCatalog

import mor
from mor.server.run import URL_LINE

START_TIMEOUT_S = 60  # a safety net only: start-up is awaited by its printed URL


@dataclass
class RestServer:
    url: str
    warehouse: Path
    process: subprocess.Popen[str]
    log_path: Path

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()


def start_rest_server(
    warehouse: str | os.PathLike[str],
    *,
    uri: str | None = None,
    token_file: str | os.PathLike[str] | None = None,
    args: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
) -> RestServer:
    """A running `mor serve` over `warehouse`; RuntimeError with its log when it does not start."""
    command = [sys.executable, "-m", "mor", "serve", "--warehouse", str(warehouse), "--host", "127.0.0.1", "--port", "0"]
    if uri is not None:
        command += ["--uri", uri]
    if token_file is not None:
        command += ["--token-file", str(token_file)]
    command += list(args)
    environment = {k: v for k, v in os.environ.items() if k != "MOR_FAULT_POINT"}
    environment.update(env or {})
    if "MOR_FAULT_POINT" in environment:  # tests/faults/sitecustomize.py kills the server at that step of a commit
        faults = str(Path(__file__).resolve().parents[1] / "faults")
        environment["PYTHONPATH"] = os.pathsep.join([faults, *filter(None, [environment.get("PYTHONPATH")])])
    log_fd, log_name = tempfile.mkstemp(prefix="mor-serve-", suffix=".log")
    with os.fdopen(log_fd, "w") as log:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=log, text=True, env=environment)
    log_path = Path(log_name)
    assert process.stdout is not None
    url = _read_url(process, log_path)
    # Keep reading stdout so the server never blocks on a full pipe.
    threading.Thread(target=lambda: process.stdout.read() if process.stdout else None, daemon=True).start()
    return RestServer(url, Path(warehouse), process, log_path)


def _read_url(process: subprocess.Popen[str], log_path: Path) -> str:
    assert process.stdout is not None
    deadline = time.monotonic() + START_TIMEOUT_S
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not selector.select(timeout=remaining):
                process.kill()
                process.wait()
                raise RuntimeError(f"mor serve printed no URL in {START_TIMEOUT_S} s; its log:\n{_tail(log_path)}")
            line = process.stdout.readline()
            if not line:
                process.wait()
                raise RuntimeError(f"mor serve exited ({process.returncode}) before listening; its log:\n{_tail(log_path)}")
            if line.startswith(URL_LINE):
                return line[len(URL_LINE) :].strip()


def _tail(path: Path) -> str:
    try:
        return path.read_text(errors="replace")[-4000:]
    except OSError:
        return ""


@contextmanager
def running_rest_server(warehouse: str | os.PathLike[str], **options: object) -> Iterator[RestServer]:
    server = start_rest_server(warehouse, **options)  # type: ignore[arg-type]
    try:
        yield server
    finally:
        server.stop()
        server.log_path.unlink(missing_ok=True)


@dataclass
class Served:
    server: RestServer
    warehouse: Path
    uri: str | None  # the catalog database; None: warehouse/catalog.db
    token: str | None = None

    @property
    def url(self) -> str:
        return self.server.url

    def rest(self, **properties: Any) -> RestCatalog:
        if self.token is not None and "credential" not in properties:
            properties.setdefault("token", self.token)
        return RestCatalog("rest", uri=self.url, **properties)

    def mor(self) -> mor.Catalog:
        return mor.load_catalog(self.warehouse, uri=self.uri)

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}


def unique(prefix: str) -> str:
    """A fresh name, so tests sharing one server never meet."""
    return f"{prefix}_{uuid.uuid4().hex[:8]}"
