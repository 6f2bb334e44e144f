"""Spark reads of tables of many files (issue 53): what a read ships to its tasks, and the
executors' delete cache (mor/spark/delete_functions.py, jvm/src/mor/jvm/DeleteCache.java)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql.types import LongType, StructField, StructType

import mor
import mor.spark
from mor.spark.delete_functions import CACHE_BYTES_CONF
from mor.spark.file_paths import LISTING_PARALLELISM, native_parquet

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("part", pa.int64())])


def files_with_deletes(catalog: mor.Catalog, name: str, files: int) -> mor.Table:
    """`files` data files of two rows each (one partition a file), each with a position delete
    file removing its even id."""
    table = catalog.create_table(name, schema=SCHEMA, partition_by=["part"])
    table.append(pa.table({"id": range(2 * files), "part": [i // 2 for i in range(2 * files)]}, schema=SCHEMA))
    table.delete("id % 2 = 0")
    tasks = table.scan().plan_files()
    assert len(tasks) == files and all(len(t.delete_files) == 1 for t in tasks)
    return table


def task_payload(spark: Any, df: Any) -> int:
    """Bytes of the read's RDD as Spark's Java serializer writes it into each stage's task binary
    (a task's partition, its files, is not part of it)."""
    jvm = spark._jvm
    serializer = jvm.org.apache.spark.serializer.JavaSerializer(spark.sparkContext._jsc.getConf()).newInstance()
    any_type = jvm.scala.reflect.ClassTag.apply(jvm.java.lang.Class.forName("java.lang.Object"))
    return int(serializer.serialize(df._jdf.queryExecution().toRdd(), any_type).limit())


@pytest.fixture
def cache_bytes(spark: Any) -> Iterator[Any]:
    """Sets the delete cache's bound for one test; the next read after it carries the default."""
    yield lambda value: spark.conf.set(CACHE_BYTES_CONF, value)
    spark.conf.unset(CACHE_BYTES_CONF)


def test_a_task_carries_as_many_bytes_for_200_files_as_for_20(spark: Any, catalog: mor.Catalog) -> None:
    """The read's deletes reach executors as one broadcast: the plan a task deserializes holds its
    handle, not a line per file (which made it grow ~300 bytes a file)."""
    payload = {}
    for files in (20, 200):
        df = mor.spark.read_table(spark, files_with_deletes(catalog, f"db.t{files}", files), path="jvm")
        assert sorted(r.id for r in df.collect()) == list(range(1, 2 * files, 2))
        payload[files] = task_payload(spark, df)
    assert abs(payload[200] - payload[20]) <= 64, payload


def test_a_dataframe_keeps_its_own_deletes_when_the_table_changes(spark: Any, catalog: mor.Catalog) -> None:
    """Two reads, two broadcasts: a DataFrame made before a DELETE reads as before, after a later
    read of the new snapshot was made and run."""
    table = files_with_deletes(catalog, "db.t", 4)
    before = mor.spark.read_table(spark, table, path="jvm")
    table.delete("id = 3")
    after = mor.spark.read_table(spark, table, path="jvm")
    assert sorted(r.id for r in after.collect()) == [1, 5, 7]
    assert sorted(r.id for r in before.collect()) == [1, 3, 5, 7]


def test_a_delete_cache_smaller_than_any_entry_still_applies_every_delete(spark: Any, catalog: mor.Catalog, cache_bytes: Any) -> None:
    table = files_with_deletes(catalog, "db.t", 6)
    cache_bytes("1k")  # the descriptor and each file's positions are larger: nothing is kept
    df = mor.spark.read_table(spark, table, path="jvm")
    assert sorted(r.id for r in df.collect()) == [1, 3, 5, 7, 9, 11]
    assert df.count() == 6


def test_a_delete_cache_size_that_is_no_size_is_refused(spark: Any, catalog: mor.Catalog, cache_bytes: Any) -> None:
    table = files_with_deletes(catalog, "db.t", 2)
    cache_bytes("lots")
    with pytest.raises(Exception, match=f"{CACHE_BYTES_CONF} must be a size in bytes"):
        mor.spark.read_table(spark, table, path="jvm")


def test_many_files_are_listed_in_about_one_task_per_core(spark: Any, catalog: mor.Catalog) -> None:
    """Spark lists the files it is given in a job of one task per path up to
    `parallelPartitionDiscovery.parallelism` (10,000 by default): the read keeps that to the
    session's cores, and leaves the setting as it found it."""
    table = files_with_deletes(catalog, "db.t", 40)
    locations = [t.data_file.file_path for t in table.scan().plan_files()]
    tracker = spark.sparkContext.statusTracker()
    spark.sparkContext.setJobGroup("mor-listing", "listing")
    try:
        df = native_parquet(spark, StructType([StructField("id", LongType())]), locations)
    finally:
        spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
    tasks = [tracker.getStageInfo(s).numTasks for j in tracker.getJobIdsForGroup("mor-listing") for s in tracker.getJobInfo(j).stageIds]
    assert tasks and max(tasks) <= spark.sparkContext.defaultParallelism
    assert df.count() == 80
    assert spark.conf.get(LISTING_PARALLELISM, None) is None
