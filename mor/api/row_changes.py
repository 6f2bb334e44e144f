"""The shared core of row-level DML: find live target rows, then remove and add rows.

Every verb reduces to "remove these live rows (by file and position), add these rows":
DELETE adds nothing, UPDATE and MERGE add the rewritten rows. Merge-on-read removes rows with
position delete files (or drops a data file whose live rows all go); copy-on-write rewrites
each touched file without them. Either way it is one snapshot.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

import numpy as np
import pyarrow as pa
from pyiceberg.expressions import AlwaysTrue, BooleanExpression

from mor.commit.snapshot_producer import Changes
from mor.planning.conflicts import validate_files_still_live, validate_no_new_deletes_for, validate_no_new_matching_data
from mor.format.content_file import DataFile
from mor.format.metadata import TableMetadata
from mor.format.spec import Operation
from mor.planning.delete_index import referenced_path
from mor.planning.filters import FileFilter, filter_field_ids
from mor.planning.task import FileScanTask
from mor.read.equality_deletes import EqualityKeySet
from mor.read.position_deletes import DeleteFileCache, deleted_positions
from mor.read.scan_reader import parallel_map
from mor.read.task_reader import POSITION_COLUMN, TaskReader
from mor.write.parquet_files import WriteOptions, write_data_files, write_position_delete_file

if TYPE_CHECKING:
    from mor.api.table import Table

MERGE_ON_READ = "merge-on-read"
COPY_ON_WRITE = "copy-on-write"
MODES = (MERGE_ON_READ, COPY_ON_WRITE)


@dataclass
class FileMatch:
    """Live rows of one data file that an operation targets."""

    task: FileScanTask
    positions: np.ndarray  # sorted positions of the targeted live rows
    live_rows: int  # live rows in the file; -1 when unknown (equality deletes apply)
    rows: pa.Table | None = None  # the targeted rows (with POSITION_COLUMN), when asked for

    @property
    def all_live_rows_match(self) -> bool:
        return len(self.positions) == self.live_rows


def _live_rows(task: FileScanTask, cache: DeleteFileCache) -> int:
    if task.equality_deletes:
        return -1  # unknown without a read: then a delete file is written, never a whole-file drop
    return task.data_file.record_count - len(deleted_positions(task.data_file.file_path, task.position_deletes, cache))


def find_matches(table: Table, row_filter: BooleanExpression, with_rows: bool = False) -> list[FileMatch]:
    """Live rows matching `row_filter`, per data file that has any. Without `with_rows` only
    the predicate's columns are read."""
    metadata = table.metadata
    schema = metadata.schema()
    cache = DeleteFileCache(table.io)
    strict = FileFilter(schema, metadata.specs(), row_filter)
    if with_rows:
        projection = schema
    elif isinstance(row_filter, AlwaysTrue):
        projection = schema.select()
    else:
        projection = schema.select(*[schema.find_column_name(i) for i in sorted(filter_field_ids(schema, row_filter))])
    reader = TaskReader(table.io, schema, projection, row_filter, cache, with_positions=True)
    predicate_ids = filter_field_ids(schema, row_filter) if not isinstance(row_filter, AlwaysTrue) else set()

    def match(task: FileScanTask) -> FileMatch | None:
        if not with_rows and not task.delete_files and _null_free(task, predicate_ids) and strict.file_must_match(task.data_file):
            # Column metrics prove every row matches: no need to read the file.
            positions = np.arange(task.data_file.record_count, dtype=np.int64)
            return FileMatch(task, positions, task.data_file.record_count)
        rows = pa.Table.from_batches(list(reader.read(task)), schema=reader.output_schema)
        if not rows.num_rows:
            return None
        return FileMatch(task, rows.column(POSITION_COLUMN).to_numpy(), _live_rows(task, cache), rows if with_rows else None)

    return [m for m in parallel_map(match, table.scan(filter=row_filter).plan_files()) if m is not None]


def _null_free(task: FileScanTask, field_ids: set[int]) -> bool:
    """Iceberg's strict metrics test treats a null as matching `!=` and `not in`, where the row
    filter (SQL semantics) does not; so trust it only for columns the metrics say hold no null
    or NaN."""
    f = task.data_file
    nulls, nans = f.null_value_counts or {}, f.nan_value_counts or {}
    return all(nulls.get(i) == 0 and nans.get(i, 0) == 0 for i in field_ids)


