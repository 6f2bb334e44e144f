"""Merging small manifests on commit, as Iceberg's writers do by default.

Every commit adds at least one manifest, so without merging a table after 1,000 commits has
1,000 manifests and every scan reads them all. When a commit would leave at least
`commit.manifest.min-count-to-merge` (100) manifests of one content kind and partition spec,
the manifests it carries over are packed in order into bins of up to
`commit.manifest.target-size-bytes` (8 MiB), and each bin of two or more becomes one manifest.
Its entries are the bin's live entries marked EXISTING, with their snapshot ids and sequence
numbers unchanged (so planning and conflict checks see the same files with the same rules);
entries of files that earlier snapshots deleted are dropped, as in any carried-over rewrite.
The manifests this commit writes itself are never merged: their entries still inherit the
commit's sequence number. `commit.manifest-merge.enabled=false` turns merging off.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from pyiceberg.schema import Schema

from mor.commit.retry import int_property
from mor.format.manifest import EntryToWrite, ManifestFile, read_manifest, write_manifest
from mor.format.metadata import TableMetadata
from mor.format.properties import MANIFEST_MERGE_ENABLED, MANIFEST_MIN_COUNT_TO_MERGE, MANIFEST_TARGET_SIZE_BYTES
from mor.format.spec import ManifestEntryStatus
from mor.io.fileio import FileIO


@dataclass(frozen=True)
class MergePolicy:
    enabled: bool = True
    min_count: int = 100  # Iceberg's defaults
    target_bytes: int = 8 << 20

    @classmethod
    def of(cls, properties: Mapping[str, str]) -> MergePolicy:
        return cls(
            enabled=properties.get(MANIFEST_MERGE_ENABLED, "true").strip().lower() != "false",
            min_count=int_property(properties, MANIFEST_MIN_COUNT_TO_MERGE, cls.min_count) or 0,
            target_bytes=int_property(properties, MANIFEST_TARGET_SIZE_BYTES, cls.target_bytes) or 1,
        )


def merge_carried(
    io: FileIO,
    base: TableMetadata,
    schema: Schema,
    snapshot_id: int,
    own: list[ManifestFile],
    carried: list[ManifestFile],
    location: Callable[[int], str],
) -> tuple[list[ManifestFile], list[ManifestFile]]:
    """(the carried manifests with each merged bin replaced by its merge, the merges written).
    `own` are the manifests this commit wrote; they count towards the threshold only."""
    policy = MergePolicy.of(base.properties)
    if not policy.enabled or len(own) + len(carried) < max(policy.min_count, 2):
        return carried, []
    counts: dict[tuple, int] = defaultdict(int)
    for m in [*own, *carried]:
        counts[_group(m)] += 1
    bins: dict[tuple, list[list[ManifestFile]]] = defaultdict(list)
    for m in carried:
        group = bins[_group(m)]
        if counts[_group(m)] < policy.min_count:
            group.append([m])  # a group under the threshold stays as it is
        elif group and sum(x.manifest_length for x in group[-1]) + m.manifest_length <= policy.target_bytes:
            group[-1].append(m)
        else:
            group.append([m])
    replacement: dict[str, ManifestFile | None] = {}  # None: merged into an earlier member's bin
    written: list[ManifestFile] = []
    try:
        for group_bins in bins.values():
            for members in group_bins:
                if len(members) < 2:
                    continue
                merged = _merge(io, base, schema, snapshot_id, members, location(len(written)))
                written.append(merged)
                replacement[members[0].manifest_path] = merged
                for m in members[1:]:
                    replacement[m.manifest_path] = None
    except BaseException:
        for m in written:
            io.delete_quietly(m.manifest_path)
        raise
    out = []
    for m in carried:
        if m.manifest_path not in replacement:
            out.append(m)
        elif (merge := replacement[m.manifest_path]) is not None:
            out.append(merge)
    return out, written


def _group(m: ManifestFile) -> tuple:
    return (m.content, m.partition_spec_id)


def _merge(io: FileIO, base: TableMetadata, schema: Schema, snapshot_id: int, members: list[ManifestFile], location: str) -> ManifestFile:
    specs = base.specs()
    entries = [
        EntryToWrite(ManifestEntryStatus.EXISTING, e.snapshot_id, e.file, e.data_sequence_number, e.file_sequence_number)
        for m in members
        for e in read_manifest(io, m, specs, schema)
        if e.is_live
    ]
    first = members[0]
    return write_manifest(
        io,
        location,
        spec=specs[first.partition_spec_id],
        schema=schema,
        content=first.content,
        snapshot_id=snapshot_id,
        entries=entries,
        format_version=base.format_version,
    )
