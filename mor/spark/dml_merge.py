"""MERGE INTO and UPSERT on key columns from a Spark DataFrame, with the local API's semantics
(mor/dml/merge.py): keys match as SQL's `=` (a key with a null matches no row), a key may appear
once in the source
(DuplicateKeyError), the first clause whose condition holds applies. `MorTable` (mor/spark/table.py)
comes here for a MERGE on key columns whose clauses are pyarrow expressions and literals, and for
every UPSERT:

    mor.spark.merge(spark, table, source_df, on=["id"], when_matched_update="*", when_not_matched_insert="*")
    mor.spark.upsert(spark, table, source_df, on=["id"])

Two paths, chosen by cost (`path="auto"`, or forced with "driver"/"distributed"):

- Driver: when Spark's estimate of the source's size (its optimized plan's statistics, known
  without running a job) is at most `spark.mor.dml.driverSourceMaxBytes` (default 32 MiB), the
  source is collected to Arrow (one job, the source evaluated once) and the local verb runs on
  the driver: `table.merge`/`table.upsert`, the same semantics, conflict checks and snapshot.
  For a small source this beats the distributed path's several jobs and shuffles by far.
- Distributed, below: everything large stays on the executors; the driver checks clauses and
  collects only statistics and file descriptions. The clause checks of step 1 run on both paths,
  so a bad clause is the same error either way.

1. The driver checks the clauses against the table and the source's schema, evaluating every
   expression once on empty rows, so a bad clause fails before any job runs.
2. One aggregation over the source: row count, distinct keys (duplicates fail here, before
   anything is written) and min/max of the orderable key columns, which make the key range that
   prunes the target's files (as the local API does) and that the conflict check uses.
3. The target's live rows are read with format "mor" and its `_file`/`_pos` metadata columns,
   pinned to the metadata the driver planned from (and to the files the key range keeps); only
   the key columns unless the clauses read other table columns. They are joined to the source
   with `=` on the keys (a null key matches nothing): an inner join, or a left join from the source when there is
   an insert clause (a source row without a match then has a null `_file`).
4. The joined rows are repartitioned by `_file`, so each data file's removed rows meet in one
   task (unmatched source rows spread by key hash); each task evaluates the clauses on its rows
   with the local functions, writes one sorted position delete file per data file (or drops,
   or under copy-on-write rewrites, the file) and writes the updated and inserted rows.
5. The driver commits one snapshot, as in mor/spark/dml.py (which also says how failures clean
   up). Steps 1-2 fail before anything is written, and reading and joining end at a shuffle, so
   a failure there (an unreadable data file, say) stops the job before any task writes.

UPSERT removes every live row holding a source key (a semi join of the target with the source
keys, through the same tasks) and appends every source row once, written by about
`defaultParallelism` tasks after a shuffle, in one Spark job.

Row lineage (v3 tables), as the local API keeps it: the target is read with its `_row_id`, and a
row the update clause rewrites keeps the `_row_id` of the row it replaces. An upserted row keeps
the `_row_id` of the one live row that held its key (none when several did): the target's rows
are counted per key (an aggregation over the target's key columns, which reads the target a
second time) and joined to the source before the rows are written.

On the distributed path the source DataFrame is evaluated twice (statistics, then the join): cache it when computing it
is costly or not deterministic. A task holds its share of the joined rows in memory (only the
key columns of the target unless the clauses read others) while it writes.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial, reduce
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyiceberg.expressions import AlwaysTrue, BooleanExpression
from pyiceberg.types import IntegerType, LongType, StringType, UUIDType
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.types import BinaryType, StructField, StructType

from mor.api.table import Table
from mor.commit.snapshot_producer import Changes, Validator
from mor.dml.keys import key_fields, key_range
from mor.dml.merge import (
    MergeOutputs,
    inserted_rows,
    matched_changes,
    merge_outputs,
    with_source_prefix,
)
from mor.dml.merge_clauses import MergeClauses
from mor.dml.row_changes import DmlTarget, FileMatch, Removal, RowRemover, live_row_count
from mor.dml.runner import committed_before, run_dml
from mor.errors import DuplicateKeyError, InvalidArgumentError, MorError, SchemaMismatchError, UnsupportedFeatureError
from mor.expr.filters import bind_filter
from mor.format.arrow_types import to_arrow_schema, to_arrow_type
from mor.format.metadata import Snapshot
from mor.format.spec import ROW_ID_NAME
from mor.io.fileio import FileIO
from mor.planning.task import FileScanTask
from mor.read.position_deletes import DeleteFileCache
from mor.read.task_reader import POSITION_COLUMN
from mor.spark.columns import to_column
from mor.spark.dml import TaskResult, found_changes, job_description, run_task
from mor.spark.fast_path import read_located_rows
from mor.spark.file_paths import FILE_COLUMN, check_metadata_columns_free
from mor.spark.jvm_bridge import java_dataframe
from mor.spark.types import spark_arrow_schema, spark_type
from mor.write.arrow_schema import conform

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DRIVER_SOURCE_CONF = "spark.mor.dml.driverSourceMaxBytes"  # path="auto": the largest source merged on the driver
DRIVER_SOURCE_MAX_BYTES = 32 << 20  # its default, in Spark's estimate of the source's size
PATHS = ("auto", "driver", "distributed")
RESULT_SCHEMA = StructType([StructField("result", BinaryType())])  # one pickled TaskResult per task
ORDERABLE_KEY_TYPES = (IntegerType, LongType, StringType)  # the ones key_range bounds


@dataclass(frozen=True)
class MergeJob:
    """What every task needs; shipped to the executors."""

    target: DmlTarget
    keys: tuple[str, ...]
    clauses: MergeClauses
    outputs: MergeOutputs
    target_columns: tuple[str, ...]  # the table columns read from the target
    source_schema: pa.Schema  # the source as the local API sees it (keys in the table's types)
    tasks: Mapping[str, FileScanTask]  # the planned target files, by path
    row_ids: bool = False  # v3: read the target's `_row_id`, which an updated (upserted) row keeps

    def source_name(self, column: str) -> str:
        """The source column's name in the joined rows, apart from the table's names."""
        return f"__source_{self.source_schema.get_field_index(column)}"


def key_engine_reads(table: Table, source: DataFrame, on: Sequence[str], clauses: MergeClauses) -> bool:
    """Does mor read every clause of a MERGE on keys without complaint (its columns, in their
    case; its functions)? Checked on empty rows, before any job; where it does not, Spark's join
    runs the MERGE and reads the text as Spark does."""
    try:
        keyed, outputs = merge_outputs(table, spark_arrow_schema(source.schema).empty_table(), on, clauses)
        target_columns = [f.name for f in table.schema().fields] if clauses.reads_target_columns else list(on)
        _check_expressions(
            MergeJob(DmlTarget.of(table, "merge-on-read"), tuple(on), clauses, outputs, tuple(target_columns), keyed.schema, {}, False)
        )
    except MorError:
        return False
    return True


def merge_on_keys(
    spark: SparkSession,
    table: Table,
    source: DataFrame,
    on: Sequence[str],
    clauses: MergeClauses,
    mode: str,
    path: str = "auto",
    idempotency: tuple[str, int] | None = None,
) -> Snapshot | None:
    """`table.merge(source, on, clauses=clauses)` with a DataFrame source (see the module
    docstring): clauses of pyarrow expressions and literals. `path`: "auto" (a small source on
    the driver, else distributed), "driver" or "distributed". The new snapshot, or None when no
    clause changed anything."""
    if (earlier := committed_before(table, idempotency)) is not None:
        return earlier  # before any Spark job: the version is in the table already
    check_metadata_columns_free(table.schema())
    keyed, outputs = merge_outputs(table, spark_arrow_schema(source.schema).empty_table(), on, clauses)
    target_columns = [f.name for f in table.schema().fields] if clauses.reads_target_columns else list(on)
    row_ids = table.metadata.format_version >= 3 and clauses.has_update
    job = MergeJob(DmlTarget.of(table, mode), tuple(on), clauses, outputs, tuple(target_columns), keyed.schema, {}, row_ids)
    _check_readable(table, target_columns)
    _check_expressions(job)
    local = _on_driver(spark, table, source, path, "merge")
    if local is not None:
        return table.merge(local, on, clauses=clauses, mode=mode, idempotency=idempotency)
    renamed = _renamed_source(source, job)
    with job_description(spark, f"mor merge into {table.identifier}: source keys and key range"):
        _check_exact_keys(source, job)
        found = _key_filter(table, renamed, job)
    if found is None:
        return None  # an empty source changes nothing
    key_filter, source_rows = found
    how = "left" if clauses.has_insert else "inner"  # unmatched source rows only matter to inserts

    def plan() -> tuple[Changes, Validator] | None:
        planned, target = _target(spark, table, replace(job, target=DmlTarget.of(table, mode)), key_filter)
        joined = _by_file(renamed.join(target, _keys_match(planned), how), spark, planned)
        results = joined.mapInArrow(partial(_merge_task, planned), RESULT_SCHEMA)
        what = f"mor merge into {table.identifier}: join {source_rows:,} source rows with {len(planned.tasks)} data files, write changes"
        with job_description(spark, what):
            return found_changes(table, _collect(results), "merge", key_filter)

    return run_dml(table, "merge", plan, idempotency=idempotency)


def upsert_on_keys(
    spark: SparkSession,
    table: Table,
    source: DataFrame,
    on: Sequence[str],
    mode: str,
    path: str = "auto",
    idempotency: tuple[str, int] | None = None,
) -> Snapshot | None:
    """`table.upsert(rows, on)` (its position strategy) with a DataFrame source: every live row
    holding a source key goes, every source row is added once. `path` and `idempotency` as for
    `merge_on_keys`."""
    if (earlier := committed_before(table, idempotency)) is not None:
        return earlier
    check_metadata_columns_free(table.schema())
    schema = table.schema()
    fitted = conform(spark_arrow_schema(source.schema).empty_table(), schema)  # SchemaMismatchError unless it fits
    key_fields(schema, on)
    job = MergeJob(DmlTarget.of(table, mode), tuple(on), MergeClauses().when_matched_delete(), MergeOutputs((None,), (), (None,), ()),
                   tuple(on), fitted.schema, {}, table.metadata.format_version >= 3)  # fmt: skip
    local = _on_driver(spark, table, source, path, "upsert")
    if local is not None:
        return table.upsert(local, on, mode, idempotency=idempotency)
    renamed = _renamed_source(source, job)
    with job_description(spark, f"mor upsert into {table.identifier}: source keys and key range"):
        _check_exact_keys(source, job)
        found = _key_filter(table, renamed, job)
    if found is None:
        return None
    key_filter, source_rows = found

    def plan() -> tuple[Changes, Validator] | None:
        planned, target = _target(spark, table, replace(job, target=DmlTarget.of(table, mode)), key_filter)
        keys = renamed.select(*[planned.source_name(k) for k in on])
        removals = _by_file(target.join(keys, _keys_match(planned), "left_semi"), spark, planned)
        # The shuffle computes the whole source before any task writes (as the join does for removals).
        spread = (_with_held_row_ids(renamed, target, planned) if planned.row_ids else source).repartition(
            spark.sparkContext.defaultParallelism
        )
        inserts = spread.mapInArrow(partial(_insert_task, planned.target), RESULT_SCHEMA)
        what = f"mor upsert into {table.identifier}: {source_rows:,} source rows against {len(planned.tasks)} data files, write changes"
        with job_description(spark, what):
            results = _collect(removals.mapInArrow(partial(_merge_task, planned), RESULT_SCHEMA).union(inserts))
        return found_changes(table, results, "merge", key_filter)

    return run_dml(table, "merge", plan, idempotency=idempotency)


# -- driver ----------------------------------------------------------------------------------


def _on_driver(spark: SparkSession, table: Table, source: DataFrame, path: str, verb: str) -> pa.Table | None:
    """The source's rows as Arrow when the verb runs on the driver, else None (distributed).
    "auto" takes the driver when Spark's estimate of the source's size (optimized-plan
    statistics: no job) is at most `spark.mor.dml.driverSourceMaxBytes`."""
    if path not in PATHS:
        raise InvalidArgumentError(f"path must be one of {list(PATHS)}, got {path!r}")
    if path == "distributed" or (path == "auto" and not _small(spark, source)):
        return None
    with job_description(spark, f"mor {verb} into {table.identifier}: collect the source to the driver"):
        rows = source.toArrow()
    # Spark's Arrow types (large strings, the session's time zone) as the distributed path sees them.
    return rows.cast(spark_arrow_schema(source.schema))


def _small(spark: SparkSession, source: DataFrame) -> bool:
    limit = int(spark.conf.get(DRIVER_SOURCE_CONF, None) or DRIVER_SOURCE_MAX_BYTES)
    try:
        estimate = int(str(java_dataframe(source).queryExecution().optimizedPlan().stats().sizeInBytes()))
    except Exception:  # no JVM plan to ask (Spark Connect): stay distributed
        return False
    return estimate <= limit


def _check_readable(table: Table, columns: Sequence[str]) -> None:
    # Spark reads uuid as a string, which does not cast back to the table's 16 bytes.
    uuids = [c for c in columns if isinstance(table.schema().find_field(c).field_type, UUIDType)]
    if uuids:
        raise UnsupportedFeatureError(f"Spark MERGE cannot read the uuid columns {uuids} of the table; use Table.merge")


def _check_expressions(job: MergeJob) -> None:
    """Evaluate every clause on empty rows: bad columns and types fail before any job runs."""
    arrow_schema = to_arrow_schema(job.target.schema)
    source = with_source_prefix(job.source_schema.empty_table())
    joined = pa.schema([arrow_schema.field(c) for c in job.target_columns]).empty_table()
    joined = joined.append_column(POSITION_COLUMN, pa.array([], pa.int64()))
    for name in source.column_names:
        joined = joined.append_column(name, source.column(name))
    matched_changes(joined, job.clauses, job.outputs, job.target.schema)
    inserted_rows(source, job.clauses, job.outputs, job.target.schema)


def _check_exact_keys(source: DataFrame, job: MergeJob) -> None:
    """A key is matched exactly, as the local API matches it (`conform(exact=True)`): a source
    key that its cast to the table's key type would change (2.5 into a bigint key, 2**40 into an
    int) is a SchemaMismatchError naming the value, found by one aggregation when a key's type
    could narrow, before anything is written."""
    checks = []
    for name in job.keys:
        source_type = source.schema[name].dataType
        target_type = spark_type(job.target.schema.find_field(name).field_type)
        if not _may_narrow(source_type, target_type):
            continue
        c = F.col(f"`{name}`")
        converted = F.expr(f"try_cast(`{name}` as {target_type.simpleString()})")  # null where out of range
        changed = c.isNotNull() & ~converted.cast(source_type).eqNullSafe(c)
        checks.append(F.first(F.when(changed, c.cast("string")), ignorenulls=True).alias(name))
    if not checks:
        return
    found = source.agg(*checks).first()
    assert found is not None  # a global aggregation has one row
    for name in job.keys:
        if name in found.asDict() and found[name] is not None:
            field_type = to_arrow_type(job.target.schema.find_field(name).field_type)
            raise SchemaMismatchError(f"column {name!r}: key {found[name]} does not fit the table's {field_type} (keys match exactly)")


def _may_narrow(source: T.DataType, target: T.DataType) -> bool:
    """Could a cast of `source` values to `target` change one (a fraction, a wider whole number)?"""
    if source == target:
        return False
    widths: dict[type[T.DataType], int] = {T.ByteType: 1, T.ShortType: 2, T.IntegerType: 4, T.LongType: 8}
    if type(source) in widths and type(target) in widths:
        return widths[type(source)] > widths[type(target)]
    fractional = (T.FloatType, T.DoubleType, T.DecimalType)
    return isinstance(source, fractional) and isinstance(target, (*widths, T.DecimalType))


def _renamed_source(source: DataFrame, job: MergeJob) -> DataFrame:
    """The source with its columns named apart from the table's, and its keys cast to the
    table's types (merge_outputs/conform checked that the cast keeps every value)."""
    columns = []
    for f in job.source_schema:
        column = F.col(f"`{f.name}`")
        if f.name in job.keys:
            column = column.cast(spark_type(job.target.schema.find_field(f.name).field_type))
        columns.append(column.alias(job.source_name(f.name)))
    return source.select(*columns)


