"""Distributed planning (mor/spark/planning.py): data manifests read on Spark's executors give
the tasks local planning gives, in the same order, for random tables and filters."""

from __future__ import annotations

import tempfile
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mor
from mor.errors import InvalidArgumentError
from mor.spark import planning
from mor.spark.planning import planned_tasks

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("category", pa.string()), pa.field("value", pa.float64())])
FILTERS = [None, "id < 40", "category = 'b'", "category = 'a' and id >= 20", "value > 1000"]


def rows(ids: list[int]) -> pa.Table:
    return pa.table({"id": ids, "category": ["abc"[i % 3] for i in ids], "value": [i / 2 for i in ids]}, schema=SCHEMA)


appends = st.lists(st.integers(0, 59), min_size=1, max_size=12, unique=True)
changes = st.one_of(
    st.tuples(st.just("append"), appends),
    st.tuples(st.just("delete"), st.integers(0, 59)),  # position deletes (v2) or a vector (v3)
    st.tuples(st.just("delete_rows"), st.integers(0, 59)),  # an equality delete
)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    version=st.sampled_from([2, 3]),
    partitioned=st.booleans(),
    history=st.lists(changes, min_size=1, max_size=6),
    text=st.sampled_from(FILTERS),
    keep_metrics=st.booleans(),
)
def test_distributed_plans_equal_local_plans(
    spark: Any, version: int, partitioned: bool, history: list[Any], text: str | None, keep_metrics: bool
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        catalog = mor.load_catalog(folder)
        table = catalog.create_table(
            "db.t", schema=SCHEMA, partition_by=["category"] if partitioned else None, properties={"format-version": str(version)}
        )
        table.append(rows([100, 101, 102]))
        for kind, arg in history:
            if kind == "append":
                table.append(rows(arg))
            elif kind == "delete":
                table.delete(f"id = {arg}")
            else:
                table.delete_rows(pa.table({"id": [arg]}))
        scan = table.scan(filter=text)
        local = planned_tasks(spark, scan, "local", keep_metrics)
        distributed = planned_tasks(spark, scan, "distributed", keep_metrics)
        assert [(t.data_file, t.delete_files, t.residual) for t in distributed] == [
            (t.data_file, t.delete_files, t.residual) for t in local
        ]
        assert [t.data_file.data_sequence_number for t in distributed] == [t.data_file.data_sequence_number for t in local]
        assert [t.data_file.first_row_id for t in distributed] == [t.data_file.first_row_id for t in local]


@pytest.mark.cluster
def test_auto_plans_large_tables_on_executors_of_other_machines(spark: Any, catalog: mor.Catalog, monkeypatch: pytest.MonkeyPatch) -> None:
    table = catalog.create_table("db.t", schema=SCHEMA)
    for start in range(0, 40, 10):
        table.append(rows(list(range(start, start + 10))))
    table.delete("id % 7 = 0")
    scan = table.scan()
    assert planning.data_manifest_reading(spark, scan, "auto") is None  # a few files: the driver plans
    monkeypatch.setattr(planning, "DISTRIBUTED_FROM_FILES", 4)
    on_one_machine = spark.sparkContext.master.startswith("local")  # the cluster run has a standalone master
    assert (planning.data_manifest_reading(spark, scan, "auto") is None) == on_one_machine
    assert [(t.data_file, t.delete_files) for t in planned_tasks(spark, scan, "auto")] == [
        (t.data_file, t.delete_files) for t in scan.plan_files(keep_metrics=False)
    ]
    with pytest.raises(InvalidArgumentError, match="planning_mode"):
        planning.data_manifest_reading(spark, scan, "everywhere")


def test_reads_and_dml_plan_on_the_executors_when_asked(spark: Any, catalog: mor.Catalog) -> None:
    import mor.spark

    table = catalog.create_table("db.t", schema=SCHEMA, partition_by=["category"])
    for start in range(0, 30, 10):
        table.append(rows(list(range(start, start + 10))))
    table.delete("id % 4 = 0")
    expected = sorted(table.scan().to_arrow().column("id").to_pylist())
    for mode in ("local", "distributed"):
        read = mor.spark.read_table(spark, table, planning_mode=mode)
        assert sorted(r.id for r in read.select("id").collect()) == expected
    with pytest.raises(InvalidArgumentError, match="planning_mode"):
        mor.spark.read_table(spark, table, planning_mode="nowhere")
    spark.conf.set(planning.PLANNING_MODE_CONF, "distributed")
    try:
        mor.spark.delete(spark, table, "id < 5")
        mor.spark.update(spark, table, {"value": "value + 1"}, where="id >= 25")
    finally:
        spark.conf.unset(planning.PLANNING_MODE_CONF)
    table = catalog.load_table("db.t")
    got = {r["id"]: r["value"] for r in table.scan().to_arrow().to_pylist()}
    assert sorted(got) == [i for i in expected if i >= 5]
    assert all(got[i] == i / 2 + (1 if i >= 25 else 0) for i in got)
