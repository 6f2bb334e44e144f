"""The files a client's commit names, held to what a server that owns its warehouse may trust.

A snapshot's manifest list is the root of everything a reader of the table reads. One that is
missing, damaged or outside the table (a system file, another table's) would be accepted by
the metadata alone and make the table unreadable, or let the server be used to probe its own
disk. So the manifest list of every snapshot a commit adds (and of every ref head a registered
table has) must lie inside the table's location, exist and be a manifest list; the manifests a
snapshot adds and the statistics files a commit adds must lie inside the table's location too
(maintenance deletes them when they expire). A file outside and a file that is missing or not a
manifest list get one answer (400), so no answer tells what exists elsewhere on the server.
"""

from __future__ import annotations

from mor.errors import MorError
from mor.format.commit_validation import statistics_paths
from mor.format.manifest_list import read_manifest_list
from mor.format.metadata import Snapshot, TableMetadata
from mor.io.fileio import FileIO
from mor.maintenance.ownership import location_forms
from mor.server.errors import BadRequestError


def check_added_files(io: FileIO, base: TableMetadata | None, new: TableMetadata) -> None:
    """BadRequestError unless every snapshot `new` adds to `base` names a manifest list (and
    manifests) inside the table, and every statistics file it adds lies there."""
    old = set() if base is None else {s.snapshot_id for s in base.snapshots}
    for snapshot in new.snapshots:
        if snapshot.snapshot_id not in old:
            _check_snapshot_files(io, new.location, snapshot)
    for path in statistics_paths(base, new):
        if not inside(new.location, path):
            raise BadRequestError(f"statistics file {path} is not inside the table location {new.location}")


def check_registered_files(io: FileIO, metadata: TableMetadata) -> None:
    """BadRequestError unless every snapshot of a table to register names a manifest list inside
    its location, and the snapshot each ref points at names one that exists and is one (older
    snapshots are not read: a table may have thousands)."""
    heads = {ref.get("snapshot-id") for ref in metadata.refs.values()}
    for snapshot in metadata.snapshots:
        if snapshot.snapshot_id in heads:
            _check_snapshot_files(io, metadata.location, snapshot, manifests=False)
        elif not inside(metadata.location, snapshot.manifest_list):
            raise _not_a_manifest_list(snapshot, metadata.location)


def _check_snapshot_files(io: FileIO, table_location: str, snapshot: Snapshot, manifests: bool = True) -> None:
    if not inside(table_location, snapshot.manifest_list):
        raise _not_a_manifest_list(snapshot, table_location)
    try:
        listed = read_manifest_list(io, snapshot.manifest_list)
    except (MorError, OSError):
        raise _not_a_manifest_list(snapshot, table_location) from None
    if manifests:
        added = [m.manifest_path for m in listed if m.added_snapshot_id == snapshot.snapshot_id]
        outside = next((path for path in added if not inside(table_location, path)), None)
        if outside is not None:
            raise BadRequestError(
                f"snapshot {snapshot.snapshot_id} adds manifest {outside}, which is not inside the table location {table_location}"
            )


def _not_a_manifest_list(snapshot: Snapshot, table_location: str) -> BadRequestError:
    return BadRequestError(
        f"snapshot {snapshot.snapshot_id}: manifest-list {snapshot.manifest_list} is not a manifest list inside the table "
        f"location {table_location} (outside it, missing, or not a manifest list)"
    )


def inside(folder: str, location: str) -> bool:
    """Does `location` lie strictly inside `folder`, in every spelling either may be read in?"""
    outer, inner = location_forms(folder), location_forms(location)
    return len(outer) == len(inner) and all(o.holds(i) and o != i for o, i in zip(outer, inner))
