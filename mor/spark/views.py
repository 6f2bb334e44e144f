"""Every table of a mor catalog as a temporary view, for Spark SQL.

    mor.spark.register_tables(spark, warehouse="warehouse")      # db.events -> view db_events
    spark.sql("SELECT category, count(*) FROM db_events GROUP BY category")

Spark's temporary views take one-part names only (`CREATE TEMPORARY VIEW db.events` is
TEMP_VIEW_NAME_TOO_MANY_NAME_PARTS), and a session-catalog table `USING mor` loses the table name
option on its way to the source, so `SELECT * FROM db.events` is out of reach without a catalog
plugin in the JVM: a table `namespace.table` becomes the view `namespace_table` (dots of nested
namespaces become underscores too). A view reads the snapshot that was current when Spark first
planned it, like any format "mor" DataFrame (Spark plans a Python data source's read once per
relation, and a view keeps its relation): call `register_tables` again to see later commits
and tables created since (`refresh=True`, the default, replaces the existing views).

One view by hand, in SQL, with Spark's data source syntax (`path` names the table):

    CREATE TEMPORARY VIEW events USING mor OPTIONS (warehouse 'warehouse', path 'db.events')
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from mor.spark.errors import spark_errors
from mor.spark.options import TableRef
from mor.spark.source import FORMAT

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


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

    register(spark)
    properties = dict(properties or {})
    catalog = TableRef("", warehouse, uri, tuple(sorted(properties.items()))).catalog(create=False)
    namespaces = [namespace] if namespace is not None else catalog.list_namespaces()
    views: dict[str, str] = {}
    for ns in namespaces:
        for identifier in catalog.list_tables(ns):
            name = view_name(identifier)
            views[identifier] = name
            if not refresh and spark.catalog.tableExists(name):
                continue
            reader = spark.read.format(FORMAT).options(**properties)
            if warehouse is not None:
                reader = reader.option("warehouse", warehouse)
            if uri is not None:
                reader = reader.option("uri", uri)
            reader.load(identifier).createOrReplaceTempView(name)
    return views
