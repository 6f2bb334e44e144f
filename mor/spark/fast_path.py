"""The fast read: each data file by its cheapest path, as one DataFrame.

- Files no delete applies to go to Spark's native Parquet reader, when Spark's by-name Parquet
  reading is sure to see the table's columns: the file's columns carry the table's names for
  their field ids and the projected types are ones Spark reads natively (not uuid or time).
- Files with deletes (and delete-free files whose columns were renamed or re-typed since) go
  through the JVM path (mor/spark/dataframe_plan.py): Spark's native Parquet scan filtered by
  mor's delete functions (mor/spark/delete_functions.py, a jar added to the session), no Python
  on executors; the v3 row lineage columns too (stored, else inherited through the functions).
  Where that cannot read the scan (Spark Connect, uuid or time columns, equality deletes on
  float columns or on fields that are no top-level column) they go through the mor Python data
  source (format "mor", mor/spark/source.py; pyspark >= 4), and the reason is logged.
  `path="jvm"` or `path="python"` asks for one path (an error where it cannot read the scan).
- A table in object storage reads natively only when the session has a Hadoop filesystem for
  `s3a` (`s3://bucket/key` is read as `s3a://bucket/key`); otherwise through the Python source.

How many files took each path is logged (logger `mor.spark`, INFO) and named in the plan: each
part of the union is aliased `mor_native_<n>_files`, `mor_jvm_<n>_files` or
`mor_python_<n>_files` (`df.explain(True)` shows them).
"""

from __future__ import annotations

import datetime as dt
import json
import logging
from collections.abc import Mapping, Sequence
from typing import Literal

import pyarrow.parquet as pq
from pyiceberg.expressions import AlwaysTrue
from pyiceberg.schema import Schema
from pyiceberg.types import ListType, MapType, NestedField, PrimitiveType, TimeType, UUIDType
from pyspark.sql import DataFrame, SparkSession

from mor.api.table import Table
from mor.errors import InvalidArgumentError, UnsupportedFeatureError
from mor.expr.filters import FilterLike, bind_filter, filter_field_ids
from mor.expr.residual import has_residual
from mor.format.lineage import LINEAGE_FIELD_IDS, LINEAGE_FIELDS
from mor.format.metadata import Snapshot
from mor.planning.task import FileScanTask
from mor.read.field_resolution import file_matches_schema
from mor.spark.columns import to_column
from mor.spark.dataframe_plan import read_dataframe_plan, unsupported_reason
from mor.spark.errors import spark_errors
from mor.spark.file_paths import FILE_COLUMN, POS_COLUMN, check_metadata_columns_free, hadoop_reads, has_s3a, native_parquet
from mor.spark.options import TableRef
from mor.spark.planning import planned_tasks
from mor.spark.registration import HAS_PYTHON_SOURCE
from mor.spark.types import spark_schema

logger = logging.getLogger("mor.spark")

ReadPath = Literal["auto", "jvm", "python"]
READ_PATHS = ("auto", "jvm", "python")
CASE_SENSITIVE = False  # Spark resolves column names case-insensitively by default (as mor.spark.scan)


