"""Fixtures of the REST catalog server tests: `mor serve` started in a subprocess
(tests/servers/rest.py), one per module, on SQLite and (marked `postgres`) on a PostgreSQL
catalog database the suite starts itself (tests/servers/postgres.py).

`served` gives a `Served`: the server's URL, its warehouse, the catalog URI it serves, and
helpers for clients: `rest()` (pyiceberg's RestCatalog) and `mor()` (mor's own catalog over
the same database and warehouse, to check what pyiceberg wrote and the other way round).
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

TESTS = Path(__file__).resolve().parents[1]
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

from pyiceberg.catalog.rest import RestCatalog  # noqa: E402

import mor  # noqa: E402
from servers.postgres import PostgresServer, postgres_server_fixture  # noqa: E402,F401  (the postgres_server fixture)
from servers.rest import RestServer, running_rest_server  # noqa: E402


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


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def served(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One server per module and catalog database kind."""
    warehouse = tmp_path_factory.mktemp("rest-warehouse")
    uri = None
    if request.param == "postgres":
        postgres: PostgresServer = request.getfixturevalue("postgres_server")
        uri = postgres.uri(postgres.create_database())
    with running_rest_server(warehouse, uri=uri) as server:
        yield Served(server, warehouse, uri)


@pytest.fixture(scope="module")
def served_sqlite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """A server on SQLite only, for tests about the protocol rather than the database."""
    warehouse = tmp_path_factory.mktemp("rest-warehouse")
    with running_rest_server(warehouse) as server:
        yield Served(server, warehouse, None)
