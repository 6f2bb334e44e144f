"""spark.read.format("mor") returns exactly the rows the local reader returns, at every snapshot
of our tables and of the tables Iceberg Java wrote."""

from __future__ import annotations

import datetime as dt
import decimal
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from java_fixtures import (
    JAVA_SNAPSHOTS,
    JavaSnapshot,
    describe_row_differences,
    expected_rows_file,
    read_json_lines,
    row_sort_key,
    to_json_rows,
)
from pyiceberg.expressions import In
from spark_helpers import SCHEMA, T0, build_history, canonical, rows, spark_rows

import mor
from mor.io.fileio import to_local_path


@pytest.mark.parametrize("partition_by", [None, ["category", "day(ts)"], ["bucket(4, id)"]], ids=["unpart", "cat-day", "bucket"])
def test_every_snapshot_reads_as_the_local_reader(catalog: mor.Catalog, read_mor: Any, partition_by: list[str] | None) -> None:
    table = catalog.create_table("db.t", schema=SCHEMA, partition_by=partition_by)
    for snapshot_id in build_history(table):
        local = canonical(table.scan(snapshot_id=snapshot_id).to_arrow())
        assert spark_rows(read_mor("db.t", snapshot_id=str(snapshot_id))) == local, f"snapshot {snapshot_id}"
    assert spark_rows(read_mor("db.t")) == canonical(table.scan().to_arrow())


@pytest.mark.parametrize("snap", [pytest.param(s, id=s.test_id) for s in JAVA_SNAPSHOTS])
def test_java_fixture_snapshots(spark: Any, java_fixtures: Path, snap: JavaSnapshot) -> None:
    reader = spark.read.format("mor").option("snapshot-id", str(snap.snapshot_id))
    df = reader.load(str(java_fixtures / snap.final_metadata_file))
    expected = read_json_lines(expected_rows_file(java_fixtures, snap))
    actual = to_json_rows(df.toArrow().to_pylist())
    assert df.columns == list(expected[0]) if expected else True
    assert sorted(actual, key=row_sort_key) == sorted(expected, key=row_sort_key), describe_row_differences(expected, actual)


def test_metadata_location_and_table_folder(spark: Any, catalog: mor.Catalog) -> None:
    table = catalog.create_table("db.t", schema=SCHEMA)
    table.append(rows(range(50)))
    table.delete("id < 5")
    expected = canonical(table.scan().to_arrow())
    assert spark_rows(spark.read.format("mor").load(table.metadata_location)) == expected
    assert spark_rows(spark.read.format("mor").load(to_local_path(table.location))) == expected


def test_catalog_uri_option(spark: Any, catalog: mor.Catalog, warehouse: Path) -> None:
    table = catalog.create_table("db.t", schema=SCHEMA)
    table.append(rows(range(20)))
    df = spark.read.format("mor").option("uri", f"sqlite:///{warehouse}/catalog.db").load("db.t")
    assert spark_rows(df) == canonical(table.scan().to_arrow())


def test_time_travel_by_timestamp(catalog: mor.Catalog, read_mor: Any) -> None:
    table = catalog.create_table("db.t", schema=SCHEMA)
    first = table.append(rows(range(10)))
    table.append(rows(range(10, 20)))
    df = read_mor("db.t", as_of_timestamp=str(first.timestamp_ms))
    assert [r[0] for r in spark_rows(df)] == list(range(10))


def test_unknown_snapshot_is_a_clear_error(catalog: mor.Catalog, read_mor: Any) -> None:
    catalog.create_table("db.t", schema=SCHEMA).append(rows(range(3)))
    with pytest.raises(Exception, match="NoSuchSnapshotError|no snapshot 12345"):
        read_mor("db.t", snapshot_id="12345").collect()


def test_missing_table_is_a_clear_error(catalog: mor.Catalog, read_mor: Any) -> None:
    catalog.create_table("db.t", schema=SCHEMA)
    with pytest.raises(Exception, match="NoSuchTableError|db.nope"):
        read_mor("db.nope").collect()


