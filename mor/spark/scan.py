"""A Spark read of a mor table: the plan made on the driver, and the read of one task group
on an executor with the local reader."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace

import pyarrow as pa
from pyiceberg.expressions import AlwaysTrue, And, BooleanExpression
from pyiceberg.schema import Schema
from pyspark.sql.datasource import Filter, InputPartition
from pyspark.sql.types import LongType, StringType, StructField, StructType

from mor.api.table import Table
from mor.format.lineage import LINEAGE_FIELDS, with_lineage
from mor.planning.packing import pack_tasks
from mor.planning.planner import plan_files
from mor.planning.task import FileScanTask
from mor.read.position_deletes import DeleteFileCache
from mor.read.task_reader import TaskReader
from mor.spark.file_paths import FILE_COLUMN, POS_COLUMN, check_metadata_columns_free
from mor.spark.filters import to_row_filter
from mor.spark.options import ReadOptions, TableRef
from mor.spark.types import (
    check_requested_schema,
    spark_arrow_schema,
    spark_schema,
    to_spark_batch,
)

CASE_SENSITIVE = False  # Spark resolves column names case-insensitively by default
METADATA_FIELDS = [StructField(FILE_COLUMN, StringType(), False), StructField(POS_COLUMN, LongType(), False)]


PARALLELISM_ENV = "MOR_SPARK_PARALLELISM"  # the session's defaultParallelism, set by register()


def partition_target(requested: int | None) -> int:
    """How many input partitions a read packs its tasks into: the read's `partitions` option,
    else the session's default parallelism (as register() recorded it), else the cores here."""
    return requested or int(os.environ.get(PARALLELISM_ENV) or os.cpu_count() or 1)


class TaskGroup(InputPartition):
    """One Spark input partition: scan tasks packed together (see planning/packing.py)."""

    def __init__(self, tasks: list) -> None:  # list[FileScanTask]
        super().__init__(None)
        self.tasks = tasks

    def __repr__(self) -> str:
        return f"TaskGroup({len(self.tasks)} tasks)"


@dataclass(frozen=True)
class ScanPlan:
    """What to read, resolved once on the driver; small and picklable (Spark ships it with
    every task)."""

    ref: TableRef
    options: ReadOptions
    snapshot_id: int | None
    schema: Schema  # the snapshot's schema
    projection: Schema
    row_filter: BooleanExpression
    output: StructType
    table: Table | None = field(default=None, compare=False)  # the driver's handle; not shipped

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["table"] = None
        return state

    def with_pushed(self, filters: Sequence[Filter]) -> ScanPlan:
        pushed = to_row_filter(filters, self.schema)
        if isinstance(pushed, AlwaysTrue):
            return self
        combined = pushed if isinstance(self.row_filter, AlwaysTrue) else And(self.row_filter, pushed)
        return replace(self, row_filter=combined)

    def tasks(self) -> list[FileScanTask]:
        table = self.table or self.ref.open()
        if self.snapshot_id is None:
            return []
        snapshot = table.metadata.snapshot_by_id(self.snapshot_id)
        tasks = plan_files(table.io, table.metadata, snapshot, self.row_filter, CASE_SENSITIVE, self.schema, keep_metrics=False)
        only = self.options.data_files
        return tasks if only is None else [t for t in tasks if t.data_file.file_path in only]

    def packed_tasks(self, groups: int) -> list[list[FileScanTask]]:
        return pack_tasks(self.tasks(), groups)


def plan_scan(ref: TableRef, options: ReadOptions, requested: StructType | None) -> ScanPlan:
    """Resolve the table, snapshot (time travel uses that snapshot's schema) and columns: the
    `columns` option, else the user's `.schema(...)`, else every column."""
    table = ref.open()
    scan = table.scan(options.filter, options.columns, options.snapshot_id, options.as_of_ms, CASE_SENSITIVE, branch=options.branch)
    projection, output = scan.projection, spark_schema(scan.projection)
    if options.metadata_columns:
        check_metadata_columns_free(scan.schema)
    if requested is not None:
        extra = (FILE_COLUMN, POS_COLUMN) if options.metadata_columns else ()
        table_columns = StructType([f for f in requested.fields if f.name not in extra])
        candidates = _with_lineage_asked(table, projection, table_columns)
        by_name = {f.name: f for f in candidates.fields}
        names = check_requested_schema(table_columns, candidates)
        projection = Schema(*[by_name[n] for n in names], schema_id=projection.schema_id)
        output = requested
    elif options.metadata_columns:
        output = StructType([*output.fields, *METADATA_FIELDS])
    return ScanPlan(
        ref=ref.with_io_of(table),
        options=options,
        snapshot_id=scan.snapshot.snapshot_id if scan.snapshot else None,
        schema=scan.schema,
        projection=projection,
        row_filter=scan.row_filter,
        output=output,
        table=table,
    )


def _with_lineage_asked(table: Table, projection: Schema, requested: StructType) -> Schema:
    """`projection` and the row lineage columns (v3) a user's `.schema(...)` names, when the
    `columns` option did not select them already."""
    if table.metadata.format_version < 3:
        return projection
    have = {f.name.lower() for f in projection.fields}
    asked = {f.name.lower() for f in requested.fields}
    lineage = [n for n in LINEAGE_FIELDS if n.lower() in asked and n.lower() not in have]
    return with_lineage(projection, *lineage) if lineage else projection


def read_group(plan: ScanPlan, tasks: Sequence[FileScanTask]) -> Iterator[pa.RecordBatch]:
    """The live rows of `tasks`, as batches of exactly Spark's Arrow schema."""
    io = plan.ref.file_io()
    with_positions = plan.options.metadata_columns
    reader = TaskReader(
        io, plan.schema, plan.projection, plan.row_filter, DeleteFileCache(io, tasks), CASE_SENSITIVE, with_positions=with_positions
    )
    reader.equality_cache.prepare(d for t in tasks for d in t.equality_deletes)
    reader.cache.prefetch()
    target = spark_arrow_schema(plan.output)
    for task in tasks:
        for batch in reader.read(task):
            if with_positions:
                batch = batch.append_column(FILE_COLUMN, pa.repeat(task.data_file.file_path, batch.num_rows))
            yield to_spark_batch(batch, target)
        reader.cache.done(task)