def _key_filter(table: Table, renamed: DataFrame, job: MergeJob) -> tuple[BooleanExpression, int] | None:
    """One aggregation over the source: DuplicateKeyError if a key repeats; None when the
    source is empty; else the key range (as the local API computes it from the keys) and the
    number of source rows."""
    schema = table.schema()
    names = [job.source_name(k) for k in job.keys]
    per_key = renamed.groupBy(*names).agg(F.count(F.lit(1)).alias("rows"))
    # Rows whose key has a null match nothing, so they may share that key.
    complete = reduce(lambda a, b: a & b, [F.col(n).isNotNull() for n in names])
    orderable = [k for k in job.keys if isinstance(schema.find_field(k).field_type, ORDERABLE_KEY_TYPES)]
    bounds = []
    for i, k in enumerate(orderable):
        c = F.col(job.source_name(k))
        bounds += [F.min(c).alias(f"lo{i}"), F.max(c).alias(f"hi{i}")]
    repeats = F.sum(F.when(complete, F.col("rows") - 1).otherwise(0)).alias("repeats")
    stats = per_key.agg(F.sum("rows").alias("rows"), repeats, *bounds).first()
    assert stats is not None  # a global aggregation has one row
    rows = stats["rows"] or 0
    if rows == 0:
        return None
    if stats["repeats"]:
        raise DuplicateKeyError(f"{stats['repeats']} source rows repeat a key on {list(job.keys)}: each key may appear once")
    # Two rows with the min and max of the keys: key_range makes the same range (a row whose
    # key has a null matches nothing, so no null needs to be in it).
    extremes = {}
    for i, k in enumerate(orderable):
        lo, hi = stats[f"lo{i}"], stats[f"hi{i}"]
        extremes[k] = pa.array([lo, hi], to_arrow_type(schema.find_field(k).field_type))
    return (key_range(schema, pa.table(extremes)) if extremes else AlwaysTrue()), rows


