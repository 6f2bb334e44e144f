"""Branches and tags as a commit: `RefEdits` takes ref changes one by one on a table's metadata
(create, replace, rename, remove, fast-forward, retention; the main branch rolled back or set to
any snapshot), checks each as Iceberg's ManageSnapshots does, and states them together as one
`TableCommit`: every ref touched must still point where it did when the edits were planned, so
a concurrent writer's move of that ref fails the commit instead of being overwritten.

A ref is the metadata's JSON object: `snapshot-id`, `type` ("branch" or "tag"), and retention
(`min-snapshots-to-keep` and `max-snapshot-age-ms` on branches, `max-ref-age-ms` on either),
which mor's expiry honours (mor/maintenance/expire.py).
"""

from __future__ import annotations

from typing import Any

from mor.errors import InvalidArgumentError, NoSuchRefError, NoSuchSnapshotError, RefAlreadyExistsError
from mor.format.metadata import TableMetadata
from mor.format.requirements import AssertRefSnapshotId, AssertTableUuid, Requirement
from mor.format.spec import MAIN_BRANCH
from mor.format.updates import RemoveSnapshotRef, SetSnapshotRef, TableCommit, Update

BRANCH, TAG = "branch", "tag"
MIN_SNAPSHOTS_TO_KEEP = "min-snapshots-to-keep"
MAX_SNAPSHOT_AGE_MS = "max-snapshot-age-ms"
MAX_REF_AGE_MS = "max-ref-age-ms"
_BRANCH_ONLY = (MIN_SNAPSHOTS_TO_KEEP, MAX_SNAPSHOT_AGE_MS)


def is_ancestor(metadata: TableMetadata, ancestor_id: int, snapshot_id: int | None) -> bool:
    """Is `ancestor_id` `snapshot_id` or one of its parents?"""
    return any(s.snapshot_id == ancestor_id for s in metadata.ancestors(snapshot_id))


