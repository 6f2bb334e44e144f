"""PySpark integration: `spark.read/write/readStream.format("mor")`, a fast read path, and
distributed DELETE/UPDATE/MERGE. Needs the `mor[spark]` extra (pyspark >= 4.1).

    import mor.spark                     # registers format "mor" with the active session, if any
    mor.spark.register(spark)            # or explicitly
    df = spark.read.format("mor").option("warehouse", "warehouse").load("db.events")
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mor.spark.fast_path import HAS_PYTHON_SOURCE, read_table

if HAS_PYTHON_SOURCE:  # pyspark 3.5 has no Python data sources: only read_table works there
    from mor.spark.dml import delete, update
    from mor.spark.dml_merge import merge, upsert
    from mor.spark.maintenance import compact, rewrite_position_deletes
    from mor.spark.orphans import remove_orphan_files
    from mor.spark.source import FORMAT, PARALLELISM_ENV, PUSHDOWN_ENV, MorDataSource
    from mor.spark.store_assignment import SESSION_ZONE_ENV
    from mor.spark.table import MorTable
    from mor.spark.views import register_tables

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"

__all__ = [
    "FORMAT", "HAS_PYTHON_SOURCE", "MorDataSource", "MorTable", "compact", "delete", "merge", "read_table", "register",
    "register_tables", "remove_orphan_files", "rewrite_position_deletes", "update", "upsert",
]  # fmt: skip


def register(spark: SparkSession) -> None:
    """Register format "mor" with `spark`. Spark runs the data source in Python processes of
    its own; the session's filter-pushdown setting and default parallelism reach them through
    the environment captured here, so call this again after changing
    `spark.sql.python.filterPushdown.enabled`."""
    sc = spark.sparkContext
    pushdown = (spark.conf.get(PUSHDOWN_CONF, "false") or "false").strip().lower() == "true"
    sc.environment[PUSHDOWN_ENV] = "true" if pushdown else "false"
    sc.environment[PARALLELISM_ENV] = str(sc.defaultParallelism)
    # Writers convert TIMESTAMP_NTZ into timestamptz columns in the session's zone.
    sc.environment[SESSION_ZONE_ENV] = spark.conf.get("spark.sql.session.timeZone") or "UTC"
    spark.dataSource.register(MorDataSource)


def _register_with_active_session() -> None:
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        register(active)


if HAS_PYTHON_SOURCE:
    _register_with_active_session()