def _target(spark: SparkSession, table: Table, job: MergeJob, key_filter: BooleanExpression) -> tuple[MergeJob, DataFrame]:
    """The live target rows that may hold a key, with `_file` and `_pos`, read from exactly the
    metadata and files the driver planned (the commit validates against that metadata)."""
    tasks = table.scan(filter=key_filter).plan_files()
    columns = [*job.target_columns, *([ROW_ID_NAME] if job.row_ids else [])]
    target = read_located_rows(spark, table, tasks, columns)
    if not isinstance(key_filter, AlwaysTrue):  # the rows outside it hold no key; pushed down, it skips row groups
        target = target.filter(to_column(bind_filter(table.schema(), key_filter)))
    return replace(job, tasks={t.data_file.file_path: t for t in tasks}), target


def _with_held_row_ids(renamed: DataFrame, target: DataFrame, job: MergeJob) -> DataFrame:
    """The source rows (under their own names) with the `_row_id` of the one live row holding
    their key, as the local UPSERT keeps it (v3: that row is updated, not deleted and added);
    null for a new key or one held by several rows (the row is new)."""
    keys = [F.col(f"`{k}`") for k in job.keys]
    held = (
        target.groupBy(*keys)
        .agg(F.count(F.lit(1)).alias("__held"), F.max(ROW_ID_NAME).alias(ROW_ID_NAME))
        .where(F.col("__held") == 1)
        .drop("__held")
    )
    joined = renamed.join(held, _keys_match(job), "left")
    return joined.select(*[F.col(job.source_name(f.name)).alias(f.name) for f in job.source_schema], ROW_ID_NAME)


