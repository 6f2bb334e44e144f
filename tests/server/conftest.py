"""Fixtures of the REST catalog server tests: `mor serve` started in a subprocess
(tests/servers/rest.py), one per module, on SQLite and (marked `postgres`) on a PostgreSQL
catalog database the suite starts itself (tests/servers/postgres.py).

`served` gives a `Served` (tests/servers/rest.py): the server's URL, its warehouse, the catalog
URI it serves, and helpers for clients: `rest()` (pyiceberg's RestCatalog) and `mor()` (mor's
own catalog over the same database and warehouse, to check what pyiceberg wrote and the other
way round).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

from servers.postgres import PostgresServer, postgres_server_fixture  # noqa: E402,F401  (the postgres_server fixture)
from servers.rest import Served, running_rest_server  # noqa: E402


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