class RefEdits:
    """Ref changes on `base`, in order; `commit()` states them as one commit."""

    def __init__(self, base: TableMetadata):
        self.base = base
        self.refs: dict[str, dict[str, Any]] = {name: dict(ref) for name, ref in base.refs.items()}
        self.touched: list[str] = []

    # -- branches and tags --------------------------------------------------------------------
    def create(self, name: str, kind: str, snapshot_id: int | None, retention: dict[str, int | None]) -> None:
        _check_name(name)
        if name in self.refs:
            raise RefAlreadyExistsError(f"the table already has a {self.refs[name].get('type', BRANCH)} named {name!r}")
        if kind == TAG and name == MAIN_BRANCH:
            raise InvalidArgumentError("main is the table's branch: a tag cannot take its name")
        if snapshot_id is None:
            snapshot_id = self.base.current_snapshot_id
            if snapshot_id is None:
                raise InvalidArgumentError(f"the table has no snapshot yet to {kind} as {name!r}: write to it first")
        self._check_snapshot(snapshot_id)
        ref: dict[str, Any] = {"snapshot-id": snapshot_id, "type": kind}
        self._set(name, ref)
        self.set_retention(name, retention)

    def replace(self, name: str, kind: str, snapshot_id: int) -> None:
        """Point an existing branch or tag at any snapshot (its retention kept)."""
        ref = self._ref(name, kind)
        self._check_snapshot(snapshot_id)
        self._set(name, {**ref, "snapshot-id": snapshot_id})

    def fast_forward(self, name: str, to: str | int) -> None:
        """Move branch `name` ahead to `to` (a ref's name or a snapshot id), which must have the
        branch's snapshot among its ancestors."""
        ref = self._ref(name, BRANCH)
        target = self._ref(to, None)["snapshot-id"] if isinstance(to, str) else to
        self._check_snapshot(target)
        if not is_ancestor(self.base, ref["snapshot-id"], target):
            raise InvalidArgumentError(
                f"cannot fast-forward {name!r}: its snapshot {ref['snapshot-id']} is not an ancestor of snapshot {target} "
                "(the two have diverged; replace_branch moves it anyway)"
            )
        self._set(name, {**ref, "snapshot-id": target})

    def rename(self, name: str, new_name: str) -> None:
        if name == MAIN_BRANCH:
            raise InvalidArgumentError("the main branch cannot be renamed")
        ref = self._ref(name, BRANCH)
        _check_name(new_name)
        if new_name in self.refs:
            raise RefAlreadyExistsError(f"the table already has a {self.refs[new_name].get('type', BRANCH)} named {new_name!r}")
        self._remove(name)
        self._set(new_name, ref)

    def remove(self, name: str, kind: str) -> None:
        if name == MAIN_BRANCH:
            raise InvalidArgumentError("the main branch cannot be removed")
        self._ref(name, kind)
        self._remove(name)

    def set_retention(self, name: str, retention: dict[str, int | None]) -> None:
        """Set the given retention fields of a ref (None: leave as it is)."""
        ref = dict(self._ref(name, None))
        for key, value in retention.items():
            if value is None:
                continue
            if key in _BRANCH_ONLY and ref.get("type") == TAG:
                raise InvalidArgumentError(f"{key} is a branch's retention; {name!r} is a tag (tags take max-ref-age-ms)")
            least = 1 if key == MIN_SNAPSHOTS_TO_KEEP else 0
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise InvalidArgumentError(f"{key} must be an integer of at least {least}, not {value!r}")
            ref[key] = value
        if ref != self.refs[name]:
            self._set(name, ref)

    # -- the main branch ----------------------------------------------------------------------
    def rollback_to(self, snapshot_id: int) -> None:
        """Main back to one of its own ancestors."""
        self._check_snapshot(snapshot_id)
        current = self.refs.get(MAIN_BRANCH, {}).get("snapshot-id")
        if not is_ancestor(self.base, snapshot_id, current):
            raise InvalidArgumentError(
                f"cannot roll back to snapshot {snapshot_id}: it is not an ancestor of the current snapshot {current} "
                "(set_current_snapshot makes any snapshot current)"
            )
        self.set_current(snapshot_id)

    def rollback_to_time(self, timestamp_ms: int) -> int:
        """Main back to its newest ancestor committed before `timestamp_ms`; its id."""
        current = self.refs.get(MAIN_BRANCH, {}).get("snapshot-id")
        older = [s for s in self.base.ancestors(current) if s.timestamp_ms < timestamp_ms]
        if not older:
            raise NoSuchSnapshotError(f"cannot roll back: the current branch has no snapshot committed before {timestamp_ms} ms")
        newest = max(older, key=lambda s: s.timestamp_ms)
        self.set_current(newest.snapshot_id)
        return newest.snapshot_id

    def set_current(self, snapshot_id: int) -> None:
        """Main at any snapshot of the table."""
        self._check_snapshot(snapshot_id)
        main = self.refs.get(MAIN_BRANCH)
        self._set(MAIN_BRANCH, {**(main or {}), "snapshot-id": snapshot_id, "type": BRANCH})

    # -- the commit ---------------------------------------------------------------------------
    def commit(self) -> TableCommit:
        """The edits as one commit: each touched ref asserted where `base` had it."""
        requirements: list[Requirement] = [AssertTableUuid(self.base.table_uuid)]
        updates: list[Update] = []
        for name in dict.fromkeys(self.touched):
            before = self.base.refs.get(name)
            after = self.refs.get(name)
            if before == after:
                continue
            requirements.append(AssertRefSnapshotId(name, None if before is None else before.get("snapshot-id")))
            updates.append(RemoveSnapshotRef(name) if after is None else SetSnapshotRef(name, after))
        return TableCommit(requirements, updates)

    # -- helpers ------------------------------------------------------------------------------
    def _ref(self, name: str, kind: str | None) -> dict[str, Any]:
        ref = self.refs.get(name)
        if ref is None:
            what = kind or "branch or tag"
            raise NoSuchRefError(f"the table has no {what} named {name!r} (it has: {', '.join(sorted(self.refs)) or 'none'})")
        if kind is not None and ref.get("type", BRANCH) != kind:
            raise InvalidArgumentError(f"{name!r} is a {ref.get('type', BRANCH)}, not a {kind}")
        return ref

    def _check_snapshot(self, snapshot_id: int) -> None:
        if isinstance(snapshot_id, bool) or not isinstance(snapshot_id, int):
            raise InvalidArgumentError(f"a snapshot id is an integer, not {snapshot_id!r}")
        if not any(s.snapshot_id == snapshot_id for s in self.base.snapshots):
            raise NoSuchSnapshotError(f"the table has no snapshot {snapshot_id}")

    def _set(self, name: str, ref: dict[str, Any]) -> None:
        self.refs[name] = ref
        self.touched.append(name)

    def _remove(self, name: str) -> None:
        del self.refs[name]
        self.touched.append(name)


def _check_name(name: object) -> None:
    if not isinstance(name, str) or not name.strip():
        raise InvalidArgumentError(f"a branch or tag name is a non-empty string, not {name!r}")