def _keys_match(job: MergeJob) -> Column:
    return reduce(lambda a, b: a & b, [F.col(f"`{k}`") == F.col(job.source_name(k)) for k in job.keys])


def _by_file(joined: DataFrame, spark: SparkSession, job: MergeJob) -> DataFrame:
    """Rows of one data file into one task; unmatched source rows (no `_file`) spread by key."""
    n = spark.sparkContext.defaultParallelism
    part = F.col(FILE_COLUMN)
    source_keys = [job.source_name(k) for k in job.keys]
    if all(c in joined.columns for c in source_keys):
        # Only balance depends on this value (a bucket number never equals a file path).
        part = F.coalesce(part, F.pmod(F.hash(*[F.col(c) for c in source_keys]), F.lit(n)).cast("string"))
    return joined.repartition(n, part)


def _collect(results: DataFrame) -> list[TaskResult]:
    return [pickle.loads(row[0]) for row in results.collect()]


# -- executors -------------------------------------------------------------------------------


def _result_batch(result: TaskResult) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays([pa.array([pickle.dumps(result)], pa.binary())], names=["result"])


def _merge_task(job: MergeJob, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    received = list(batches)  # read all input first: nothing is written before the input is complete
    rows = pa.Table.from_batches(received) if received else None
    if rows is not None and rows.num_rows:
        yield _result_batch(run_task(job.target.io, partial(_merge_rows, job, rows)))


def _merge_rows(job: MergeJob, rows: pa.Table, io: FileIO, written: list[str]) -> TaskResult:
    schema = job.target.schema
    has_file = pc.is_valid(rows.column(FILE_COLUMN))
    matched = rows.filter(has_file)
    removals: list[Removal] = []
    new_parts: list[pa.Table] = []
    if matched.num_rows:
        gone, updated = matched_changes(_joined(job, matched), job.clauses, job.outputs, schema)
        remover, cache = RowRemover(io, job.target), DeleteFileCache(io)
        for path, positions in _positions_by_file(matched.filter(gone)):
            task = job.tasks[path]
            removal = remover.remove(FileMatch(task, positions, live_row_count(task, cache)))
            written += removal.written
            removals.append(removal)
        removals = remover.finish(removals, written)
        if updated is not None:
            new_parts.append(updated)
    unmatched = rows.filter(pc.invert(has_file))
    if unmatched.num_rows:
        inserted = inserted_rows(_source_rows(job, unmatched), job.clauses, job.outputs, schema)
        if inserted is not None:
            new_parts.append(inserted)
    added = job.target.write_rows(io, pa.concat_tables(new_parts, promote_options="default")) if new_parts else []
    written += [f.file_path for f in added]
    return TaskResult(tuple(removals), tuple(added))


def _joined(job: MergeJob, matched: pa.Table) -> pa.Table:
    """Matched rows as the local API joins them: table columns in the table's types, the row
    position, and the source columns as "source.<name>"."""
    arrow_schema = to_arrow_schema(job.target.schema)
    names = [*job.target_columns, POSITION_COLUMN]
    columns = [matched.column(c).cast(arrow_schema.field(c).type) for c in job.target_columns]
    columns.append(matched.column(POSITION_COLUMN))
    if job.row_ids:  # kept by the rows the update clause rewrites (matched_changes)
        names.append(ROW_ID_NAME)
        columns.append(matched.column(ROW_ID_NAME).cast(pa.int64()))
    source = _source_rows(job, matched)
    return pa.table(columns + source.columns, names=names + source.column_names)


def _source_rows(job: MergeJob, rows: pa.Table) -> pa.Table:
    """The source columns present in `rows`, in the local API's types, named "source.<name>"."""
    present = [f for f in job.source_schema if job.source_name(f.name) in rows.column_names]
    columns = [rows.column(job.source_name(f.name)).cast(f.type) for f in present]
    return with_source_prefix(pa.table(columns, names=[f.name for f in present]))


def _positions_by_file(removed: pa.Table) -> Iterator[tuple[str, np.ndarray]]:
    if not removed.num_rows:
        return
    files = removed.column(FILE_COLUMN).combine_chunks().dictionary_encode()
    codes = files.indices.to_numpy(zero_copy_only=False)
    positions = removed.column(POSITION_COLUMN).to_numpy()
    order = np.argsort(codes, kind="stable")
    for group in np.split(order, np.flatnonzero(np.diff(codes[order])) + 1):
        yield files.dictionary[codes[group[0]]].as_py(), positions[group]


def _insert_task(target: DmlTarget, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    received = list(batches)
    rows = pa.Table.from_batches(received) if received else None
    if rows is not None and rows.num_rows:
        yield _result_batch(run_task(target.io, partial(_insert_rows, target, rows)))


def _insert_rows(target: DmlTarget, rows: pa.Table, io: FileIO, written: list[str]) -> TaskResult:
    if ROW_ID_NAME in rows.column_names:  # an upserted row that keeps the id of the row it replaces
        row_ids = rows.column(ROW_ID_NAME).cast(pa.int64())
        conformed = conform(rows.drop_columns([ROW_ID_NAME]), target.schema).append_column(pa.field(ROW_ID_NAME, pa.int64()), row_ids)
    else:
        conformed = conform(rows, target.schema)
    added = target.write_rows(io, conformed)
    written += [f.file_path for f in added]
    return TaskResult(added=tuple(added))
