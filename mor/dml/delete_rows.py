"""delete_rows: a blind, value-based delete. Writes equality delete files; reads no data.

This is how CDC and streaming writers delete: they know the keys, not the files. The delete
applies to rows written before it (a strictly lower data sequence number), so rows written
later with the same key survive.

With `mor.write.equality-deletes.enabled=false` (for readers that cannot apply equality
deletes, such as pyiceberg 0.12) the keys are resolved to the live rows holding them, matched
null-safely on every key column, and those rows are removed as a DELETE removes them: position
delete files (merge-on-read) or rewritten files (`write.delete.mode=copy-on-write`). The
live rows then leave the table exactly as the equality delete would have removed them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema

from mor.commit.snapshot_producer import Changes, Validator
from mor.dml.keys import is_partition_scoped, key_fields, key_range
from mor.dml.row_changes import build_changes, find_key_matches, rows_validator
from mor.dml.runner import write_mode
from mor.errors import InvalidArgumentError, SchemaMismatchError
from mor.format.content_file import DeleteFile
from mor.format.metadata import unpartitioned_spec
from mor.format.properties import DELETE_MODE_PROPERTY, equality_deletes_enabled
from mor.format.spec import Operation
from mor.planning.planner import live_data_spec_ids
from mor.progress import Progress
from mor.read.equality_deletes import EqualityKeySet
from mor.write.arrow_schema import conform
from mor.write.parquet_files import WriteOptions, write_equality_delete_files

if TYPE_CHECKING:
    from mor.dml.handle import TableHandle


def delete_rows_changes(table: TableHandle, keys: pa.Table, progress: Progress) -> tuple[Changes, Validator | None] | None:
    """The commit of `delete_rows(keys)` and its conflict check (None: blind); None when no
    row goes (no keys, or, with equality deletes off, no live row holds one). Progress: stage
    "write equality deletes" (keys, bytes), or a DELETE's stages with equality deletes off."""
    keys = distinct_keys(table, keys)
    if keys.num_rows == 0:
        return None
    if table.metadata.format_version == 1 or not equality_deletes_enabled(table.metadata.properties):
        return _position_delete_changes(table, keys, progress)  # v1 has no delete files: the rows are rewritten
    with progress.stage("write equality deletes", keys.num_rows, "rows", with_bytes=True) as step:
        files, added_spec = _write_distinct_key_deletes(table, keys)
        step.advance(keys.num_rows, bytes=sum(f.file_size_in_bytes for f in files))
    if not files:
        return None
    return Changes(Operation.DELETE, added_deletes=files, added_spec=added_spec), None


def _position_delete_changes(table: TableHandle, keys: pa.Table, progress: Progress) -> tuple[Changes, Validator] | None:
    """Remove the live rows holding one of `keys` (distinct, in the table's types) as DELETE
    does, in the table's delete mode."""
    mode = write_mode(table, None, DELETE_MODE_PROPERTY)
    key_set = EqualityKeySet(keys.column_names, keys)
    rows_range = key_range(table.metadata.schema(), keys)
    matches = find_key_matches(table, key_set, rows_range, progress, all_columns=False)
    if not matches:
        return None
    changes, removals = build_changes(table, matches, None, mode, progress)
    return changes, rows_validator(table, "delete", rows_range, removals, key_set)


def distinct_keys(table: TableHandle, keys: pa.Table) -> pa.Table:
    """`keys` checked (columns: key columns of the table), in the table's types, each once."""
    if not isinstance(keys, pa.Table):
        raise SchemaMismatchError(f"the keys to delete must be a pyarrow Table of key columns, got {type(keys).__name__}")
    if not keys.column_names:
        raise InvalidArgumentError("the keys to delete have no columns: give a table of the key columns, e.g. pa.table({'id': [1, 2]})")
    fields = key_fields(table.metadata.schema(), keys.column_names)
    keys = conform(keys, Schema(*fields), exact=True)
    if keys.num_rows == 0:
        return keys
    return keys.group_by(keys.column_names, use_threads=False).aggregate([])  # each key once


def write_key_deletes(table: TableHandle, keys: pa.Table) -> tuple[list[DeleteFile], PartitionSpec | None]:
    """(equality delete files, spec to add or None) for `keys` (columns: the key columns)."""
    keys = distinct_keys(table, keys)
    if keys.num_rows == 0:
        return [], None
    return _write_distinct_key_deletes(table, keys)


def _write_distinct_key_deletes(table: TableHandle, keys: pa.Table) -> tuple[list[DeleteFile], PartitionSpec | None]:
    """An equality delete in a partitioned spec reaches only data files of that spec and
    partition, so: when every spec that holds live data (and the default spec, which new data
    takes) has only key columns as partition sources, one file per (spec, partition) of the
    keys; otherwise one table-wide file under an unpartitioned spec."""
    metadata = table.metadata
    schema = metadata.schema()
    fields = key_fields(schema, keys.column_names)
    specs = metadata.specs()
    snapshot = metadata.current_snapshot()
    live = live_data_spec_ids(table.io, snapshot) if snapshot is not None else set()
    covered = [specs[i] for i in sorted(live | {metadata.default_spec_id})]
    equality_ids = tuple(f.field_id for f in fields)
    options = WriteOptions(metadata.properties)
    if all(is_partition_scoped(spec, schema, keys.column_names) for spec in covered):
        files: list[DeleteFile] = []
        try:
            for spec in covered:
                files += write_equality_delete_files(table.io, metadata.location, schema, spec, keys, equality_ids, options)
        except BaseException:
            for f in files:
                table.io.delete_quietly(f.file_path)
            raise
        return files, None
    spec = unpartitioned_spec(metadata)
    added_spec = None if spec.spec_id in specs else spec
    return write_equality_delete_files(table.io, metadata.location, schema, spec, keys, equality_ids, options), added_spec
