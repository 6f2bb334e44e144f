"""PySpark integration: `spark.read/write/readStream.format("mor")`, a fast read path (Spark's
native Parquet scan filtered by mor's delete functions, a small jar added to the session), and
distributed DELETE/UPDATE/MERGE. Needs the `mor[spark]` extra (pyspark >= 4.1; reads also on 3.5).

    spark = mor.spark.session()          # a session ready for mor: workers' Python, UTC, jars, registered
    import mor.spark                     # registers format "mor" with the active session, if any
    mor.spark.register(spark)            # or explicitly
    df = spark.read.format("mor").option("warehouse", "warehouse").load("db.events")
"""

from __future__ import annotations

import importlib.util
import weakref
from typing import TYPE_CHECKING, Any

from mor.lazy_names import load_lazily
from mor.spark.errors import SparkSetupError, spark_errors

# pyspark >= 4.1 has Python data sources (format "mor"); on 3.5 only read_table's DataFrame plan works.
HAS_PYTHON_SOURCE = importlib.util.find_spec("pyspark.sql.datasource") is not None

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
    from pyspark.sql import SparkSession

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


PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"

__all__ = [
    "FORMAT", "HAS_PYTHON_SOURCE", "MorDataSource", "MorTable", "compact", "delete", "merge", "read_table", "register",
    "register_tables", "remove_orphan_files", "rewrite_position_deletes", "session", "spark_errors", "SparkSetupError",
    "update", "upsert",
]  # fmt: skip


# Sessions that have format "mor", with the environment it was registered with: Spark copies
# `sc.environment` into the source's Python function when it is registered, so a changed setting
# (the session zone, pushdown) needs the source registered again; an unchanged one must not be,
# or Spark logs that the source replaced itself at every read and DML call.
_REGISTERED: weakref.WeakKeyDictionary[SparkSession, tuple[tuple[str, str], ...]] = weakref.WeakKeyDictionary()


def register(spark: SparkSession) -> None:
    """Add mor's delete functions (a small jar, mor/spark/delete_functions.py) to `spark`, and
    register format "mor" where pyspark has Python data sources. Spark runs the data source in
    Python processes of its own; the session's filter-pushdown setting and default parallelism
    reach them through the environment captured here, so call this again after changing
    `spark.sql.python.filterPushdown.enabled`. Reads add the jar themselves when it is missing."""
    import logging

    from mor.spark.delete_functions import install

    reason = install(spark)
    if reason is not None:
        logging.getLogger("mor.spark").info("mor.spark: deletes are applied by the Python source: %s", reason)
    if not HAS_PYTHON_SOURCE:
        return
    from mor.spark.scan import PARALLELISM_ENV
    from mor.spark.source import PUSHDOWN_ENV, MorDataSource
    from mor.spark.store_assignment import SESSION_ZONE_ENV

    sc = spark.sparkContext
    pushdown = (spark.conf.get(PUSHDOWN_CONF, "false") or "false").strip().lower() == "true"
    sc.environment[PUSHDOWN_ENV] = "true" if pushdown else "false"
    sc.environment[PARALLELISM_ENV] = str(sc.defaultParallelism)
    # Writers convert TIMESTAMP_NTZ into timestamptz columns in the session's zone.
    sc.environment[SESSION_ZONE_ENV] = spark.conf.get("spark.sql.session.timeZone") or "UTC"
    captured = tuple((k, sc.environment[k]) for k in (PUSHDOWN_ENV, PARALLELISM_ENV, SESSION_ZONE_ENV))
    if _REGISTERED.get(spark) == captured:
        return
    try:
        spark.dataSource.register(MorDataSource)
        _REGISTERED[spark] = captured
    except Exception as e:  # pyspark 4.3: a spark.newSession() refuses it as "already exists", yet cannot find it
        if "DATA_SOURCE_ALREADY_EXISTS" not in str(e):
            raise
        _REGISTERED[spark] = captured
        logging.getLogger("mor.spark").info("mor.spark: Spark says format 'mor' is already registered: %s", e)


def _register_with_active_session() -> None:
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        register(active)


if HAS_PYTHON_SOURCE:
    _register_with_active_session()