def test_columns_option_and_user_schema_read_only_those_columns(catalog: mor.Catalog, read_mor: Any, spark: Any, warehouse: Path) -> None:
    table = catalog.create_table("db.t", schema=SCHEMA)
    table.append(rows(range(30)))
    table.delete(In("id", list(range(0, 30, 4))))
    local = table.scan(columns=["n", "id"]).to_arrow()
    by_option = read_mor("db.t", columns="n, id")
    assert by_option.columns == ["id", "n"]  # table order, as the local scan
    assert spark_rows(by_option) == canonical(local)
    by_schema = spark.read.format("mor").schema("n long, id long").option("warehouse", str(warehouse)).load("db.t")
    assert by_schema.columns == ["n", "id"]
    assert sorted(by_schema.toArrow().to_pylist(), key=lambda r: r["id"]) == sorted(local.to_pylist(), key=lambda r: r["id"])


def test_user_schema_with_wrong_type_or_unknown_column_is_refused(catalog: mor.Catalog, spark: Any, warehouse: Path) -> None:
    catalog.create_table("db.t", schema=SCHEMA).append(rows(range(3)))
    reader = spark.read.format("mor").option("warehouse", str(warehouse))
    with pytest.raises(Exception, match="SchemaMismatchError"):
        reader.schema("id string").load("db.t").collect()
    with pytest.raises(Exception, match="SchemaMismatchError"):
        reader.schema("nope long").load("db.t").collect()


@pytest.mark.cluster
def test_filter_option_prunes_files(catalog: mor.Catalog, read_mor: Any) -> None:
    """A pruned file is never opened: deleting the files of other partitions from disk proves it."""
    table = catalog.create_table("db.t", schema=SCHEMA, partition_by=["category"])
    table.append(rows(range(60)))
    table.delete(In("id", list(range(0, 60, 5))))
    expected = canonical(table.scan(filter="category = 'a'").to_arrow())
    for task in table.scan().plan_files():
        if task.data_file.partition != ("a",):
            os.remove(to_local_path(task.data_file.file_path))
    assert spark_rows(read_mor("db.t", filter="category = 'a'")) == expected
    assert spark_rows(read_mor("db.t", filter="category = 'a'").filter("n > 10")) == [r for r in expected if r[2] > 10]
    with pytest.raises(Exception, match="is missing|cannot be opened"):
        read_mor("db.t").collect()  # without the filter the missing files are read


def test_reused_dataframe_gives_each_query_its_own_rows(catalog: mor.Catalog, read_mor: Any) -> None:
    """Spark <= 4.3 reuses a pushed-down reader for the next query on the same DataFrame;
    whatever Spark version runs, every query must see all of its rows."""
    table = catalog.create_table("db.t", schema=SCHEMA, partition_by=["category"])
    table.append(rows(range(50)))
    df = read_mor("db.t")
    assert df.filter("id > 40").count() == 9
    assert df.count() == 50
    assert df.filter("category = 'a' or id = 1").count() == len([i for i in range(50) if i % 3 == 0 and i % 11 != 4 or i == 1])
    assert df.filter("n < 5").count() == 5
    assert df.filter("id > 3 or n < 0").count() == 46


@pytest.mark.cluster
def test_pushed_filters_keep_spark_semantics(catalog: mor.Catalog, read_mor: Any) -> None:
    """Spark re-checks every pushed filter; nulls, NaN and NOT stay SQL-correct."""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("x", pa.float64()), ("s", pa.string())])
    table = catalog.create_table("db.f", schema=schema)
    table.append(
        pa.table({"id": [1, 2, 3, 4, 5], "x": [1.0, float("nan"), None, 5.0, -1.0], "s": ["a", None, "b", "ab", "c"]}, schema=schema)
    )
    df = read_mor("db.f")
    assert sorted(r.id for r in df.filter("x > 2").collect()) == [2, 4]  # Spark: NaN is larger than any number
    assert sorted(r.id for r in df.filter("s != 'a'").collect()) == [3, 4, 5]
    assert sorted(r.id for r in df.filter("s not in ('a', 'b')").collect()) == [4, 5]
    assert sorted(r.id for r in df.filter("s like 'a%'").collect()) == [1, 4]
    assert sorted(r.id for r in df.filter("s is null or id = 5").collect()) == [2, 5]


