"""Snapshot management: branches and tags, and undo (roll back, set the current snapshot,
cherry-pick, restore), as Iceberg's ManageSnapshots and Spark procedures do it.

    table.rollback_to(snapshot_id)                     # main back to one of its ancestors
    table.rollback_to_time(datetime(2026, 11, 1))      # ... to the newest one before that time
    table.set_current_snapshot(snapshot_id)            # main at any snapshot
    table.cherrypick(snapshot_id)                      # a staged or other branch's append, onto main
    table.create_branch("audit", max_ref_age_ms=...)   # at the current snapshot, or snapshot_id=
    with manage_snapshots(table) as refs:             # several ref changes, one commit
        refs.create_tag("eoy-2026").rollback_to(snapshot_id)

Each verb is one commit that asserts every ref it touches is still where it was planned (a
concurrent move of that ref fails it, a retry re-checks it on the fresh table); nothing else
of the table changes. The snapshots main left stay in the table until expiry, so undo can be
undone (`set_current_snapshot` back to them). Expiry keeps what every ref still needs: each
ref's head, and each branch's ancestors within its retention (mor/maintenance/expire.py).

Each function taking the table first is a method of Table (mor/api/table.py), which also makes
branch and staged handles.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import replace
from types import TracebackType
from typing import TYPE_CHECKING

from pyiceberg.expressions import AlwaysTrue

from mor.api.table_definition import commit_metadata
from mor.api.time_travel import as_of_ms
from mor.commit.branch_ops import WAP_ID
from mor.commit.ref_commits import BRANCH, MAX_REF_AGE_MS, MAX_SNAPSHOT_AGE_MS, MIN_SNAPSHOTS_TO_KEEP, TAG, RefEdits, is_ancestor
from mor.errors import CommitConflictError, InvalidArgumentError, NoSuchRefError, NoSuchSnapshotError
from mor.format.content_file import DataFile
from mor.format.metadata import Snapshot, TableMetadata
from mor.format.spec import MAIN_BRANCH
from mor.io.fileio import FileIO
from mor.planning.planner import added_data_files, plan_files, removed_data_files
from mor.write.partitioning import partition_key

if TYPE_CHECKING:
    from mor.dml.handle import TableHandle


SOURCE_SNAPSHOT_ID = "source-snapshot-id"  # a cherry-picked snapshot's origin, in the new one's summary
PUBLISHED_WAP_ID = "published-wap-id"
REPLACE_PARTITIONS = "replace-partitions"  # set by a dynamic partition overwrite


class ManageSnapshots:
    """Ref changes made together: each method checks its change at once (bad input raises
    here, not at commit) and returns the builder; `commit()`, or leaving a `with` block without
    an error, commits them all as one."""

    def __init__(self, table: TableHandle):
        self._table = table
        self._edits: list[Callable[[RefEdits], object]] = []
        self.committed = False

    def create_branch(
        self, name: str, snapshot_id: int | None = None, *,
        min_snapshots_to_keep: int | None = None, max_snapshot_age_ms: int | None = None, max_ref_age_ms: int | None = None,
    ) -> ManageSnapshots:  # fmt: skip
        """A branch at `snapshot_id` (default: the current snapshot), with its own retention."""
        retention = {MIN_SNAPSHOTS_TO_KEEP: min_snapshots_to_keep, MAX_SNAPSHOT_AGE_MS: max_snapshot_age_ms, MAX_REF_AGE_MS: max_ref_age_ms}
        return self._add(lambda e: e.create(name, BRANCH, snapshot_id, retention))

    def create_tag(self, name: str, snapshot_id: int | None = None, *, max_ref_age_ms: int | None = None) -> ManageSnapshots:
        """A tag (a fixed name for one snapshot) at `snapshot_id` (default: the current one)."""
        return self._add(lambda e: e.create(name, TAG, snapshot_id, {MAX_REF_AGE_MS: max_ref_age_ms}))

    def replace_branch(self, name: str, snapshot_id: int) -> ManageSnapshots:
        """Point a branch at any snapshot (`fast_forward` only moves it ahead on its line)."""
        return self._add(lambda e: e.replace(name, BRANCH, snapshot_id))

    def replace_tag(self, name: str, snapshot_id: int) -> ManageSnapshots:
        return self._add(lambda e: e.replace(name, TAG, snapshot_id))

    def fast_forward(self, branch: str, to: str | int) -> ManageSnapshots:
        """Move `branch` to `to` (a branch, a tag or a snapshot id) that descends from it."""
        return self._add(lambda e: e.fast_forward(branch, to))

    def rename_branch(self, name: str, new_name: str) -> ManageSnapshots:
        return self._add(lambda e: e.rename(name, new_name))

    def remove_branch(self, name: str) -> ManageSnapshots:
        return self._add(lambda e: e.remove(name, BRANCH))

    def remove_tag(self, name: str) -> ManageSnapshots:
        return self._add(lambda e: e.remove(name, TAG))

    def set_retention(
        self, name: str, *,
        min_snapshots_to_keep: int | None = None, max_snapshot_age_ms: int | None = None, max_ref_age_ms: int | None = None,
    ) -> ManageSnapshots:  # fmt: skip
        """Change a ref's retention (None: as it is). Tags take only `max_ref_age_ms`."""
        retention = {MIN_SNAPSHOTS_TO_KEEP: min_snapshots_to_keep, MAX_SNAPSHOT_AGE_MS: max_snapshot_age_ms, MAX_REF_AGE_MS: max_ref_age_ms}
        return self._add(lambda e: e.set_retention(name, retention))

    def rollback_to(self, snapshot_id: int) -> ManageSnapshots:
        """Main back to `snapshot_id`, one of its ancestors."""
        return self._add(lambda e: e.rollback_to(snapshot_id))

    def rollback_to_time(self, timestamp: dt.datetime | int) -> ManageSnapshots:
        """Main back to its newest ancestor committed before `timestamp` (a datetime, naive is
        UTC, or milliseconds since the epoch)."""
        ms = as_of_ms(timestamp)
        return self._add(lambda e: e.rollback_to_time(ms))

    def set_current_snapshot(self, snapshot_id: int) -> ManageSnapshots:
        """Main at any snapshot of the table (another branch's, or one main left behind)."""
        return self._add(lambda e: e.set_current(snapshot_id))

    def commit(self) -> None:
        if self.committed:
            raise InvalidArgumentError("these snapshot changes were committed already")
        commit_metadata(self._table, lambda base: self._replay(base).commit(), "change the table's branches and tags")
        self.committed = True

    def __enter__(self) -> ManageSnapshots:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        if kind is None:
            self.commit()

    def _add(self, edit: Callable[[RefEdits], object]) -> ManageSnapshots:
        if self.committed:
            raise InvalidArgumentError("these snapshot changes were committed already: start another manage_snapshots()")
        self._replay(self._table.metadata, edit)  # raises now for a change that cannot apply
        self._edits.append(edit)
        return self

    def _replay(self, base: TableMetadata, *more: Callable[[RefEdits], object]) -> RefEdits:
        edits = RefEdits(base)
        for edit in [*self._edits, *more]:
            edit(edits)
        return edits


