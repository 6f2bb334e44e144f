"""Distributed maintenance on Spark: compaction and the rewrite of position deletes, planned and
committed on the driver as the local verbs do, written on the executors.

    mor.spark.compact(spark, table, min_delete_ratio=0.1)     # table.compact(...) on Spark
    mor.spark.rewrite_position_deletes(spark, table)           # table.rewrite_position_deletes()
    mor.spark.remove_orphan_files(spark, table, dry_run=True)  # mor/spark/orphans.py

Compaction: the driver plans with the local planner (`plan_compaction`: the same files chosen,
the same bins, the same delete files dropped), ships each bin to an executor as one Spark task
(`sc.parallelize(bins, len(bins))`), where the local rewriter (`BinRewriter`) streams its live
rows into new files, and commits one `replace` snapshot through `run_dml` (mor/dml/runner.py), with the local
validator (`finish_compaction`) and the local re-planning after a conflict. The rewrite of
position deletes packs the data files whose deletes merge into about `defaultParallelism`
tasks, each merged by the local `DeleteMerger` (in a v3 table, one Puffin file of deletion
vectors per task rather than one for the whole rewrite), and commits through `finish_rewrite`.
So each verb returns the local verb's result object, with the same counts, and leaves the same
rows and the same live files (by count and content; their names are new), as the local verb
on the same table. `dry_run` plans only, as locally.

Failures follow mor/spark/dml.py: a task that fails deletes what it wrote and returns its error
(`run_task`), the driver deletes what every task wrote and raises it; a commit that fails
deletes the new files too, except after CommitStateUnknownError. Progress (`progress=`) is
reported per bin job: executors do not call back, so a stage advances when its job ends.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import TYPE_CHECKING

from mor.api.table import Table
from mor.commit.snapshot_producer import Changes, Validator
from mor.dml.runner import run_dml
from mor.expr.filters import FilterLike
from mor.format.content_file import DeleteFile
from mor.io.fileio import FileIO
from mor.maintenance.compact import (
    BinRewriter,
    CompactionOptions,
    CompactionPlan,
    CompactionResult,
    finish_compaction,
    total_input_bytes,
)
from mor.maintenance.compaction import compact_table
from mor.maintenance.rewrite_deletes import (
    DeleteMerger,
    RewritePlan,
    RewriteResult,
    finish_rewrite,
    nothing_to_rewrite,
    plan_position_rewrite,
)
from mor.planning.packing import pack_tasks
from mor.planning.task import FileScanTask
from mor.progress import Progress, ProgressArg
from mor.spark.dml import TaskResult, job_description, run_task
from mor.spark.errors import spark_errors
from mor.spark.orphans import remove_orphan_files

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["compact", "remove_orphan_files", "rewrite_position_deletes"]


@spark_errors()
def compact(
    spark: SparkSession,
    table: Table,
    where: FilterLike = None,
    target_file_size: int | None = None,
    min_delete_ratio: float = 0.0,
    min_input_files: int = 5,
    min_delete_files: int | None = None,
    *,
    sort_by: list[str] | None = None,
    zorder_by: list[str] | None = None,
    dry_run: bool = False,
    progress: ProgressArg = None,
) -> CompactionResult:
    """`table.compact(...)` with the bins rewritten on Spark's executors (same arguments, same
    result, same commit and conflict checks; see the module docstring)."""
    options = CompactionOptions(where, target_file_size, min_delete_ratio, min_input_files, min_delete_files, sort_by, zorder_by, dry_run)
    return compact_table(table, options, progress=progress, write_bins=lambda plan, reporter: rewrite_bins(spark, table, plan, reporter))


def rewrite_bins(spark: SparkSession, table: Table, plan: CompactionPlan, progress: Progress) -> Validator:
    """Rewrite every bin of `plan` in a Spark task of its own (filling `plan.changes`); the
    commit's validator. On any task's error, every file the tasks wrote is deleted first."""
    rewriter = BinRewriter.of(table.metadata, plan)
    files = sum(len(group) for group in plan.groups)
    results: list[TaskResult] = []
    if plan.groups:
        what = f"mor compact {table.identifier}: rewrite {files} data files in {len(plan.groups)} bins"
        total = total_input_bytes(plan)
        with progress.stage("rewrite data files", total, "bytes") as step, job_description(spark, what):
            sc = spark.sparkContext
            results = sc.parallelize(plan.groups, len(plan.groups)).map(partial(_rewrite_bin, table.io, rewriter)).collect()
            step.advance(total)
    added = written_files(table.io, results)
    return finish_compaction(table.io, plan, added)


def _rewrite_bin(io: FileIO, rewriter: BinRewriter, group: list[FileScanTask]) -> TaskResult:
    def work(io: FileIO, written: list[str]) -> TaskResult:
        reader = rewriter.reader(io, group)
        return TaskResult(added=tuple(rewriter.rewrite(io, reader, group, written, lambda n: None)))

    return run_task(io, work)


def written_files(io: FileIO, results: Sequence[TaskResult]) -> list:
    """The files the tasks wrote (`added`); on any task's error, every file any of them wrote
    is deleted and that error raised."""
    errors = [r.error for r in results if r.error is not None]
    if errors:
        for path in [p for r in results for p in r.written]:
            io.delete_quietly(path)
        raise errors[0]
    return [f for r in results for f in r.added]


@spark_errors()
def rewrite_position_deletes(spark: SparkSession, table: Table) -> RewriteResult:
    """`table.rewrite_position_deletes()` with the merged delete files written on Spark's
    executors (same result, same commit and conflict checks; see the module docstring)."""
    table.operations()
    table.refresh()
    done: list[RewritePlan] = []

    def plan() -> tuple[Changes, Validator] | None:
        work = plan_position_rewrite(table.io, table.metadata)
        if work is None:
            done[:] = [nothing_to_rewrite()]
            return None
        written: list[DeleteFile] = []
        if work.to_merge:
            groups = pack_tasks(work.to_merge, spark.sparkContext.defaultParallelism)
            count = len(work.to_merge)
            what = f"mor rewrite_position_deletes {table.identifier}: merge the deletes of {count} data files in {len(groups)} tasks"
            with job_description(spark, what):
                results = spark.sparkContext.parallelize(groups, len(groups)).map(partial(_merge_deletes, table.io, work.merger)).collect()
            written = written_files(table.io, results)
        done[:] = [finish_rewrite(table.io, work, written)]
        return None if done[0].empty else (done[0].changes, done[0].validate)

    snapshot = run_dml(table, "delete", plan)
    return done[0].result(snapshot.snapshot_id if snapshot is not None else None)


def _merge_deletes(io: FileIO, merger: DeleteMerger, tasks: list[FileScanTask]) -> TaskResult:
    def work(io: FileIO, written: list[str]) -> TaskResult:
        files: list[DeleteFile] = []
        try:
            merger.merge(io, tasks, files)
        finally:
            written += [f.file_path for f in files]
        # `added` carries the delete files written here: TaskResult only needs their paths.
        return TaskResult(added=tuple(files))  # type: ignore[arg-type]  # TaskResult.added (spark/dml.py) is typed DataFile

    return run_task(io, work)
