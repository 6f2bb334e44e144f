"""The row-level engine's seam: run a DML (plan, commit, plan again after a real conflict) and
commit changes to a table handle. `Table`'s verbs (mor/api/table.py) and Spark's
(mor/spark/table.py) both come here, so re-planning, idempotency, the rules the added rows were
checked against and the cleanup of files a failed commit wrote are written once.

    snapshot = run_dml(table, "delete", plan, idempotency=("app", 7))

`plan()` finds the rows and writes the files of one attempt: the Changes to commit and their
validator (the conflict checks), or None when there is nothing to change.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from mor.commit.idempotency import AlreadyCommitted, Idempotency, check_not_committed
from mor.commit.retry import RetryPolicy
from mor.dml.constraints import added_rows_rules
from mor.errors import CommitConflictError, CommitStateUnknownError, InvalidArgumentError, UnsupportedFeatureError
from mor.format.properties import COPY_ON_WRITE, MERGE_ON_READ, MODES
from mor.format.spec import Operation

if TYPE_CHECKING:
    from mor.commit.snapshot_producer import Changes, Validator
    from mor.dml.handle import TableHandle
    from mor.format.content_file import DataFile
    from mor.format.metadata import Snapshot, TableMetadata

Plan = Callable[[], "tuple[Changes, Validator | None] | None"]


def write_mode(table: TableHandle, mode: str | None, property_name: str) -> str:
    """`mode`, else the table's `property_name` (`write.delete.mode`, ...), else merge-on-read;
    on a format v1 table (no delete files) copy-on-write, and merge-on-read asked for is refused."""
    v1 = table.metadata.format_version == 1
    chosen = mode or table.metadata.properties.get(property_name, COPY_ON_WRITE if v1 else MERGE_ON_READ)
    if chosen not in MODES:
        raise InvalidArgumentError(f"mode must be {MERGE_ON_READ!r} or {COPY_ON_WRITE!r}, got {chosen!r}")
    if v1 and chosen == MERGE_ON_READ:
        raise UnsupportedFeatureError(v1_refusal(f"merge-on-read ({property_name if mode is None else 'mode'} says so)"))
    return chosen


def v1_refusal(what: str) -> str:
    return (
        f"format v1 tables have no delete files, so {what} cannot be written: rewrite the rows instead "
        "(mode='copy-on-write'), or upgrade the table first with table.upgrade(format_version=2)"
    )


def committed_before(table: TableHandle, idempotency: Idempotency | tuple[str, int] | None) -> Snapshot | None:
    """The snapshot in which `idempotency`'s app id committed its version or a later one, as far
    as the handle knows (the commit checks again on the catalog's state); None when it did not."""
    try:
        check_not_committed(table.metadata, Idempotency.of(idempotency))
    except AlreadyCommitted as done:
        return done.snapshot
    return None


def run_dml(
    table: TableHandle,
    kind: str,
    plan: Plan,
    kept: Sequence[DataFile] = (),
    idempotency: Idempotency | tuple[str, int] | None = None,
    rows_checked_on: TableMetadata | None = None,
) -> Snapshot | None:
    """Plan and commit; when the commit truly conflicts with one that landed meanwhile, refresh
    and plan again (`mor.dml.replan.num-retries` times, within the retry policy's total time):
    re-running a predicate on fresh data is always correct. None: nothing to change.
    `kind` ("delete", "update", "merge") picks the isolation level. `kept`: files written before
    planning, which every plan adds; a failed commit leaves them for the next plan (the caller
    deletes them if none lands). `idempotency`: an (app id, version) already committed returns
    its snapshot without planning. `rows_checked_on`: see `commit`."""
    from mor.dml.conflict_rules import isolation_level  # imported on first use: a read needs no conflict rules

    isolation_level(table.metadata.properties, kind)  # a bad level fails before any file is written
    idempotency = Idempotency.of(idempotency)
    if (earlier := committed_before(table, idempotency)) is not None:
        return earlier
    policy = RetryPolicy.of(table.metadata.properties)
    started = time.monotonic()
    for replan in itertools.count():
        found = plan()
        if found is None:
            return None
        changes, validate = found
        changes = replace(changes, idempotency=idempotency)
        try:
            return commit(table, changes, validate, kept=kept, rows_checked_on=rows_checked_on)
        except CommitConflictError:
            out_of_time = (time.monotonic() - started) * 1000 > policy.total_timeout_ms
            if replan >= policy.replan_retries or out_of_time:
                raise
        table.refresh()
    raise AssertionError("unreachable")


def commit(
    table: TableHandle,
    changes: Changes,
    validate: Validator | None = None,
    kept: Sequence[DataFile] = (),
    rows_checked_on: TableMetadata | None = None,
) -> Snapshot | None:
    """Commit `changes` and move the handle to the new metadata; the new snapshot, or the one
    an idempotent commit already made. The rows they add were checked against
    `rows_checked_on` (default: the handle's metadata) and are checked again on a base whose
    rules differ (mor/commit/row_rules.py). A failed commit deletes the files `changes` adds,
    except `kept` and except after CommitStateUnknownError (a commit that may have landed)."""
    from mor.commit.snapshot_producer import commit_changes  # imported on first use: a read commits nothing

    ops = table.operations()
    if changes.row_rules is None and changes.added_data and changes.operation != Operation.REPLACE:
        checked = rows_checked_on or table.metadata
        changes = replace(changes, row_rules=added_rows_rules(table.io, checked.current_schema_id, checked.properties, changes.added_data))
    try:
        table.metadata, table.metadata_location = commit_changes(table.io, ops, table.metadata, table.metadata_location, changes, validate)
    except CommitStateUnknownError:
        raise
    except AlreadyCommitted as done:
        for f in [*changes.added_data, *changes.added_deletes]:  # kept ones too: no plan follows
            table.io.delete_quietly(f.file_path)
        table.refresh()
        return done.snapshot
    except BaseException:
        kept_paths = {f.file_path for f in kept}
        for f in [*changes.added_data, *changes.added_deletes]:
            if f.file_path not in kept_paths:
                table.io.delete_quietly(f.file_path)
        raise
    # The snapshot this commit added (apply_updates appends it): on a branch its head, and
    # staged for write-audit-publish no ref's head at all.
    return table.metadata.snapshots[-1]