@spark_errors()
def read_table(
    spark: SparkSession,
    table: Table | str,
    columns: Sequence[str] | None = None,
    filter: FilterLike = None,
    snapshot_id: int | None = None,
    as_of: dt.datetime | int | None = None,
    warehouse: str | None = None,
    uri: str | None = None,
    properties: Mapping[str, str] | None = None,
    path: ReadPath = "auto",
    metadata_columns: bool = False,
    branch: str | None = None,
    planning_mode: str | None = None,
) -> DataFrame:
    """The live rows of `table` (a mor Table, a `namespace.table` name with `warehouse`/`uri`,
    or a metadata location) as a DataFrame: the rows `table.scan(...).to_arrow()` returns.
    `properties`: file access (`s3.endpoint`, ...), as `load_catalog`'s. `path`: how files with
    deletes are read ("auto"; "jvm": native scans filtered by mor's delete functions; "python":
    the mor Python source); delete-free files are read natively whatever it says.
    `metadata_columns`: also `_file` (each row's data file, as the table spells it) and `_pos`
    (its position there), every file then read by the JVM path (or the Python source).
    `branch`: the head of that branch, or a tag's snapshot, instead of main's. `planning_mode`:
    where the data manifests are read, "auto" | "local" | "distributed" (mor/spark/planning.py;
    default the session's `spark.mor.planning.mode`, else "auto")."""
    if path not in READ_PATHS:
        raise InvalidArgumentError(f"path must be one of {', '.join(READ_PATHS)}, not {path!r}")
    if path == "python" and not HAS_PYTHON_SOURCE:
        raise UnsupportedFeatureError("path='python' needs Python data sources (pyspark >= 4); use path='jvm'")
    if not isinstance(table, Table):
        table = TableRef(table, warehouse, uri, tuple(sorted((properties or {}).items()))).open()
    scan = table.scan(filter=filter, columns=columns, snapshot_id=snapshot_id, as_of=as_of, case_sensitive=CASE_SENSITIVE, branch=branch)
    if metadata_columns:
        check_metadata_columns_free(scan.schema)
    output = [f.name for f in scan.projection.fields] + ([FILE_COLUMN, POS_COLUMN] if metadata_columns else [])
    # Read the filter's columns too, so Spark can apply the filter before projecting.
    read_ids = {f.field_id for f in scan.projection.fields} | filter_field_ids(scan.schema, scan.row_filter, CASE_SENSITIVE)
    lineage = [f for f in scan.projection.fields if f.field_id in LINEAGE_FIELD_IDS]
    read_schema = Schema(*[f for f in scan.schema.fields if f.field_id in read_ids], *lineage)
    bound = None if isinstance(scan.row_filter, AlwaysTrue) else bind_filter(scan.schema, scan.row_filter, CASE_SENSITIVE)
    tasks = planned_tasks(spark, scan, planning_mode)  # only read: lean files
    if bound is not None and has_residual(bound):
        return _residual_read(spark, table, scan.snapshot, read_schema, tasks, filter, output, metadata_columns)
    condition = None if bound is None else to_column(bound)

    native_ok = hadoop_reads(spark, [table.location, *(t.data_file.file_path for t in tasks)], s3a=has_s3a)
    # Row lineage is inherited from the file's manifest entry (first row id plus position, its
    # data sequence number) where the file stores none, and `_file` is the table's spelling of
    # the file: the JVM functions know those, a plain native read does not.
    plain = native_ok and _natively_readable(read_schema) and not lineage and not metadata_columns
    native = [t for t in tasks if not t.delete_files] if plain else []
    if native and len(table.metadata.schemas) > 1:  # names or types may have changed
        native = [t for t in native if _file_matches(table, t, read_schema)]
    native_paths = {t.data_file.file_path for t in native}
    rest = [t for t in tasks if t.data_file.file_path not in native_paths]
    use_jvm = bool(rest or not native) and _use_jvm(spark, path, scan.schema, read_schema, rest, native_ok)

    parts = []
    if native:
        df = native_parquet(spark, spark_schema(read_schema), [t.data_file.file_path for t in native])
        parts.append(df.alias(f"mor_native_{len(native)}_files"))
    if use_jvm:
        df = read_dataframe_plan(spark, table, scan.schema, read_schema, rest, metadata_columns)
        parts.append(df.alias(f"mor_jvm_{len(rest)}_files"))
    elif rest or not native:
        parts.append(
            _python_source(
                spark, table, scan.snapshot.snapshot_id if scan.snapshot else None, read_schema, rest, filter, metadata_columns
            ).alias(f"mor_python_{len(rest)}_files")
        )
    logger.info(
        "read_table %s (snapshot %s): %d files native, %d through the %s",
        table.metadata_location, scan.snapshot.snapshot_id if scan.snapshot else None,
        len(native), len(rest), "JVM delete functions" if use_jvm else "Python source",
    )  # fmt: skip
    if condition is not None:
        parts = [p.filter(condition) for p in parts]
    parts = [p.select(*[f"`{name}`" for name in output]) for p in parts]
    result = parts[0]
    for other in parts[1:]:
        result = result.unionByName(other)
    return result


def read_located_rows(spark: SparkSession, table: Table, tasks: Sequence[FileScanTask], columns: Sequence[str]) -> DataFrame:
    """The live rows of exactly `tasks` (planned on `table`'s current metadata), columns
    `columns` (`_row_id` among them on v3) with `_file` (the data file as the table spells it)
    and `_pos`: the target rows of Spark's DML. Through the JVM path where it can read them,
    else through the Python source (the reason logged)."""
    check_metadata_columns_free(table.schema())
    schema = table.schema()
    read_schema = Schema(*[LINEAGE_FIELDS[c] if c in LINEAGE_FIELDS else schema.find_field(c) for c in columns])
    reason = unsupported_reason(spark, schema, read_schema, tasks)
    if reason is None:
        return read_dataframe_plan(spark, table, schema, read_schema, tasks, metadata_columns=True)
    if not HAS_PYTHON_SOURCE:
        raise UnsupportedFeatureError(f"mor's JVM read path cannot read this table's rows: {reason}")
    logger.info("%s: the target rows go through the Python source: %s", table.metadata_location, reason)
    return _python_source(spark, table, table.metadata.current_snapshot_id, read_schema, list(tasks), None, metadata_columns=True)


