"""The fast read: Spark's native Parquet reader for data files no delete applies to, the mor
Python source for the rest, as one DataFrame.

Only files with deletes pay for the Python worker hop. A delete-free file goes native only when
Spark's by-name Parquet reading is sure to see the table's columns: its columns must carry the
table's names for their field ids (a renamed or re-typed column after schema evolution falls
back to the Python source, which maps columns by field id), and the projected types must be
ones Spark reads natively (not uuid or time). Reading the row lineage columns of a v3 table
(`columns=[..., "_row_id", "_last_updated_sequence_number"]`) takes the Python source for
every file: their values are mostly inherited from manifest entries, not stored.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Mapping, Sequence

import pyarrow.parquet as pq
from pyiceberg.expressions import AlwaysTrue
from pyiceberg.schema import Schema
from pyiceberg.types import ListType, MapType, NestedField, PrimitiveType, TimeType, UUIDType
from pyspark.sql import DataFrame, SparkSession

from mor.api.table import Table
from mor.format.lineage import LINEAGE_FIELD_IDS
from mor.io.fileio import is_object_store
from mor.planning.filters import FilterLike, bind_filter, filter_field_ids
from mor.planning.task import FileScanTask
from mor.spark.columns import to_column
from mor.spark.options import TableRef
from mor.spark.scan import CASE_SENSITIVE
from mor.spark.source import FORMAT
from mor.spark.types import spark_schema
from mor.read.field_resolution import file_matches_schema


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
) -> DataFrame:
    """The live rows of `table` (a mor Table, a `namespace.table` name with `warehouse`/`uri`,
    or a metadata location) as a DataFrame: the rows `table.scan(...).to_arrow()` returns.
    `properties`: file access (`s3.endpoint`, ...), as `load_catalog`'s. A table in object
    storage is read by the Python source alone (Spark's own Parquet reader would need the
    Hadoop S3 connector on the classpath)."""
    if not isinstance(table, Table):
        table = TableRef(table, warehouse, uri, tuple(sorted((properties or {}).items()))).open()
    scan = table.scan(filter=filter, columns=columns, snapshot_id=snapshot_id, as_of=as_of, case_sensitive=CASE_SENSITIVE)
    output = [f.name for f in scan.projection.fields]
    # Read the filter's columns too, so Spark can apply the filter before projecting.
    read_ids = {f.field_id for f in scan.projection.fields} | filter_field_ids(scan.schema, scan.row_filter, CASE_SENSITIVE)
    lineage = [f for f in scan.projection.fields if f.field_id in LINEAGE_FIELD_IDS]
    read_schema = Schema(*[f for f in scan.schema.fields if f.field_id in read_ids], *lineage)
    condition = None if isinstance(scan.row_filter, AlwaysTrue) else to_column(bind_filter(scan.schema, scan.row_filter, CASE_SENSITIVE))

    tasks = scan.plan_files()
    # Row lineage is inherited from the file's manifest entry (first row id plus position,
    # its data sequence number) where the file stores none: only the Python reader knows that.
    native = [t for t in tasks if not t.delete_files] if _natively_readable(read_schema) and not lineage else []
    if is_object_store(table.location) or any(is_object_store(t.data_file.file_path) for t in native):
        native = []
    if native and len(table.metadata.schemas) > 1:  # names or types may have changed
        native = [t for t in native if _file_matches(table, t, read_schema)]
    native_paths = {t.data_file.file_path for t in native}
    rest = [t.data_file.file_path for t in tasks if t.data_file.file_path not in native_paths]

    parts = []
    if native:
        df = spark.read.schema(spark_schema(read_schema)).parquet(*[t.data_file.file_path for t in native])
        parts.append(df)
    if rest or not native:
        python = (
            spark.read.format(FORMAT)
            .option("snapshot-id", str(scan.snapshot.snapshot_id) if scan.snapshot else "")
            .option("columns", ",".join(f.name for f in read_schema.fields))
            .option("data-files", json.dumps(rest))
            .options(**table.io.properties)
        )
        if isinstance(filter, str):
            python = python.option("filter", filter)  # prunes row groups in the Python reader
        parts.append(python.load(table.metadata_location))
    if condition is not None:
        parts = [p.filter(condition) for p in parts]
    parts = [p.select(*[f"`{name}`" for name in output]) for p in parts]
    result = parts[0]
    for other in parts[1:]:
        result = result.unionByName(other)
    return result


def _natively_readable(schema: Schema) -> bool:
    return all(_native_type(f) for f in schema.fields)


def _native_type(field: NestedField) -> bool:
    """Can Spark's Parquet reader give this column as mor does? Not uuid or time (Spark has no
    such type); nested types when every field inside them can."""
    t = field.field_type
    if isinstance(t, (UUIDType, TimeType)):
        return False
    if isinstance(t, PrimitiveType):
        return True
    if isinstance(t, ListType):
        children = [t.element_field]
    elif isinstance(t, MapType):
        children = [t.key_field, t.value_field]
    else:
        children = list(t.fields)  # type: ignore[attr-defined]
    return all(_native_type(child) for child in children)


def _file_matches(table: Table, task: FileScanTask, schema: Schema) -> bool:
    """Does the file hold every column of `schema` under its current name and Arrow type,
    nested fields (by id) included?"""
    file_schema = pq.read_schema(table.io.open_input(task.data_file.file_path))
    return file_matches_schema(file_schema, schema)
