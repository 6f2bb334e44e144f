"""PySpark integration: `spark.read/write/readStream.format("mor")`, a fast read path (Spark's
native Parquet scan filtered by mor's delete functions, a small jar added to the session), and
distributed DELETE/UPDATE/MERGE. Needs the `mor[spark]` extra (pyspark >= 4.1; reads also on 3.5).

    spark = mor.spark.session()          # a session ready for mor: workers' Python, UTC, jars, registered
    import mor.spark                     # registers format "mor" with the active session, if any
    mor.spark.register(spark)            # or explicitly
    df = spark.read.format("mor").option("warehouse", "warehouse").load("db.events")
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mor.lazy_names import load_lazily
from mor.spark.errors import SparkSetupError, spark_errors
from mor.spark.registration import HAS_PYTHON_SOURCE, register, register_with_active_session
from mor.spark.registration import PUSHDOWN_CONF as PUSHDOWN_CONF

# name -> module that defines it, imported on first use: a Spark worker imports mor.spark.source
# (and with it this package) for every read task, and needs none of the verbs.
_LAZY = {
    "read_table": "mor.spark.fast_path",
    "delete": "mor.spark.functions",
    "update": "mor.spark.functions",
    "merge": "mor.spark.functions",
    "upsert": "mor.spark.functions",
    "compact": "mor.spark.maintenance",
    "rewrite_position_deletes": "mor.spark.maintenance",
    "remove_orphan_files": "mor.spark.orphans",
    "session": "mor.spark.sessions",
    "FORMAT": "mor.spark.source",
    "PARALLELISM_ENV": "mor.spark.scan",
    "PUSHDOWN_ENV": "mor.spark.source",
    "MorDataSource": "mor.spark.source",
    "SESSION_ZONE_ENV": "mor.spark.store_assignment",
    "MorTable": "mor.spark.table",
    "register_tables": "mor.spark.views",
}

_WITHOUT_PYTHON_SOURCE = {"read_table": _LAZY["read_table"]}

if TYPE_CHECKING:
    from mor.spark.fast_path import read_table
    from mor.spark.functions import delete, merge, update, upsert
    from mor.spark.maintenance import compact, rewrite_position_deletes
    from mor.spark.orphans import remove_orphan_files
    from mor.spark.scan import PARALLELISM_ENV as PARALLELISM_ENV
    from mor.spark.sessions import session
    from mor.spark.source import FORMAT, MorDataSource
    from mor.spark.source import PUSHDOWN_ENV as PUSHDOWN_ENV
    from mor.spark.store_assignment import SESSION_ZONE_ENV as SESSION_ZONE_ENV
    from mor.spark.table import MorTable
    from mor.spark.views import register_tables


def __getattr__(name: str) -> Any:
    return load_lazily(__name__, globals(), _LAZY if HAS_PYTHON_SOURCE else _WITHOUT_PYTHON_SOURCE, name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY if HAS_PYTHON_SOURCE else _WITHOUT_PYTHON_SOURCE))


__all__ = [
    "FORMAT", "HAS_PYTHON_SOURCE", "MorDataSource", "MorTable", "compact", "delete", "merge", "read_table", "register",
    "register_tables", "remove_orphan_files", "rewrite_position_deletes", "session", "spark_errors", "SparkSetupError",
    "update", "upsert",
]  # fmt: skip


if HAS_PYTHON_SOURCE:
    register_with_active_session()