def _residual_read(
    spark: SparkSession, table: Table, snapshot: Snapshot | None, read_schema: Schema, tasks: list[FileScanTask],
    filter: FilterLike, output: list[str], metadata_columns: bool,
) -> DataFrame:  # fmt: skip
    """A filter with arithmetic or functions (a residual) has no Spark Column here: every file
    goes through the Python source, whose reader evaluates the whole filter on the rows."""
    if not HAS_PYTHON_SOURCE or not isinstance(filter, str):
        raise UnsupportedFeatureError(
            "read_table cannot hand Spark a filter with arithmetic or functions on this path "
            "(it needs pyspark >= 4.1 and the filter as text): filter the DataFrame in Spark instead"
        )
    snapshot_id = snapshot.snapshot_id if snapshot else None
    logger.info("read_table %s (snapshot %s): %d files through the Python source (a residual filter)",
                table.metadata_location, snapshot_id, len(tasks))  # fmt: skip
    df = _python_source(spark, table, snapshot_id, read_schema, tasks, filter, metadata_columns).alias(f"mor_python_{len(tasks)}_files")
    return df.select(*[f"`{name}`" for name in output])


def _use_jvm(spark: SparkSession, path: str, schema: Schema, read_schema: Schema, rest: list[FileScanTask], native_ok: bool) -> bool:
    """Do the files that do not go native take the JVM path (else the Python source)? Wherever
    it can read them, unless asked for the Python source: measured (benchmarks/bench_spark_reads.py)
    it is the faster of the two in every state."""
    if path == "python":
        return False
    reason = "object storage needs a Hadoop filesystem for its scheme in the session (hadoop-aws for s3a)" if not native_ok else None
    reason = reason or unsupported_reason(spark, schema, read_schema, rest)
    if reason is None:
        return True
    if path == "jvm" or not HAS_PYTHON_SOURCE:
        raise UnsupportedFeatureError(f"mor's JVM read path cannot read this scan: {reason}")
    logger.info("read_table: files with deletes go through the Python source: %s", reason)
    return False


def _python_source(
    spark: SparkSession, table: Table, snapshot_id: int | None, read_schema: Schema, rest: list[FileScanTask], filter: FilterLike,
    metadata_columns: bool = False,
) -> DataFrame:  # fmt: skip
    from mor.spark.registration import register
    from mor.spark.source import FORMAT  # only where pyspark has Python data sources

    register(spark)  # a session of its own (spark.newSession()) has no format "mor" yet
    python = (
        spark.read.format(FORMAT)
        .option("snapshot-id", "" if snapshot_id is None else str(snapshot_id))
        .option("columns", ",".join(f.name for f in read_schema.fields))
        .option("data-files", json.dumps([t.data_file.file_path for t in rest]))
        .option("metadata-columns", "true" if metadata_columns else "false")
        .options(**table.io.properties)
    )
    if isinstance(filter, str):
        python = python.option("filter", filter)  # prunes row groups in the Python reader
    return python.load(table.metadata_location)


def _natively_readable(schema: Schema) -> bool:
    return all(_native_type(f) for f in schema.fields)


def _native_type(field: NestedField) -> bool:
    """Can Spark's Parquet reader give this column as mor does? Not uuid or time (Spark has no
    such type), not one with an initial default (Spark reads a file without it as nulls);
    nested types when every field inside them can."""
    t = field.field_type
    if isinstance(t, (UUIDType, TimeType)) or field.initial_default is not None:
        return False
    if isinstance(t, PrimitiveType):
        return True
    if isinstance(t, ListType):
        children = [t.element_field]
    elif isinstance(t, MapType):
        children = [t.key_field, t.value_field]
    else:
        children = list(t.fields)
    return all(_native_type(child) for child in children)


def _file_matches(table: Table, task: FileScanTask, schema: Schema) -> bool:
    """Does the file hold every column of `schema` under its current name and Arrow type,
    nested fields (by id) included?"""
    file_schema = pq.read_schema(table.io.open_input(task.data_file.file_path))
    return file_matches_schema(file_schema, schema)
