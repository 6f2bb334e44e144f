"""Every table of a mor catalog as a temporary view, for Spark SQL.

    mor.spark.register_tables(spark, warehouse="warehouse")      # db.events -> view db_events
    spark.sql("SELECT category, count(*) FROM db_events GROUP BY category")

Spark's temporary views take one-part names only (`CREATE TEMPORARY VIEW db.events` is
TEMP_VIEW_NAME_TOO_MANY_NAME_PARTS), and a session-catalog table `USING mor` loses the table name
option on its way to the source, so a table `namespace.table` becomes the view
`namespace_table` (dots of nested namespaces become underscores too).

A view is `mor.spark.read_table`'s DataFrame of the table (Spark's native Parquet scan, deletes
applied by mor's delete functions; the Python source only for columns the native reader cannot
give), so it reads the snapshot that was current when the view was made: a DataFrame keeps the
files it was planned with. So every commit this Python process makes to a table (the local API,
`MorTable` and `mor.spark.delete` / `update` / `merge` / `upsert`, compaction, restore, expiry:
all commit through mor's catalog code, mor/catalog/listeners.py) re-makes the views of that
table in every session at once; the next query sees it. A commit made in another process
(another program, another engine, and `df.write.format("mor")`, which Spark commits in a Python
worker) shows after `register_tables` is called again, and `register_tables` says so when it
makes the views. Views that re-plan at every query would need a table catalog in mor's jar,
which DESIGN.md's scope for the jar (a function catalog on Spark's public API) does not cover.

One view by hand, in SQL, with Spark's data source syntax (`path` names the table), read by mor's
Python source; Spark plans it once, like any DataFrame view:

    CREATE TEMPORARY VIEW events USING mor OPTIONS (warehouse 'warehouse', path 'db.events')
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mor.catalog.listeners import listen
from mor.errors import UnsupportedFeatureError
from mor.spark.errors import spark_errors
from mor.spark.fast_path import read_table
from mor.spark.jvm_bridge import is_stopped
from mor.spark.options import TableRef
from mor.spark.source import FORMAT

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from mor.format.metadata import TableMetadata

logger = logging.getLogger("mor.spark")
STALE_WARNING = (
    "mor.spark: the views show the commits this Python process makes at once; commits made by other processes"
    " (other programs and engines, df.write.format('mor')) show after register_tables is called again"
)


@dataclass(frozen=True)
class RegisteredView:
    name: str
    identifier: str
    options: tuple[tuple[str, str], ...]  # the format "mor" read options: the catalog's settings


# The views register_tables made, by session and by the location of the table they show.
_VIEWS: dict[int, dict[str, list[RegisteredView]]] = {}
_SESSIONS: dict[int, SparkSession] = {}
_VIEWS_LOCK = threading.Lock()
_MAKE_LOCK = threading.Lock()


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
    from mor.spark.registration import register

    register(spark)
    listen(_remake_views)
    properties = dict(properties or {})
    catalog = TableRef("", warehouse, uri, tuple(sorted(properties.items()))).catalog(create=False)
    settings = {**properties, **({"warehouse": warehouse} if warehouse is not None else {}), **({"uri": uri} if uri is not None else {})}
    namespaces = [namespace] if namespace is not None else catalog.list_namespaces()
    views: dict[str, str] = {}
    for ns in namespaces:
        for identifier in catalog.list_tables(ns):
            view = RegisteredView(view_name(identifier), identifier, tuple(sorted(settings.items())))
            views[identifier] = view.name
            if not refresh and spark.catalog.tableExists(view.name):
                continue
            make_view(spark, view)
            _remember(spark, catalog.load_table(identifier).location, view)
    if views:
        logger.warning(STALE_WARNING)
    return views


def make_view(spark: SparkSession, view: RegisteredView) -> None:
    """Make (or re-make) `view` of the table as it is now. One at a time: a view made by a thread
    that opened the table before another thread's commit cannot replace the one made after it."""
    with _MAKE_LOCK:
        _make_view(spark, view)


def _make_view(spark: SparkSession, view: RegisteredView) -> None:
    settings = dict(view.options)
    warehouse, uri = settings.pop("warehouse", None), settings.pop("uri", None)
    try:
        frame = read_table(spark, view.identifier, warehouse=warehouse, uri=uri, properties=settings)
    except UnsupportedFeatureError:  # a column Spark's native reader cannot give: mor's Python source reads it
        frame = spark.read.format(FORMAT).options(**dict(view.options)).load(view.identifier)
    frame.createOrReplaceTempView(view.name)


def _remake_views(metadata: TableMetadata) -> None:
    """A commit listener: re-make the views `register_tables` made of the table that now has
    `metadata`, in every session, so the next query of a view reads the new snapshot."""
    with _VIEWS_LOCK:
        shown = [(_SESSIONS[sid], list(by_location.get(_key(metadata.location), ()))) for sid, by_location in _VIEWS.items()]
    for spark, views in shown:
        for view in views:
            if is_stopped(spark):  # it shows nothing any more
                _forget(spark)
                break
            try:
                if spark.catalog.tableExists(view.name):  # not dropped by the user since
                    make_view(spark, view)
            except Exception:  # the commit stands; the view shows its older snapshot until the next one
                logger.warning("mor.spark: view %s could not be re-made after a commit to %s", view.name, view.identifier, exc_info=True)


def _forget(spark: SparkSession) -> None:
    with _VIEWS_LOCK:
        _VIEWS.pop(id(spark), None)
        _SESSIONS.pop(id(spark), None)


def _remember(spark: SparkSession, location: str, view: RegisteredView) -> None:
    with _VIEWS_LOCK:
        _SESSIONS[id(spark)] = spark
        by_location = _VIEWS.setdefault(id(spark), {})
        for shown in by_location.values():  # a view name shows one table
            shown[:] = [v for v in shown if v.name != view.name]
        by_location.setdefault(_key(location), []).append(view)


def _key(location: str) -> str:
    return location.rstrip("/")
