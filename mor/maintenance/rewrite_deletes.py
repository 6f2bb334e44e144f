"""Rewriting position deletes: one sorted delete file per data file.

Every merge-on-read DELETE adds a small position delete file per data file it touches, and a
read pays a fixed cost for each (about 0.1 ms to open it, whatever it holds). This rewrite
merges, for each data file with more than one position delete file (or with one that names
several data files), the positions of every delete that applies to it into one new file that
names only that data file, and removes the old files, plus any position delete file that no
longer applies to a live data file (its data file was removed). Rows do not change: the new
file deletes exactly the union of what the old ones deleted, and a position delete applies to
its data file whatever its (newer) sequence number. Equality deletes are left as they are.

In a v3 table the merged deletes of a data file become its deletion vector (position delete
files may no longer be added): every data file that v2 position delete files (left from before
the upgrade) still apply to gets a vector holding them, and the files go.

The plan (`plan_position_rewrite`), the merge of some data files' deletes (`DeleteMerger`) and
the commit's changes and validator (`finish_rewrite`) are separate steps, so Spark can run the
merges on its executors (mor/spark/maintenance.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from pyiceberg.expressions import AlwaysTrue
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema

from mor.commit.snapshot_producer import Changes, Validator
from mor.format.content_file import DataFile, DeleteFile, referenced_path
from mor.format.metadata import TableMetadata
from mor.format.spec import FileContent, ManifestContent, Operation
from mor.io.fileio import FileIO
from mor.maintenance.sizes import total_bytes
from mor.planning.conflicts import commits_since, validate_files_still_live, validate_no_new_vectors
from mor.planning.planner import live_entries, plan_files
from mor.planning.task import FileScanTask
from mor.read.position_deletes import DeleteFileCache, deleted_positions
from mor.read.scan_reader import parallel_map
from mor.write.deletion_vectors import write_deletion_vectors
from mor.write.options import WriteOptions
from mor.write.parquet_files import write_position_delete_file


@dataclass(frozen=True)
class RewriteResult:
    """What `rewrite_position_deletes` did. `snapshot_id` is None when nothing needed it.
    A deletion vector (v3) counts as one delete file, its blob's size as its bytes (the
    vectors of one rewrite share one Puffin file)."""

    removed_delete_files: int
    removed_delete_bytes: int
    added_delete_files: int
    added_delete_bytes: int
    dangling_delete_files: int  # among the removed: they applied to no live data file
    snapshot_id: int | None = None

    def to_dict(self) -> dict[str, object]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@dataclass
class RewritePlan:
    changes: Changes  # the merged files (written) in, the old ones out
    validate: Validator
    dangling: int  # removed files that applied to no live data file

    @property
    def empty(self) -> bool:
        return not (self.changes.added_deletes or self.changes.removed_deletes)

    def result(self, snapshot_id: int | None) -> RewriteResult:
        c = self.changes
        return RewriteResult(
            removed_delete_files=len(c.removed_deletes),
            removed_delete_bytes=total_bytes(c.removed_deletes),
            added_delete_files=len(c.added_deletes),
            added_delete_bytes=total_bytes(c.added_deletes),
            dangling_delete_files=self.dangling,
            snapshot_id=snapshot_id,
        )


@dataclass(frozen=True)
class DeleteMerger:
    """What merging the position deletes of some data files needs: picklable, so Spark can ship
    it to executors (mor/spark/maintenance.py)."""

    table_location: str
    schema: Schema
    specs: dict[int, PartitionSpec]
    options: WriteOptions
    vectors: bool  # v3: the merged deletes become deletion vectors

    @classmethod
    def of(cls, metadata: TableMetadata) -> DeleteMerger:
        return cls(metadata.location, metadata.schema(), metadata.specs(), WriteOptions(metadata.properties), metadata.format_version >= 3)

    def merge(self, io: FileIO, tasks: list[FileScanTask], written: list[DeleteFile]) -> None:
        """Write the merged deletes of each task's data file: one sorted position delete file
        each, or (v3) one deletion vector each, all in one Puffin file. Each file written is
        added to `written` (for the caller's cleanup should another group fail)."""
        cache = DeleteFileCache(io)

        def merged_positions(task: FileScanTask) -> tuple[DataFile, np.ndarray]:
            positions = deleted_positions(task.data_file.file_path, task.position_deletes, cache, task.data_file.record_count)
            return task.data_file, positions

        def merge_one(task: FileScanTask) -> None:
            data, positions = merged_positions(task)
            if len(positions):
                spec = self.specs[data.spec_id]
                written.append(write_position_delete_file(io, self.table_location, self.schema, spec, data, positions, self.options))

        if self.vectors:
            found = [(d, p) for d, p in parallel_map(merged_positions, tasks) if len(p)]
            written += write_deletion_vectors(io, self.table_location, found)
        else:
            parallel_map(merge_one, tasks)


@dataclass
class RewriteWork:
    """The planned rewrite: the tasks whose position deletes merge, and what leaves."""

    merger: DeleteMerger
    to_merge: list[FileScanTask]
    live_position: list[DeleteFile]
    applied: set[tuple[str, int | None]]  # keys of the position delete files some live data file reads


def plan_position_rewrite(io: FileIO, metadata: TableMetadata) -> RewriteWork | None:
    """The data files whose position deletes to merge; None when the table has no snapshot."""
    snapshot = metadata.current_snapshot()
    if snapshot is None:
        return None
    tasks = plan_files(io, metadata, snapshot, AlwaysTrue())
    live_position = [
        e.file for e in live_entries(io, metadata, snapshot, ManifestContent.DELETES)
        if isinstance(e.file, DeleteFile) and e.file.content == FileContent.POSITION_DELETES
    ]  # fmt: skip
    applied = {f.key for t in tasks for f in t.position_deletes}
    merger = DeleteMerger.of(metadata)
    if merger.vectors:
        to_merge = [t for t in tasks if any(not f.is_deletion_vector for f in t.position_deletes)]
    else:
        shared = {f.file_path for t in tasks for f in t.position_deletes if referenced_path(f) is None}
        # A file naming several data files is rewritten for each of them, so it can go.
        to_merge = [t for t in tasks if len(t.position_deletes) > 1 or any(f.file_path in shared for f in t.position_deletes)]
    return RewriteWork(merger, to_merge, live_position, applied)


def plan_rewrite(io: FileIO, metadata: TableMetadata) -> RewritePlan:
    """Write the merged delete files; the commit that swaps them in, and its conflict check."""
    work = plan_position_rewrite(io, metadata)
    if work is None:
        return nothing_to_rewrite()
    written: list[DeleteFile] = []
    try:
        work.merger.merge(io, work.to_merge, written)
    except BaseException:  # an unreadable delete file: leave nothing of ours behind
        for f in written:
            io.delete_quietly(f.file_path)
        raise
    return finish_rewrite(io, work, written)


def nothing_to_rewrite() -> RewritePlan:
    """The plan of a table without a snapshot."""
    return RewritePlan(Changes(Operation.REPLACE), lambda read_base, current: None, 0)


def finish_rewrite(io: FileIO, work: RewriteWork, written: list[DeleteFile]) -> RewritePlan:
    """The commit of the merged files `written`: they come in, the files they merge and the
    dangling ones go; its conflict check."""
    merged = {f.key for t in work.to_merge for f in t.position_deletes}
    dangling = [f for f in work.live_position if f.key not in work.applied]
    removed = [f for f in work.live_position if f.key in merged] + dangling
    changes = Changes(Operation.REPLACE, added_deletes=written, removed_deletes=removed)
    rewritten_data = [t.data_file.file_path for t in work.to_merge]
    vectors = work.merger.vectors

    def validate(read_base: TableMetadata, current: TableMetadata) -> None:
        # The new files must still have their data files to delete from; the files removed
        # are checked by the commit itself (they must still be live).
        commits = commits_since(io, read_base, current)
        validate_files_still_live(commits, rewritten_data)
        if vectors:
            validate_no_new_vectors(commits, rewritten_data)

    return RewritePlan(changes, validate, len(dangling))
