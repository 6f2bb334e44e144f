"""Conflict checks against commits that landed after the snapshot an operation read.

- Files an operation removes or references must still be live (checked while carrying
  manifests, and here for files our new deletes reference).
- Serializable isolation: no data added since that may hold rows matching our filter.
- A rewrite (copy-on-write) must not drop deletes added since to the files it rewrites.
Concurrent position deletes on other rows never conflict with each other.
"""

from __future__ import annotations

from typing import Iterable

from pyiceberg.expressions import BooleanExpression

from mor.errors import CommitConflictError
from mor.format.content_file import ContentFile, DataFile, DeleteFile
from mor.format.manifest import read_manifest
from mor.format.metadata import Snapshot, TableMetadata
from mor.format.manifest_list import read_manifest_list
from mor.format.spec import ManifestEntryStatus
from mor.io.fileio import FileIO
from mor.planning.delete_index import applies_to
from mor.planning.filters import FileFilter
from mor.planning.planner import unpartitioned_spec_ids


def snapshots_since(read_base: TableMetadata, current: TableMetadata) -> list[Snapshot]:
    """Snapshots committed after the one `read_base` was at, oldest first."""
    stop = read_base.current_snapshot_id
    out = []
    for s in current.ancestors(current.current_snapshot_id):
        if s.snapshot_id == stop:
            return list(reversed(out))
        out.append(s)
    if stop is not None:
        raise CommitConflictError(f"snapshot {stop} is no longer an ancestor of the table's current state")
    return list(reversed(out))


def _changes_in(io: FileIO, metadata: TableMetadata, snapshot: Snapshot, status: ManifestEntryStatus) -> list[ContentFile]:
    """Files a snapshot itself added (or removed), from the manifests it wrote."""
    out = []
    for manifest in read_manifest_list(io, snapshot.manifest_list):
        if manifest.added_snapshot_id != snapshot.snapshot_id:
            continue
        for e in read_manifest(io, manifest, metadata.specs(), metadata.schema()):
            if e.status == status and e.snapshot_id == snapshot.snapshot_id:
                out.append(e.file)
    return out


def validate_files_still_live(io: FileIO, read_base: TableMetadata, current: TableMetadata, paths: Iterable[str]) -> None:
    paths = set(paths)
    for s in snapshots_since(read_base, current):
        gone = paths & {f.file_path for f in _changes_in(io, current, s, ManifestEntryStatus.DELETED)}
        if gone:
            raise CommitConflictError(
                f"snapshot {s.snapshot_id} ({s.operation}) removed data files this operation deletes from: {sorted(gone)[:3]}"
            )


def validate_no_new_matching_data(io: FileIO, read_base: TableMetadata, current: TableMetadata, row_filter: BooleanExpression) -> None:
    file_filter = FileFilter(current.schema(), current.specs(), row_filter)
    for s in snapshots_since(read_base, current):
        for f in _changes_in(io, current, s, ManifestEntryStatus.ADDED):
            if isinstance(f, DataFile) and file_filter.file_may_match(f):
                raise CommitConflictError(
                    f"snapshot {s.snapshot_id} ({s.operation}) added {f.file_path}, which may hold rows this operation matches"
                )


def validate_no_new_deletes_for(io: FileIO, read_base: TableMetadata, current: TableMetadata, rewritten: Iterable[DataFile]) -> None:
    rewritten = list(rewritten)
    unpartitioned = unpartitioned_spec_ids(current)
    for s in snapshots_since(read_base, current):
        for f in _changes_in(io, current, s, ManifestEntryStatus.ADDED):
            if isinstance(f, DeleteFile) and any(applies_to(f, d, unpartitioned) for d in rewritten):
                raise CommitConflictError(
                    f"snapshot {s.snapshot_id} added delete file {f.file_path} for rows this operation rewrites"
                )
