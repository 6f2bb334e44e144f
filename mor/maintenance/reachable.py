"""Every file a table's metadata reaches, spelled as the metadata spells it.

The current and logged metadata files, statistics files, and for every snapshot its manifest
list, manifests and content files (data, delete and Puffin files). Orphan removal subtracts
these from a listing; a purging drop deletes them; maintenance of another table of the catalog
must leave them alone. A manifest that cannot be read raises: it could hide live files.
"""

from __future__ import annotations

from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema

from mor.format.manifest import ManifestFile, read_manifest
from mor.format.manifest_list import read_manifest_list
from mor.format.metadata import TableMetadata
from mor.format.spec import STATISTICS_KEYS
from mor.io.fileio import FileIO


def referenced_locations(io: FileIO, metadata: TableMetadata, metadata_location: str) -> set[str]:
    """The locations of every file the table's metadata references, as written there."""
    found, manifests = metadata_references(io, metadata, metadata_location)
    specs, schema = metadata.specs(), metadata.schema()
    for manifest in manifests.values():
        found |= manifest_references(io, manifest, specs, schema)
    return found


def metadata_references(io: FileIO, metadata: TableMetadata, metadata_location: str) -> tuple[set[str], dict[str, ManifestFile]]:
    """The files referenced above the manifests (metadata and statistics files, manifest lists,
    manifests), and every snapshot's manifests by path, whose content files are still to read
    (`manifest_references`; one at a time, or in parallel by a distributed caller)."""
    found = {metadata_location, *(f for _, f in metadata.metadata_log)}
    for key in STATISTICS_KEYS:
        found |= {s["statistics-path"] for s in metadata.extra.get(key) or () if isinstance(s, dict) and "statistics-path" in s}
    manifests: dict[str, ManifestFile] = {}
    for snapshot in metadata.snapshots:
        found.add(snapshot.manifest_list)
        for m in read_manifest_list(io, snapshot.manifest_list):
            manifests.setdefault(m.manifest_path, m)
    return found | set(manifests), manifests


def manifest_references(io: FileIO, manifest: ManifestFile, specs: dict[int, PartitionSpec], schema: Schema) -> set[str]:
    """The content files (data, delete, Puffin) one manifest names."""
    return {e.file.file_path for e in read_manifest(io, manifest, specs, schema)}
