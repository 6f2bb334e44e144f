"""A plan's data manifests read into the data files it plans: here, by threads a chunk at a
time, or on Spark's executors (mor/spark/planning.py) by the same picklable reader, to the same
files in the same order.

Iceberg's distributed planning reads data manifests on executors and delete manifests on the
driver; so does this. An executor sends back the files its filter keeps and, so the driver can
still check that no file is live twice in the snapshot (mor/planning/manifest_cache.py), the
hash of every live file's key, made alike in every process (`stable_hash`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import cached_property

from pyiceberg.expressions import BooleanExpression
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema

from mor.expr.filters import FileFilter
from mor.format.content_file import DataFile
from mor.format.manifest import ManifestColumns, ManifestFile, Metrics, iter_live_files, iter_live_keys, live_rows
from mor.io.fileio import FileIO
from mor.planning.manifest_cache import Key, gc_paused, read_columns, stable_hash


@dataclass(frozen=True)
class ManifestFiles:
    """What reading one data manifest gives the driver."""

    kept: list[DataFile]  # live, and the filter may match them; in manifest order
    key_hashes: list[int]  # `stable_hash` of every live file's key


@dataclass(frozen=True)
class DataManifestReader:
    """Everything reading a data manifest as the plan would needs: picklable (no cached
    evaluators travel; each process makes its own)."""

    io: FileIO
    specs: dict[int, PartitionSpec]
    schema: Schema  # the table's: partition types
    scan_schema: Schema  # the scan's: the filter binds to it
    row_filter: BooleanExpression | None  # None: nothing is pruned
    case_sensitive: bool
    metrics: Metrics

    @cached_property
    def file_filter(self) -> FileFilter | None:
        return None if self.row_filter is None else FileFilter(self.scan_schema, self.specs, self.row_filter, self.case_sensitive)

    def __getstate__(self) -> dict[str, object]:
        return {k: v for k, v in self.__dict__.items() if k != "file_filter"}

    def chunks(self, manifest: ManifestFile, decoded: ManifestColumns) -> Iterator[tuple[list[Key], list[DataFile]]]:
        """(keys of the live files, the live files the filter may match), a chunk at a time.
        With a filter, the entries its first pass over the columns rules out never become files
        (`FileFilter.entries_may_match`)."""
        file_filter = self.file_filter
        may_match = None if file_filter is None else file_filter.entries_may_match(decoded.columns, decoded.count)
        if file_filter is None or may_match is None:
            for live in iter_live_files(decoded, manifest, self.specs, self.schema):
                kept = live if file_filter is None else [f for f in live if file_filter.file_may_match(f)]
                yield [f.key for f in live], kept  # type: ignore[misc]  # a data manifest's files; no cast per entry
            return
        picked = live_rows(decoded, among=may_match.tolist())
        for keys in iter_live_keys(decoded):
            yield keys, []
        for files in iter_live_files(decoded, manifest, self.specs, self.schema, rows=picked):
            yield [], [f for f in files if file_filter.file_may_match(f)]  # type: ignore[misc]

    def read(self, manifest: ManifestFile) -> ManifestFiles:
        """One whole manifest, for a driver in another process."""
        kept: list[DataFile] = []
        hashes: list[int] = []
        with gc_paused():
            decoded = next(read_columns(self.io, [manifest], self.specs, metrics=self.metrics))
            for keys, files in self.chunks(manifest, decoded):
                hashes += map(stable_hash, keys)
                kept += files
        return ManifestFiles(kept, hashes)


# Reads each manifest (elsewhere) and gives what it found, in the manifests' order.
ReadDataManifests = Callable[[DataManifestReader, list[ManifestFile]], Iterable[ManifestFiles]]
