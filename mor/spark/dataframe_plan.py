"""A planned mor scan as a plain DataFrame plan: Spark's native Parquet reader plus anti-joins.

No Python runs on executors and nothing here needs Python data sources, so this is how Spark
3.5 reads mor tables (and, on Spark 4, an alternative to the Python source for files with
deletes). The driver plans the scan with mor, as the local reader does, and turns the
FileScanTasks into:

- one native Parquet read per group of files that share a shape (the same file columns for the
  fields read, mor/spark/file_columns.py: renamed, added, widened and nested columns resolved by
  field id) and the same equality deletes, with `_metadata.file_path` and `_metadata.row_index`
  when any file of the group has position deletes;
- position deletes and deletion vectors as a left anti-join on (file, position) against one
  broadcast DataFrame of the positions the driver decoded (mor/read/position_deletes.py) from
  exactly the delete files each task lists: a position delete file that also names other data
  files deletes nothing there unless their tasks list it too;
- equality deletes as a left anti-join per equality column set against the broadcast keys of
  the delete files the group's tasks list (the planner already kept only deletes with a higher
  data sequence number than the file's), compared null-safely (`eqNullSafe`: a null key deletes
  rows whose value is null), columns matched by field id and read as the table's current names
  and types.

The result has the table's column names and mor's Spark types (mor/spark/types.py). Not
supported (UnsupportedFeatureError, `unsupported_reason` says why before reading): uuid and time
columns (Spark's Parquet reader has no such types), the v3 row lineage columns (inherited from
manifest entries, not stored), object storage without an `s3a` Hadoop filesystem. Like the local
reader, a column a file does not hold reads as null (identity partition values are not filled
from partition data).
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pyspark
from pyiceberg.schema import Schema
from pyiceberg.types import IcebergType, ListType, MapType, NestedField, StructType, TimeType, UUIDType
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as st

from mor.api.table import Table
from mor.errors import CorruptMetadataError, UnsupportedFeatureError
from mor.format.content_file import DeleteFile
from mor.format.lineage import LINEAGE_FIELD_IDS
from mor.io.fileio import FileIO, is_object_store, unreadable
from mor.planning.task import FileScanTask
from mor.read.equality_deletes import shared_equality_delete_file
from mor.read.field_resolution import FileProjection, parse_name_mapping
from mor.read.position_deletes import DeleteFileCache, deleted_positions
from mor.read.scan_reader import parallel_map
from mor.read.task_reader import free_name
from mor.spark.file_columns import FileRead, file_read, quoted
from mor.spark.file_paths import has_s3a, spark_file_key, spark_read_path
from mor.spark.types import spark_schema, spark_type

ARROW_CREATE = int(pyspark.__version__.split(".")[0]) >= 4  # createDataFrame(pyarrow.Table)


def unsupported_reason(spark: SparkSession, schema: Schema, read_schema: Schema, tasks: Sequence[FileScanTask]) -> str | None:
    """Why the DataFrame plan cannot read `read_schema` of these tasks (None: it can)."""
    if any(f.field_id in LINEAGE_FIELD_IDS for f in read_schema.fields):
        return "the row lineage columns are inherited from manifest entries"
    eq_ids = {i for t in tasks for f in t.equality_deletes for i in f.equality_ids or ()}
    fields = [*read_schema.fields, *(f for f in schema.fields if f.field_id in eq_ids)]
    odd = [f.name for f in fields if _has_type(f.field_type, (UUIDType, TimeType))]
    if odd:
        return f"uuid and time columns have no native Spark Parquet type ({', '.join(odd)})"
    if any(is_object_store(t.data_file.file_path) for t in tasks) and not has_s3a(spark):
        return "object storage needs an s3a Hadoop filesystem in the session (hadoop-aws)"
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
    """Files read by one native scan: same file columns, same equality deletes."""

    read: FileRead
    equality_deletes: tuple[DeleteFile, ...]
    name_mapping: str | None
    tasks: list[FileScanTask] = field(default_factory=list)

    @property
    def has_positions(self) -> bool:
        return any(t.position_deletes for t in self.tasks)


def read_dataframe_plan(spark: SparkSession, table: Table, schema: Schema, read_schema: Schema, tasks: Sequence[FileScanTask]) -> DataFrame:
    """The live rows of `tasks` (planned on `schema`, the scan's table schema), columns
    `read_schema`, as a DataFrame of native Parquet reads and anti-joins."""
    reason = unsupported_reason(spark, schema, read_schema, tasks)
    if reason is not None:
        raise UnsupportedFeatureError(f"mor's DataFrame plan cannot read this scan: {reason}")
    names = [f.name for f in read_schema.fields]
    if not tasks:
        return spark.createDataFrame([], spark_schema(read_schema))
    taken = {f.name.lower() for f in schema.fields}
    file_column, pos_column = free_name("__mor_file", taken), free_name("__mor_pos", taken)
    groups = _groups(table.io, schema, read_schema, tasks)
    positions = _positions_frame(spark, table.io, tasks, file_column, pos_column)
    keys = _EqualityKeys(spark, table.io, schema, taken)
    parts = []
    for group in groups:
        paths = [spark_read_path(t.data_file.file_path) for t in group.tasks]
        df = spark.read.schema(group.read.read_schema).parquet(*paths)
        if group.has_positions:
            assert positions is not None
            located = [F.col("_metadata.file_path").alias(file_column), F.col("_metadata.row_index").alias(pos_column)]
            df = df.select(*group.read.columns, *located).join(F.broadcast(positions), on=[file_column, pos_column], how="left_anti")
        else:
            df = df.select(*group.read.columns)
        for ids, files in _by_equality_ids(group.equality_deletes):
            found = keys.frame(ids, files, group.name_mapping)
            if found is not None:
                key_frame, key_columns = found
                on = functools.reduce(
                    operator.and_, [F.col(quoted(schema.find_field(i).name)).eqNullSafe(F.col(k)) for i, k in zip(ids, key_columns)]
                )
                df = df.join(F.broadcast(key_frame), on=on, how="left_anti")
        parts.append(df.select(*[F.col(quoted(n)) for n in names]))
    return functools.reduce(DataFrame.union, parts)


def _groups(io: FileIO, schema: Schema, read_schema: Schema, tasks: Sequence[FileScanTask]) -> list[_Group]:
    """Tasks grouped by file shape and equality deletes; each file's footer is read once, in
    parallel (a GET each on object storage)."""
    read_ids = {f.field_id for f in read_schema.fields}
    footers = parallel_map(lambda t: _footer(io, t), list(tasks))
    groups: dict[tuple, _Group] = {}
    for task, file_schema in zip(tasks, footers):
        eq_ids = {i for f in task.equality_deletes for i in f.equality_ids or ()}
        fields = [f for f in schema.fields if f.field_id in read_ids | eq_ids]
        path = task.data_file.file_path
        projection = FileProjection(file_schema, fields, path, parse_name_mapping(task.name_mapping))
        used = pa.schema([file_schema.field(c) for c in projection.file_columns])
        key = (
            tuple(f.field_id for f in fields),
            tuple(c.column for c in projection.columns),
            used.serialize().to_pybytes(),
            tuple(sorted(str(f.key) for f in task.equality_deletes)),
        )
        group = groups.get(key)
        if group is None:
            group = groups[key] = _Group(file_read(file_schema, projection), task.equality_deletes, task.name_mapping)
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


def _positions_frame(spark: SparkSession, io: FileIO, tasks: Sequence[FileScanTask], file_column: str, pos_column: str) -> DataFrame | None:
    """(file, position) of every row the tasks' own position deletes remove; None: no rows."""
    with_deletes = [t for t in tasks if t.position_deletes]
    if not with_deletes:
        return None
    cache = DeleteFileCache(io, with_deletes)
    files: list[str] = []
    runs: list[np.ndarray] = []
    for task in with_deletes:
        path = task.data_file.file_path
        run = deleted_positions(path, task.position_deletes, cache, task.data_file.record_count)
        cache.done(task)
        files.append(spark_file_key(spark, path))
        runs.append(run)
    counts = np.array([len(r) for r in runs], dtype=np.int64)
    table = pa.table(
        {
            file_column: pa.DictionaryArray.from_arrays(
                np.repeat(np.arange(len(files), dtype=np.int32), counts), pa.array(files, pa.string())
            ).cast(pa.string()),
            pos_column: pa.array(np.concatenate(runs) if runs else np.empty(0, np.int64), pa.int64()),
        }
    )
    schema = st.StructType([st.StructField(file_column, st.StringType(), False), st.StructField(pos_column, st.LongType(), False)])
    return _frame(spark, table, schema)


def _frame(spark: SparkSession, table: pa.Table, schema: st.StructType) -> DataFrame:
    """A DataFrame of `table`'s rows: through Arrow where pyspark takes Arrow tables (4.0+),
    else as Python rows (Spark 3.5 without pandas)."""
    if ARROW_CREATE:
        return spark.createDataFrame(table, schema=schema)
    return spark.createDataFrame([tuple(r.values()) for r in table.to_pylist()], schema=schema)


def _by_equality_ids(files: Iterable[DeleteFile]) -> list[tuple[tuple[int, ...], tuple[DeleteFile, ...]]]:
    by_ids: dict[tuple[int, ...], list[DeleteFile]] = {}
    for f in files:
        by_ids.setdefault(tuple(f.equality_ids or ()), []).append(f)
    return [(ids, tuple(fs)) for ids, fs in by_ids.items()]


class _EqualityKeys:
    """Broadcastable key DataFrames, one per (equality ids, delete files): groups sharing
    deletes share the DataFrame."""

    def __init__(self, spark: SparkSession, io: FileIO, schema: Schema, taken: set[str]):
        self.spark = spark
        self.io = io
        self.schema = schema
        self.taken = taken
        self.frames: dict[tuple, tuple[DataFrame, list[str]] | None] = {}

    def frame(self, ids: tuple[int, ...], files: tuple[DeleteFile, ...], name_mapping: str | None) -> tuple[DataFrame, list[str]] | None:
        key = (ids, tuple(sorted(str(f.key) for f in files)))
        if key not in self.frames:
            self.frames[key] = self._build(ids, files, name_mapping)
        return self.frames[key]

    def _build(self, ids: tuple[int, ...], files: tuple[DeleteFile, ...], name_mapping: str | None) -> tuple[DataFrame, list[str]] | None:
        mapping = parse_name_mapping(name_mapping)
        tables = [shared_equality_delete_file(self.io, f, self.schema, mapping) for f in files]
        keys = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
        if keys.num_rows == 0:
            return None
        fields: list[NestedField] = [self.schema.find_field(i) for i in ids]
        columns = [free_name(f"__mor_key{n}", self.taken) for n in range(len(ids))]
        spark_fields = [st.StructField(c, spark_type(f.field_type), True) for c, f in zip(columns, fields)]
        rows = [tuple(r.values()) for r in keys.select([f.name for f in fields]).to_pylist()]
        return self.spark.createDataFrame(rows, schema=st.StructType(spark_fields)), columns


__all__ = ["read_dataframe_plan", "unsupported_reason"]
