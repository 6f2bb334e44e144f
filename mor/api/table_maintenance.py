"""The maintenance verbs of a Table: compaction (plain, sorted, Z-ordered), position delete
rewrite, snapshot expiry, orphan removal and the property-driven `maintain()`.

Each function takes the Table first and is a method of it (`Table.compact = compact`,
mor/api/table.py); they commit through the DML seam (`run_dml` of mor/dml/runner.py). The work
itself lives in mor/maintenance; its modules are imported on first use, as a read needs none
of them.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Protocol

from mor.dml.handle import TableHandle
from mor.dml.runner import run_dml
from mor.errors import InvalidArgumentError
from mor.expr.filters import FilterLike
from mor.maintenance.orphans import DEFAULT_MIN_AGE, OrphanResult, remove_orphans
from mor.maintenance.ownership import REFUSE_SAME, REFUSE_SAME_OR_INNER, CatalogView, Ownership
from mor.progress import Progress, ProgressArg

if TYPE_CHECKING:
    from mor.commit.snapshot_producer import Changes, Validator
    from mor.maintenance.compact import CompactionResult
    from mor.maintenance.expire import ExpireResult
    from mor.maintenance.policy import MaintainResult
    from mor.maintenance.rewrite_deletes import RewritePlan, RewriteResult


class MaintainedTable(TableHandle, Protocol):
    """A table as its upkeep sees it: the engine's handle and the rest of the catalog, whose
    tables' files maintenance that deletes files must leave (set by the catalog that opened it)."""

    catalog_view: CatalogView | None


def whole_table(ops: object, verb: str) -> None:
    """Expiry and orphan removal keep what every ref needs: they run on the table, never
    through a branch's or a staged handle (whose metadata shows one line as main)."""
    from mor.commit.branch_ops import BranchOperations

    if isinstance(ops, BranchOperations):
        raise InvalidArgumentError(f"{verb} works on the whole table (every branch and tag): call it on the table, not a branch handle")


def remove_orphan_files(
    table: MaintainedTable, older_than: dt.timedelta | dt.datetime = DEFAULT_MIN_AGE, dry_run: bool = False, progress: ProgressArg = None
) -> OrphanResult:
    """Delete files under the table location that no metadata references and that were
    last modified before `older_than` (an age, default 3 days, or a time); `dry_run` only
    lists them. The result iterates over their paths. Files of commits in flight are
    young: keep the threshold well above the longest write. Only the table's own files go
    (mor/maintenance/ownership.py); a table whose location is another's or holds it raises
    MaintenanceRefusedError, as does a file the metadata spells with another
    scheme or authority than the listing found."""
    whole_table(table.operations(), "remove_orphan_files")
    table.refresh()
    ownership = Ownership(
        table.io, table.identifier, table.metadata.location, table.catalog_view, "remove_orphan_files", REFUSE_SAME_OR_INNER
    )
    progress_ = Progress("remove_orphan_files", progress)
    return remove_orphans(table.io, table.metadata, table.metadata_location, older_than, dry_run, progress_, ownership)


def expire_snapshots(
    table: MaintainedTable,
    older_than: dt.timedelta | dt.datetime | None = None,
    retain_last: int | None = None,
    *,
    allow_short_retention: bool = False,
    dry_run: bool = False,
    progress: ProgressArg = None,
) -> ExpireResult:
    """Remove snapshots older than `older_than` (an age or a time; default the table's
    `history.expire.max-snapshot-age-ms`, 5 days) beyond the newest `retain_last` of each
    branch (default `history.expire.min-snapshots-to-keep`, 1), and delete the files only
    they could read. A retention shorter than `history.expire.max-snapshot-age-ms` raises
    RetentionTooShortError unless `allow_short_retention=True`. `dry_run` changes nothing
    and says what would go. Only the table's own files are deleted (a file outside its
    location is left, in `skipped_paths`); a table sharing its location with another
    raises MaintenanceRefusedError before anything changes."""
    from mor.maintenance.expire import expire_snapshots  # imported on first use: a read needs no maintenance

    ops = table.operations()
    whole_table(ops, "expire_snapshots")
    table.refresh()
    result, table.metadata, table.metadata_location = expire_snapshots(
        table.io,
        ops,
        table.metadata,
        table.metadata_location,
        older_than=older_than,
        retain_last=retain_last,
        allow_short_retention=allow_short_retention,
        dry_run=dry_run,
        progress=Progress("expire_snapshots", progress),
        ownership=Ownership(table.io, table.identifier, table.metadata.location, table.catalog_view, "expire_snapshots", REFUSE_SAME),
    )
    return result


def compact(
    table: MaintainedTable,
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
    branch: str | None = None,
) -> CompactionResult:
    """Rewrite the data files that carry deletes (deleted share >= `min_delete_ratio`, or
    at least `min_delete_files` delete files), and small files, with their deletes applied,
    into files of up to `target_file_size` bytes (default `write.target-file-size-bytes`);
    delete files that then apply to nothing leave in the same `replace` commit. `where`
    limits it to files that may hold matching rows. See mor/maintenance/compact.py.
    `sort_by=["a", "b desc"]` or `zorder_by=["a", "b"]` (2 to 4 columns) rewrite every
    file in scope with each partition's rows in that order (mor/maintenance/clustering.py).
    `branch`: compact the files of that branch's head, committing to the branch."""
    from mor.maintenance.compact import CompactionOptions  # imported on first use: a read needs no maintenance
    from mor.maintenance.compaction import compact_table

    options = CompactionOptions(where, target_file_size, min_delete_ratio, min_input_files, min_delete_files, sort_by, zorder_by, dry_run)
    return compact_table(table, options, progress=progress)


def maintain(table: MaintainedTable, *, dry_run: bool = False, progress: ProgressArg = None) -> MaintainResult:
    """The scheduled upkeep the table's properties ask for: compact files with many
    deletes, expire old snapshots, remove old orphan files (mor/maintenance/policy.py)."""
    from mor.maintenance.policy import MaintainResult, MaintenancePolicy  # imported on first use: a read needs no maintenance

    table.operations()
    policy = MaintenancePolicy.of(table.metadata.properties)
    compaction = expiry = orphans = None
    if policy.compact:
        compaction = compact(
            table,
            min_delete_ratio=policy.min_delete_ratio,
            min_delete_files=policy.min_delete_files,
            min_input_files=policy.min_input_files,
            dry_run=dry_run,
            progress=progress,
        )
    if policy.expire:
        expiry = expire_snapshots(table, dry_run=dry_run, progress=progress)
    if policy.remove_orphans:
        orphans = remove_orphan_files(table, older_than=policy.orphan_min_age, dry_run=dry_run, progress=progress)
    return MaintainResult(compaction, expiry, orphans)


def rewrite_position_deletes(table: MaintainedTable) -> RewriteResult:
    """Merge the position delete files of each data file into one sorted file, and drop
    position delete files that apply to no live data file (operation `replace`; rows do
    not change). A commit that removed one of those data files meanwhile makes it plan
    again on the new state."""
    from mor.maintenance.rewrite_deletes import plan_rewrite  # imported on first use: a read needs no maintenance

    table.operations()
    table.refresh()
    done: list[RewritePlan] = []

    def plan() -> tuple[Changes, Validator] | None:
        done[:] = [plan_rewrite(table.io, table.metadata)]
        return None if done[0].empty else (done[0].changes, done[0].validate)

    snapshot = run_dml(table, "delete", plan)
    return done[0].result(snapshot.snapshot_id if snapshot is not None else None)
