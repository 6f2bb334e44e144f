"""Reading one FileScanTask: stream its Parquet batches with deletes and the filter applied.

Columns are matched to the read schema by field id, nested ones too (mor/read/field_resolution.py):
names may differ after a rename, a column the file does not have reads as nulls, promoted types
are cast.
"""

from __future__ import annotations

from collections.abc import Container, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.expressions import AlwaysTrue, BooleanExpression
from pyiceberg.schema import Schema
from pyiceberg.types import IcebergType, ListType, MapType, StructType

from mor.errors import CorruptMetadataError
from mor.expr.arrow_rows import RowFilter
from mor.expr.filters import bind_filter, filter_field_ids, metrics_evaluator
from mor.format.arrow_types import to_arrow_field, to_arrow_schema
from mor.format.lineage import LINEAGE_FIELD_IDS
from mor.io.fileio import FileIO, unreadable
from mor.planning.task import FileScanTask
from mor.read.equality_deletes import EqualityDeleteCache, EqualityKeySet
from mor.read.field_resolution import FileProjection, parse_name_mapping
from mor.read.position_deletes import DeleteFileCache, apply_mask, deleted_positions, keep_mask
from mor.read.row_groups import row_group_metrics
from mor.read.row_lineage import inherited

DEFAULT_BATCH_ROWS = 1 << 17
POSITION_COLUMN = "_pos"  # row position in the data file, for DML that writes position deletes


