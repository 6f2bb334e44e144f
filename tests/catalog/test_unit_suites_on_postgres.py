"""The DML, time travel and maintenance unit tests, re-run with the catalog on PostgreSQL.

The test functions are imported from tests/unit unchanged; here their `catalog` (and so
`make_table`) is a PostgreSQL catalog over local files (tests/catalog/conftest.py).
"""

from __future__ import annotations

import pyarrow as pa
import pytest
from test_compact import *  # noqa: F403
from test_delete import *  # noqa: F403
from test_delete_rows import *  # noqa: F403
from test_expire_snapshots import *  # noqa: F403
from test_time_travel import *  # noqa: F403
from test_update import *  # noqa: F403
from test_upsert_merge import *  # noqa: F403

import mor

pytestmark = pytest.mark.postgres


def test_the_suites_here_run_on_postgresql(catalog: mor.Catalog) -> None:
    """The imported tests' `catalog` is the PostgreSQL one, not the SQLite default."""
    assert catalog.store.engine.dialect.name == "postgresql"
    table = catalog.create_table("db.probe", schema=pa.schema([("id", pa.int64())]))
    table.append(pa.table({"id": [1, 2]}))
    with catalog.store.engine.connect() as conn:
        location = conn.exec_driver_sql(
            "SELECT metadata_location FROM iceberg_tables WHERE table_namespace = 'db' AND table_name = 'probe'"
        ).scalar_one()
    assert location == table.metadata_location
