"""A planned mor scan as a plain DataFrame plan: Spark's native Parquet reader, filtered by
mor's JVM delete functions (mor/spark/delete_functions.py).

No Python runs on executors and nothing here needs Python data sources, so this is how Spark
3.5 reads mor tables, and how Spark 4 reads files with deletes whenever the jar can be added to
the session. The driver plans the scan with mor, as the local reader does, and turns the
FileScanTasks into one native Parquet read per group of files that share a shape (the same file
columns for the fields read, mor/spark/file_columns.py: renamed, added, widened and nested
columns resolved by field id). A group with deletes is filtered by
`keep(_metadata.file_path, _metadata.row_index, <equality columns>)`, whose executors apply
exactly the delete files the planner gave each file: position deletes and deletion vectors by
position, equality deletes by key (null matching null, columns compared as the table's current
types, an older file's int keys matching a widened bigint column).

A table that never changed its schema and maps no names (no imported files) has every file in
the table's own names: those files are read without looking at their footers. A column a file
lacks reads as its initial default (format v3), else null.

The result has the table's column names and mor's Spark types (mor/spark/types.py). Not
supported (UnsupportedFeatureError, `unsupported_reason` says why before reading): uuid and time
columns (Spark's Parquet reader has no such types), equality deletes on float, double or
nested columns, object storage without a Hadoop filesystem for its scheme (s3a, gs, abfss), a
session the jar cannot be added to (Spark Connect). Like the local reader, a column a file does not hold reads as its default or null
(identity partition values are not filled from partition data).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.schema import Schema
from pyiceberg.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    FixedType,
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestampType,
    TimestamptzType,
    TimeType,
    UUIDType,
)
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as st

from mor.api.table import Table
from mor.errors import CorruptMetadataError, UnsupportedFeatureError
from mor.format.lineage import LINEAGE_FIELD_IDS
from mor.format.spec import ROW_ID_FIELD_ID
from mor.io.fileio import FileIO, unreadable
from mor.planning.task import FileScanTask
from mor.read.field_resolution import FileProjection, parse_name_mapping
from mor.read.scan_reader import parallel_map
from mor.read.task_reader import free_name
from mor.spark.delete_functions import ReadFunctions, install, read_functions
from mor.spark.file_columns import FileRead, file_read, quoted, table_read
from mor.spark.file_paths import FILE_COLUMN, POS_COLUMN, hadoop_reads, has_s3a, native_parquet
from mor.spark.types import spark_schema

# Equality columns the JVM functions compare (as Long, UTF8String, bytes, BigInteger, Boolean).
_EQUALITY_TYPES = (
    BooleanType, IntegerType, LongType, DateType, TimestampType, TimestamptzType, StringType, BinaryType, FixedType, DecimalType,
)  # fmt: skip


def unsupported_reason(spark: SparkSession, schema: Schema, read_schema: Schema, tasks: Sequence[FileScanTask]) -> str | None:
    """Why the DataFrame plan cannot read `read_schema` of these tasks (None: it can)."""
    eq_ids = _equality_ids(tasks)
    fields = [*read_schema.fields, *(f for f in schema.fields if f.field_id in eq_ids)]
    odd = [f.name for f in fields if _has_type(f.field_type, (UUIDType, TimeType))]
    if odd:
        return f"uuid and time columns have no native Spark Parquet type ({', '.join(odd)})"
    columns = {f.field_id: f for f in schema.fields}
    missing = sorted(i for i in eq_ids if i not in columns)
    if missing:
        return f"equality deletes on fields that are not columns of the table's schema (dropped, or inside a struct: ids {missing})"
    odd = [columns[i].name for i in eq_ids if not isinstance(columns[i].field_type, _EQUALITY_TYPES)]
    if odd:
        return f"the JVM functions compare no equality delete column of these types ({', '.join(odd)})"
    if not hadoop_reads(spark, [t.data_file.file_path for t in tasks], s3a=has_s3a):
        return "object storage needs a Hadoop filesystem for its scheme in the session (s3a: hadoop-aws; gs; abfss)"
    if any(t.delete_files for t in tasks):
        return install(spark)
    return None


def _has_type(t: IcebergType, kinds: tuple[type, ...]) -> bool:
    if isinstance(t, kinds):
        return True
    if isinstance(t, StructType):
        return any(_has_type(f.field_type, kinds) for f in t.fields)
    if isinstance(t, ListType):
        return _has_type(t.element_type, kinds)
    if isinstance(t, MapType):
        return _has_type(t.key_type, kinds) or _has_type(t.value_type, kinds)
    return False


@dataclass
class _Group:
    """Files read by one native scan: the same file columns."""

    read: FileRead
    tasks: list[FileScanTask] = field(default_factory=list)

    @property
    def has_deletes(self) -> bool:
        return any(t.delete_files for t in self.tasks)


def read_dataframe_plan(
    spark: SparkSession, table: Table, schema: Schema, read_schema: Schema, tasks: Sequence[FileScanTask],
    metadata_columns: bool = False,
) -> DataFrame:  # fmt: skip
    """The live rows of `tasks` (planned on `schema`, the scan's table schema), columns
    `read_schema` (the v3 row lineage columns among them: stored, else inherited from the file's
    metadata), as a DataFrame of native Parquet reads filtered by mor's delete functions.
    `metadata_columns`: also `_file` (the row's data file as the table spells it) and `_pos`."""
    reason = unsupported_reason(spark, schema, read_schema, tasks)
    if reason is not None:
        raise UnsupportedFeatureError(f"mor's DataFrame plan cannot read this scan: {reason}")
    names = [f.name for f in read_schema.fields] + ([FILE_COLUMN, POS_COLUMN] if metadata_columns else [])
    if not tasks:
        output = spark_schema(read_schema)
        if metadata_columns:
            output = output.add(FILE_COLUMN, st.StringType(), False).add(POS_COLUMN, st.LongType(), False)
        return spark.createDataFrame([], output)
    taken = {f.name.lower() for f in schema.fields}
    file_column, pos_column = quoted(free_name("__mor_file", taken)), quoted(free_name("__mor_pos", taken))
    eq_ids = sorted(_equality_ids(tasks))
    lineage = [f for f in read_schema.fields if f.field_id in LINEAGE_FIELD_IDS]
    wanted = {f.field_id for f in read_schema.fields} | set(eq_ids)
    fields = [f for f in schema.fields if f.field_id in wanted] + lineage
    parts = []
    for group in _groups(table, fields, tasks):
        df = native_parquet(spark, group.read.read_schema, [t.data_file.file_path for t in group.tasks])
        if not (group.has_deletes or metadata_columns or lineage):
            parts.append(df.select(*group.read.columns).select(*[F.col(quoted(n)) for n in names]))
            continue
        located = [F.col("_metadata.file_path").alias(file_column[1:-1]), F.col("_metadata.row_index").alias(pos_column[1:-1])]
        df = df.select(*group.read.columns, *located)
        # Spark resolves the functions inside the block, while the read's deletes are in the conf.
        with read_functions(spark, group.tasks, eq_ids) as functions:
            if group.has_deletes:
                df = df.filter(F.expr(_keep(functions, schema, eq_ids, file_column, pos_column)))
            for f in lineage:
                inherited = (
                    f"{functions.first_row_id(file_column)} + {pos_column}"
                    if f.field_id == ROW_ID_FIELD_ID
                    else functions.data_sequence(file_column)
                )
                df = df.withColumn(f.name, F.coalesce(F.col(quoted(f.name)), F.expr(inherited)))
            if metadata_columns:
                df = df.withColumn(FILE_COLUMN, F.expr(functions.table_path(file_column))).withColumn(POS_COLUMN, F.col(pos_column))
        parts.append(df.select(*[F.col(quoted(n)) for n in names]))
    return functools.reduce(DataFrame.union, parts)


def _keep(functions: ReadFunctions, schema: Schema, eq_ids: list[int], file_column: str, pos_column: str) -> str:
    """The keep filter: one integer or string equality column (an id, the common case) takes a
    form Spark calls directly; other columns go in as a row."""
    columns = [schema.find_field(i) for i in eq_ids]
    if len(columns) == 1 and isinstance(columns[0].field_type, (IntegerType, LongType)):
        return functions.keep_by_long(file_column, pos_column, quoted(columns[0].name))
    if len(columns) == 1 and isinstance(columns[0].field_type, StringType):
        return functions.keep_by_string(file_column, pos_column, quoted(columns[0].name))
    return functions.keep(file_column, pos_column, [quoted(f.name) for f in columns])


def _equality_ids(tasks: Sequence[FileScanTask]) -> set[int]:
    return {i for t in tasks for f in t.equality_deletes for i in f.equality_ids or ()}


def _groups(table: Table, fields: list[NestedField], tasks: Sequence[FileScanTask]) -> list[_Group]:
    """Tasks grouped by file shape. A table of one schema and no name mapping wrote every file
    in its own names and types: one group, no footer read. Otherwise each file's footer is read
    once, in parallel (a GET each on object storage)."""
    if len(table.metadata.schemas) == 1 and not any(t.name_mapping for t in tasks):
        return [_Group(table_read(fields), list(tasks))]
    footers = parallel_map(lambda t: _footer(table.io, t), list(tasks))
    groups: dict[tuple, _Group] = {}
    for task, file_schema in zip(tasks, footers):
        path = task.data_file.file_path
        projection = FileProjection(file_schema, fields, path, parse_name_mapping(task.name_mapping))
        used = pa.schema([file_schema.field(c) for c in projection.file_columns])
        key = (tuple(c.column for c in projection.columns), used.serialize().to_pybytes())
        group = groups.get(key)
        if group is None:
            group = groups[key] = _Group(file_read(file_schema, projection))
        group.tasks.append(task)
    return list(groups.values())


def _footer(io: FileIO, task: FileScanTask) -> pa.Schema:
    path = task.data_file.file_path
    try:
        with io.open_input(path) as source:
            parquet = pq.ParquetFile(source)
            if parquet.metadata.num_rows != task.data_file.record_count:
                # Another file in its place: position deletes would remove the wrong rows.
                raise CorruptMetadataError(
                    f"data file {path} has {parquet.metadata.num_rows} rows, its manifest says {task.data_file.record_count}"
                )
            return parquet.schema_arrow
    except (OSError, pa.ArrowException) as e:
        raise unreadable("data file", path, e) from e


__all__ = ["read_dataframe_plan", "unsupported_reason"]
