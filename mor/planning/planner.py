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

import itertools
from collections.abc import Callable, Iterable, Iterator

from pyiceberg.expressions import AlwaysTrue, BooleanExpression
from pyiceberg.schema import Schema

from mor.expr.filters import FileFilter
from mor.format.content_file import ContentFile, DataFile, DeleteFile, ManifestEntry
from mor.format.manifest import ManifestColumns, ManifestFile, Metrics, iter_live_files, live_keys, take_entries
from mor.format.manifest_list import read_manifest_list
from mor.format.metadata import Snapshot, TableMetadata
from mor.format.properties import NAME_MAPPING_PROPERTY
from mor.format.spec import ManifestContent, ManifestEntryStatus
from mor.io.fileio import FileIO
from mor.planning.data_manifests import DataManifestReader, ManifestFiles, ReadDataManifests
from mor.planning.delete_index import DeleteFileIndex
from mor.planning.manifest_cache import Key, OnceEach, PlanScope, checked, gc_paused, read_columns, read_entries, stable_hash
from mor.planning.referenced_deletes import ReferencedDeletes
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
    """Every task of `plan_tasks`, as a list."""
    return list(plan_tasks(io, metadata, snapshot, row_filter, case_sensitive, schema, keep_metrics))


def plan_tasks(
    io: FileIO,
    metadata: TableMetadata,
    snapshot: Snapshot | None,
    row_filter: BooleanExpression,
    case_sensitive: bool = True,
    schema: Schema | None = None,
    keep_metrics: bool = True,
    read_data_manifests: ReadDataManifests | None = None,
) -> Iterator[FileScanTask]:
    """The tasks of a scan, as a stream in manifest and file order: the delete index is held
    whole, data files a chunk at a time, so a reader of a million files never holds a million
    tasks. `keep_metrics=False`: the tasks are only read, so their data files carry the column
    metrics of the filter's columns only, none without a filter (`Metrics`): most of a plan's
    time and memory at scale. A caller that writes the files back (DML, maintenance) keeps them.
    `read_data_manifests`: where the data manifests are read (Spark's executors:
    mor/planning/data_manifests.py); the same tasks wherever."""
    if snapshot is None:
        return
    schema = schema or metadata.schema()
    specs = metadata.specs()
    file_filter = FileFilter(schema, specs, row_filter, case_sensitive)
    prunes = not isinstance(row_filter, AlwaysTrue)
    metrics: Metrics = True if keep_metrics else frozenset(file_filter.field_ids) if prunes else False
    manifests = [m for m in manifests_of(io, snapshot) if not prunes or file_filter.manifest_may_match(m)]
    data_manifests = [m for m in manifests if m.content == ManifestContent.DATA]
    delete_manifests = [m for m in manifests if m.content == ManifestContent.DELETES]
    reader = DataManifestReader(io, specs, metadata.schema(), schema, row_filter if prunes else None, case_sensitive, metrics)
    plan = _Plan(io, metadata, snapshot, reader)
    mapping = metadata.properties.get(NAME_MAPPING_PROPERTY)
    index: DeleteFileIndex | None = None
    # Without a filter every delete manifest is needed before the first task: they start
    # decoding first, then the first data manifests (decoding starts as `columns` is called).
    delete_columns = plan.columns(delete_manifests) if not prunes and any(m.has_live_files for m in data_manifests) else None
    if read_data_manifests is None:
        data_files = plan.data_files(data_manifests, plan.columns(data_manifests))
    else:
        data_files = plan.data_files_read_elsewhere(data_manifests, read_data_manifests(reader, data_manifests))
    if delete_columns is not None:
        index = plan.delete_index(delete_manifests, delete_columns)
    elif prunes:  # few files may be kept: their paths make the delete index smaller
        held: list[list[DataFile]] = []
        count = 0
        for chunk in data_files:
            held.append(chunk)
            count += len(chunk)
            if count > GATHERED:
                break
        else:
            if held:
                index = plan.delete_index(delete_manifests, only_for=(f.file_path for c in held for f in c))
        data_files = itertools.chain(held, data_files)
    for chunk in data_files:
        if index is None:
            index = plan.delete_index(delete_manifests)  # a data file is left: its deletes may apply
        with gc_paused():
            deletes = index.for_data_files(chunk) if index else [()] * len(chunk)
            tasks = [FileScanTask(f, d, row_filter, mapping) for f, d in zip(chunk, deletes)]
        yield from tasks


