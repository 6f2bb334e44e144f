"""Tables in S3-compatible object storage: moto's S3 server on loopback (tests/servers/s3.py),
the catalog a local SQLite file (or, for the parameterised core, a PostgreSQL server the suite
starts: tests/servers/postgres.py), every table file an s3:// object."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.servers.postgres import postgres_server_fixture  # noqa: F401  (the session fixture postgres_server)
from tests.servers.s3 import s3_server  # noqa: F401  (the session fixture)


@pytest.fixture
def s3_warehouse(s3_server) -> str:  # noqa: F811
    return s3_server.fresh_prefix()


@pytest.fixture
def s3_catalog(s3_server, s3_warehouse: str, tmp_path: Path):  # noqa: F811
    import mor

    return mor.load_catalog(s3_warehouse, uri=f"sqlite:///{tmp_path}/catalog.db", properties=s3_server.properties)
