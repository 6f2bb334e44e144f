"""Every file a table's metadata reaches, spelled as the metadata spells it.

The current and logged metadata files, statistics files, and for every snapshot its manifest
list, manifests and content files (data, delete and Puffin files). Orphan removal subtracts
these from a listing; a purging drop deletes them; maintenance of another table of the catalog
must leave them alone. A manifest that cannot be read raises: it could hide live files.
"""

from __future__ import annotations

from mor.format.manifest import read_manifest
from mor.format.manifest_list import read_manifest_list
from mor.format.metadata import TableMetadata
from mor.format.spec import STATISTICS_KEYS
from mor.io.fileio import FileIO


def referenced_locations(io: FileIO, metadata: TableMetadata, metadata_location: str) -> set[str]:
    """The locations of every file the table's metadata references, as written there."""
    found = {metadata_location, *(f for _, f in metadata.metadata_log)}
    for key in STATISTICS_KEYS:
        found |= {s["statistics-path"] for s in metadata.extra.get(key) or () if isinstance(s, dict) and "statistics-path" in s}
    specs, schema = metadata.specs(), metadata.schema()
    manifests = {}
    for snapshot in metadata.snapshots:
        found.add(snapshot.manifest_list)
        for m in read_manifest_list(io, snapshot.manifest_list):
            manifests.setdefault(m.manifest_path, m)
    for path, manifest in manifests.items():
        found.add(path)
        found |= {e.file.file_path for e in read_manifest(io, manifest, specs, schema)}
    return found