def manage_snapshots(table: TableHandle) -> ManageSnapshots:
    """A builder of branch, tag and rollback changes committed together."""
    table.operations()
    return ManageSnapshots(table)


def rollback_to(table: TableHandle, snapshot_id: int) -> Snapshot:
    """Make `snapshot_id`, an ancestor of the current snapshot, current again."""
    manage_snapshots(table).rollback_to(snapshot_id).commit()
    return _current(table)


def rollback_to_time(table: TableHandle, timestamp: dt.datetime | int) -> Snapshot:
    """Make the newest ancestor committed before `timestamp` current again; returns it."""
    manage_snapshots(table).rollback_to_time(timestamp).commit()
    return _current(table)


def set_current_snapshot(table: TableHandle, snapshot_id: int) -> Snapshot:
    """Make any snapshot of the table current (also one a rollback left, or a branch's)."""
    manage_snapshots(table).set_current_snapshot(snapshot_id).commit()
    return _current(table)


def restore(table: TableHandle, version: int | dt.datetime) -> Snapshot:
    """Delta's RESTORE: the table as it was at `version`, a snapshot id, or at a time (a
    datetime: the snapshot current then). The main branch points at that snapshot again."""
    if isinstance(version, dt.datetime):
        try:
            found = table.metadata.snapshot_as_of(as_of_ms(version))
        except KeyError:
            raise NoSuchSnapshotError(f"the snapshot of {table.identifier} current at {version} has expired") from None
        if found is None:
            raise NoSuchSnapshotError(f"{table.identifier} had no snapshot at {version}")
        version = found.snapshot_id
    return set_current_snapshot(table, version)


