"""One Spark job that applies a DataFrame of row changes to a table, for DML whose conditions and
values Spark evaluates (mor/spark/table.py).

A change row names a live target row to remove by its data file and position (`_file`, `_pos`,
as format "mor" reads them with option `metadata-columns`; null for a new row) and, when its
`__mor_write` flag is set, the values of a row to add (every table column, already cast to the
table's Spark types; on a v3 table also the `_row_id` an updated row keeps, null for a new one).
So a DELETE removes, an UPDATE removes and adds, a MERGE does either per row.

The change rows are repartitioned by `_file`, so each data file's removals meet in one task; a
task writes them with the local writer (`RowRemover`: a position delete file per data file, a
deletion vector on v3, or a copy-on-write rewrite, per the table's mode) and writes its new rows
(`DmlTarget.write_rows`), and the driver commits one snapshot, all as mor/spark/dml.py does
(`run_task`, `found_changes`, whose docstrings say how failures clean up). A target row named by
two change rows (a MERGE where several source rows match it) is a DuplicateKeyError, found by the
task that holds that file, before the commit.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyiceberg.expressions import AlwaysTrue, BooleanExpression
from pyiceberg.types import UUIDType
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import BinaryType, StructField, StructType

from mor.api.table import Table
from mor.commit.snapshot_producer import Changes, Validator
from mor.dml.row_changes import DmlTarget, FileMatch, Removal, RowRemover, live_row_count
from mor.errors import DuplicateKeyError, UnsupportedFeatureError
from mor.format.spec import ROW_ID_NAME
from mor.io.fileio import FileIO
from mor.planning.task import FileScanTask
from mor.read.position_deletes import DeleteFileCache
from mor.spark.dml import TaskResult, found_changes, run_task
from mor.spark.fast_path import read_located_rows
from mor.spark.file_paths import FILE_COLUMN, POS_COLUMN
from mor.write.arrow_schema import conform

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

WRITE_COLUMN = "__mor_write"  # true: the row's table columns are written as a new row
RESULT_SCHEMA = StructType([StructField("result", BinaryType())])  # one pickled TaskResult per task


@dataclass(frozen=True)
class ChangeJob:
    """What every task needs; shipped to the executors."""

    target: DmlTarget
    tasks: Mapping[str, FileScanTask]  # the planned target files, by path
    row_ids: bool  # v3: new rows carry the `_row_id` of the row they replace (or null)


@dataclass(frozen=True)
class TargetRows:
    """The live rows of the planned data files, with `_file`, `_pos` (and on v3 `_row_id`)."""

    rows: DataFrame
    tasks: Mapping[str, FileScanTask]
    row_ids: bool


def target_rows(spark: SparkSession, table: Table, row_filter: BooleanExpression = AlwaysTrue()) -> TargetRows:
    """The table's live rows in the files that `row_filter` may match, read from exactly the
    metadata the commit will validate against."""
    tasks = table.scan(filter=row_filter).plan_files()
    row_ids = table.metadata.format_version >= 3
    columns = [f.name for f in table.schema().fields] + ([ROW_ID_NAME] if row_ids else [])
    rows = read_located_rows(spark, table, tasks, columns)
    return TargetRows(rows, {t.data_file.file_path: t for t in tasks}, row_ids)


def check_writable_columns(table: Table) -> None:
    """Spark reads uuid columns as strings, which do not cast back to the table's 16 bytes."""
    uuids = [f.name for f in table.schema().fields if isinstance(f.field_type, UUIDType)]
    if uuids:
        raise UnsupportedFeatureError(f"rows of a table with uuid columns {uuids} cannot be rewritten through Spark")


def apply_changes(
    spark: SparkSession, table: Table, target: TargetRows, changes: DataFrame, kind: str, mode: str,
    row_filter: BooleanExpression = AlwaysTrue(),
) -> tuple[Changes, Validator] | None:  # fmt: skip
    """Write the files of `changes` (see the module docstring) on the executors and describe the
    commit for `run_dml` (mor/dml/runner.py); None when nothing changes. `row_filter` is what the conflict
    checks take as the rows the operation read."""
    job = ChangeJob(DmlTarget.of(table, mode), target.tasks, target.row_ids)
    n = spark.sparkContext.defaultParallelism
    values = [c for c in changes.columns if c not in (FILE_COLUMN, POS_COLUMN, WRITE_COLUMN)]
    # New rows without a target row spread by their values (deterministic, so a retried task
    # gets the same rows); only balance depends on it, a bucket number is never a file path.
    spread = F.pmod(F.hash(*[F.col(f"`{c}`") for c in values]), F.lit(n)).cast("string") if values else F.lit("0")
    by_file = changes.repartition(n, F.coalesce(F.col(FILE_COLUMN), spread))
    results = [pickle.loads(row[0]) for row in by_file.mapInArrow(partial(_change_task, job), RESULT_SCHEMA).collect()]
    return found_changes(table, results, kind, row_filter)


# -- executors -------------------------------------------------------------------------------


def _change_task(job: ChangeJob, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    received = list(batches)  # all input first: nothing is written before the input is complete
    rows = pa.Table.from_batches(received) if received else None
    if rows is not None and rows.num_rows:
        result = run_task(job.target.io, partial(_change_rows, job, rows))
        yield pa.RecordBatch.from_arrays([pa.array([pickle.dumps(result)], pa.binary())], names=["result"])


def _change_rows(job: ChangeJob, rows: pa.Table, io: FileIO, written: list[str]) -> TaskResult:
    removals: list[Removal] = []
    removed = rows.filter(pc.is_valid(rows.column(FILE_COLUMN)))
    if removed.num_rows:
        remover, cache = RowRemover(io, job.target), DeleteFileCache(io)
        for path, positions in _positions_by_file(removed):
            task = job.tasks[path]
            removal = remover.remove(FileMatch(task, positions, live_row_count(task, cache)))
            written += removal.written
            removals.append(removal)
        removals = remover.finish(removals, written)
    added = []
    new = rows.filter(pc.fill_null(rows.column(WRITE_COLUMN), False))
    if new.num_rows:
        schema = job.target.schema
        values = conform(new.select([f.name for f in schema.fields]), schema)
        if job.row_ids:
            values = values.append_column(pa.field(ROW_ID_NAME, pa.int64()), new.column(ROW_ID_NAME).cast(pa.int64()))
        added = job.target.write_rows(io, values)
        written += [f.file_path for f in added]
    return TaskResult(tuple(removals), tuple(added))


def _positions_by_file(removed: pa.Table) -> Iterator[tuple[str, np.ndarray]]:
    """Each data file's removed positions, sorted; a position named twice is an error."""
    files = removed.column(FILE_COLUMN).combine_chunks().dictionary_encode()
    codes = files.indices.to_numpy(zero_copy_only=False)
    positions = removed.column(POS_COLUMN).to_numpy()
    order = np.argsort(codes, kind="stable")
    for group in np.split(order, np.flatnonzero(np.diff(codes[order])) + 1):
        path = files.dictionary[codes[group[0]]].as_py()
        unique = np.unique(positions[group])
        if len(unique) != len(group):
            raise DuplicateKeyError(
                f"{len(group) - len(unique)} rows of data file {path} are matched by several source rows: "
                "a target row may be changed by one source row only"
            )
        yield path, unique.astype(np.int64)
