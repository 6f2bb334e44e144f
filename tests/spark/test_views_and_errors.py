"""Tables in Spark SQL (register_tables, CREATE TEMPORARY VIEW ... USING mor) and mor's errors
raised inside Spark jobs reaching the caller as themselves."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from spark_helpers import SCHEMA, canonical, rows, spark_rows

import mor
import mor.spark
from mor.errors import InvalidFilterError, MorError, NoSuchTableError


def sql_rows(spark: Any, query: str) -> list[tuple]:
    return spark_rows(spark.sql(query))


def test_register_tables_makes_every_table_a_view_refreshed_on_request(
    spark: Any, catalog: mor.Catalog, warehouse: Path
) -> None:
    events = catalog.create_table("db.events", SCHEMA)
    events.append(rows(range(20)))
    events.delete("id in (2, 3, 5)")
    catalog.create_table("other.things", SCHEMA).append(rows(range(100, 105)))

    views = mor.spark.register_tables(spark, warehouse=str(warehouse))
    assert views == {"db.events": "db_events", "other.things": "other_things"}
    assert sql_rows(spark, "SELECT * FROM db_events") == canonical(events.scan().to_arrow())
    assert sql_rows(spark, "SELECT count(*) FROM other_things") == [(5,)]

    before = canonical(events.scan().to_arrow())
    events.delete("id < 10")  # a view keeps the snapshot it was planned on, until registered again
    assert sql_rows(spark, "SELECT * FROM db_events") == before
    mor.spark.register_tables(spark, warehouse=str(warehouse))
    assert sql_rows(spark, "SELECT * FROM db_events") == canonical(events.refresh().scan().to_arrow())
    assert len(before) > len(sql_rows(spark, "SELECT * FROM db_events"))

    catalog.create_table("db.later", SCHEMA).append(rows([7]))
    assert mor.spark.register_tables(spark, warehouse=str(warehouse), namespace="db") == {
        "db.events": "db_events",
        "db.later": "db_later",
    }
    assert sql_rows(spark, "SELECT id FROM db_later") == [(7,)]


def test_a_view_created_in_sql_with_using_mor(spark: Any, catalog: mor.Catalog, warehouse: Path) -> None:
    table = catalog.create_table("db.events", SCHEMA)
    table.append(rows(range(10)))
    table.delete("id in (0, 3, 6, 9)")
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW events_sql USING mor OPTIONS (warehouse '{warehouse}', path 'db.events')")
    assert sql_rows(spark, "SELECT * FROM events_sql") == canonical(table.scan().to_arrow())
    assert sql_rows(spark, "SELECT count(*) FROM events_sql WHERE id > 4") == [(3,)]


def test_errors_inside_spark_jobs_reach_the_caller_as_mor_errors(spark: Any, catalog: mor.Catalog, warehouse: Path) -> None:
    table = catalog.create_table("db.events", SCHEMA)
    table.append(rows(range(10)))
    # Raised while Spark plans the source (in a Python worker): wrapped by Spark, unwrapped here.
    with pytest.raises(InvalidFilterError, match="nope"):
        with mor.spark.spark_errors():
            spark.read.format("mor").option("warehouse", str(warehouse)).option("filter", "nope = 1").load("db.events").collect()
    with pytest.raises(NoSuchTableError):
        with mor.spark.spark_errors():
            spark.read.format("mor").option("warehouse", str(warehouse)).load("db.missing").collect()
    # The mor.spark functions unwrap on their own; the error is a MorError a caller can catch.
    with pytest.raises(MorError):
        mor.spark.read_table(spark, table, filter="nope = 1")
    with pytest.raises(InvalidFilterError):
        mor.spark.delete(spark, table, "nope = 1")
    assert table.refresh().scan().to_arrow().num_rows == 10
    # Errors that are not mor's pass through unchanged.
    with pytest.raises(Exception) as caught:
        with mor.spark.spark_errors():
            spark.sql("SELECT * FROM no_such_view_anywhere").collect()
    assert not isinstance(caught.value, MorError)