def create_branch(
    table: TableHandle, name: str, snapshot_id: int | None = None, *,
    min_snapshots_to_keep: int | None = None, max_snapshot_age_ms: int | None = None, max_ref_age_ms: int | None = None,
) -> None:  # fmt: skip
    manage_snapshots(table).create_branch(
        name, snapshot_id, min_snapshots_to_keep=min_snapshots_to_keep, max_snapshot_age_ms=max_snapshot_age_ms,
        max_ref_age_ms=max_ref_age_ms,
    ).commit()  # fmt: skip


def create_tag(table: TableHandle, name: str, snapshot_id: int | None = None, *, max_ref_age_ms: int | None = None) -> None:
    manage_snapshots(table).create_tag(name, snapshot_id, max_ref_age_ms=max_ref_age_ms).commit()


def replace_branch(table: TableHandle, name: str, snapshot_id: int) -> None:
    manage_snapshots(table).replace_branch(name, snapshot_id).commit()


def replace_tag(table: TableHandle, name: str, snapshot_id: int) -> None:
    manage_snapshots(table).replace_tag(name, snapshot_id).commit()


def fast_forward(table: TableHandle, branch: str, to: str | int) -> None:
    manage_snapshots(table).fast_forward(branch, to).commit()


def rename_branch(table: TableHandle, name: str, new_name: str) -> None:
    manage_snapshots(table).rename_branch(name, new_name).commit()


def remove_branch(table: TableHandle, name: str) -> None:
    manage_snapshots(table).remove_branch(name).commit()


def remove_tag(table: TableHandle, name: str) -> None:
    manage_snapshots(table).remove_tag(name).commit()


def refs(table: TableHandle) -> dict[str, dict[str, object]]:
    """The table's branches and tags: name -> the ref as the metadata holds it."""
    return {name: dict(ref) for name, ref in sorted(table.metadata.refs.items())}


def cherrypick(table: TableHandle, snapshot_id: int) -> Snapshot:
    """Apply `snapshot_id`'s change on the current snapshot, as Iceberg's cherry-pick does:
    a snapshot whose parent is the current one is made current (fast-forward); otherwise
    an append (staged, or another branch's) is committed again on main as a new append,
    and a dynamic partition overwrite (`replace-partitions`) as a new overwrite when main
    has not changed its partitions since the overwrite's parent; the new summary names the
    source (`source-snapshot-id`, and `published-wap-id` for a staged write). Anything
    else, or a snapshot main already has, is refused."""
    from mor.commit.snapshot_producer import Changes, commit_changes  # imported on first use: a read commits nothing

    table.operations()
    table.refresh()
    picked = _snapshot(table.metadata, snapshot_id)
    if picked.parent_snapshot_id == table.metadata.current_snapshot_id:
        return set_current_snapshot(table, snapshot_id)
    _check_pickable(table.metadata, picked)
    summary = {SOURCE_SNAPSHOT_ID: str(snapshot_id)}
    wap_id = picked.summary.get(WAP_ID)
    if wap_id is not None:
        summary[PUBLISHED_WAP_ID] = wap_id
    added = [replace(f, first_row_id=None) for f in added_data_files(table.io, table.metadata, picked)]
    removed = removed_data_files(table.io, table.metadata, picked) if _replaces_partitions(picked) else []
    replaced = {(f.spec_id, partition_key(f.partition)) for f in added}

    def still_pickable(_: TableMetadata, base: TableMetadata) -> None:
        _check_pickable(base, picked)
        if _replaces_partitions(picked):
            _check_partitions_unchanged(table.io, base, picked, replaced, removed)

    still_pickable(table.metadata, table.metadata)  # a typed refusal before anything is written
    operation = "overwrite" if _replaces_partitions(picked) else "append"
    table.metadata, table.metadata_location = commit_changes(
        table.io, table.operations(), table.metadata, table.metadata_location,
        Changes(operation, added_data=added, removed_data=removed, summary=summary), validate=still_pickable,
    )  # fmt: skip
    return _current(table)


def publish(table: TableHandle, wap_id: str) -> Snapshot:
    """Publish the write staged with `wap.id` = `wap_id` (write-audit-publish): cherry-pick
    its snapshot onto main."""
    table.operations()
    table.refresh()  # the write was staged through another handle
    staged = [s for s in table.metadata.snapshots if s.summary.get(WAP_ID) == wap_id]
    if not staged:
        raise NoSuchSnapshotError(f"{table.identifier} has no snapshot staged with wap.id {wap_id!r}")
    return cherrypick(table, max(staged, key=lambda s: s.sequence_number).snapshot_id)


