"""Every table of a mor catalog as a temporary view, for Spark SQL, that sees every commit.

    mor.spark.register_tables(spark, warehouse="warehouse")      # db.events -> view db_events
    spark.sql("SELECT category, count(*) FROM db_events GROUP BY category")

Spark keeps the read a Python data source planned with its relation, and a temporary view made
from a DataFrame keeps its relation for good: such a view would read the snapshot of its first
query forever. So the views are views in SQL text over a small catalog of mor's jar
(`mor.jvm.Tables`, jvm/src), registered as `spark.sql.catalog.mor_tables_<hash of the
settings>` with the mor catalog's settings: Spark analyses a view's text at every query, the
catalog hands it a new format "mor" relation each time, and every query is planned on the
table's current snapshot (commits made in this session and by anyone else). The catalog itself
reads by name too: `SELECT * FROM mor_tables_<...>.db.events VERSION AS OF <snapshot id>`.

Spark's temporary views take one-part names only (`CREATE TEMPORARY VIEW db.events` is
TEMP_VIEW_NAME_TOO_MANY_NAME_PARTS), so a table `namespace.table` becomes the view
`namespace_table` (dots of nested namespaces become underscores too). Call `register_tables`
again for tables created since, and for columns added since (a view keeps the columns it was
made with).

Where mor's jar cannot be added (Spark Connect: mor/spark/delete_functions.py), the views are
DataFrame views again, each reading the snapshot of its first query; `register_tables` warns so,
and calling it again sees later commits.

One view by hand, in SQL, with Spark's data source syntax (`path` names the table); Spark plans
it once, like any DataFrame view:

    CREATE TEMPORARY VIEW events USING mor OPTIONS (warehouse 'warehouse', path 'db.events')
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING

from mor.spark.errors import spark_errors
from mor.spark.options import TableRef
from mor.spark.source import FORMAT

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

logger = logging.getLogger("mor.spark")

TABLES_CLASS = "mor.jvm.Tables"  # jvm/src/mor/jvm/Tables.java, in the jar mor.spark.register adds
TABLES_PREFIX = "mor_tables_"


def view_name(identifier: str) -> str:
    """The temporary view of table `identifier`: `db.events` -> `db_events`."""
    return identifier.replace(".", "_")


@spark_errors()
def register_tables(
    spark: SparkSession, warehouse: str | None = None, uri: str | None = None, namespace: str | None = None,
    refresh: bool = True, properties: Mapping[str, str] | None = None,
) -> dict[str, str]:  # fmt: skip
    """A temporary view for every table of the catalog (of `namespace` only, when given); returns
    {table identifier: view name}. `refresh=False` leaves views that already exist as they are."""
    from mor.spark import register  # mor.spark may export this module
    from mor.spark.delete_functions import install

    register(spark)
    properties = dict(properties or {})
    catalog = TableRef("", warehouse, uri, tuple(sorted(properties.items()))).catalog(create=False)
    reason = install(spark)  # None: mor's jar is in the session
    tables = None if reason is not None else tables_catalog(spark, warehouse, uri, properties)
    if tables is None:
        logger.warning("mor.spark: views read the snapshot of their first query (call register_tables again to see later ones): %s", reason)
    namespaces = [namespace] if namespace is not None else catalog.list_namespaces()
    views: dict[str, str] = {}
    for ns in namespaces:
        for identifier in catalog.list_tables(ns):
            name = view_name(identifier)
            views[identifier] = name
            if not refresh and spark.catalog.tableExists(name):
                continue
            if tables is not None:
                spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW {_quoted(name)} AS SELECT * FROM {_quoted(tables, *identifier.split('.'))}")
                continue
            reader = spark.read.format(FORMAT).options(**properties)
            if warehouse is not None:
                reader = reader.option("warehouse", warehouse)
            if uri is not None:
                reader = reader.option("uri", uri)
            reader.load(identifier).createOrReplaceTempView(name)
    return views


def tables_catalog(spark: SparkSession, warehouse: str | None, uri: str | None, properties: Mapping[str, str]) -> str:
    """The name of the `mor.jvm.Tables` catalog of these settings in `spark`, registered now if
    it is not yet (one name per settings: Spark builds a catalog once, from the conf it has then)."""
    settings = {**properties, **({"warehouse": warehouse} if warehouse is not None else {}), **({"uri": uri} if uri is not None else {})}
    digest = hashlib.sha256(json.dumps(sorted(settings.items())).encode()).hexdigest()[:16]
    name = TABLES_PREFIX + digest
    key = f"spark.sql.catalog.{name}"
    if spark.conf.get(key, None) != TABLES_CLASS:
        for option, value in settings.items():
            spark.conf.set(f"{key}.{option}", value)
        spark.conf.set(key, TABLES_CLASS)
    return name


def _quoted(*parts: str) -> str:
    return ".".join("`" + part.replace("`", "``") + "`" for part in parts)
