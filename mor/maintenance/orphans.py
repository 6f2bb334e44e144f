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

from mor.format.manifest import read_manifest
from mor.format.manifest_list import read_manifest_list
from mor.format.metadata import TableMetadata
from mor.io.fileio import FileIO

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


def orphan_files(io: FileIO, metadata: TableMetadata, metadata_location: str, older_than: dt.datetime) -> list[str]:
    """Unreferenced files under the table location last modified before `older_than`."""
    reachable = reachable_files(io, metadata, metadata_location)
    cutoff_ns = int(older_than.timestamp() * 1e9)  # a naive datetime is local time, as everywhere in Python
    out = []
    for info in io.list_files(metadata.location):
        if info.path in reachable or info.path.endswith("version-hint.text"):
            continue
        if info.mtime_ns is not None and info.mtime_ns < cutoff_ns:
            out.append(info.path)
    return sorted(out)
