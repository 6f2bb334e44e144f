"""Streaming appends (issue 9): batches in, bounded memory, files rolled at the target size."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import mor
from mor.format.arrow_types import from_arrow_schema
from mor.io.fileio import FileIO, to_local_path
from mor.write.options import WriteOptions
from mor.write.partitioning import parse_partition_by
from mor.write.rolling import RollingDataWriter, write_rows

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("category", pa.string()), ("value", pa.float64())])
SMALL_FILES = {"write.target-file-size-bytes": "60000", "write.parquet.row-group-size-bytes": "20000"}


def batches(start: int, count: int, rows: int = 1000) -> Iterator[pa.RecordBatch]:
    rng = np.random.default_rng(start)
    for b in range(count):
        ids = np.arange(start + b * rows, start + (b + 1) * rows)
        yield pa.RecordBatch.from_arrays(
            [pa.array(ids), pa.array(np.array(["a", "b", "c"])[ids % 3]), pa.array(rng.random(rows))], schema=SCHEMA
        )


def data_files(location: str) -> list[str]:
    root = to_local_path(location) + "/data"
    return [os.path.join(d, n) for d, _, names in os.walk(root) for n in names if n.endswith(".parquet")]


@pytest.mark.parametrize("partition_by", [None, ["category"]])
def test_a_streamed_append_rolls_files_and_reads_back_exactly(catalog: mor.Catalog, partition_by: list[str] | None) -> None:
    table = catalog.create_table("db.t", schema=SCHEMA, partition_by=partition_by)
    table.set_properties(**SMALL_FILES)
    snapshot = table.append(pa.RecordBatchReader.from_batches(SCHEMA, batches(0, 60)))
    tasks = table.scan().plan_files()
    per_partition = Counter(t.data_file.partition for t in tasks)
    assert min(per_partition.values()) >= 3, per_partition  # several files in every partition
    assert snapshot.summary["added-records"] == "60000"
    rows = table.scan().to_arrow().sort_by("id")
    expected = pa.Table.from_batches(list(batches(0, 60)))
    assert rows.equals(expected)
    # Each file's metrics describe its own rows: pruning by them keeps every match.
    assert sorted(table.scan(filter="id >= 12345 and id < 12400").to_arrow().column("id").to_pylist()) == list(range(12345, 12400))
    assert sum(t.data_file.record_count for t in tasks) == 60000


def test_an_iterator_of_batches_is_consumed_as_it_is_written(catalog: mor.Catalog) -> None:
    table = catalog.create_table("db.t", schema=SCHEMA)
    table.set_properties(**SMALL_FILES)
    seen_on_disk = []

    def watched() -> Iterator[pa.RecordBatch]:
        for batch in batches(0, 40):
            seen_on_disk.append(len(data_files(table.location)))
            yield batch

    table.append(watched())
    assert seen_on_disk[0] == 0 and seen_on_disk[-1] > 0  # files were written before the input ended
    assert table.scan().to_arrow().num_rows == 40000


def test_the_writer_buffers_at_most_its_budget(tmp_path: Path) -> None:
    options = WriteOptions({"write.parquet.row-group-size-bytes": "50000", "write.target-file-size-bytes": "40000"})
    schema = from_arrow_schema(SCHEMA)
    spec = parse_partition_by(schema, ["bucket(16, id)"])  # many open partitions at once
    writer = RollingDataWriter(FileIO(), str(tmp_path), schema, spec, options)
    biggest = max(b.nbytes for b in batches(0, 1))
    files = write_rows(writer, (pa.Table.from_batches([b]) for b in batches(0, 200)))
    total = 200 * biggest
    # One incoming batch (split by partition, each part with its own buffers) on top of the budget.
    assert writer.peak_buffered_bytes <= options.buffer_budget_bytes + 2 * biggest < total / 10
    assert sum(f.record_count for f in files) == 200_000
    assert len(files) > 16  # files rolled within partitions


def test_a_failing_input_leaves_no_files_and_no_commit(catalog: mor.Catalog) -> None:
    table = catalog.create_table("db.t", schema=SCHEMA)
    table.set_properties(**SMALL_FILES)
    before = table.metadata_location

    def broken() -> Iterator[pa.RecordBatch]:
        yield from batches(0, 30)
        raise RuntimeError("the source failed")

    with pytest.raises(RuntimeError, match="the source failed"):
        table.append(broken())
    wrong = pa.RecordBatch.from_arrays([pa.array(["x"])], names=["id"])
    with pytest.raises(mor.SchemaMismatchError):
        table.append(iter([*batches(0, 30), wrong]))
    assert catalog.load_table("db.t").metadata_location == before
    assert data_files(table.location) == []


def test_append_refuses_what_is_not_rows(catalog: mor.Catalog) -> None:
    table = catalog.create_table("db.t", schema=SCHEMA)
    with pytest.raises(mor.SchemaMismatchError, match="RecordBatch"):
        table.append([{"id": 1}])  # type: ignore[list-item]
    with pytest.raises(mor.SchemaMismatchError):
        table.append("rows")  # type: ignore[arg-type]


def test_row_groups_are_full_until_the_last(catalog: mor.Catalog) -> None:
    """Batches that do not divide the row limit: the rows past a full row group wait for the
    next one instead of becoming a short row group between full ones."""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False)])
    table = catalog.create_table("db.rg", schema=schema, properties={"write.parquet.row-group-limit": "1000"})
    table.append(pa.table({"id": pa.array(range(i * 300, (i + 1) * 300), pa.int64())}) for i in range(11))
    (task,) = table.scan().plan_files()
    meta = pq.ParquetFile(to_local_path(task.data_file.file_path)).metadata
    assert [meta.row_group(i).num_rows for i in range(meta.num_row_groups)] == [1000, 1000, 1000, 300]
    assert table.scan().to_arrow()["id"].to_pylist() == list(range(3300))
