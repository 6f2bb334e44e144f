"""Writes off the main line: on a branch, or staged for write-audit-publish, through the same
writers as main.

Every writer of mor plans on "the current snapshot" and commits by moving "main" from it
(mor/commit/table_commits.py). `BranchOperations` wraps a table's operations so that they do so
on another line:
- a branch: the writer sees the table as of the branch's head (`on_branch`: the metadata with
  the branch's head as current snapshot and the branch's ref as main's), and its commit moves
  the branch instead of main (requirements and ref updates renamed), so DML, conflict checks,
  idempotency and compaction work on the branch as they do on main;
- staged (`wap_id`): the writer sees main, and its snapshot is added with `wap.id` in its
  summary but no ref moves (Iceberg's write-audit-publish; `Table.publish` cherry-picks it).

The catalog always applies the commit to the real metadata: the adapter keeps the real version
of each metadata location it handed out.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from mor.errors import InvalidArgumentError, NoSuchRefError
from mor.format.metadata import Snapshot, TableMetadata, moved_ref
from mor.format.requirements import AssertRefSnapshotId, CommitFailedError, Requirement
from mor.format.spec import MAIN_BRANCH
from mor.format.updates import AddSnapshot, SetSnapshotRef, TableCommit, Update

if TYPE_CHECKING:
    from mor.catalog.table_operations import TableOperations

WAP_ID = "wap.id"


def branch_head(metadata: TableMetadata, branch: str) -> int | None:
    """The snapshot id branch `branch` points at; NoSuchRefError when the table has no such
    branch, InvalidArgumentError for a tag (a tag names one snapshot: nothing is written to it)."""
    ref = metadata.refs.get(branch)
    if ref is None:
        if branch == MAIN_BRANCH:
            return metadata.current_snapshot_id
        names = ", ".join(sorted(metadata.refs)) or "none"
        raise NoSuchRefError(f"the table has no branch {branch!r} (it has: {names}); create_branch makes one")
    if ref.get("type", "branch") != "branch":
        raise InvalidArgumentError(f"{branch!r} is a tag, which names one snapshot: write to a branch")
    snapshot_id: int = ref["snapshot-id"]
    return snapshot_id


def on_branch(metadata: TableMetadata, branch: str) -> TableMetadata:
    """The table as a writer on `branch` sees it: the branch's head current, its ref as main's."""
    if branch == MAIN_BRANCH:
        return metadata
    head = branch_head(metadata, branch)
    return replace(metadata, current_snapshot_id=head, refs={**metadata.refs, MAIN_BRANCH: metadata.refs[branch]})


@dataclass
class BranchOperations:
    """`inner`'s operations, for writers on `branch` (or staged with `wap_id`, off main)."""

    inner: TableOperations
    branch: str = MAIN_BRANCH
    wap_id: str | None = None
    _real: dict[str, TableMetadata] = field(default_factory=dict)
    added: Snapshot | None = None  # the last snapshot committed through these operations

    def view(self, real: TableMetadata, location: str) -> TableMetadata:
        self._real = {location: real}  # only the newest version is ever committed on
        return real if self.wap_id is not None else on_branch(real, self.branch)

    def refresh(self) -> tuple[TableMetadata, str]:
        real, location = self.inner.refresh()
        return self.view(real, location), location

    def commit(self, base: TableMetadata, base_location: str, change: TableCommit) -> tuple[TableMetadata, str]:
        real = self._real.get(base_location)
        if real is None:  # planned on a version these operations did not hand out: plan again
            raise CommitFailedError(f"the table changed since {base_location}")
        new, location = self.inner.commit(real, base_location, self._translated(real, change))
        added = [u.snapshot for u in change.updates if isinstance(u, AddSnapshot)]
        if added:
            self.added = new.snapshot_by_id(added[-1].snapshot_id)
        return self.view(new, location), location

    def _translated(self, real: TableMetadata, change: TableCommit) -> TableCommit:
        requirements: list[Requirement] = []
        for r in change.requirements:
            if isinstance(r, AssertRefSnapshotId) and r.ref == MAIN_BRANCH:
                if self.wap_id is not None:
                    continue  # a staged snapshot moves no ref: main may move meanwhile
                r = AssertRefSnapshotId(self.branch, r.snapshot_id)
            requirements.append(r)
        updates: list[Update] = []
        for u in change.updates:
            if isinstance(u, SetSnapshotRef) and u.ref_name == MAIN_BRANCH:
                if self.wap_id is not None:
                    continue
                u = SetSnapshotRef(self.branch, moved_ref(real.refs.get(self.branch), u.ref["snapshot-id"]))
            elif isinstance(u, AddSnapshot) and self.wap_id is not None:
                u = AddSnapshot(replace(u.snapshot, summary={**u.snapshot.summary, WAP_ID: self.wap_id}))
            updates.append(u)
        return TableCommit(requirements, updates)
