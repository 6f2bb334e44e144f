"""The catalog on a PostgreSQL server the suite starts itself (tests/servers/postgres.py).

Every test here gets `pg_uri`: the URL of an empty catalog database (one database for the
session, its two catalog tables emptied before each test), and `catalog`: a mor catalog on it
with a fresh local warehouse. The fixtures the unit tests use (`make_table`, `io`, ...) are
imported from tests/unit/conftest.py, so unit test modules re-run here run on PostgreSQL.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
# tests/unit holds one folder per package (tests/unit/api/test_delete.py, ...): each is searched.
UNIT_FOLDERS = sorted(p for p in (TESTS / "unit").iterdir() if p.is_dir() and not p.name.startswith(("_", ".")))
for folder in (TESTS, TESTS / "unit", *UNIT_FOLDERS, TESTS / "concurrency"):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

from servers.postgres import PostgresServer, postgres_server_fixture  # noqa: E402,F401  (the postgres_server fixture)
from sqlalchemy import text  # noqa: E402

import mor  # noqa: E402
from mor.catalog.sql import SqlCatalogStore  # noqa: E402
from mor.io.fileio import to_uri  # noqa: E402

_spec = importlib.util.spec_from_file_location("unit_conftest_for_catalog", TESTS / "unit" / "conftest.py")
assert _spec is not None and _spec.loader is not None
_unit = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_unit)
make_table = _unit.make_table
io = _unit.io
metadata_dir = _unit.metadata_dir
warehouse = _unit.warehouse

SHARED_DATABASE = "mor_catalog_tests"


@pytest.fixture(scope="session")
def pg_database(postgres_server: PostgresServer) -> str:
    return postgres_server.create_database(SHARED_DATABASE)


@pytest.fixture(scope="session")
def shared_store(postgres_server: PostgresServer, pg_database: str) -> Iterator[SqlCatalogStore]:
    """One pooled store for the session, as a long-lived application holds one."""
    store = SqlCatalogStore(postgres_server.uri(pg_database))
    yield store
    store.dispose()


@pytest.fixture
def pg_uri(postgres_server: PostgresServer, pg_database: str, shared_store: SqlCatalogStore) -> str:
    """The shared catalog database, emptied."""
    with shared_store.engine.begin() as conn:
        conn.execute(text("TRUNCATE iceberg_tables, iceberg_namespace_properties"))
    return postgres_server.uri(pg_database)


@pytest.fixture
def catalog(warehouse: Path, pg_uri: str, shared_store: SqlCatalogStore) -> mor.Catalog:
    """What `mor.load_catalog(warehouse, uri=pg_uri)` gives, on the session's pooled store."""
    warehouse.mkdir(parents=True, exist_ok=True)
    return mor.SqlCatalog(shared_store, to_uri(warehouse.resolve()))