def _current(table: TableHandle) -> Snapshot:
    snapshot = table.metadata.current_snapshot()
    assert snapshot is not None  # a verb above just made one current
    return snapshot


def ref_snapshot_id(metadata: TableMetadata, name: str) -> int:
    """The snapshot a branch or tag points at; NoSuchRefError when the table has none so named."""
    ref = metadata.refs.get(name)
    if ref is None:
        names = ", ".join(sorted(metadata.refs)) or "none"
        raise NoSuchRefError(f"the table has no branch or tag {name!r} (it has: {names})")
    snapshot_id: int = ref["snapshot-id"]
    return snapshot_id


def _snapshot(metadata: TableMetadata, snapshot_id: int) -> Snapshot:
    if isinstance(snapshot_id, bool) or not isinstance(snapshot_id, int):
        raise InvalidArgumentError(f"a snapshot id is an integer, not {snapshot_id!r}")
    try:
        return metadata.snapshot_by_id(snapshot_id)
    except KeyError:
        raise NoSuchSnapshotError(f"the table has no snapshot {snapshot_id}") from None


def _check_pickable(metadata: TableMetadata, picked: Snapshot) -> None:
    """Refuse a cherry-pick that is no append, or whose change main already has."""
    current = metadata.current_snapshot_id
    if is_ancestor(metadata, picked.snapshot_id, current):
        raise InvalidArgumentError(f"cannot cherry-pick snapshot {picked.snapshot_id}: the current snapshot already descends from it")
    wap_id = picked.summary.get(WAP_ID)
    for s in metadata.ancestors(current):
        if wap_id is not None and s.summary.get(PUBLISHED_WAP_ID) == wap_id:
            raise InvalidArgumentError(f"cannot cherry-pick snapshot {picked.snapshot_id}: wap.id {wap_id!r} was published already")
        if s.summary.get(SOURCE_SNAPSHOT_ID) == str(picked.snapshot_id):
            raise InvalidArgumentError(
                f"cannot cherry-pick snapshot {picked.snapshot_id}: it was picked already, as snapshot {s.snapshot_id}"
            )
    if picked.operation != "append" and not _replaces_partitions(picked):
        raise InvalidArgumentError(
            f"cannot cherry-pick snapshot {picked.snapshot_id} ({picked.operation}): only an append, a dynamic partition overwrite, or "
            "a snapshot whose parent is the current one (a fast-forward), can be applied on the current snapshot"
        )
    if (
        _replaces_partitions(picked)
        and picked.parent_snapshot_id is not None
        and not is_ancestor(metadata, picked.parent_snapshot_id, current)
    ):
        raise InvalidArgumentError(
            f"cannot cherry-pick overwrite {picked.snapshot_id}: its parent {picked.parent_snapshot_id} is not an ancestor of the "
            "current snapshot, so what it replaced cannot be told apart from what main changed"
        )


def _replaces_partitions(snapshot: Snapshot) -> bool:
    """A dynamic partition overwrite (Iceberg's ReplacePartitions: `replace-partitions=true`)."""
    return snapshot.operation == "overwrite" and snapshot.summary.get(REPLACE_PARTITIONS) == "true"


def _check_partitions_unchanged(
    io: FileIO, metadata: TableMetadata, picked: Snapshot, replaced: set[tuple[int, tuple[object, ...]]], removed: list[DataFile]
) -> None:
    """A dynamic overwrite applies again only where main has not touched its partitions since
    the overwrite's parent (no data file added there), and the files it removed are all still
    live; else CommitConflictError, as Iceberg's cherry-pick refuses it."""
    current = metadata.current_snapshot()
    if current is None:
        return
    for snapshot in metadata.ancestors(current.snapshot_id):
        if snapshot.snapshot_id == picked.parent_snapshot_id:
            break
        for f in added_data_files(io, metadata, snapshot):
            if (f.spec_id, partition_key(f.partition)) in replaced:
                raise CommitConflictError(
                    f"cannot cherry-pick overwrite {picked.snapshot_id}: snapshot {snapshot.snapshot_id} changed partition {f.partition}"
                )
    live = {t.data_file.file_path for t in plan_files(io, metadata, current, AlwaysTrue())}
    gone = [f.file_path for f in removed if f.file_path not in live]
    if gone:
        raise CommitConflictError(
            f"cannot cherry-pick overwrite {picked.snapshot_id}: the files it replaced are gone from main: {gone[:3]}"
        )


__all__ = ["MAIN_BRANCH", "ManageSnapshots", "ref_snapshot_id"]
