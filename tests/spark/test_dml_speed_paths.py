"""MERGE/UPSERT's driver path (a small source collected to Arrow and merged by the local verb)
against the distributed path and the local verb, and the job descriptions mor's Spark DML sets."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from spark_helpers import canonical, rows, source_rows
from test_dml import MERGE_CLAUSES, MERGE_SOURCE, UPSERT_SOURCE, make_table

import mor
from mor.spark.dml import JOB_DESCRIPTION, job_description
from mor.spark.dml_merge import DRIVER_SOURCE_CONF
from mor.spark.functions import delete, merge, update, upsert

VERBS = {
    "merge": (
        lambda t: t.merge(MERGE_SOURCE, on=["id", "category"], **MERGE_CLAUSES),
        lambda s, t, path: merge(s, t, s.createDataFrame(MERGE_SOURCE), on=["id", "category"], path=path, **MERGE_CLAUSES),
    ),
    "upsert": (
        lambda t: t.upsert(UPSERT_SOURCE, on=["id"]),
        lambda s, t, path: upsert(s, t, s.createDataFrame(UPSERT_SOURCE), on=["id"], path=path),
    ),
}


def live_rows(table: mor.Table) -> list[tuple]:
    return canonical(table.scan().to_arrow())


@pytest.mark.parametrize("verb", sorted(VERBS))
@pytest.mark.parametrize("partition_by", [None, ["category"]], ids=["unpartitioned", "partitioned"])
def test_driver_and_distributed_paths_leave_the_rows_of_the_local_verb(
    spark: Any, catalog: mor.Catalog, verb: str, partition_by: Any
) -> None:
    local_verb, spark_verb = VERBS[verb]
    tables = {name: make_table(catalog, f"db.{name}", partition_by) for name in ("local", "driver", "distributed", "auto")}
    local_verb(tables["local"])
    for path in ("driver", "distributed", "auto"):  # the test's source is small: "auto" takes the driver
        spark_verb(spark, tables[path], path)
    expected = live_rows(tables["local"])
    operation = tables["local"].current_snapshot().summary["operation"]
    for path in ("driver", "distributed", "auto"):
        assert live_rows(tables[path]) == expected, path
        assert tables[path].current_snapshot().summary["operation"] == operation, path
        assert len(tables[path].snapshots()) == len(tables["local"].snapshots()), path


def test_auto_goes_distributed_above_the_size_limit(spark: Any, catalog: mor.Catalog) -> None:
    """With a limit below the source's size the distributed path runs: its jobs carry its
    descriptions, seen through the status tracker."""
    table = make_table(catalog, "db.t", None)
    sc = spark.sparkContext
    group = "mor-test-auto-distributed"
    sc.setJobGroup(group, "test")
    spark.conf.set(DRIVER_SOURCE_CONF, "1")
    try:
        upsert(spark, table, spark.createDataFrame(UPSERT_SOURCE), on=["id"])
    finally:
        spark.conf.unset(DRIVER_SOURCE_CONF)
        sc.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
    assert sc.statusTracker().getJobIdsForGroup(group)  # the distributed path ran Spark jobs
    twin = make_table(catalog, "db.local", None)
    twin.upsert(UPSERT_SOURCE, on=["id"])
    assert live_rows(table) == live_rows(twin)


@pytest.mark.parametrize("path", ["driver", "distributed"])
def test_duplicate_source_keys_fail_on_either_path(spark: Any, catalog: mor.Catalog, path: str) -> None:
    table = make_table(catalog, "db.t", None)
    location = table.metadata_location
    with pytest.raises(mor.DuplicateKeyError):
        merge(spark, table, spark.createDataFrame(rows([1, 2, 1])), on=["id"], when_matched_delete=True, path=path)
    with pytest.raises(mor.DuplicateKeyError):
        upsert(spark, table, spark.createDataFrame(source_rows([5, 5, 6], n=0)), on=["id"], path=path)
    assert catalog.load_table("db.t").metadata_location == location


@pytest.mark.parametrize("path", ["driver", "distributed"])
def test_a_concurrent_rewrite_is_a_conflict_on_either_path(spark: Any, catalog: mor.Catalog, path: str) -> None:
    table = make_table(catalog, "db.t", None)
    table.set_properties(**{"mor.dml.replan.num-retries": "0"})
    stale = catalog.load_table("db.t")
    table.delete("id = 21", mode="copy-on-write")  # rewrites the file of ids 0-39 after `stale` was loaded
    location = table.metadata_location
    source = spark.createDataFrame(source_rows([1, 2, 900], n=5))
    with pytest.raises(mor.CommitConflictError):
        merge(spark, stale, source, on=["id"], when_matched_update="*", when_not_matched_insert="*", path=path)
    assert catalog.load_table("db.t").metadata_location == location


def test_the_driver_path_runs_no_job_beyond_collecting_the_source(spark: Any, catalog: mor.Catalog) -> None:
    table = make_table(catalog, "db.t", None)
    source = spark.createDataFrame(source_rows([1, 2, 900], n=5))
    sc = spark.sparkContext
    group = "mor-test-driver-path"
    sc.setJobGroup(group, "test")
    try:
        merge(spark, table, source, on=["id"], when_matched_update="*", when_not_matched_insert="*", path="driver")
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
    assert len(sc.statusTracker().getJobIdsForGroup(group)) <= 1  # toArrow of a local relation: at most one job
    assert sorted(r["id"] for r in table.scan(filter="id in (1, 2, 900)").to_arrow().to_pylist()) == [1, 2, 900]


def test_an_unknown_path_is_refused(spark: Any, catalog: mor.Catalog) -> None:
    table = make_table(catalog, "db.t", None)
    with pytest.raises(mor.InvalidArgumentError, match="path"):
        upsert(spark, table, spark.createDataFrame(UPSERT_SOURCE), on=["id"], path="sideways")


def test_job_descriptions_are_restored_after_each_verb(spark: Any, catalog: mor.Catalog) -> None:
    table = make_table(catalog, "db.t", None)
    sc = spark.sparkContext
    sc.setJobDescription("the caller's own")
    try:
        delete(spark, table, "id = 1")
        update(spark, table, {"n": "n + 1"}, where="id = 2")
        for path in ("driver", "distributed"):
            upsert(spark, table, spark.createDataFrame(source_rows([5, 900], n=1)), on=["id"], path=path)
        assert sc.getLocalProperty(JOB_DESCRIPTION) == "the caller's own"
    finally:
        sc.setLocalProperty(JOB_DESCRIPTION, None)  # type: ignore[arg-type]
    assert sc.getLocalProperty(JOB_DESCRIPTION) is None


def test_job_description_is_set_inside_and_restored_after_an_error(spark: Any) -> None:
    sc = spark.sparkContext
    with pytest.raises(ValueError):
        with job_description(spark, "mor test: inside"):
            assert sc.getLocalProperty(JOB_DESCRIPTION) == "mor test: inside"
            raise ValueError("stop")
    assert sc.getLocalProperty(JOB_DESCRIPTION) is None


@pytest.mark.parametrize("path", ["driver", "distributed"])
def test_a_key_with_a_null_matches_no_row_on_either_path(spark: Any, catalog: mor.Catalog, path: str) -> None:
    """SQL's `=` on the keys (id, category): a source row whose category is null is never
    matched (MERGE inserts it, UPSERT adds it) and the table's row with that null key stays;
    two source rows with the same null key are not duplicates."""
    source = source_rows([4, 5, 600, 601], n=1000, categories={600: None, 601: None})
    source = source.set_column(0, source.schema.field("id"), pa.array([4, 5, 600, 600], pa.int64()))  # 600 twice, null categories
    assert source.column("category").to_pylist()[0] is None  # id 4's category is null in the table too
    merged, upserted = make_table(catalog, f"db.m_{path}", None), make_table(catalog, f"db.u_{path}", None)
    before = merged.scan().to_arrow()
    merge(
        spark, merged, spark.createDataFrame(source), on=["id", "category"], path=path, when_matched_update="*", when_not_matched_insert="*"
    )
    upsert(spark, upserted, spark.createDataFrame(source), on=["id", "category"], path=path)
    expected = canonical(pa.concat_tables([before.filter(pc.field("id") != 5), source]))
    assert live_rows(merged) == expected
    assert live_rows(upserted) == expected
