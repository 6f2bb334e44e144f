"""What every Spark DML job shares (tasks that report the files they wrote, `found_changes` for
the commit), and DELETE and UPDATE whose rows mor's matcher finds on the executors: `MorTable`
(mor/spark/table.py) takes this path for a pyiceberg filter and values that are literals or
pyarrow expressions:

    mor.spark.delete(spark, table, EqualTo("category", "x"))
    mor.spark.update(spark, table, {"n": pc.field("n") + 1}, where=LessThan("id", 100))

The driver plans the scan as the local API does (`table.scan(filter=where).plan_files()`) and
packs the tasks into about `defaultParallelism` groups (mor/planning/packing.py); each group is
one Spark task. A task finds the matching live rows of its data files with the local matcher
(`RowMatcher`), and removes them with the local writer (`RowRemover`): one position delete file
per data file, sorted by position (in a v3 table, one deletion vector per data file, merged with
its earlier deletes, all of the task's in one Puffin file), or the whole data file when all its
live rows match (or, in copy-on-write mode, a rewrite of the file without them); an UPDATE task
also writes the new rows of its group as data files (v3: keeping their `_row_id`). Tasks send
back descriptions of the files they wrote, and the driver commits one snapshot through `run_dml`
(mor/dml/runner.py) with the local API's conflict checks (`rows_validator`), so the same rows
change, under the same snapshot operation and the same conflicts (re-planned as locally), as
with `table.delete/update` on the same table.

Failures: a task whose work fails deletes what it wrote and returns its error rather than
raising it, so the driver always hears of every file the job wrote; it deletes them all and
raises the task's error (the exception the local API raises, with the executor's traceback as a
note). A failed commit deletes the files too, except after CommitStateUnknownError. Files can be
left behind, never referenced, when Spark kills a Python worker mid-task or discards the result
of a task attempt that completed (speculative execution); orphan-file removal (a later issue)
will find those.
"""

from __future__ import annotations

import pickle
import traceback
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
from pyiceberg.expressions import BooleanExpression

from mor.api.table import Table
from mor.commit.snapshot_producer import Changes, Validator
from mor.dml.row_changes import DmlTarget, Removal, RowMatcher, RowRemover, changes_for, rows_validator
from mor.dml.update import updated_rows
from mor.errors import MorError
from mor.format.content_file import DataFile
from mor.io.fileio import FileIO
from mor.planning.packing import pack_tasks
from mor.planning.task import FileScanTask

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@dataclass(frozen=True)
class TaskResult:
    """What one Spark task did: rows removed per data file, rows added, or the error that
    stopped it (after it deleted its own files)."""

    removals: tuple[Removal, ...] = ()
    added: tuple[DataFile, ...] = ()
    error: BaseException | None = None

    @property
    def written(self) -> list[str]:
        return [p for r in self.removals for p in r.written] + [f.file_path for f in self.added]


def run_task(io: FileIO, work: Callable[[FileIO, list[str]], TaskResult]) -> TaskResult:
    """Run a task's work, which appends the path of each file to the list as it writes it.
    An exception deletes those files and becomes the task's result (see the module docstring).
    `io`: the table's (shipped with the job), so object storage is reached as the driver does."""
    written: list[str] = []
    try:
        return work(io, written)
    except Exception as e:
        _delete(io, written)
        return TaskResult(error=_transportable(e))
    except BaseException:
        _delete(io, written)
        raise


def _transportable(error: Exception) -> BaseException:
    """The error itself when it survives pickling (with the executor's traceback as a note),
    else a MorError describing it."""
    trace = "".join(traceback.format_exception(error))
    try:
        error.add_note(f"raised in a Spark task:\n{trace}")
        pickle.loads(pickle.dumps(error))
        return error
    except Exception:
        return MorError(f"a Spark task failed: {trace}")


JOB_DESCRIPTION = "spark.job.description"  # the local property Spark's UI shows for a job


