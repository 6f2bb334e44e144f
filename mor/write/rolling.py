"""Streaming data file writer: any number of batches in, bounded memory, files rolled at a size.

Rows are split by partition and buffered per partition; a buffer becomes a row group when it
reaches `write.parquet.row-group-size-bytes` (or `write.parquet.row-group-limit` rows), and a
file is closed and a new one started once it reaches `write.target-file-size-bytes` on disk
(both Iceberg's property names and defaults). When all buffers together pass a memory budget,
the largest one is written early, so many open partitions cannot hold the input in memory.
A writer that fails or is abandoned deletes every file it started.

With a sort order (the table's default one, when it has fields), every file is sorted by it
whole, as Iceberg's Spark writer sorts each task's rows: a partition's rows are buffered until
they reach the target file size (in Arrow bytes, so files come out smaller on disk than the
target) or the memory budget, then sorted and written as one file, and the file records the
order's id as its `sort_order_id`. Files are sorted each on its own, not across files; for
files with disjoint ranges, compact with `sort_by` (mor/maintenance/clustering.py).
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table.sorting import SortOrder

from mor.format.arrow_types import to_arrow_schema, to_parquet_rows
from mor.format.content_file import DataFile, PartitionValues, make_content_file
from mor.format.lineage import LINEAGE_FIELDS
from mor.format.partition_values import partition_path
from mor.format.spec import FileContent
from mor.io.fileio import FileIO, check_inside, write_errors
from mor.write.metrics import collect_metrics, count_nans
from mor.write.options import WriteOptions
from mor.write.partitioning import partition_key, split_by_partition
from mor.write.sort_order import sort_rows

if TYPE_CHECKING:
    from mor.progress import Step


@dataclass
class _OpenFile:
    location: str
    sink: pa.NativeFile
    writer: pq.ParquetWriter
    rows: int = 0
    nan_counts: dict[int, int] = field(default_factory=dict)


@dataclass
class _Partition:
    values: PartitionValues
    pending: list[pa.Table] = field(default_factory=list)
    pending_bytes: int = 0
    pending_rows: int = 0
    file: _OpenFile | None = None


class RollingDataWriter:
    """`write(rows)` any number of times (rows conformed to `schema`), then `close()` for the
    data files; on an error, `abort()` deletes what was written. `sort_order`: sort each file
    by it and record its id (see the module docstring); `sort_order_id`: the id to record when
    the rows come in order already (0: unsorted)."""

    def __init__(
        self,
        io: FileIO,
        table_location: str,
        schema: Schema,
        spec: PartitionSpec,
        options: WriteOptions,
        file_prefix: str = "",
        *,
        sort_order: SortOrder | None = None,
        sort_order_id: int = 0,
    ):
        self.io = io
        self.table_location = table_location
        self.schema = schema
        self.spec = spec
        self.options = options
        self.file_prefix = file_prefix
        self.arrow_schema = to_arrow_schema(schema)
        self.parquet_schema = to_arrow_schema(schema, in_parquet=True)
        self.partitions: dict[object, _Partition] = {}  # by partition_key(values)
        self.done: list[DataFile] = []
        self.started: list[str] = []
        self.buffered_bytes = 0
        self.peak_buffered_bytes = 0
        self.sort_order = sort_order if sort_order is not None and sort_order.fields else None
        self.sort_order_id = self.sort_order.order_id if self.sort_order is not None else sort_order_id
        # Sorted: one buffer is one whole file.
        self.file_buffer_bytes = min(options.target_file_bytes, options.buffer_budget_bytes)

    def write(self, rows: pa.Table | pa.RecordBatch) -> None:
        if isinstance(rows, pa.RecordBatch):
            rows = pa.Table.from_batches([rows])
        if rows.num_rows == 0:
            return
        rows = rows.select(self.arrow_schema.names).cast(self.arrow_schema)
        for partition, part_rows in split_by_partition(self.spec, self.schema, rows):
            p = self.partitions.setdefault(partition_key(partition), _Partition(partition))
            p.pending.append(part_rows)
            p.pending_bytes += part_rows.nbytes
            p.pending_rows += part_rows.num_rows
            self.buffered_bytes += part_rows.nbytes
            self.peak_buffered_bytes = max(self.peak_buffered_bytes, self.buffered_bytes)
            if self.sort_order is not None:
                if p.pending_bytes >= self.file_buffer_bytes:
                    self._flush(partition, p, final=True)
            elif p.pending_bytes >= self.options.row_group_bytes or p.pending_rows >= self.options.row_group_rows:
                self._flush(partition, p)
        while self.buffered_bytes > self.options.buffer_budget_bytes:
            p = max(self.partitions.values(), key=lambda p: p.pending_bytes)
            self._flush(p.values, p, final=self.sort_order is not None)

    @property
    def bytes_written(self) -> int:
        """Bytes in the files written so far: the finished ones' sizes and what the open ones hold."""
        open_files = [p.file for p in self.partitions.values() if p.file is not None]
        return sum(f.file_size_in_bytes for f in self.done) + sum(f.sink.tell() for f in open_files)

    def close(self) -> list[DataFile]:
        try:
            for p in self.partitions.values():
                self._flush(p.values, p, final=True)
                self._finish(p.values, p)
        except BaseException:
            self.abort()
            raise
        return self.done

    def abort(self) -> None:
        for p in self.partitions.values():
            if p.file is not None:
                _close_quietly(p.file)
                p.file = None
        for location in self.started:
            self.io.delete_quietly(location)
        self.done = []

    def _flush(self, partition: PartitionValues, p: _Partition, final: bool = False) -> None:
        """Write the partition's buffer as row groups of its current file (rolling it when full).
        Past the row limit, rows beyond the last whole row group stay buffered (unless `final`):
        writing them would leave a small row group between full ones."""
        if not p.pending:
            return
        rows = pa.concat_tables(p.pending)
        self.buffered_bytes -= p.pending_bytes
        p.pending, p.pending_bytes, p.pending_rows = [], 0, 0
        whole = rows.num_rows // self.options.row_group_rows * self.options.row_group_rows
        if not final and 0 < whole < rows.num_rows:
            tail = rows.slice(whole)
            rows = rows.slice(0, whole)
            p.pending, p.pending_bytes, p.pending_rows = [tail], tail.nbytes, tail.num_rows
            self.buffered_bytes += tail.nbytes
        if self.sort_order is not None:
            rows = sort_rows(rows, self.sort_order, self.schema)
        if p.file is None:
            p.file = self._open(partition)
        f = p.file
        with write_errors(f.location):
            f.writer.write_table(to_parquet_rows(rows, self.parquet_schema), row_group_size=self.options.row_group_rows)
        f.rows += rows.num_rows
        for fid, nans in count_nans(rows, self.schema).items():  # float/double fields in structs too
            f.nan_counts[fid] = f.nan_counts.get(fid, 0) + nans
        if f.sink.tell() >= self.options.target_file_bytes or self.sort_order is not None:
            self._finish(partition, p)

    def _open(self, partition: PartitionValues) -> _OpenFile:
        location = new_file_location(self.table_location, self.spec, self.schema, partition, prefix=self.file_prefix)
        self.started.append(location)
        sink = self.io.open_output(location)
        with write_errors(location):
            writer = pq.ParquetWriter(
                sink, self.parquet_schema, compression=self.options.compression, write_statistics=True,
                **encodings(self.parquet_schema),
            )  # fmt: skip
        return _OpenFile(location, sink, writer)

    def _finish(self, partition: PartitionValues, p: _Partition) -> None:
        f, p.file = p.file, None
        if f is None:
            return
        with write_errors(f.location):
            f.writer.close()
            size = f.sink.tell()
            f.sink.close()
        metrics = collect_metrics(f.writer.writer.metadata, self.schema, nan_counts=f.nan_counts)
        self.done.append(
            make_content_file(
                FileContent.DATA,
                file_path=f.location,
                file_format="PARQUET",
                spec_id=self.spec.spec_id,
                partition=partition,
                record_count=f.rows,
                file_size_in_bytes=size,
                sort_order_id=self.sort_order_id,
                **metrics.as_fields(),
            )  # fmt: skip
        )