class TaskReader:
    """Reads tasks of one scan: same schema, projection, filter and delete cache."""

    def __init__(
        self,
        io: FileIO,
        schema: Schema,
        projection: Schema,
        row_filter: BooleanExpression,
        cache: DeleteFileCache,
        case_sensitive: bool = True,
        batch_rows: int | None = DEFAULT_BATCH_ROWS,
        with_positions: bool = False,
        filter_rows: bool = True,
        equality_cache: EqualityDeleteCache | None = None,
    ):
        """`filter_rows=False` uses `row_filter` only to skip row groups (for callers that
        select rows exactly themselves); rows are then not filtered by it. `equality_cache`
        (default: a new one) is where equality deletes are indexed. `batch_rows=None` decodes a
        whole row group at a time: fewer, larger batches, for callers that keep every row anyway."""
        self.io = io
        self.schema = schema
        self.cache = cache
        self.batch_rows = batch_rows
        self.with_positions = with_positions
        self.output_schema = to_arrow_schema(projection)
        # A table another engine wrote may have a column named `_pos`: take a name it lacks.
        self.position_column = free_name(POSITION_COLUMN, {f.name for f in (*schema.fields, *projection.fields)})
        if with_positions:
            self.output_schema = self.output_schema.append(pa.field(self.position_column, pa.int64(), nullable=False))
        has_filter = not isinstance(row_filter, AlwaysTrue)
        filter_rows = filter_rows and has_filter
        self.arrow_filter = RowFilter(bind_filter(schema, row_filter, case_sensitive), schema) if filter_rows else None
        self.may_match = metrics_evaluator(schema, row_filter, case_sensitive) if has_filter else None
        wanted = {f.field_id for f in projection.fields} | (filter_field_ids(schema, row_filter, case_sensitive) if filter_rows else set())
        # A filter on a field inside a struct (`addr.city = 'x'`) needs its top-level column read.
        self.wanted_ids = {_top_level_id(schema, i) for i in wanted}
        # Row lineage columns are no table columns: the projection names them, the file may hold them.
        self.lineage_fields = [f for f in projection.fields if f.field_id in LINEAGE_FIELD_IDS]
        self.equality_cache = equality_cache or EqualityDeleteCache(io, schema)

    def read(
        self, task: FileScanTask, row_groups: Container[int] | None = None, positions: np.ndarray | None = None
    ) -> Iterator[pa.RecordBatch]:
        """The task's live rows; `row_groups` (indexes) limits it to part of the file, so
        that parts of one large file can be read in parallel. `positions` (sorted) keeps only
        the rows at those positions, and decodes only the row groups that hold one: DML finds
        its rows on the predicate's columns, then reads the other columns of just those."""
        deleted = deleted_positions(task.data_file.file_path, task.position_deletes, self.cache, task.data_file.record_count)
        key_sets = self.equality_cache.key_sets(task.equality_deletes, task.name_mapping) if task.equality_deletes else []
        # Equality key columns are read even when not selected, and dropped again at the end.
        ids = self.wanted_ids | {i for f in task.equality_deletes for i in f.equality_ids or ()}
        fields = [f for f in self.schema.fields if f.field_id in ids] + self.lineage_fields
        path = task.data_file.file_path
        try:
            source = self.io.open_input(path)
        except OSError as e:
            raise unreadable("data file", path, e) from e
        with source:
            try:
                parquet = pq.ParquetFile(source, pre_buffer=True)
            except (OSError, pa.ArrowException) as e:
                raise unreadable("data file", path, e) from e
            if parquet.metadata.num_rows != task.data_file.record_count:
                # Another file in its place: position deletes would remove the wrong rows.
                raise CorruptMetadataError(
                    f"data file {path} has {parquet.metadata.num_rows} rows, its manifest says {task.data_file.record_count}"
                )
            projection = FileProjection(parquet.schema_arrow, fields, path, parse_name_mapping(task.name_mapping))
            yield from self._read_file(task, parquet, deleted, projection, key_sets, row_groups, positions)

    def _read_file(
        self,
        task: FileScanTask,
        parquet: pq.ParquetFile,
        deleted: np.ndarray,
        projection: FileProjection,
        key_sets: list[EqualityKeySet],
        row_groups: Container[int] | None,
        only: np.ndarray | None,
    ) -> Iterator[pa.RecordBatch]:
        path = task.data_file.file_path
        need_positions = self.with_positions or bool(self.lineage_fields)
        id_by_column = {name: fid for fid, name in projection.column_by_id.items() if fid not in LINEAGE_FIELD_IDS}
        file_columns = projection.file_columns
        meta = parquet.metadata
        start = 0
        for rg in range(meta.num_row_groups):
            rows = meta.row_group(rg).num_rows
            rg_start, start = start, start + rows
            if row_groups is not None and rg not in row_groups:
                continue
            if rows == 0 or _all_deleted(deleted, rg_start, rows) or (only is not None and _none_of(only, rg_start, rows)):
                continue
            if self.may_match is not None and not self.may_match(row_group_metrics(meta, rg, id_by_column, self.schema)):
                continue
            position = rg_start
            if self.batch_rows is None:
                batches = _whole_row_group(parquet, rg, file_columns)
            else:
                batches = parquet.iter_batches(batch_size=self.batch_rows, row_groups=[rg], columns=file_columns, use_threads=True)
            for batch in _decoded(path, batches):
                mask = keep_mask(deleted, position, batch.num_rows)
                if only is not None:
                    mask = _selected(only, position, batch.num_rows, mask)
                positions = np.arange(position, position + batch.num_rows, dtype=np.int64) if need_positions else None
                position += batch.num_rows
                if positions is not None and mask is not None:
                    positions = positions[mask]
                out = self._finish(task, apply_mask(batch, mask), projection, positions, key_sets)
                if out.num_rows:
                    yield out

    def _finish(
        self,
        task: FileScanTask,
        batch: pa.RecordBatch,
        projection: FileProjection,
        positions: np.ndarray | None,
        key_sets: list[EqualityKeySet],
    ) -> pa.RecordBatch:
        """File columns -> read schema columns (by field id), equality deletes anti-joined,
        filtered, projected."""
        arrays = projection.arrays(batch)
        if self.lineage_fields:
            assert positions is not None
            arrays = [
                inherited(c.field.field_id, a, task.data_file, positions) if c.field.field_id in LINEAGE_FIELD_IDS else a
                for c, a in zip(projection.columns, arrays)
            ]
        fields = [to_arrow_field(c.field).with_type(a.type).with_nullable(True) for c, a in zip(projection.columns, arrays)]
        if positions is not None and self.with_positions:
            arrays.append(pa.array(positions))
            fields.append(pa.field(self.position_column, pa.int64()))
        # With no columns at all, keep the row count (from_arrays([]) would have 0 rows).
        table_batch = pa.RecordBatch.from_arrays(arrays, schema=pa.schema(fields)) if arrays else batch.select([])
        if key_sets and table_batch.num_rows:
            deleted = np.zeros(table_batch.num_rows, dtype=bool)
            for key_set in key_sets:
                deleted |= key_set.deleted_mask(table_batch)
            if deleted.any():
                table_batch = table_batch.filter(pa.array(~deleted))
        if self.arrow_filter is not None:
            table_batch = self.arrow_filter.apply(table_batch)
        projected = table_batch.select(self.output_schema.names)
        if not len(self.output_schema):
            return projected
        if _same_types(projected.schema, self.output_schema):  # the common case: no cast needed
            return pa.RecordBatch.from_arrays(projected.columns, schema=self.output_schema)
        return projected.cast(self.output_schema)


