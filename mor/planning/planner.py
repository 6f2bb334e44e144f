"""Scan planning: a snapshot and a row filter -> FileScanTasks.

manifest list -> prune manifests by partition summaries -> live entries -> prune files by
partition and column metrics -> delete index -> one task per data file.
"""

from __future__ import annotations

from pyiceberg.expressions import BooleanExpression
from pyiceberg.schema import Schema

from mor.format.content_file import DataFile, DeleteFile, ManifestEntry
from mor.format.manifest import ManifestFile, read_manifest
from mor.format.manifest_list import read_manifest_list
from mor.format.metadata import Snapshot, TableMetadata
from mor.format.spec import ManifestContent
from mor.io.fileio import FileIO
from mor.planning.delete_index import DeleteFileIndex
from mor.planning.filters import FileFilter
from mor.planning.task import FileScanTask


def live_entries(
    io: FileIO, metadata: TableMetadata, snapshot: Snapshot, content: ManifestContent, file_filter: FileFilter | None = None
) -> list[ManifestEntry]:
    """Live (added or existing) entries of one content kind, pruned by `file_filter`."""
    schema = metadata.schema()
    specs = metadata.specs()
    out = []
    for manifest in manifests_of(io, snapshot):
        if manifest.content != content:
            continue
        if file_filter is not None and not file_filter.manifest_may_match(manifest):
            continue
        for entry in read_manifest(io, manifest, specs, schema):
            if entry.is_live and (file_filter is None or file_filter.file_may_match(entry.file)):
                out.append(entry)
    return out


def manifests_of(io: FileIO, snapshot: Snapshot) -> list[ManifestFile]:
    return read_manifest_list(io, snapshot.manifest_list)


def unpartitioned_spec_ids(metadata: TableMetadata) -> frozenset[int]:
    return frozenset(s.spec_id for s in metadata.partition_specs if not s.fields)


def plan_files(
    io: FileIO,
    metadata: TableMetadata,
    snapshot: Snapshot | None,
    row_filter: BooleanExpression,
    case_sensitive: bool = True,
    schema: Schema | None = None,
) -> list[FileScanTask]:
    if snapshot is None:
        return []
    schema = schema or metadata.schema()
    file_filter = FileFilter(schema, metadata.specs(), row_filter, case_sensitive)
    data = live_entries(io, metadata, snapshot, ManifestContent.DATA, file_filter)
    if not data:
        return []
    deletes = live_entries(io, metadata, snapshot, ManifestContent.DELETES)
    index = DeleteFileIndex(
        (e.file for e in deletes if isinstance(e.file, DeleteFile)), unpartitioned_spec_ids(metadata)
    )
    tasks = []
    for entry in data:
        assert isinstance(entry.file, DataFile)
        tasks.append(FileScanTask(entry.file, index.for_data_file(entry.file), row_filter))
    return tasks
