"""Spark writes follow store assignment as Iceberg-Spark does: a Spark TIMESTAMP (what
createDataFrame gives for pandas/Arrow data) into a `timestamp` (no zone) column keeps its
wall-clock time in the session zone; int into long; unsafe casts refused, nothing written."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import mor
from mor.errors import SchemaMismatchError

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("ts", pa.timestamp("us")), ("n", pa.int64())])


def test_timestamp_into_a_timestamp_column_and_int_into_long(spark: Any, catalog: mor.Catalog, warehouse: Path) -> None:
    table = catalog.create_table("db.t", schema=SCHEMA)
    df = spark.createDataFrame(
        [(1, dt.datetime(2024, 5, 6, 7, 8, 9), 3)], "id long, ts timestamp, n int"
    )  # TIMESTAMP in a UTC session: wall clock 07:08:09
    df.write.format("mor").option("warehouse", str(warehouse)).mode("append").save("db.t")
    assert table.refresh().scan().to_arrow().to_pylist() == [{"id": 1, "ts": dt.datetime(2024, 5, 6, 7, 8, 9), "n": 3}]


def test_an_unsafe_cast_is_refused_and_nothing_is_written(spark: Any, catalog: mor.Catalog, warehouse: Path) -> None:
    table = catalog.create_table("db.t", schema=SCHEMA)
    df = spark.createDataFrame([(1, "x", 3)], "id long, ts string, n int")
    with pytest.raises(Exception, match="SchemaMismatchError|ts"):
        df.write.format("mor").option("warehouse", str(warehouse)).mode("append").save("db.t")
    assert table.refresh().current_snapshot() is None


@pytest.fixture
def new_york_session(spark: Any) -> Any:
    """The shared session in America/New_York (registered again, so writers see the zone), reset to UTC after."""
    import mor.spark

    spark.conf.set("spark.sql.session.timeZone", "America/New_York")
    mor.spark.register(spark)
    try:
        yield spark
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")
        mor.spark.register(spark)


def test_wall_clocks_follow_a_session_zone_that_is_not_utc(new_york_session: Any, catalog: mor.Catalog, warehouse: Path) -> None:
    spark = new_york_session
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("ts", pa.timestamp("us")), ("tz", pa.timestamp("us", "UTC"))])
    table = catalog.create_table("db.t", schema=schema)
    wall = dt.datetime(2024, 5, 6, 7, 8, 9)
    # ts: TIMESTAMP (an instant, 07:08:09 in New York) into a zone-less column keeps the New York wall clock;
    # tz: TIMESTAMP_NTZ (a wall clock) into a timestamptz column is that wall clock in New York (EDT, UTC-4).
    df = spark.sql("SELECT 1L AS id, TIMESTAMP '2024-05-06 07:08:09' AS ts, TIMESTAMP_NTZ '2024-05-06 07:08:09' AS tz")
    df.write.format("mor").option("warehouse", str(warehouse)).mode("append").save("db.t")
    assert table.refresh().scan().to_arrow().to_pylist() == [{"id": 1, "ts": wall, "tz": dt.datetime(2024, 5, 6, 11, 8, 9, tzinfo=dt.UTC)}]


def test_a_zone_less_time_in_a_condition_is_read_in_the_session_zone(new_york_session: Any, catalog: mor.Catalog, warehouse: Path) -> None:
    """MorTable conditions are Spark's: '2024-05-06 00:00' is midnight in New York (04:00 UTC). mor's
    own filter text reads it as UTC, so pruning files by it would skip the file of 02:00 UTC."""
    from mor.spark.table import MorTable

    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("ts", pa.timestamp("us", "UTC"))])
    table = catalog.create_table("db.t", schema=schema)
    utc = dt.UTC
    table.append(pa.table({"id": [1], "ts": [dt.datetime(2024, 5, 6, 2, 0, tzinfo=utc)]}, schema=schema))
    table.append(pa.table({"id": [2], "ts": [dt.datetime(2024, 5, 6, 5, 0, tzinfo=utc)]}, schema=schema))
    MorTable.for_name(new_york_session, "db.t", warehouse=str(warehouse)).delete("ts < '2024-05-06 00:00'")
    assert table.refresh().scan().to_arrow().column("id").to_pylist() == [2]


DATES = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        ("ts", pa.timestamp("us")),
        ("tz", pa.timestamp("us", tz="UTC")),
        ("d", pa.date32()),
    ]
)


def test_strings_into_date_and_time_columns_of_update_and_merge(spark: Any, catalog: mor.Catalog, warehouse: Path) -> None:
    from mor.spark import MorTable

    table = catalog.create_table("db.t", schema=DATES)
    table.append(pa.table({"id": [1, 2], "ts": [None, None], "tz": [None, None], "d": [None, None]}, schema=DATES))
    t = MorTable.for_name(spark, "db.t", warehouse=str(warehouse))
    t.update("id = 1", set={"ts": "'2030-01-01 00:00:00'", "tz": "'2030-01-01 12:30:00'", "d": "'2030-01-02'"})
    source = spark.createDataFrame([(2,), (3,)], "id long")
    (
        t.alias("t")
        .merge(source.alias("s"), "t.id = s.id")
        .when_matched_update(set={"ts": "'2031-02-03 04:05:06.5'"})
        .when_not_matched_insert(values={"id": "s.id", "d": "'2032-12-31'"})
        .execute()
    )
    utc = dt.UTC
    assert sorted(table.refresh().scan().to_arrow().to_pylist(), key=lambda r: r["id"]) == [
        {"id": 1, "ts": dt.datetime(2030, 1, 1), "tz": dt.datetime(2030, 1, 1, 12, 30, tzinfo=utc), "d": dt.date(2030, 1, 2)},
        {"id": 2, "ts": dt.datetime(2031, 2, 3, 4, 5, 6, 500000), "tz": None, "d": None},
        {"id": 3, "ts": None, "tz": None, "d": dt.date(2032, 12, 31)},
    ]
    before = table.metadata_location
    with pytest.raises(SchemaMismatchError, match="column 'ts': 'next tuesday' is not a timestamp_ntz"):
        t.update("id = 1", set={"ts": "'next tuesday'"})
    assert table.refresh().metadata_location == before


DECIMAL_VALUES = [  # SQL text of a value, into (column, Spark SQL type)
    ("amount * 1.1", "amount", "DECIMAL(38,2)"),  # 41 digits exactly: Spark keeps the whole digits, rounds the fraction
    ("amount * amount", "amount", "DECIMAL(38,2)"),
    ("amount + 0.005", "amount", "DECIMAL(38,2)"),
    ("amount * 3 - qty", "amount", "DECIMAL(38,2)"),
    ("case when qty > 1 then amount * 1.15 when qty is null then 0 else amount end", "amount", "DECIMAL(38,2)"),
    ("case qty when 1 then 'one' when 2 then upper(name) end", "name", "STRING"),
    ("amount > 100 or name like 'b%'", "flag", "BOOLEAN"),
]


@pytest.mark.parametrize("text, column, sql_type", DECIMAL_VALUES)
def test_values_on_wide_decimals_and_cases_are_stored_as_spark_stores_them(
    spark: Any, catalog: mor.Catalog, text: str, column: str, sql_type: str
) -> None:
    from decimal import Decimal

    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("amount", pa.decimal128(38, 2)), ("qty", pa.int32()),
                        ("name", pa.string()), ("flag", pa.bool_())])  # fmt: skip
    rows = pa.table(
        {"id": [1, 2, 3, 4], "amount": [Decimal("123456.79"), Decimal("1.10"), None, Decimal("0.05")],
         "qty": pa.array([1, 2, None, 5], pa.int32()), "name": ["ann", "bob", None, "cy"], "flag": [None] * 4},
        schema=schema,
    )  # fmt: skip
    table = catalog.create_table("db.t", schema=schema)
    table.append(rows)
    table.update({column: text}, where="true")
    ours = {r["id"]: r[column] for r in table.scan().to_arrow().to_pylist()}
    spark.createDataFrame(rows.to_pandas()).createOrReplaceTempView("value_rows")
    theirs = {r["id"]: r["v"] for r in spark.sql(f"SELECT id, CAST({text} AS {sql_type}) AS v FROM value_rows").collect()}
    assert ours == theirs


NUMBERS = pa.schema([pa.field("id", pa.int64(), nullable=False), ("qty", pa.float64()), ("price", pa.decimal128(5, 2)), ("k", pa.int32())])


def test_any_number_stores_into_any_number_column_as_locally(spark: Any, catalog: mor.Catalog, warehouse: Path) -> None:
    """Spark's ANSI store assignment, the local API's rules (issue 54): an int into a double
    (UPDATE's Python int, a bigint MERGE source column), decimal arithmetic rounded HALF_UP into
    decimal(5, 2), a double into an int toward zero; a value the column cannot hold is an error
    naming it, and nothing is written."""
    import mor.spark

    rows = {"id": pa.array([1, 2], pa.int64()), "qty": [1.5, 2.5],
            "price": pa.array([Decimal("1.00"), Decimal("2.00")], pa.decimal128(5, 2)), "k": pa.array([0, 0], pa.int32())}  # fmt: skip
    spark_table, local = (catalog.create_table(name, schema=NUMBERS) for name in ("db.spark", "db.local"))
    for t in (spark_table, local):
        t.append(pa.table(rows, schema=NUMBERS))
    mor.spark.update(spark, spark_table, {"qty": 7}, where="id = 1")
    mor.spark.merge(
        spark, spark_table, spark.createDataFrame([(2, 9)], "id long, qty long"), on=["id"], when_matched_update={"qty": "source.qty"}
    )
    mor.spark.update(spark, spark_table, {"price": "price * 1.005"}, where="id = 2")
    spark.createDataFrame([(3, -2.7, Decimal("9.99"), 2.9)], "id long, qty double, price decimal(5,2), k double").write.format(
        "mor"
    ).option("warehouse", str(warehouse)).mode("append").save("db.spark")
    local.update({"qty": 7}, where="id = 1")
    local.merge(
        pa.table({"id": pa.array([2], pa.int64()), "qty": pa.array([9], pa.int64())}), on=["id"], when_matched_update={"qty": "source.qty"}
    )
    local.update({"price": "price * 1.005"}, where="id = 2")
    local.append(pa.table({"id": [3], "qty": [-2.7], "price": pa.array([Decimal("9.99")], pa.decimal128(5, 2)), "k": [2.9]}))
    expected = [
        {"id": 1, "qty": 7.0, "price": Decimal("1.00"), "k": 0},
        {"id": 2, "qty": 9.0, "price": Decimal("2.01"), "k": 0},
        {"id": 3, "qty": -2.7, "price": Decimal("9.99"), "k": 2},
    ]
    for t in (spark_table, local):
        assert sorted(t.refresh().scan().to_arrow().to_pylist(), key=lambda r: r["id"]) == expected
    before = spark_table.current_snapshot()
    with pytest.raises(Exception, match=r"'k'.*1e\+10|1e\+10.*'k'|SchemaMismatchError"):
        spark.createDataFrame([(4, 0.0, Decimal("0"), 1e10)], "id long, qty double, price decimal(5,2), k double").write.format(
            "mor"
        ).option("warehouse", str(warehouse)).mode("append").save("db.spark")
    assert spark_table.refresh().current_snapshot() == before
