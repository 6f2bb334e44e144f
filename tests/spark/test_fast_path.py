"""mor.spark.read_table: Spark's native Parquet reader for delete-free files, the mor source for
the rest; the same rows as the local reader."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyiceberg.expressions import In
from spark_helpers import SCHEMA, build_history, canonical, rows, spark_rows

import mor
import mor.spark
from mor.errors import CorruptMetadataError
from mor.io.fileio import to_local_path


def plan_kinds(df: Any) -> tuple[bool, bool, bool]:
    """(uses Spark's Parquet scan, filters it by mor's JVM delete function, uses the mor Python
    source) in the physical plan."""
    plan = df._jdf.queryExecution().executedPlan().toString()
    return "FileScan parquet" in plan, "mor.jvm.Keep" in plan, "BatchScan mor" in plan


@pytest.mark.parametrize("partition_by", [None, ["category", "day(ts)"], ["bucket(4, id)"]], ids=["unpart", "cat-day", "bucket"])
def test_every_snapshot_reads_as_the_local_reader(spark: Any, catalog: mor.Catalog, partition_by: list[str] | None) -> None:
    table = catalog.create_table("db.t", schema=SCHEMA, partition_by=partition_by)
    for snapshot_id in build_history(table):
        local = canonical(table.scan(snapshot_id=snapshot_id).to_arrow())
        assert spark_rows(mor.spark.read_table(spark, table, snapshot_id=snapshot_id)) == local, f"snapshot {snapshot_id}"


def test_delete_free_files_go_native_and_the_rest_through_mor(spark: Any, catalog: mor.Catalog) -> None:
    table = catalog.create_table("db.t", schema=SCHEMA)
    table.append(rows(range(0, 100)))
    assert plan_kinds(mor.spark.read_table(spark, table)) == (True, False, False)
    table.append(rows(range(100, 200)))
    table.delete("id < 10")
    df = mor.spark.read_table(spark, table)
    assert plan_kinds(df) == (True, True, False)
    assert plan_kinds(mor.spark.read_table(spark, table, path="python")) == (True, False, True)
    assert spark_rows(df) == canonical(table.scan().to_arrow())


def test_native_part_reads_only_delete_free_files(spark: Any, catalog: mor.Catalog) -> None:
    """The deleted rows stay deleted: the file with deletes must not also be read natively."""
    table = catalog.create_table("db.t", schema=SCHEMA)
    table.append(rows(range(0, 50)))
    table.append(rows(range(50, 100)))
    table.delete(In("id", [1, 2, 3, 60]))
    table.delete_rows(pa.table({"id": pa.array([70], pa.int64())}))
    ids = sorted(r[0] for r in spark_rows(mor.spark.read_table(spark, table)))
    assert ids == [i for i in range(100) if i not in (1, 2, 3, 60, 70)]


@pytest.mark.parametrize(
    "where",
    [
        "id < 30",
        "category = 'a' and n >= 20",
        "category is null or id in (1, 2, 3)",
        "category not in ('a', 'b')",
        "category like 'b%'",
        "not (id between 10 and 90)",
        "ts >= '2024-01-02T00:00:00+00:00'",
        "ts >= '2024-01-02'",  # a zone-less time on a timestamptz column means UTC
        "id % 7 = 3",  # residuals (arithmetic, functions): every file through mor's reader
        "lower(category) = 'a' and id > 10",
    ],
)
def test_filters_and_columns_select_the_local_rows(spark: Any, catalog: mor.Catalog, where: str) -> None:
    table = catalog.create_table("db.t", schema=SCHEMA, partition_by=["category"])
    table.append(rows(range(0, 60)))
    table.append(rows(range(60, 120)))
    table.delete(In("id", list(range(0, 120, 7))))
    local = table.scan(filter=where, columns=["n", "id"]).to_arrow()
    df = mor.spark.read_table(spark, table, columns=["n", "id"], filter=where)
    assert df.columns == ["id", "n"]
    assert spark_rows(df) == canonical(local)


def test_nan_comparisons_match_arrow(spark: Any, catalog: mor.Catalog) -> None:
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("x", pa.float64())])
    table = catalog.create_table("db.f", schema=schema)
    table.append(pa.table({"id": [1, 2, 3, 4], "x": [1.0, float("nan"), None, 5.0]}, schema=schema))
    for where in ["x > 2", "x >= 1", "x < 2", "x is nan", "x is not nan", "x != 1"]:
        local = sorted(table.scan(filter=where).to_arrow().column("id").to_pylist())
        assert sorted(r.id for r in mor.spark.read_table(spark, table, filter=where).collect()) == local, where


def test_by_name_and_time_travel(spark: Any, catalog: mor.Catalog, warehouse: Any) -> None:
    table = catalog.create_table("db.t", schema=SCHEMA)
    first = table.append(rows(range(10)))
    table.append(rows(range(10, 20)))
    table.delete("id < 3")
    by_name = mor.spark.read_table(spark, "db.t", warehouse=str(warehouse))
    assert spark_rows(by_name) == canonical(table.scan().to_arrow())
    old = mor.spark.read_table(spark, "db.t", warehouse=str(warehouse), as_of=dt.datetime.fromtimestamp(first.timestamp_ms / 1000, dt.UTC))
    assert [r[0] for r in spark_rows(old)] == list(range(10))
    assert spark_rows(mor.spark.read_table(spark, table.metadata_location)) == canonical(table.scan().to_arrow())


def test_empty_table_and_empty_result(spark: Any, catalog: mor.Catalog) -> None:
    table = catalog.create_table("db.t", schema=SCHEMA)
    assert mor.spark.read_table(spark, table).count() == 0
    table.append(rows(range(10)))
    assert mor.spark.read_table(spark, table, filter="id > 100").count() == 0


def test_uuid_columns_fall_back_to_the_mor_source(spark: Any, catalog: mor.Catalog) -> None:
    import uuid

    from pyiceberg.schema import Schema
    from pyiceberg.types import LongType, NestedField, UUIDType

    schema = Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "u", UUIDType()))
    table = catalog.create_table("db.u", schema=schema)
    u = uuid.UUID("12345678-1234-5678-1234-567812345678")
    table.append(pa.table({"id": pa.array([1, 2], pa.int64()), "u": pa.array([u.bytes, None], pa.binary(16))}))
    df = mor.spark.read_table(spark, table)
    assert plan_kinds(df) == (False, False, True)
    assert sorted((r.id, r.u) for r in df.collect()) == [(1, str(u)), (2, None)]


def test_missing_delete_free_file_is_an_error_not_missing_rows(spark: Any, catalog: mor.Catalog) -> None:
    table = catalog.create_table("db.t", schema=SCHEMA)
    table.append(rows(range(10)))
    os.remove(to_local_path(table.scan().plan_files()[0].data_file.file_path))
    with pytest.raises(CorruptMetadataError, match="data file .* is missing"):  # as the local reader says it
        mor.spark.read_table(spark, table).collect()


@pytest.mark.parametrize("damage", ["removed", "truncated"])
def test_a_damaged_delete_file_is_an_error_naming_it(spark: Any, catalog: mor.Catalog, damage: str) -> None:
    """The JVM functions read a small delete file whole, by the size its manifest gives: a file
    gone or shorter than that fails the read and names the file, it never keeps the rows."""
    table = catalog.create_table("db.t", schema=SCHEMA)
    table.append(rows(range(10)))
    table.delete("id = 3")
    (delete,) = table.scan().plan_files()[0].delete_files
    local = to_local_path(delete.file_path)
    if damage == "removed":
        os.remove(local)
    else:
        with open(local, "r+b") as f:
            f.truncate(delete.file_size_in_bytes // 2)
    df = mor.spark.read_table(spark, table)
    assert plan_kinds(df) == (True, True, False)
    with pytest.raises(Exception, match="could not read delete file") as failure:
        df.collect()
    assert Path(local).name in str(failure.value)


def test_lists_maps_and_structs_read_natively_and_through_mor(spark: Any, catalog: mor.Catalog) -> None:
    """A table with nested columns (issue 29): delete-free files go native, the rest through mor,
    the same rows as the local reader."""
    schema = pa.schema([
        ("id", pa.int64()),
        ("tags", pa.list_(pa.string())),
        ("attrs", pa.map_(pa.string(), pa.int64())),
        ("point", pa.struct([("x", pa.float64()), ("ys", pa.list_(pa.int32()))])),
    ])  # fmt: skip

    def nested(ids: range) -> pa.Table:
        return pa.table({
            "id": list(ids),
            "tags": [[f"t{i}", None] if i % 3 else None for i in ids],
            "attrs": [[("a", i), ("b", None)] if i % 2 else [] for i in ids],
            "point": [{"x": i / 2, "ys": [i, i + 1]} if i % 5 else None for i in ids],
        }, schema=schema)  # fmt: skip

    table = catalog.create_table("db.nested", schema=schema)
    table.append(nested(range(0, 20)))
    table.append(nested(range(20, 40)))
    table.delete("id < 5")

    def rows_of(t: pa.Table) -> list[tuple]:
        return sorted((r["id"], r["tags"], sorted(r["attrs"] or []), r["point"]) for r in t.to_pylist())

    df = mor.spark.read_table(spark, table)
    assert plan_kinds(df) == (True, True, False)
    got = [(r["id"], r["tags"], sorted((r["attrs"] or {}).items()),
            None if r["point"] is None else {"x": r["point"]["x"], "ys": r["point"]["ys"]}) for r in df.collect()]  # fmt: skip
    assert sorted(got) == rows_of(table.scan().to_arrow())
