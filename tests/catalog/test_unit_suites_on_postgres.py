"""The DML, time travel and maintenance unit tests, re-run with the catalog on PostgreSQL.

The test functions are imported from tests/unit unchanged; here their `catalog` (and so
`make_table`) is a PostgreSQL catalog over local files (tests/catalog/conftest.py).
"""

from __future__ import annotations

import pytest

from test_compact import *  # noqa: F401,F403
from test_delete import *  # noqa: F401,F403
from test_delete_rows import *  # noqa: F401,F403
from test_expire_snapshots import *  # noqa: F401,F403
from test_time_travel import *  # noqa: F401,F403
from test_update import *  # noqa: F401,F403
from test_upsert_merge import *  # noqa: F401,F403

pytestmark = pytest.mark.postgres
