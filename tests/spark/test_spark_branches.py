"""Branches, tags and write-audit-publish from Spark: reads of a ref (read_table, format "mor"),
MorTable's DML on a branch, DataFrame writes to a branch or staged with a wap-id. Main is never
touched by them; each gives the rows the local verbs give."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from spark_helpers import SCHEMA, canonical, rows, spark_rows

import mor
import mor.spark
from mor.errors import InvalidArgumentError, NoSuchRefError
from mor.spark.table import MorTable


def test_reads_and_dml_on_a_branch(spark: Any, catalog: mor.Catalog, warehouse: Path) -> None:
    table = catalog.create_table("db.b", SCHEMA)
    table.append(rows(range(0, 40)))
    table.create_tag("start")
    table.create_branch("dev")
    table.delete("id < 5")  # main moves on
    main_rows = canonical(table.scan().to_arrow())

    dev = MorTable.for_name(spark, "db.b", warehouse=str(warehouse)).branch("dev")
    dev.delete("id >= 30")
    dev.update("id < 3", set={"n": "n + 100"})
    dev.upsert(spark.createDataFrame(rows([1, 50]).to_pandas()), on=["id"])
    table.refresh()
    expected = table.branch("dev").scan().to_arrow()
    assert sorted(expected["id"].to_pylist()) == sorted([*range(0, 30), 50])
    assert canonical(table.scan().to_arrow()) == main_rows  # main untouched
    for df in (
        mor.spark.read_table(spark, table, branch="dev"),
        dev.to_df(),
        spark.read.format("mor").option("warehouse", str(warehouse)).option("branch", "dev").load("db.b"),
    ):
        assert spark_rows(df) == canonical(expected)
    start = spark.read.format("mor").option("warehouse", str(warehouse)).option("tag", "start").load("db.b")
    assert spark_rows(start) == canonical(table.scan(branch="start").to_arrow())
    with pytest.raises(NoSuchRefError):
        mor.spark.read_table(spark, table, branch="nope")


def test_dataframe_writes_to_a_branch_and_staged(spark: Any, catalog: mor.Catalog, warehouse: Path) -> None:
    table = catalog.create_table("db.w", SCHEMA, properties={"write.wap.enabled": "true"})
    table.append(rows(range(0, 10)))
    table.create_branch("dev")
    head = table.metadata.current_snapshot_id

    def writer(ids: list[int]) -> Any:
        return spark.createDataFrame(rows(ids).to_pandas()).write.format("mor").option("warehouse", str(warehouse)).mode("append")

    writer([20, 21]).option("branch", "dev").save("db.w")
    writer([30]).option("wap-id", "job-1").save("db.w")
    table.refresh()
    assert table.metadata.current_snapshot_id == head
    assert sorted(table.scan(branch="dev").to_arrow()["id"].to_pylist()) == [*range(10), 20, 21]
    staged = [s for s in table.snapshots() if s.summary.get("wap.id") == "job-1"]
    assert len(staged) == 1 and staged[0].parent_snapshot_id == head
    table.publish("job-1")
    assert sorted(table.scan().to_arrow()["id"].to_pylist()) == [*range(10), 30]
    with pytest.raises(Exception, match="branch option or the wap-id option"):
        writer([40]).option("branch", "dev").option("wap-id", "x").save("db.w")
    with pytest.raises(Exception, match="tag"):
        table.create_tag("t")
        writer([41]).option("branch", "t").save("db.w")
    assert sorted(table.refresh().scan().to_arrow()["id"].to_pylist()) == [*range(10), 30]
    with pytest.raises(InvalidArgumentError):
        MorTable(spark, table).branch("t").delete("id = 1")


def test_metadata_tables_as_dataframes(spark: Any, catalog: mor.Catalog, warehouse: Path) -> None:
    table = catalog.create_table("db.m", SCHEMA, partition_by=["category"])
    table.append(rows(range(0, 30)))
    table.delete("id < 4")
    t = MorTable.for_name(spark, "db.m", warehouse=str(warehouse))
    for name in ("snapshots", "files", "entries", "partitions", "refs", "position_deletes"):
        df = t.inspect(name)
        arrow = getattr(table.inspect, name)()
        assert df.columns == arrow.column_names and df.count() == arrow.num_rows, name
    first = table.snapshots()[0].snapshot_id
    assert t.inspect("files", first).count() == table.inspect.files(first).num_rows
    assert t.inspect("snapshots").schema["committed_at"].dataType.simpleString() == "timestamp"
    with pytest.raises(InvalidArgumentError):
        t.inspect("nope")


def test_restore_in_the_delta_shape(spark: Any, catalog: mor.Catalog, warehouse: Path) -> None:
    table = catalog.create_table("db.r", SCHEMA)
    table.append(rows(range(0, 10)))
    first = table.metadata.current_snapshot_id
    table.delete("id < 5")
    t = MorTable.for_name(spark, "db.r", warehouse=str(warehouse))
    assert t.restore(first).snapshot_id == first
    assert t.to_df().count() == 10
    at = table.refresh().snapshots()[1].timestamp_ms
    import datetime as dt

    assert t.restore(dt.datetime.fromtimestamp(at / 1000, dt.UTC).isoformat()).operation == "delete"
    assert t.to_df().count() == 5
    with pytest.raises(InvalidArgumentError):
        t.restore("not a time")
