"""Format "mor" registered with a Spark session: the Python data source, the jar's delete
functions, and the settings the source's Python processes read from the environment."""

from __future__ import annotations

import importlib.util
import weakref
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# pyspark >= 4.1 has Python data sources (format "mor"); on 3.5 only read_table's DataFrame plan works.
HAS_PYTHON_SOURCE = importlib.util.find_spec("pyspark.sql.datasource") is not None

PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"


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


def register_with_active_session() -> None:
    """Register format "mor" with the session active in this process, if there is one."""
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        register(active)
