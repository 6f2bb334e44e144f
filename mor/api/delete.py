"""DELETE by predicate, merge-on-read (position delete files) or copy-on-write (rewrites).

Both modes plan the files the predicate may touch (partition and metrics pruning), read only
the columns the predicate needs, and find the positions of live matching rows. Files whose
live rows all match are dropped from the table instead of getting a delete file.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
from pyiceberg.expressions import AlwaysTrue, BooleanExpression

from mor.commit.snapshot_producer import Changes
from mor.commit.validation import validate_files_still_live, validate_no_new_deletes_for, validate_no_new_matching_data
from mor.format.metadata import TableMetadata
from mor.format.spec import Operation
from mor.planning.delete_index import referenced_path
from mor.planning.filters import FileFilter, filter_field_ids
from mor.planning.task import FileScanTask
from mor.read.position_deletes import DeleteFileCache, deleted_positions
from mor.read.task_reader import POSITION_COLUMN, TaskReader
from mor.write.parquet_files import WriteOptions, write_data_files, write_position_delete_file

if TYPE_CHECKING:
    from mor.api.table import Table

MERGE_ON_READ = "merge-on-read"
COPY_ON_WRITE = "copy-on-write"
DELETE_MODE_PROPERTY = "write.delete.mode"


@dataclass
class FileMatch:
    """Live rows of one task that match the predicate."""

    task: FileScanTask
    positions: np.ndarray  # sorted positions of live matching rows
    live_rows: int

    @property
    def all_live_rows_match(self) -> bool:
        return len(self.positions) == self.live_rows


def find_matches(table: Table, row_filter: BooleanExpression) -> list[FileMatch]:
    """Positions of live rows matching `row_filter`, per data file that has any."""
    metadata = table.metadata
    schema = metadata.schema()
    tasks = table.scan(filter=row_filter).plan_files()
    cache = DeleteFileCache(table.io)
    strict = FileFilter(schema, metadata.specs(), row_filter)
    predicate_columns = schema.select(
        *[schema.find_column_name(fid) for fid in sorted(filter_field_ids(schema, row_filter))]
    ) if not isinstance(row_filter, AlwaysTrue) else schema.select()
    reader = TaskReader(table.io, schema, predicate_columns, row_filter, cache, with_positions=True)
    matches = []
    for task in tasks:
        deleted = deleted_positions(task.data_file.file_path, task.position_deletes, cache)
        # With equality deletes the live count is unknown without a read: never drop the whole
        # file then (a position delete file is written instead, which is always correct).
        live = task.data_file.record_count - len(deleted) if not task.equality_deletes else -1
        if not task.delete_files and strict.file_must_match(task.data_file):
            positions = np.arange(task.data_file.record_count, dtype=np.int64)  # metadata says: all rows
        else:
            parts = [b.column(POSITION_COLUMN).to_numpy() for b in reader.read(task)]
            positions = np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)
        if positions.size:
            matches.append(FileMatch(task, positions, live))
    return matches


def delete_where(table: Table, row_filter: BooleanExpression, mode: str) -> Changes | None:
    """Write the files for a DELETE and describe the commit; None when nothing matches."""
    matches = find_matches(table, row_filter)
    if not matches:
        return None
    if mode == MERGE_ON_READ:
        return _merge_on_read(table, matches)
    return _copy_on_write(table, matches)


def _merge_on_read(table: Table, matches: list[FileMatch]) -> Changes:
    metadata = table.metadata
    options = WriteOptions(metadata.properties)
    changes = Changes(Operation.DELETE)
    for m in matches:
        if m.all_live_rows_match:
            _remove_data_file(changes, m.task)
        else:
            spec = metadata.specs()[m.task.data_file.spec_id]
            changes.added_deletes.append(
                write_position_delete_file(
                    table.io, metadata.location, metadata.schema(), spec, m.task.data_file, m.positions, options
                )
            )
    return changes


def _copy_on_write(table: Table, matches: list[FileMatch]) -> Changes:
    metadata = table.metadata
    schema = metadata.schema()
    options = WriteOptions(metadata.properties)
    changes = Changes(Operation.DELETE)
    reader = TaskReader(table.io, schema, schema, AlwaysTrue(), DeleteFileCache(table.io), with_positions=True)
    for m in matches:
        _remove_data_file(changes, m.task)
        if m.all_live_rows_match:
            continue
        live = pa.Table.from_batches(list(reader.read(m.task)), schema=reader.output_schema)
        keep = ~np.isin(live.column(POSITION_COLUMN).to_numpy(), m.positions, assume_unique=True)
        survivors = live.drop_columns([POSITION_COLUMN]).filter(pa.array(keep))
        spec = metadata.specs()[m.task.data_file.spec_id]
        changes.added_data += write_data_files(table.io, metadata.location, schema, spec, survivors, options)
    if changes.added_data:
        changes.operation = Operation.OVERWRITE
    return changes


def _remove_data_file(changes: Changes, task: FileScanTask) -> None:
    """Drop a data file, and the position delete files that can only apply to it."""
    changes.removed_data.append(task.data_file)
    for d in task.position_deletes:
        if referenced_path(d) == task.data_file.file_path and d not in changes.removed_deletes:
            changes.removed_deletes.append(d)


def delete_validator(table: Table, row_filter: BooleanExpression, changes: Changes):  # type: ignore[no-untyped-def]
    """Conflict checks for a DELETE that read `table.metadata` (see commit/validation.py)."""
    io = table.io
    referenced = [d.referenced_data_file for d in changes.added_deletes if d.referenced_data_file]

    def validate(read_base: TableMetadata, current: TableMetadata) -> None:
        validate_files_still_live(io, read_base, current, referenced)
        validate_no_new_matching_data(io, read_base, current, row_filter)
        if changes.added_data:
            validate_no_new_deletes_for(io, read_base, current, changes.removed_data)

    return validate

