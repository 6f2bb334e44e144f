"""What other writers committed after the snapshot an operation read, and the metadata-only
conflict checks on it.

`commits_since` lists, per later snapshot, the files it added and removed. The checks here
decide from metadata alone (paths, partitions, sequence numbers, bounds); the row-level rules
of DML, which read values where metadata cannot decide, are in mor/dml/conflict_rules.py.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from pyiceberg.expressions import BooleanExpression

from mor.errors import CommitConflictError
from mor.expr.filters import FileFilter
from mor.format.content_file import DataFile, DeleteFile
from mor.format.manifest import read_manifest
from mor.format.manifest_list import read_manifest_list
from mor.format.metadata import Snapshot, TableMetadata
from mor.format.spec import ManifestEntryStatus
from mor.io.fileio import FileIO
from mor.planning.delete_index import applies_to
from mor.planning.planner import unpartitioned_spec_ids


@dataclass
class Commit:
    """The files one snapshot itself added and removed."""

    snapshot: Snapshot
    added_data: list[DataFile] = field(default_factory=list)
    added_deletes: list[DeleteFile] = field(default_factory=list)
    removed_paths: set[str] = field(default_factory=set)

    def conflict(self, what: str, files: Sequence[str]) -> CommitConflictError:
        s = self.snapshot
        shown = ", ".join(sorted(files)[:3]) + (f" and {len(files) - 3} more" if len(files) > 3 else "")
        return CommitConflictError(
            f"concurrent snapshot {s.snapshot_id} ({s.operation}) {what}: {shown}", s.snapshot_id, s.operation, tuple(files)
        )


def snapshots_since(read_base: TableMetadata, current: TableMetadata) -> list[Snapshot]:
    """Snapshots committed after the one `read_base` was at, oldest first."""
    stop = read_base.current_snapshot_id
    out: list[Snapshot] = []
    for s in current.ancestors(current.current_snapshot_id):
        if s.snapshot_id == stop:
            return list(reversed(out))
        out.append(s)
    if stop is not None:
        raise CommitConflictError(f"snapshot {stop} is no longer an ancestor of the table's current state")
    return list(reversed(out))


def commits_since(io: FileIO, read_base: TableMetadata, current: TableMetadata) -> list[Commit]:
    """The commits after `read_base`, oldest first, from the manifests each wrote."""
    out = []
    for s in snapshots_since(read_base, current):
        commit = Commit(s)
        for manifest in read_manifest_list(io, s.manifest_list):
            if manifest.added_snapshot_id != s.snapshot_id:
                continue  # carried over unchanged: nothing of this commit's own
            for e in read_manifest(io, manifest, current.specs(), current.schema()):
                if e.snapshot_id != s.snapshot_id:
                    continue
                if e.status == ManifestEntryStatus.DELETED:
                    commit.removed_paths.add(e.file.file_path)
                elif e.status == ManifestEntryStatus.ADDED and isinstance(e.file, DeleteFile):
                    commit.added_deletes.append(e.file)
                elif e.status == ManifestEntryStatus.ADDED and isinstance(e.file, DataFile):
                    commit.added_data.append(e.file)
        out.append(commit)
    return out


def validate_files_still_live(commits: Iterable[Commit], paths: Iterable[str]) -> None:
    """Files an operation removes, rewrites or adds deletes for must not have been removed."""
    paths = set(paths)
    for c in commits:
        gone = paths & c.removed_paths
        if gone:
            raise c.conflict("removed data files this operation changes", sorted(gone))


def validate_no_new_vectors(commits: Iterable[Commit], data_paths: Iterable[str]) -> None:
    """v3 keeps one deletion vector per data file: a vector added since for a file this
    operation writes a vector for is a conflict (its vector would not hold those deletes)."""
    paths = set(data_paths)
    if not paths:
        return
    for c in commits:
        hits = [d.file_path for d in c.added_deletes if d.is_deletion_vector and d.referenced_data_file in paths]
        if hits:
            raise c.conflict("added deletion vectors for data files this operation writes deletion vectors for", hits)


def validate_no_new_matching_data(io: FileIO, read_base: TableMetadata, current: TableMetadata, row_filter: BooleanExpression) -> None:
    """By metadata: no data file added since may hold rows matching `row_filter`."""
    file_filter = FileFilter(current.schema(), current.specs(), row_filter)
    for c in commits_since(io, read_base, current):
        hits = [f.file_path for f in c.added_data if file_filter.file_may_match(f)]
        if hits:
            raise c.conflict("added data files that may hold rows this operation matches", hits)


def validate_no_new_deletes_for(io: FileIO, read_base: TableMetadata, current: TableMetadata, rewritten: Iterable[DataFile]) -> None:
    """By metadata: no delete file added since applies to a file this operation rewrites."""
    rewritten = list(rewritten)
    unpartitioned = unpartitioned_spec_ids(current)
    for c in commits_since(io, read_base, current):
        hits = [f.file_path for f in c.added_deletes if any(applies_to(f, d, unpartitioned) for d in rewritten)]
        if hits:
            raise c.conflict("added deletes for rows this operation rewrites", hits)
