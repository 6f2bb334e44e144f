"""Position delete files that name their one data file, kept as columns until a plan needs them.

A table written with file-scoped deletes has about one such delete file per data file: at a
million files, a million delete files. As objects they would cost a kilobyte each before the
first task is planned; here they stay in their manifests' Arrow columns (a third of that, and
shared with the manifest cache), indexed by the hash of the data file path they name. A chunk of
data files asks for its candidates at once (`candidates`), and only those rows become
`DeleteFile`s (`resolve`), by the same decoder as every other entry. A hash names candidates,
never a match: `applies_to` still compares each one's path, partition and sequence number.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema

from mor.format.content_file import DeleteFile
from mor.format.manifest import BOUND_PATHS, ManifestColumns, ManifestFile, iter_live_files, take_entries
from mor.format.spec import DELETE_FILE_PATH_ID, FileContent, ManifestEntryStatus
from mor.io.avro_columns import take_rows

_ROW_BITS = 32  # a row's id: its source's index above, its row in the source below


class ReferencedDeletes:
    """`only_for`: the data file paths of the whole plan, when known before the deletes are
    read (a filtered plan that keeps few files): delete files naming other files are dropped as
    they are read, so a plan of 1% of a million files holds 1% of their delete files."""

    def __init__(self, specs: dict[int, PartitionSpec], schema: Schema, only_for: Iterable[str] | None = None):
        self.specs, self.schema = specs, schema
        self.sources: list[tuple[ManifestFile, ManifestColumns]] = []
        self.by_path: dict[int, int | list[int]] = {}  # hash of the data file path -> row id(s)
        self.wanted = None if only_for is None else {hash(path) for path in only_for}

    def __len__(self) -> int:
        return len(self.by_path)

    def add(self, manifest: ManifestFile, decoded: ManifestColumns) -> list[int]:
        """Index the live position delete files of `decoded` that name one data file; the rows
        of the other entries (live or not) are returned, for the caller to make into files."""
        columns = decoded.columns
        count = decoded.count
        source = len(self.sources) << _ROW_BITS
        statuses = columns["status"].to_pylist()
        contents = columns["data_file.content"].to_pylist() if "data_file.content" in columns else [0] * count
        referenced = (
            columns["data_file.referenced_data_file"].to_pylist() if "data_file.referenced_data_file" in columns else [None] * count
        )
        unnamed = [row for row, path in enumerate(referenced) if path is None]
        if unnamed:  # their bounds may name the data file
            for row, path in zip(unnamed, _bounds_path(columns, unnamed)):
                referenced[row] = path
        by_path, wanted = self.by_path, self.wanted
        others: list[int] = []
        indexed = 0
        deleted, position = ManifestEntryStatus.DELETED.value, FileContent.POSITION_DELETES.value
        for row, (path, content, status) in enumerate(zip(referenced, contents, statuses)):
            if path is None or content != position or status == deleted:
                others.append(row)
                continue
            key, gid = hash(path), source | row
            if wanted is not None and key not in wanted:
                continue  # names a file the plan does not read
            held = by_path.get(key)
            by_path[key] = gid if held is None else [*held, gid] if isinstance(held, list) else [held, gid]
            indexed += 1
        if indexed:
            self.sources.append((manifest, decoded))
        return others

    def candidates(self, data_path: str) -> list[int]:
        held = self.by_path.get(hash(data_path))
        return [] if held is None else held if isinstance(held, list) else [held]

    def resolve(self, row_ids: set[int]) -> dict[int, DeleteFile]:
        """The delete files at these row ids, decoded one source at a time."""
        by_source: dict[int, list[int]] = {}
        for gid in sorted(row_ids):
            by_source.setdefault(gid >> _ROW_BITS, []).append(gid & ((1 << _ROW_BITS) - 1))
        out: dict[int, DeleteFile] = {}
        for index, rows in by_source.items():
            manifest, decoded = self.sources[index]
            picked = take_entries(decoded, rows)
            files = (f for chunk in iter_live_files(picked, manifest, self.specs, self.schema) for f in chunk)  # every row is live
            out.update(zip(((index << _ROW_BITS) | row for row in rows), files))  # type: ignore[arg-type]  # a delete manifest's files
        return out


def _bounds_path(columns: dict[str, Any], rows: list[int]) -> list[str | None]:
    """The data file path the bounds of each of `rows` name, if lower and upper are that one path."""
    if BOUND_PATHS[0] not in columns or BOUND_PATHS[1] not in columns:
        return [None] * len(rows)
    lower, upper = (_path_bound(take_rows({p: columns[p]}, rows)[p].to_pylist()) for p in BOUND_PATHS)
    return [lo.decode("utf-8") if lo is not None and lo == up else None for lo, up in zip(lower, upper)]


def _path_bound(bounds: list[list[dict[str, Any]] | None]) -> list[bytes | None]:
    return [next((kv["value"] for kv in items if kv["key"] == DELETE_FILE_PATH_ID), None) if items else None for items in bounds]
