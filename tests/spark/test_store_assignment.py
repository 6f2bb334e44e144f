"""Spark writes follow store assignment as Iceberg-Spark does: a Spark TIMESTAMP (what
createDataFrame gives for pandas/Arrow data) into a `timestamp` (no zone) column keeps its
wall-clock time in the session zone; int into long; unsafe casts refused, nothing written."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import mor

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
    assert table.refresh().scan().to_arrow().to_pylist() == [
        {"id": 1, "ts": wall, "tz": dt.datetime(2024, 5, 6, 11, 8, 9, tzinfo=dt.timezone.utc)}
    ]


def test_a_zone_less_time_in_a_condition_is_read_in_the_session_zone(new_york_session: Any, catalog: mor.Catalog, warehouse: Path) -> None:
    """MorTable conditions are Spark's: '2024-05-06 00:00' is midnight in New York (04:00 UTC). mor's
    own filter text reads it as UTC, so pruning files by it would skip the file of 02:00 UTC."""
    from mor.spark.table import MorTable

    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("ts", pa.timestamp("us", "UTC"))])
    table = catalog.create_table("db.t", schema=schema)
    utc = dt.timezone.utc
    table.append(pa.table({"id": [1], "ts": [dt.datetime(2024, 5, 6, 2, 0, tzinfo=utc)]}, schema=schema))
    table.append(pa.table({"id": [2], "ts": [dt.datetime(2024, 5, 6, 5, 0, tzinfo=utc)]}, schema=schema))
    MorTable.for_name(new_york_session, "db.t", warehouse=str(warehouse)).delete("ts < '2024-05-06 00:00'")
    assert table.refresh().scan().to_arrow().column("id").to_pylist() == [2]
