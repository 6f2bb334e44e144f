"""What one snapshot changed: the rows it removed and the rows it added, found from the scan
plans of the snapshot and of its parent (the change feed, mor/api/changes.py, builds on it).

A row leaves a table in one of two ways, and both show in the plans:
  - its data file leaves (copy-on-write rewrite, overwrite, truncate, a DELETE that drops a whole
    file): the file is in the parent's plan and not in the snapshot's; its rows live in the
    parent are read with the parent's deletes;
  - a delete starts to apply to it (position delete file, deletion vector, equality delete): the
    file is in both plans with different delete sets. When only position deletes differ, the
    newly deleted positions are the set difference of the two merged position lists, and only
    the rows at those positions are read (row groups without one are skipped), as live in the
    parent (so a row the parent's equality deletes had already removed is not reported twice).
    When equality deletes differ, the file's live positions under both delete sets are compared.
Added rows are the rows of files only the snapshot's plan holds, read with its deletes (a
position delete committed with its data file applies to it). The same comparison gives rows a
snapshot brings back (a delete that stops applying), reported as added.

Both sides are read through one TaskReader (same schema, projection and filter), so a row's
values are the same whichever side it is read from: the feed's consumer can match them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import partial

import numpy as np
import pyarrow as pa
from pyiceberg.expressions import BooleanExpression
from pyiceberg.schema import Schema

from mor.format.content_file import ContentFile
from mor.io.fileio import FileIO
from mor.planning.task import FileScanTask
from mor.read.position_deletes import DeleteFileCache, deleted_positions
from mor.read.scan_reader import parallel_map
from mor.read.task_reader import TaskReader


@dataclass(frozen=True)
class SnapshotDiff:
    """Rows live in the parent and not in the snapshot (`removed`), and the other way round
    (`added`), in the reader's output schema. A row may appear on both sides (a copy-on-write
    rewrite carries rows over); the change feed cancels those."""

    removed: pa.Table
    added: pa.Table


class SnapshotDiffer:
    """Diffs consecutive snapshots of one change scan: one schema, projection and filter; delete
    files decoded once for the whole scan (consecutive plans share most of them)."""

    def __init__(self, io: FileIO, schema: Schema, projection: Schema, row_filter: BooleanExpression, case_sensitive: bool = True):
        self.io = io
        self.cache = DeleteFileCache(io)  # no task list: keeps every delete file for the scan
        self.rows = TaskReader(io, schema, projection, row_filter, self.cache, case_sensitive, batch_rows=None)
        # Positions only (no columns): which rows of a file are live under a delete set.
        self.positions = TaskReader(
            io, schema, schema.select(), row_filter, self.cache, case_sensitive, batch_rows=None, with_positions=True
        )
        self.schema = self.rows.output_schema

    def diff(self, parent_tasks: Sequence[FileScanTask], tasks: Sequence[FileScanTask]) -> SnapshotDiff:
        before = {t.data_file.file_path: t for t in parent_tasks}
        after = {t.data_file.file_path: t for t in tasks}
        # One unit of work per data file that changed, read on threads as a scan reads its files.
        work: list[Callable[[], tuple[list[pa.RecordBatch], list[pa.RecordBatch]]]] = []
        for path, task in before.items():
            if path not in after:
                work.append(partial(lambda t: (list(self.rows.read(t)), []), task))
        for path, new in after.items():
            old = before.get(path)
            if old is None:
                work.append(partial(lambda t: ([], list(self.rows.read(t))), new))
            elif _keys(old.delete_files) != _keys(new.delete_files):
                work.append(partial(self._changed_rows, old, new))
        results = parallel_map(lambda unit: unit(), work)
        removed = [b for gone, _ in results for b in gone]
        added = [b for _, back in results for b in back]
        return SnapshotDiff(self._table(removed), self._table(added))

    def _changed_rows(self, old: FileScanTask, new: FileScanTask) -> tuple[list[pa.RecordBatch], list[pa.RecordBatch]]:
        """Rows of one data file deleted by `new`'s deletes and not `old`'s, and the other way."""
        if _keys(old.equality_deletes) == _keys(new.equality_deletes):
            path, count = old.data_file.file_path, old.data_file.record_count
            dead_before = deleted_positions(path, old.position_deletes, self.cache, count)
            dead_after = deleted_positions(path, new.position_deletes, self.cache, count)
            gone = np.setdiff1d(dead_after, dead_before, assume_unique=True)
            back = np.setdiff1d(dead_before, dead_after, assume_unique=True)
        else:
            live_before = self._live_positions(old)
            live_after = self._live_positions(new)
            gone = np.setdiff1d(live_before, live_after, assume_unique=True)
            back = np.setdiff1d(live_after, live_before, assume_unique=True)
        gone_rows = list(self.rows.read(old, positions=gone)) if len(gone) else []
        back_rows = list(self.rows.read(new, positions=back)) if len(back) else []
        return gone_rows, back_rows

    def _live_positions(self, task: FileScanTask) -> np.ndarray:
        column = self.positions.position_column
        parts = [b.column(column).to_numpy() for b in self.positions.read(task)]
        return np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)

    def _table(self, batches: list[pa.RecordBatch]) -> pa.Table:
        return pa.Table.from_batches(batches, schema=self.schema)


def _keys(files: Iterable[ContentFile]) -> frozenset[tuple[str, int | None]]:
    return frozenset(f.key for f in files)
