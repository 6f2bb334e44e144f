"""The text mor hands its JVM delete functions (mor/spark/delete_functions.py; read by
jvm/src/mor/jvm/Descriptor.java): which delete files apply to which data file, paths as Spark's
reader takes them, escaped. No SparkSession is started."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from pyiceberg.expressions import AlwaysTrue

from mor.format.content_file import DataFile, make_content_file
from mor.format.spec import FileContent
from mor.planning.task import FileScanTask

pytest.importorskip("pyspark")
from mor.spark.delete_functions import HEADER, descriptor


def content(kind: FileContent, path: str, **fields: Any) -> Any:
    base = {"file_path": path, "file_format": "PARQUET", "spec_id": 0, "partition": {}, "record_count": 10, "file_size_in_bytes": 100}
    return make_content_file(kind, **(base | fields))


def test_each_delete_file_is_listed_once_and_each_data_file_names_its_own() -> None:
    shared = content(FileContent.POSITION_DELETES, "file:///w/d/pos-1.parquet")
    vector = content(FileContent.POSITION_DELETES, "s3://bucket/w/d/dv.puffin", content_offset=4, content_size_in_bytes=40,
                     referenced_data_file="s3://bucket/w/a.parquet", file_format="PUFFIN")  # fmt: skip
    equality = content(FileContent.EQUALITY_DELETES, "/w/d/eq 1.parquet", equality_ids=(1, 3))
    scoped = content(FileContent.POSITION_DELETES, "/w/d/pos-2.parquet", referenced_data_file="/w/c.parquet")
    a: DataFile = content(FileContent.DATA, "s3://bucket/w/a.parquet", first_row_id=100)
    b: DataFile = content(FileContent.DATA, "file:///w/b\tc%.parquet")
    a = dataclasses.replace(a, data_sequence_number=7)
    tasks = [
        FileScanTask(a, (vector, equality), AlwaysTrue()),
        FileScanTask(b, (shared, equality), AlwaysTrue()),
        FileScanTask(content(FileContent.DATA, "/w/c.parquet"), (scoped,), AlwaysTrue()),
        FileScanTask(content(FileContent.DATA, "/w/d.parquet"), (), AlwaysTrue()),
    ]
    lines = descriptor(tasks, [1, 3]).splitlines()
    assert lines == [
        HEADER,
        "A\t1\t3",
        "V\ts3a://bucket/w/d/dv.puffin\t4\t40",
        "E\t/w/d/eq 1.parquet\t1,3\t100",
        "P\t/w/d/pos-1.parquet\t\t100",
        "P\t/w/d/pos-2.parquet\t1\t100",  # file-scoped: every row is for /w/c.parquet
        "F\ts3a://bucket/w/a.parquet\ts3://bucket/w/a.parquet\t0,1\t100\t7",
        "F\t/w/b%09c%25.parquet\tfile:///w/b%09c%25.parquet\t2,1\t\t",
        "F\t/w/c.parquet\t/w/c.parquet\t3\t\t",
        "F\t/w/d.parquet\t/w/d.parquet\t\t\t",
    ]
