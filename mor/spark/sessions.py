"""`mor.spark.session(...)`: a SparkSession ready for mor in one call.

    spark = mor.spark.session()                          # local[*], UTC, mor registered
    spark = mor.spark.session("etl", master="spark://host:7077", conf={"spark.executor.memory": "4g"})

What it sets, each unless the caller's `conf` (or, for the workers' Python, PYSPARK_PYTHON) says
otherwise:
- the Python Spark's workers run: this interpreter (`sys.executable`), where mor is installed,
  as `spark.pyspark.python` and PYSPARK_PYTHON (the workers import mor: the data source is
  pickled by reference to the package);
- `spark.sql.session.timeZone`: `time_zone`, UTC by default (mor writes timestamptz in UTC and
  converts wall-clock values in the session's zone, mor/spark/store_assignment.py);
- the jars mor ships (mor/spark/jars: the delete functions that filter Spark's native scan) on
  `spark.jars`, and their function catalog named, so nothing is added later with `ADD JAR`;
- `mor.spark.register(spark)` on the result.

Static settings (master, jars, the workers' Python) take effect only when this call starts the
SparkContext; with a session already running, `getOrCreate` returns it with the runtime
settings applied, and mor is registered with it all the same.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

PYTHON_CONF = "spark.pyspark.python"
TIME_ZONE_CONF = "spark.sql.session.timeZone"
JARS_CONF = "spark.jars"


def session(
    app_name: str = "mor",
    master: str | None = "local[*]",
    *,
    conf: Mapping[str, str] | None = None,
    time_zone: str = "UTC",
    python: str | None = None,
) -> SparkSession:
    """A SparkSession named `app_name` on `master` (None: leave it to spark-submit or the
    environment), with mor registered (see the module docstring). `conf`: more Spark settings,
    which win over mor's. `python`: the interpreter for the workers (default: PYSPARK_PYTHON if
    set, else this one)."""
    from pyspark.sql import SparkSession

    from mor.spark.delete_functions import CATALOG, CATALOG_CLASS, jar_path
    from mor.spark.registration import register

    settings = session_settings(conf or {}, time_zone, python, [jar_path()], f"spark.sql.catalog.{CATALOG}", CATALOG_CLASS)
    os.environ["PYSPARK_PYTHON"] = settings[PYTHON_CONF]  # local mode starts the workers from this environment
    builder = SparkSession.builder.appName(app_name)
    if master is not None:
        builder = builder.master(master)
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    register(spark)
    return spark


def session_settings(
    conf: Mapping[str, str], time_zone: str, python: str | None, jars: list[Path], catalog_key: str, catalog_class: str
) -> dict[str, str]:
    """The Spark settings `session` builds with: mor's, then `conf` over them (`spark.jars`
    joined, not replaced: mor's jars stay on it)."""
    worker_python = conf.get(PYTHON_CONF) or python or os.environ.get("PYSPARK_PYTHON") or sys.executable
    shipped = [str(jar) for jar in jars if jar.is_file()]
    settings = {PYTHON_CONF: worker_python, TIME_ZONE_CONF: time_zone}
    if shipped:  # without the jar, reads take the Python source (mor.spark.register says why)
        settings[catalog_key] = catalog_class
    settings.update({k: str(v) for k, v in conf.items()})
    given = [j for j in (conf.get(JARS_CONF) or "").split(",") if j.strip()]
    settings[JARS_CONF] = ",".join(dict.fromkeys([*shipped, *given]))
    if not settings[JARS_CONF]:
        del settings[JARS_CONF]
    return settings