def find_key_matches(
    table: Table, keys: EqualityKeySet, key_range: BooleanExpression, all_columns: bool = True
) -> list[FileMatch]:
    """Live rows whose key tuple is in `keys` (null-safe): all their columns, or only the key
    columns. `key_range` is a filter every such row satisfies; it prunes files and row groups."""
    schema = table.metadata.schema()
    cache = DeleteFileCache(table.io)
    projection = schema if all_columns else schema.select(*keys.names)
    # The key set selects rows exactly; the range only skips files and row groups.
    reader = TaskReader(table.io, schema, projection, key_range, cache, with_positions=True, filter_rows=False)

    def match(task: FileScanTask) -> FileMatch | None:
        hits = [batch.filter(pa.array(keys.deleted_mask(batch))) for batch in reader.read(task)]
        rows = pa.Table.from_batches([h for h in hits if h.num_rows], schema=reader.output_schema)
        if not rows.num_rows:
            return None
        return FileMatch(task, rows.column(POSITION_COLUMN).to_numpy(), _live_rows(task, cache), rows)

    return [m for m in parallel_map(match, table.scan(filter=key_range).plan_files()) if m is not None]


def build_changes(table: Table, matches: list[FileMatch], new_rows: pa.Table | None, mode: str) -> Changes:
    """Write the files that remove the matched rows and add `new_rows`; describe the commit."""
    metadata = table.metadata
    schema = metadata.schema()
    options = WriteOptions(metadata.properties)
    changes = Changes(Operation.DELETE)
    if mode == MERGE_ON_READ:
        for m in matches:
            if m.all_live_rows_match:
                _remove_data_file(changes, m.task)
            else:
                spec = metadata.specs()[m.task.data_file.spec_id]
                changes.added_deletes.append(
                    write_position_delete_file(table.io, metadata.location, schema, spec, m.task.data_file, m.positions, options)
                )
    else:
        _rewrite_files(table, matches, changes, options)
    if new_rows is not None and new_rows.num_rows:
        changes.added_data += write_data_files(table.io, metadata.location, schema, metadata.spec(), new_rows, options)
    changes.operation = _operation(changes)
    return changes


def _rewrite_files(table: Table, matches: list[FileMatch], changes: Changes, options: WriteOptions) -> None:
    metadata = table.metadata
    schema = metadata.schema()
    reader = TaskReader(table.io, schema, schema, AlwaysTrue(), DeleteFileCache(table.io), with_positions=True)

    def rewrite(m: FileMatch) -> list[DataFile]:
        if m.all_live_rows_match:
            return []
        live = pa.Table.from_batches(list(reader.read(m.task)), schema=reader.output_schema)
        keep = ~np.isin(live.column(POSITION_COLUMN).to_numpy(), m.positions, assume_unique=True)
        survivors = live.drop_columns([POSITION_COLUMN]).filter(pa.array(keep))
        spec = metadata.specs()[m.task.data_file.spec_id]
        return write_data_files(table.io, metadata.location, schema, spec, survivors, options)

    for m, rewritten in zip(matches, parallel_map(rewrite, matches)):
        _remove_data_file(changes, m.task)
        changes.added_data += rewritten


def _operation(changes: Changes) -> str:
    removes = bool(changes.removed_data or changes.added_deletes or changes.removed_deletes)
    if changes.added_data and removes:
        return Operation.OVERWRITE
    return Operation.APPEND if changes.added_data else Operation.DELETE


def _remove_data_file(changes: Changes, task: FileScanTask) -> None:
    """Drop a data file, and the position delete files that can only apply to it."""
    changes.removed_data.append(task.data_file)
    for d in task.position_deletes:
        if referenced_path(d) == task.data_file.file_path and d not in changes.removed_deletes:
            changes.removed_deletes.append(d)


def rows_validator(
    table: Table, row_filter: BooleanExpression, matches: list[FileMatch], changes: Changes
) -> Callable[[TableMetadata, TableMetadata], None]:
    """Conflict checks for DML that read `table.metadata` (see planning/conflicts.py)."""
    io = table.io
    touched = [m.task.data_file for m in matches]

    def validate(read_base: TableMetadata, current: TableMetadata) -> None:
        validate_files_still_live(io, read_base, current, [f.file_path for f in touched])
        validate_no_new_matching_data(io, read_base, current, row_filter)
        if changes.added_data:  # rewritten rows must not drop deletes added meanwhile
            validate_no_new_deletes_for(io, read_base, current, touched)

    return validate


def drop_position_column(rows: pa.Table) -> pa.Table:
    return rows.drop_columns([POSITION_COLUMN]) if POSITION_COLUMN in rows.column_names else rows