def _whole_row_group(parquet: pq.ParquetFile, rg: int, columns: list[str]) -> Iterator[pa.RecordBatch]:
    """One row group as one batch (read_row_group decodes it faster than a batch reader)."""
    yield from parquet.read_row_group(rg, columns=columns, use_threads=True).to_batches()


def _decoded(path: str, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The batches of a data file; a page that does not decode is CorruptMetadataError naming the file."""
    try:
        yield from batches
    except (OSError, pa.ArrowException) as e:
        raise unreadable("data file", path, e) from e


def _same_types(a: pa.Schema, b: pa.Schema) -> bool:
    return all(x.type == y.type for x, y in zip(a, b, strict=True))


def free_name(name: str, taken: Container[str]) -> str:
    """`name`, or `name` followed by as many "_" as it takes to be none of `taken`."""
    while name in taken:
        name += "_"
    return name


def _none_of(positions: np.ndarray, start: int, rows: int) -> bool:
    lo, hi = np.searchsorted(positions, [start, start + rows])
    return bool(lo == hi)


def _selected(positions: np.ndarray, start: int, length: int, keep: np.ndarray | None) -> np.ndarray:
    """`keep` (None: every row) narrowed to the rows in [start, start+length) at `positions`."""
    lo, hi = np.searchsorted(positions, [start, start + length])
    mask = np.zeros(length, dtype=bool)
    mask[positions[lo:hi] - start] = True
    return mask if keep is None else mask & keep


def _all_deleted(deleted: np.ndarray, start: int, rows: int) -> bool:
    lo, hi = np.searchsorted(deleted, [start, start + rows])
    return bool(hi - lo == rows)


def _top_level_id(schema: Schema, field_id: int) -> int:
    """The id of the top-level column that holds field `field_id` (itself when top-level)."""
    for top in schema.fields:
        if top.field_id == field_id or field_id in _nested_ids(top.field_type):
            return top.field_id
    return field_id  # not a table column (row lineage): kept as it is


def _nested_ids(field_type: IcebergType) -> set[int]:
    ids: set[int] = set()
    if isinstance(field_type, StructType):
        for f in field_type.fields:
            ids |= {f.field_id} | _nested_ids(f.field_type)
    elif isinstance(field_type, ListType):
        ids |= {field_type.element_id} | _nested_ids(field_type.element_type)
    elif isinstance(field_type, MapType):
        ids |= {field_type.key_id, field_type.value_id} | _nested_ids(field_type.key_type) | _nested_ids(field_type.value_type)
    return ids