def new_file_location(
    table_location: str, spec: PartitionSpec, schema: Schema, partition: PartitionValues, suffix: str = "", prefix: str = ""
) -> str:
    """A new, uniquely named file under the table's data folder (and partition folder);
    InvalidArgumentError if its name would put it anywhere else."""
    folder = f"{table_location.rstrip('/')}/data"
    if spec.fields:
        folder += "/" + partition_path(spec, schema, partition)
    return check_inside(table_location, f"{folder}/{prefix}{uuid.uuid4()}{suffix}.parquet")


def encodings(parquet_schema: pa.Schema) -> dict[str, object]:
    """Writer options for the row lineage columns (v3) a file of moved rows holds: row ids are
    distinct and mostly ascending, so a dictionary only costs (18% more write CPU and 6% more
    bytes for a rewrite of 5 columns, measured); delta encoding stores them in about nothing.
    Every other column keeps dictionary encoding (which needs each leaf's path to say so)."""
    lineage = [n for n in parquet_schema.names if n in LINEAGE_FIELDS]
    if not lineage:
        return {}
    others = [path for path in _leaf_paths(parquet_schema) if path.split(".")[0] not in lineage]
    return {"use_dictionary": others, "column_encoding": dict.fromkeys(lineage, "DELTA_BINARY_PACKED")}


@functools.lru_cache(maxsize=64)
def _leaf_paths(parquet_schema: pa.Schema) -> tuple[str, ...]:
    """The Parquet column paths of `parquet_schema` ("info.a", "tags.list.element"), as
    pyarrow's writer names them: from the footer of an empty file."""
    buffer = pa.BufferOutputStream()
    pq.write_table(parquet_schema.empty_table(), buffer)
    schema = pq.read_metadata(pa.BufferReader(buffer.getvalue())).schema
    return tuple(schema.column(i).path for i in range(len(schema)))


def write_rows(writer: RollingDataWriter, batches: Iterable[pa.Table | pa.RecordBatch], step: Step | None = None) -> list[DataFile]:
    """Feed `batches` through `writer`; its data files, or nothing left behind on an error.
    `step` advances by each batch's rows once it is written, with the bytes written meanwhile."""
    try:
        for batch in batches:
            writer.write(batch)
            if step is not None:
                step.advance(batch.num_rows, bytes=writer.bytes_written - step.bytes)
    except BaseException:
        writer.abort()
        raise
    files = writer.close()
    if step is not None:
        step.advance(0, bytes=writer.bytes_written - step.bytes)  # the files' last row groups and footers
    return files


def _close_quietly(f: _OpenFile) -> None:
    for close in (f.writer.close, f.sink.close):
        try:
            close()
        except (OSError, pa.ArrowException):
            pass
