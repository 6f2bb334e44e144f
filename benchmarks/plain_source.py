"""A PySpark data source that only yields pyarrow's batches of Parquet files: no table, no
deletes, no mor. The benchmark reads through it to measure what Spark's Python data source path
costs by itself, the ceiling for any Python reader such as format("mor")."""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

BATCH_ROWS = 1 << 17  # as mor's reader


class PlainParquetSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "plain_parquet"

    def schema(self) -> str:
        return "id long, category string, value double, ts timestamp, payload string"

    def reader(self, schema: object) -> DataSourceReader:
        return PlainReader(self.options["paths"].split("\n"), int(self.options.get("partitions", "2")))


class PlainReader(DataSourceReader):
    def __init__(self, paths: list[str], partitions: int):
        self.paths = paths
        self.partitions_count = partitions

    def partitions(self) -> list[InputPartition]:
        n = self.partitions_count
        return [InputPartition(self.paths[i::n]) for i in range(n) if self.paths[i::n]]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        for path in partition.value:
            yield from pq.ParquetFile(path).iter_batches(batch_size=BATCH_ROWS)
