"""Compaction as the engine runs it: planned by mor/maintenance/compact.py, its bins rewritten
here (threads) or on Spark's executors (`write_bins`, mor/spark/maintenance.py), committed
through `run_dml`, so a commit that conflicts plans again on the new state. One function takes
every option for both, so the local verb, Spark and the CLI offer the same ones."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from mor.dml.runner import run_dml
from mor.expr.filters import FilterLike, bind_filter, parse_filter
from mor.maintenance import compact
from mor.maintenance.compact import CompactionOptions, CompactionPlan, CompactionResult, plan_compaction
from mor.progress import Progress, ProgressArg

if TYPE_CHECKING:
    from mor.commit.snapshot_producer import Changes, Validator
    from mor.dml.handle import TableHandle

# Rewrites the planned bins (filling the plan's changes); returns the commit's validator.
BinWriter = Callable[[CompactionPlan, CompactionOptions, Progress], "Validator"]


def compact_table(
    table: TableHandle,
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
    write_bins: BinWriter | None = None,
) -> CompactionResult:
    """`Table.compact` (its docstring says what each option does); `write_bins` rewrites the
    bins elsewhere (default: here, in threads)."""
    table.operations()
    options = CompactionOptions.of(
        table.metadata, target_file_size, min_delete_ratio, min_input_files, min_delete_files, sort_by, zorder_by
    )
    row_filter = parse_filter(where)
    bind_filter(table.schema(), row_filter)
    table.refresh()
    reporter = Progress("compact", progress)
    rewrite = write_bins or (lambda plan, options, step: compact.write_compaction(table.io, table.metadata, plan, options, step))
    done: list[CompactionPlan] = []

    def plan() -> tuple[Changes, Validator] | None:
        done[:] = [plan_compaction(table.io, table.metadata, row_filter, options)]
        if done[0].empty or dry_run:
            return None
        validate = rewrite(done[0], options, reporter)  # fills the plan's changes
        return done[0].changes, validate

    snapshot = run_dml(table, "delete", plan)
    return done[0].result(snapshot.snapshot_id if snapshot is not None else None, dry_run)
