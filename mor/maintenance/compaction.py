"""The compaction verb: planned and written by mor/maintenance/compact.py, its bins rewritten
here (threads) or on Spark's executors (`write_bins`, mor/spark/maintenance.py), committed
through `run_dml`, so a commit that conflicts plans again on the new state. Every surface (the
local verb, Spark, the CLI) passes one `CompactionOptions`."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from mor.dml.runner import run_dml
from mor.expr.filters import bind_filter, parse_filter
from mor.maintenance import compact
from mor.maintenance.compact import CompactionOptions, CompactionPlan, CompactionResult, plan_compaction
from mor.progress import Progress, ProgressArg

if TYPE_CHECKING:
    from mor.commit.snapshot_producer import Changes, Validator
    from mor.dml.handle import TableHandle

# Rewrites the planned bins (filling the plan's changes); returns the commit's validator.
BinWriter = Callable[[CompactionPlan, Progress], "Validator"]


def compact_table(
    table: TableHandle, options: CompactionOptions, *, progress: ProgressArg = None, write_bins: BinWriter | None = None
) -> CompactionResult:
    """Compact `table` as `options` say; `write_bins` rewrites the bins elsewhere (default:
    here, in threads)."""
    table.operations()
    options.target_bytes(table.metadata)  # wrong options fail before anything is read
    options.clustering(table.metadata)
    row_filter = parse_filter(options.where)
    bind_filter(table.schema(), row_filter)
    table.refresh()
    reporter = Progress("compact", progress)
    rewrite = write_bins or (lambda plan, step: compact.write_compaction(table.io, table.metadata, plan, step))
    done: list[CompactionPlan] = []

    def plan() -> tuple[Changes, Validator] | None:
        done[:] = [plan_compaction(table.io, table.metadata, row_filter, options)]
        if done[0].empty or options.dry_run:
            return None
        validate = rewrite(done[0], reporter)  # fills the plan's changes
        return done[0].changes, validate

    snapshot = run_dml(table, "delete", plan)
    return done[0].result(snapshot.snapshot_id if snapshot is not None else None, options.dry_run)
