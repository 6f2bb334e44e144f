"""Scan planning: a snapshot and a row filter -> FileScanTasks.

manifest list -> prune manifests by partition summaries -> live entries -> prune files by
partition and column metrics -> delete index -> one task per data file.

Manifests are read concurrently and their decoded entries cached process-wide
(mor/planning/manifest_cache.py). Delete manifests are read only when some data file is left,
and are pruned by the filter's partition projection only: a delete file applies to data files
of its own partition (or, an equality delete of an unpartitioned spec, to every partition, and
such a spec never prunes), so one in a partition the filter rules out applies to no planned
file. Column metrics of a delete file describe the delete file, never prune by them.
"""

from __future__ import annotations

from pyiceberg.expressions import AlwaysTrue, BooleanExpression
from pyiceberg.schema import Schema

from mor.expr.filters import FileFilter
from mor.format.content_file import DataFile, DeleteFile, ManifestEntry
from mor.format.manifest import ManifestFile
from mor.format.manifest_list import read_manifest_list
from mor.format.metadata import Snapshot, TableMetadata
from mor.format.properties import NAME_MAPPING_PROPERTY
from mor.format.spec import ManifestContent, ManifestEntryStatus
from mor.io.fileio import FileIO
from mor.planning.delete_index import DeleteFileIndex
from mor.planning.manifest_cache import PlanScope, gc_paused, read_entries
from mor.planning.task import FileScanTask


def live_entries(
    io: FileIO, metadata: TableMetadata, snapshot: Snapshot, content: ManifestContent, file_filter: FileFilter | None = None
) -> list[ManifestEntry]:
    """Live (added or existing) entries of one content kind, pruned by `file_filter`."""
    manifests = [m for m in manifests_of(io, snapshot) if m.content == content]
    if file_filter is not None:
        manifests = [m for m in manifests if file_filter.manifest_may_match(m)]
    out = []
    for entries in read_entries(io, manifests, metadata.specs(), metadata.schema(), of_snapshot=snapshot.manifest_list):
        for entry in entries:
            if entry.is_live and (file_filter is None or file_filter.file_may_match(entry.file)):
                out.append(entry)
    return out


def manifests_of(io: FileIO, snapshot: Snapshot) -> list[ManifestFile]:
    return read_manifest_list(io, snapshot.manifest_list)


def added_data_files(io: FileIO, metadata: TableMetadata, snapshot: Snapshot) -> list[DataFile]:
    """The data files `snapshot` adds: ADDED entries of the data manifests it wrote."""
    return _data_files_changed(io, metadata, snapshot, ManifestEntryStatus.ADDED)


def removed_data_files(io: FileIO, metadata: TableMetadata, snapshot: Snapshot) -> list[DataFile]:
    """The data files `snapshot` removes: DELETED entries of the data manifests it wrote."""
    return _data_files_changed(io, metadata, snapshot, ManifestEntryStatus.DELETED)


def _data_files_changed(io: FileIO, metadata: TableMetadata, snapshot: Snapshot, status: ManifestEntryStatus) -> list[DataFile]:
    manifests = [m for m in manifests_of(io, snapshot) if m.content == ManifestContent.DATA and m.added_snapshot_id == snapshot.snapshot_id]
    out = []
    for entries in read_entries(io, manifests, metadata.specs(), metadata.schema()):
        for entry in entries:
            if entry.status == status and entry.snapshot_id == snapshot.snapshot_id and isinstance(entry.file, DataFile):
                out.append(entry.file)
    return out


def live_data_spec_ids(io: FileIO, snapshot: Snapshot) -> set[int]:
    """Ids of the specs that live data files of `snapshot` use, from its manifest list alone
    (a manifest holds one spec; its counts say whether it holds live files)."""
    return {m.partition_spec_id for m in manifests_of(io, snapshot) if m.content == ManifestContent.DATA and m.has_live_files}


def unpartitioned_spec_ids(metadata: TableMetadata) -> frozenset[int]:
    return frozenset(s.spec_id for s in metadata.partition_specs if not s.fields)


def plan_files(
    io: FileIO,
    metadata: TableMetadata,
    snapshot: Snapshot | None,
    row_filter: BooleanExpression,
    case_sensitive: bool = True,
    schema: Schema | None = None,
    keep_metrics: bool = True,
) -> list[FileScanTask]:
    """`keep_metrics=False`: the tasks are only read, so when the filter prunes nothing the
    data files come without their column metrics (`decode_manifest`): most of a plan's time and
    memory at scale. A caller that writes the files back (DML, maintenance) keeps them."""
    if snapshot is None:
        return []
    # Planning allocates a few objects per file and no cycles: with the collector on, a plan of
    # 100,000 files spent most of its time in collections traversing the cached entries.
    with gc_paused():
        return _plan_files(io, metadata, snapshot, row_filter, case_sensitive, schema, keep_metrics)


def _plan_files(
    io: FileIO,
    metadata: TableMetadata,
    snapshot: Snapshot,
    row_filter: BooleanExpression,
    case_sensitive: bool,
    schema: Schema | None,
    keep_metrics: bool,
) -> list[FileScanTask]:
    schema = schema or metadata.schema()
    specs = metadata.specs()
    file_filter = FileFilter(schema, specs, row_filter, case_sensitive)
    prunes = not isinstance(row_filter, AlwaysTrue)
    manifests = manifests_of(io, snapshot)
    scope = PlanScope()

    def read(contents: tuple[ManifestContent, ...]) -> dict[ManifestContent, list[list[ManifestEntry]]]:
        chosen = [m for m in manifests if m.content in contents and (not prunes or file_filter.manifest_may_match(m))]
        read = read_entries(io, chosen, specs, metadata.schema(), scope, of_snapshot=snapshot.manifest_list, metrics=prunes or keep_metrics)
        return {c: [entries for m, entries in zip(chosen, read) if m.content == c] for c in contents}

    # A read without a filter needs every manifest, decoded lean: data and delete manifests are
    # read together, so their decoding overlaps. Otherwise data first (its decoded records are
    # freed before the deletes'), and delete manifests only if a data file is left.
    both = (ManifestContent.DATA, ManifestContent.DELETES)
    entries_of = read(both) if not (prunes or keep_metrics) else read(both[:1])
    data: list[DataFile] = []
    for entries in entries_of[ManifestContent.DATA]:
        for entry in entries:
            if entry.is_live and (not prunes or file_filter.file_may_match(entry.file)):
                data.append(entry.file)  # type: ignore[arg-type]  # a data manifest's files; no cast per entry in this loop
    if not data:
        return []
    if ManifestContent.DELETES not in entries_of:
        entries_of.update(read(both[1:]))
    deletes: list[DeleteFile] = []
    for entries in entries_of[ManifestContent.DELETES]:
        for entry in entries:
            f = entry.file
            if entry.is_live and (not prunes or file_filter.partition_may_match(f.spec_id, f.partition)):
                deletes.append(f)  # type: ignore[arg-type]  # a delete manifest's files; no cast per entry in this loop
    index = DeleteFileIndex(deletes, unpartitioned_spec_ids(metadata))
    mapping = metadata.properties.get(NAME_MAPPING_PROPERTY)
    if not index:
        return [FileScanTask(f, (), row_filter, mapping) for f in data]
    return [FileScanTask(f, index.for_data_file(f), row_filter, mapping) for f in data]
