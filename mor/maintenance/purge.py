"""Purging a dropped table: delete exactly the files that are its own.

Every file the table's metadata reaches (mor/maintenance/reachable.py: metadata files, manifest
lists, manifests, data, delete, Puffin and statistics files) that the table owns
(mor/maintenance/ownership.py: under its location, not through a symbolic link, not under
another table's location, referenced by no other table). Files the metadata does not name
(orphans, metadata files older than the log) stay, as in Iceberg's purge. The plan is made while
the table is still in the catalog, so a metadata file that cannot be read drops nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from mor.format.metadata import TableMetadata
from mor.io.fileio import FileIO
from mor.maintenance.ownership import REFUSE_NONE, CatalogView, Ownership
from mor.maintenance.reachable import referenced_locations


@dataclass(frozen=True)
class PurgeResult:
    """What a purging `drop_table` deleted, and the files its metadata names that it left
    because the table does not own them."""

    deleted_paths: tuple[str, ...] = ()
    skipped_paths: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, object]:
        return {"deleted_paths": list(self.deleted_paths), "skipped_paths": list(self.skipped_paths)}


def plan_purge(io: FileIO, identifier: str, metadata: TableMetadata, metadata_location: str, view: CatalogView | None) -> PurgeResult:
    """The files a purge deletes (by the path to delete them by) and those it leaves; deletes nothing."""
    ownership = Ownership(io, identifier, metadata.location, view, "drop_table(purge=True)", refuse=REFUSE_NONE)
    owned, skipped = ownership.select(sorted(referenced_locations(io, metadata, metadata_location)))
    # Metadata files last: a purge that stops midway leaves them pointing at what is left.
    paths = sorted(set(owned.values()), key=lambda p: (p.endswith(".metadata.json"), p))
    return PurgeResult(tuple(paths), tuple(sorted(skipped)))


def delete_purged(io: FileIO, plan: PurgeResult) -> PurgeResult:
    """Delete what `plan_purge` found (after the table left the catalog)."""
    for path in plan.deleted_paths:
        io.delete(path)
    return plan