CHUNK = 8192  # data files planned at once: the delete files they need are made together
# Data files a filtered plan gathers before it reads the delete manifests: if every kept file is
# among them, the delete index keeps only the delete files naming them (ReferencedDeletes).
GATHERED = 100_000


class _Plan:
    """One plan's reading of manifests: data files streamed a chunk at a time, delete files
    indexed, each file checked to be live once in the snapshot."""

    def __init__(self, io: FileIO, metadata: TableMetadata, snapshot: Snapshot, reader: DataManifestReader):
        self.io, self.metadata, self.snapshot = io, metadata, snapshot
        self.reader = reader
        self.specs, self.schema = metadata.specs(), metadata.schema()
        self.scope = PlanScope()

    def columns(self, manifests: list[ManifestFile]) -> Iterator[ManifestColumns]:
        """Decoding starts now, a few manifests ahead of the caller."""
        return read_columns(self.io, manifests, self.specs, self.scope, self.reader.metrics)

    def live_files(self, manifest: ManifestFile) -> Iterator[ContentFile]:
        decoded = next(self.columns([manifest]))
        return (f for chunk in iter_live_files(decoded, manifest, self.specs, self.schema) for f in chunk)

    def once_each(self, manifests: list[ManifestFile], key_hash: Callable[[Key], int] | None = None) -> OnceEach | None:
        if checked(self.snapshot.manifest_list, manifests):
            return None
        return OnceEach(self.snapshot.manifest_list, self.live_files, key_hash)

    def data_files(self, manifests: list[ManifestFile], columns: Iterator[ManifestColumns]) -> Iterator[list[DataFile]]:
        """The live data files the filter may match, a chunk at a time."""
        once = self.once_each(manifests)
        for manifest, decoded in zip(manifests, columns):
            for keys, kept in self.reader.chunks(manifest, decoded):
                if once is not None:
                    with gc_paused():
                        once.add_keys(manifest, keys, delete=False)
                if kept:
                    yield kept
        if once is not None:
            once.done(manifests)

    def data_files_read_elsewhere(self, manifests: list[ManifestFile], read: Iterable[ManifestFiles]) -> Iterator[list[DataFile]]:
        once = self.once_each(manifests, stable_hash)
        for manifest, found in zip(manifests, read):
            if once is not None:
                once.add_hashes(manifest, found.key_hashes, delete=False)
            for start in range(0, len(found.kept), CHUNK):
                yield found.kept[start : start + CHUNK]
        if once is not None:
            once.done(manifests)

    def delete_index(
        self, manifests: list[ManifestFile], columns: Iterator[ManifestColumns] | None = None, only_for: Iterable[str] | None = None
    ) -> DeleteFileIndex:
        """The live delete files that may apply to a planned data file, indexed; those that name
        their data file left as columns (mor/planning/referenced_deletes.py). Pruned by the
        filter's partition projection only (module docstring); a delete file that names its data
        file is looked up by that file alone, so it needs no pruning."""
        once = self.once_each(manifests)
        file_filter = self.reader.file_filter
        referenced = ReferencedDeletes(self.specs, self.schema, only_for)
        deletes: list[DeleteFile] = []
        with gc_paused():
            for manifest, decoded in zip(manifests, columns or self.columns(manifests)):
                if once is not None:
                    once.add_keys(manifest, live_keys(decoded), delete=True)
                others = referenced.add(manifest, decoded)
                if not others:
                    continue
                picked = decoded if len(others) == decoded.count else take_entries(decoded, others)
                for live in iter_live_files(picked, manifest, self.specs, self.schema):
                    deletes += live if file_filter is None else [f for f in live if file_filter.partition_may_match(f.spec_id, f.partition)]  # type: ignore[arg-type,misc]  # a delete manifest's files
            if once is not None:
                once.done(manifests)
            return DeleteFileIndex(deletes, unpartitioned_spec_ids(self.metadata), referenced)
