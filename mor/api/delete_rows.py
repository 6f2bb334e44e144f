"""delete_rows: a blind, value-based delete. Writes equality delete files; reads no data.

This is how CDC and streaming writers delete: they know the keys, not the files. The delete
applies to rows written before it (a strictly lower data sequence number), so rows written
later with the same key survive.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema

from mor.api.keys import is_partition_scoped, key_fields
from mor.commit.snapshot_producer import Changes
from mor.errors import InvalidArgumentError, SchemaMismatchError
from mor.format.content_file import DeleteFile
from mor.format.metadata import unpartitioned_spec
from mor.format.spec import Operation
from mor.planning.planner import live_data_spec_ids
from mor.write.arrow_schema import conform
from mor.write.parquet_files import WriteOptions, write_equality_delete_files

if TYPE_CHECKING:
    from mor.api.table import Table


def equality_delete_changes(table: Table, keys: pa.Table) -> Changes | None:
    """Write equality delete files for `keys` (columns: the key columns); None for no keys."""
    files, added_spec = write_key_deletes(table, keys)
    if not files:
        return None
    return Changes(Operation.DELETE, added_deletes=files, added_spec=added_spec)


def write_key_deletes(table: Table, keys: pa.Table) -> tuple[list[DeleteFile], PartitionSpec | None]:
    """(equality delete files, spec to add or None). An equality delete in a partitioned spec
    reaches only data files of that spec and partition, so: when every spec that holds live
    data (and the default spec, which new data takes) has only key columns as partition
    sources, one file per (spec, partition) of the keys; otherwise one table-wide file under
    an unpartitioned spec."""
    if not isinstance(keys, pa.Table):
        raise SchemaMismatchError(f"the keys to delete must be a pyarrow Table of key columns, got {type(keys).__name__}")
    if not keys.column_names:
        raise InvalidArgumentError("the keys to delete have no columns: give a table of the key columns, e.g. pa.table({'id': [1, 2]})")
    metadata = table.metadata
    schema = metadata.schema()
    fields = key_fields(schema, keys.column_names)
    keys = conform(keys, Schema(*fields))
    if keys.num_rows == 0:
        return [], None
    keys = keys.group_by(keys.column_names, use_threads=False).aggregate([])  # each key once
    specs = metadata.specs()
    snapshot = metadata.current_snapshot()
    live = live_data_spec_ids(table.io, snapshot) if snapshot is not None else set()
    covered = [specs[i] for i in sorted(live | {metadata.default_spec_id})]
    equality_ids = tuple(f.field_id for f in fields)
    options = WriteOptions(metadata.properties)
    if all(_scoped(spec, schema, keys.column_names) for spec in covered):
        files: list[DeleteFile] = []
        try:
            for spec in covered:
                files += write_equality_delete_files(table.io, metadata.location, schema, spec, keys, equality_ids, options)
        except BaseException:
            for f in files:
                table.io.delete(f.file_path)
            raise
        return files, None
    spec = unpartitioned_spec(metadata)
    added_spec = None if spec.spec_id in specs else spec
    return write_equality_delete_files(table.io, metadata.location, schema, spec, keys, equality_ids, options), added_spec


def _scoped(spec: PartitionSpec, schema: Schema, names: list[str]) -> bool:
    try:
        return is_partition_scoped(spec, schema, names)
    except ValueError:  # a partition source column the schema no longer has
        return False
