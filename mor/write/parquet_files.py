"""Writing Parquet data files and position delete files, with Iceberg field ids and metrics."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table.sorting import SortOrder
from pyiceberg.types import LongType, NestedField, StringType

from mor.format.arrow_types import to_arrow_schema, to_parquet_rows
from mor.format.content_file import ContentFile, DataFile, DeleteFile, make_content_file
from mor.format.spec import DELETE_FILE_PATH_ID, DELETE_FILE_PATH_NAME, DELETE_POS_ID, DELETE_POS_NAME, FileContent
from mor.io.fileio import FileIO, write_errors
from mor.write.metrics import collect_metrics
from mor.write.options import WriteOptions
from mor.write.partitioning import split_by_partition
from mor.write.rolling import RollingDataWriter, new_file_location, write_rows

POSITION_DELETE_SCHEMA = Schema(
    NestedField(DELETE_FILE_PATH_ID, DELETE_FILE_PATH_NAME, StringType(), required=True),
    NestedField(DELETE_POS_ID, DELETE_POS_NAME, LongType(), required=True),
)


def _write_parquet(
    io: FileIO, location: str, table: pa.Table, options: WriteOptions, store_arrow_schema: bool = True
) -> tuple[pq.FileMetaData, int]:
    """The file's Parquet metadata and its size in bytes (counted while writing: asking the
    storage afterwards would cost a HEAD request on S3)."""
    collector: list[pq.FileMetaData] = []
    with write_errors(location), io.open_output(location) as sink:
        pq.write_table(
            table,
            sink,
            compression=options.compression,
            row_group_size=options.row_group_rows,
            metadata_collector=collector,
            write_statistics=True,
            store_schema=store_arrow_schema,
        )
        size = sink.tell()
    return collector[0], size


def write_data_files(
    io: FileIO,
    table_location: str,
    schema: Schema,
    spec: PartitionSpec,
    data: pa.Table,
    options: WriteOptions,
    file_prefix: str = "",
    *,
    sort_order: SortOrder | None = None,
) -> list[DataFile]:
    """Data files for `data` (conformed to `schema`): per partition value, one file, or several
    when it passes the target file size. `file_prefix` starts every file name (a distributed job
    names its files to find them again). `sort_order`: each file sorted by it (the table's default)."""
    writer = RollingDataWriter(io, table_location, schema, spec, options, file_prefix, sort_order=sort_order)
    return write_rows(writer, data.to_batches(max_chunksize=options.row_group_rows))


def _write_by_partition(
    io: FileIO,
    table_location: str,
    schema: Schema,
    spec: PartitionSpec,
    data: pa.Table,
    options: WriteOptions,
    file_schema: Schema,
    content: FileContent,
    suffix: str,
    **fields: Any,
) -> list[ContentFile]:
    """Write `data` (columns of `file_schema`) as one file per partition value of `spec`."""
    arrow_schema = to_arrow_schema(file_schema)
    parquet_schema = to_arrow_schema(file_schema, in_parquet=True)
    files = []
    for partition, rows in split_by_partition(spec, schema, data):
        if rows.num_rows == 0:
            continue
        location = new_file_location(table_location, spec, schema, partition, suffix)
        rows = rows.select(arrow_schema.names).cast(arrow_schema)
        meta, size = _write_parquet(io, location, to_parquet_rows(rows, parquet_schema), options)
        files.append(
            make_content_file(
                content,
                file_path=location,
                file_format="PARQUET",
                spec_id=spec.spec_id,
                partition=partition,
                record_count=rows.num_rows,
                file_size_in_bytes=size,
                **collect_metrics(meta, file_schema, rows).as_fields(),
                **fields,
            )
        )
    return files


def write_position_delete_file(
    io: FileIO,
    table_location: str,
    schema: Schema,
    spec: PartitionSpec,
    data_file: DataFile,
    positions: np.ndarray,
    options: WriteOptions,
) -> DeleteFile:
    """A delete file for one data file: rows (file_path, pos) sorted by pos, bounds untruncated."""
    positions = np.unique(np.asarray(positions, dtype=np.int64))  # sorted, no duplicates
    location = new_file_location(table_location, spec, schema, data_file.partition, "-deletes")
    # The path repeats on every row: a dictionary column keeps it one string in memory and
    # dictionary-encoded in the file. The Arrow schema is not stored with it, so every reader
    # sees the spec's plain string column (polars took the stored dictionary type for a
    # Categorical column and refused the file).
    arrow_schema = to_arrow_schema(POSITION_DELETE_SCHEMA)
    path_field = arrow_schema.field(DELETE_FILE_PATH_NAME)
    paths = pa.DictionaryArray.from_arrays(pa.array(np.zeros(len(positions), dtype=np.int32)), pa.array([data_file.file_path]))
    rows = pa.Table.from_arrays(
        [paths, pa.array(positions, pa.int64())],
        schema=pa.schema([path_field.with_type(paths.type), arrow_schema.field(DELETE_POS_NAME)]),
    )
    meta, size = _write_parquet(io, location, rows, options, store_arrow_schema=False)
    metrics = collect_metrics(meta, POSITION_DELETE_SCHEMA, untruncated=frozenset({DELETE_FILE_PATH_ID}))
    return DeleteFile(
        content=FileContent.POSITION_DELETES,
        file_path=location,
        file_format="PARQUET",
        spec_id=data_file.spec_id,
        partition=data_file.partition,
        record_count=len(positions),
        file_size_in_bytes=size,
        **metrics.as_fields(),
        referenced_data_file=data_file.file_path,
    )


def write_equality_delete_files(
    io: FileIO,
    table_location: str,
    schema: Schema,
    spec: PartitionSpec,
    keys: pa.Table,
    equality_ids: tuple[int, ...],
    options: WriteOptions,
) -> list[DeleteFile]:
    """Equality delete files holding `keys` (columns = the equality columns, table names and
    types); one per partition value when `spec` is partitioned (its source columns must be
    among the keys), else one table-wide file."""
    key_schema = Schema(*[schema.find_field(i) for i in equality_ids])
    files = _write_by_partition(
        io, table_location, schema, spec, keys, options, key_schema, FileContent.EQUALITY_DELETES, "-eq-deletes",
        equality_ids=tuple(equality_ids),
    )  # fmt: skip
    return [f for f in files if isinstance(f, DeleteFile)]
