"""Orphan files: files under a table's location that no metadata references.

A writer killed mid-commit (or a Spark task whose result was discarded) leaves files no
snapshot names. They are found by listing the table location and subtracting everything the
table can still reach: the current and logged metadata files, every snapshot's manifest list,
manifests and content files, and statistics files. Only files older than a threshold are
removed, so the files of a commit in flight (which are new) are never touched. If any
metadata cannot be read, nothing is removed: an unreadable manifest would hide live files.
"""

from __future__ import annotations

import datetime as dt
from typing import Iterable

from mor.errors import InvalidArgumentError
from mor.format.manifest import read_manifest
from mor.format.manifest_list import read_manifest_list
from mor.format.metadata import TableMetadata
from mor.io.fileio import FileIO
from mor.maintenance.progress import Progress

DEFAULT_MIN_AGE = dt.timedelta(days=3)  # as Iceberg's remove_orphan_files


def reachable_files(io: FileIO, metadata: TableMetadata, metadata_location: str) -> set[str]:
    """Every file the table's metadata references, as local paths."""
    found = {metadata_location, *(f for _, f in metadata.metadata_log)}
    for key in ("statistics", "partition-statistics"):
        found |= {s["statistics-path"] for s in metadata.extra.get(key) or () if "statistics-path" in s}
    specs, schema = metadata.specs(), metadata.schema()
    manifests = {}
    for snapshot in metadata.snapshots:
        found.add(snapshot.manifest_list)
        for m in read_manifest_list(io, snapshot.manifest_list):
            manifests.setdefault(m.manifest_path, m)
    for path, manifest in manifests.items():
        found.add(path)
        found |= {e.file.file_path for e in read_manifest(io, manifest, specs, schema)}
    return {io.path(f) for f in found}


def orphan_files(io: FileIO, metadata: TableMetadata, metadata_location: str, older_than: dt.datetime) -> dict[str, int]:
    """Unreferenced files under the table location last modified before `older_than`, with
    their sizes, by path."""
    reachable = reachable_files(io, metadata, metadata_location)
    cutoff_ns = int(older_than.timestamp() * 1e9)  # a naive datetime is local time, as everywhere in Python
    out = {}
    for info in io.list_files(metadata.location):
        if info.path in reachable or info.path.endswith("version-hint.text"):
            continue
        if info.mtime_ns is not None and info.mtime_ns < cutoff_ns:
            out[info.path] = info.size or 0
    return dict(sorted(out.items()))


class OrphanResult(list):
    """The paths `remove_orphan_files` removed (with `dry_run`, would remove), sorted: a list,
    as this call returned before it had a result object, plus what it adds up to."""

    def __init__(self, paths: Iterable[str], removed_bytes: int, dry_run: bool = False):
        super().__init__(paths)
        self.removed_bytes = removed_bytes
        self.dry_run = dry_run

    @property
    def removed_files(self) -> int:
        return len(self)

    def to_dict(self) -> dict[str, object]:
        return {"removed_files": len(self), "removed_bytes": self.removed_bytes, "dry_run": self.dry_run, "paths": list(self)}


def remove_orphans(
    io: FileIO, metadata: TableMetadata, metadata_location: str, older_than: dt.timedelta | dt.datetime, dry_run: bool, progress: Progress
) -> OrphanResult:
    """Find the orphans older than `older_than` (an age or a time) and delete them unless `dry_run`."""
    cutoff = dt.datetime.now(dt.timezone.utc) - older_than if isinstance(older_than, dt.timedelta) else older_than
    if not isinstance(cutoff, dt.datetime):
        raise InvalidArgumentError(f"older_than must be a timedelta or a datetime, got {older_than!r}")
    orphans = orphan_files(io, metadata, metadata_location, cutoff)
    if not dry_run:
        with progress.stage("delete orphan files", len(orphans)) as step:
            for path in orphans:
                io.delete(path)
                step.advance()
    return OrphanResult(orphans, sum(orphans.values()), dry_run)