@contextmanager
def job_description(spark: SparkSession, what: str) -> Iterator[None]:
    """Jobs started inside are described as `what` (in Spark's UI and logs); the caller's
    description comes back after."""
    sc = spark.sparkContext
    before = sc.getLocalProperty(JOB_DESCRIPTION)
    sc.setJobDescription(what)
    try:
        yield
    finally:
        sc.setLocalProperty(JOB_DESCRIPTION, before)  # type: ignore[arg-type]  # None removes it


def found_changes(
    table: Table, results: Sequence[TaskResult], kind: str, row_filter: BooleanExpression
) -> tuple[Changes, Validator] | None:
    """The commit of what the tasks wrote for a DML of `kind` ("delete", "update", "merge"), for
    `run_dml` (mor/dml/runner.py) (None when they found nothing to change); on any error, delete every file
    the tasks wrote and raise. Conflict checks are the local ones, except that MERGE/UPSERT judge rows
    added meanwhile by the source's key range (the keys themselves stay on the executors)."""
    written = [p for r in results for p in r.written]
    try:
        errors = [r.error for r in results if r.error is not None]
        if errors:
            raise errors[0]
        removals = [x for r in results for x in r.removals]
        added = [f for r in results for f in r.added]
        if not removals and not added:
            return None
        changes = changes_for(removals, added)
        return changes, rows_validator(table, kind, row_filter, removals)
    except BaseException:
        _delete(table.io, written)
        raise


def _delete(io: FileIO, paths: Sequence[str]) -> None:
    for path in paths:
        io.delete_quietly(path)


# -- DELETE and UPDATE by mor's matcher -------------------------------------------------------


def matched_rows_plan(
    spark: SparkSession, table: Table, row_filter: BooleanExpression, mode: str, columns: dict[str, pc.Expression] | None = None
) -> Callable[[], tuple[Changes, Validator] | None]:
    """The plan of a DELETE (`columns` None) or UPDATE (`columns`: every table column as an
    expression of the old row, `updated_columns`) whose rows mor's matcher finds on the
    executors, for `run_dml`: no shuffle, each task reads and changes its own files."""
    return lambda: _run(spark, table, RowsJob(DmlTarget.of(table, mode), row_filter, columns))


@dataclass(frozen=True)
class RowsJob:
    """What every task of a DELETE or UPDATE needs; shipped to the executors."""

    target: DmlTarget
    row_filter: BooleanExpression
    columns: dict[str, pc.Expression] | None  # UPDATE: every table column as an expression of the old row


def _run(spark: SparkSession, table: Table, job: RowsJob) -> tuple[Changes, Validator] | None:
    tasks = table.scan(filter=job.row_filter).plan_files()
    if not tasks:
        return None
    sc = spark.sparkContext
    groups = pack_tasks(tasks, sc.defaultParallelism)
    kind = "update" if job.columns is not None else "delete"
    what = f"mor {kind} {'' if kind == 'update' else 'from '}{table.identifier}: find rows in {len(tasks)} data files, write changes"
    with job_description(spark, what):
        results = sc.parallelize(groups, len(groups)).mapPartitions(partial(_run_groups, job)).collect()
    return found_changes(table, results, kind, job.row_filter)


def _run_groups(job: RowsJob, groups: Iterator[list[FileScanTask]]) -> Iterator[TaskResult]:
    for tasks in groups:  # one group per partition
        yield run_task(job.target.io, partial(_change_rows, job, tasks))


def _change_rows(job: RowsJob, tasks: list[FileScanTask], io: FileIO, written: list[str]) -> TaskResult:
    t = job.target
    matcher = RowMatcher(io, t.schema, t.specs, job.row_filter, with_rows=job.columns is not None, lineage=t.format_version >= 3)
    remover = RowRemover(io, t)
    removals: list[Removal] = []
    new_parts: list[pa.Table] = []
    for task in tasks:
        match = matcher.match(task)
        if match is None:
            continue
        removal = remover.remove(match)
        written += removal.written
        removals.append(removal)
        if job.columns is not None and match.rows is not None:
            new_parts.append(updated_rows(match.rows, job.columns, t.schema))
    removals = remover.finish(removals, written)
    added = t.write_rows(io, pa.concat_tables(new_parts, promote_options="default")) if new_parts else []
    written += [f.file_path for f in added]
    return TaskResult(tuple(removals), tuple(added))
