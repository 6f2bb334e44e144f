"""Write settings from table properties (Iceberg's names and defaults)."""

from __future__ import annotations

from collections.abc import Mapping

from mor.format.properties import PARQUET_COMPRESSION_CODEC, PARQUET_ROW_GROUP_LIMIT, PARQUET_ROW_GROUP_SIZE_BYTES, TARGET_FILE_SIZE_BYTES

# Half pyiceberg's write.parquet.row-group-limit: a single file of 512Ki-row groups read 4-10%
# faster than one of 1Mi-row groups (pyarrow and mor alike, 5M rows x 5 columns, 2 cores), and a
# row group is the unit of parallel reading within a file (benchmarks/README.md, compaction).
DEFAULT_ROW_GROUP_ROWS = 1 << 19
DEFAULT_ROW_GROUP_BYTES = 128 << 20  # Iceberg's write.parquet.row-group-size-bytes
DEFAULT_TARGET_FILE_BYTES = 512 << 20  # Iceberg's write.target-file-size-bytes
BUFFER_BUDGET_ROW_GROUPS = 4  # rows a streaming writer may hold across its open partitions


class WriteOptions:
    def __init__(self, properties: Mapping[str, str]):
        codec = properties.get(PARQUET_COMPRESSION_CODEC, "zstd").lower()
        self.compression = "none" if codec == "uncompressed" else codec
        self.row_group_rows = int(properties.get(PARQUET_ROW_GROUP_LIMIT, DEFAULT_ROW_GROUP_ROWS))
        self.row_group_bytes = int(properties.get(PARQUET_ROW_GROUP_SIZE_BYTES, DEFAULT_ROW_GROUP_BYTES))
        self.target_file_bytes = int(properties.get(TARGET_FILE_SIZE_BYTES, DEFAULT_TARGET_FILE_BYTES))
        # In-memory (Arrow) bytes buffered before the largest partition buffer is written early.
        self.buffer_budget_bytes = BUFFER_BUDGET_ROW_GROUPS * self.row_group_bytes
