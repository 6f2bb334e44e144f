"""Row-level answers for conflict checks: does a file another writer committed meanwhile touch
the rows an operation read or changed?

Metadata (partitions, bounds) answers first; values are read only when it cannot, and then only
the columns that decide: a filter's columns, the key columns, the equality columns.
"""

from __future__ import annotations

import numpy as np
from pyiceberg.expressions import AlwaysTrue, BooleanExpression
from pyiceberg.schema import Schema

from mor.expr.filters import filter_field_ids
from mor.format.content_file import DataFile, DeleteFile
from mor.format.spec import FileContent
from mor.io.fileio import FileIO
from mor.planning.task import FileScanTask
from mor.read.equality_deletes import EqualityDeleteCache, EqualityKeySet
from mor.read.position_deletes import DeleteFileCache, deleted_positions
from mor.read.task_reader import TaskReader


def has_matching_rows(
    io: FileIO, schema: Schema, data_file: DataFile, row_filter: BooleanExpression, keys: EqualityKeySet | None = None
) -> bool:
    """Does `data_file` hold a row matching `row_filter` (and, with `keys`, whose key tuple is
    one of them)? Deletes are not applied: a newly added file is judged by all its rows."""
    if isinstance(row_filter, AlwaysTrue) and keys is None:
        return data_file.record_count > 0
    task = FileScanTask(data_file, (), row_filter)
    cache = DeleteFileCache(io)
    if keys is None:
        ids = sorted(filter_field_ids(schema, row_filter))
        projection = schema.select(*[schema.find_column_name(i) for i in ids])
        reader = TaskReader(io, schema, projection, row_filter, cache)
        return any(batch.num_rows for batch in reader.read(task))
    # The key set selects rows exactly; the filter (a key range) only skips row groups.
    reader = TaskReader(io, schema, schema.select(*keys.names), row_filter, cache, filter_rows=False)
    return any(bool(keys.deleted_mask(batch).any()) for batch in reader.read(task))


class DeleteReader:
    """Reads each delete file once for all the checks of one validation."""

    def __init__(self, io: FileIO, schema: Schema):
        self.io = io
        self.schema = schema
        self.positions = DeleteFileCache(io)
        self.keys = EqualityDeleteCache(io, schema)


def removes_rows(deletes: DeleteReader, delete_file: DeleteFile, data_file: DataFile, positions: np.ndarray | None) -> bool:
    """Does `delete_file` (known to apply to `data_file`) remove one of the rows at `positions`
    (sorted; None: any row of the file)?"""
    io, schema = deletes.io, deletes.schema
    if delete_file.content == FileContent.POSITION_DELETES:
        removed = deleted_positions(data_file.file_path, [delete_file], deletes.positions, data_file.record_count)
        if positions is None:
            return removed.size > 0
        return np.intersect1d(removed, positions, assume_unique=True).size > 0
    key_sets = deletes.keys.key_sets([delete_file])
    names = sorted({n for k in key_sets for n in k.names})
    reader = TaskReader(io, schema, schema.select(*names), AlwaysTrue(), DeleteFileCache(io), with_positions=True)
    for batch in reader.read(FileScanTask(data_file, (), AlwaysTrue())):
        if positions is not None:
            at = batch.column(reader.position_column).to_numpy()
            keep = np.isin(at, positions, assume_unique=True)
            if not keep.any():
                continue
            batch = batch.filter(keep)
        if any(bool(k.deleted_mask(batch).any()) for k in key_sets):
            return True
    return False