def test_tasks_are_packed_into_about_default_parallelism_partitions(catalog: mor.Catalog, read_mor: Any, spark: Any) -> None:
    table = catalog.create_table("db.t", schema=SCHEMA)
    for start in range(0, 70, 10):
        table.append(rows(range(start, start + 10)))
    assert read_mor("db.t").rdd.getNumPartitions() == spark.sparkContext.defaultParallelism
    assert read_mor("db.t", partitions="5").rdd.getNumPartitions() == 5
    assert read_mor("db.t", partitions="50").rdd.getNumPartitions() == 7  # one task per partition at most
    assert spark_rows(read_mor("db.t", partitions="5")) == canonical(table.scan().to_arrow())


def test_empty_table_reads_no_rows(catalog: mor.Catalog, read_mor: Any) -> None:
    catalog.create_table("db.t", schema=SCHEMA)
    df = read_mor("db.t")
    assert df.count() == 0
    assert df.schema.fieldNames() == ["id", "category", "n", "ts"]


@pytest.mark.cluster
def test_every_type_reads_with_spark_types(catalog: mor.Catalog, read_mor: Any) -> None:
    schema = pa.schema(
        [
            pa.field("id", pa.int32(), nullable=False),
            ("flag", pa.bool_()),
            ("f", pa.float32()),
            ("d", pa.float64()),
            ("dec", pa.decimal128(10, 2)),
            ("day", pa.date32()),
            ("ts_ntz", pa.timestamp("us")),
            ("ts_tz", pa.timestamp("us", tz="UTC")),
            ("s", pa.string()),
            ("b", pa.binary()),
            ("fixed", pa.binary(3)),
            ("st", pa.struct([("a", pa.int64()), ("b", pa.string())])),
            ("l", pa.list_(pa.int64())),
            ("m", pa.map_(pa.string(), pa.int64())),
        ]
    )
    data = pa.Table.from_pylist(
        [
            {"id": 1, "flag": True, "f": 1.5, "d": 2.5, "dec": decimal.Decimal("1.25"), "day": dt.date(2024, 2, 29),
             "ts_ntz": dt.datetime(2024, 1, 1, 12), "ts_tz": T0, "s": "x", "b": b"\x00\x01", "fixed": b"abc",
             "st": {"a": 1, "b": "y"}, "l": [1, 2], "m": [("k", 1)]},
            {"id": 2, **{f.name: None for f in schema if f.name != "id"}},
        ],
        schema=schema,
    )  # fmt: skip
    table = catalog.create_table("db.types", schema=schema)
    table.append(data)
    df = read_mor("db.types")
    assert [f.dataType.simpleString() for f in df.schema.fields] == [
        "int", "boolean", "float", "double", "decimal(10,2)", "date", "timestamp_ntz", "timestamp", "string",
        "binary", "binary", "struct<a:bigint,b:string>", "array<bigint>", "map<string,bigint>",
    ]  # fmt: skip
    assert not df.schema["id"].nullable and df.schema["s"].nullable
    got = sorted(df.collect(), key=lambda r: r.id)
    assert got[0].dec == decimal.Decimal("1.25") and got[0].day == dt.date(2024, 2, 29)
    assert got[0].ts_ntz == dt.datetime(2024, 1, 1, 12) and got[0].fixed == bytearray(b"abc")
    assert got[0].st.b == "y" and got[0].l == [1, 2] and got[0].m == {"k": 1}
    assert all(v is None for k, v in got[1].asDict().items() if k != "id")
