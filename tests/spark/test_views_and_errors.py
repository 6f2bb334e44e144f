"""Tables in Spark SQL (register_tables, CREATE TEMPORARY VIEW ... USING mor) and mor's errors
raised inside Spark jobs reaching the caller as themselves."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.errors import AnalysisException, PythonException
from spark_helpers import SCHEMA, canonical, rows, spark_rows

import mor
import mor.spark
from mor.errors import InvalidArgumentError, InvalidFilterError, MorError, NoSuchTableError
from mor.spark import MorTable, SparkSetupError


def sql_rows(spark: Any, query: str) -> list[tuple]:
    return spark_rows(spark.sql(query))


def test_register_tables_makes_views_that_see_every_commit_of_this_process(
    spark: Any, catalog: mor.Catalog, warehouse: Path, caplog: pytest.LogCaptureFixture
) -> None:
    events = catalog.create_table("db.events", SCHEMA)
    events.append(rows(range(20)))
    events.delete("id in (2, 3, 5)")
    catalog.create_table("other.things", SCHEMA).append(rows(range(100, 105)))

    with caplog.at_level("WARNING", logger="mor.spark"):
        views = mor.spark.register_tables(spark, warehouse=str(warehouse))
    assert "commits made by other processes" in caplog.text and "register_tables is called again" in caplog.text
    assert views == {"db.events": "db_events", "other.things": "other_things"}
    assert sql_rows(spark, "SELECT * FROM db_events") == canonical(events.scan().to_arrow())
    assert sql_rows(spark, "SELECT count(*) FROM other_things") == [(5,)]

    # A commit through MorTable or the mor.spark verbs: the next query sees it.
    mor_table = MorTable.for_name(spark, "db.events", warehouse=str(warehouse))
    mor_table.delete("id < 10")
    assert sql_rows(spark, "SELECT count(*) FROM db_events") == [(10,)]
    mor.spark.update(spark, catalog.load_table("db.events"), {"n": "n + 1000"}, "id = 19")
    assert sql_rows(spark, "SELECT n FROM db_events WHERE id = 19") == [(1019,)]
    assert sql_rows(spark, "SELECT count(*) FROM other_things") == [(5,)]  # other views untouched
    # So does one through the local API, of a table object opened anywhere in this process.
    mor.load_catalog(warehouse).load_table("db.events").delete("id = 15")
    assert sql_rows(spark, "SELECT count(*) FROM db_events") == [(9,)]
    events.refresh().update({"n": "n * 2"}, "id = 19")
    assert sql_rows(spark, "SELECT n FROM db_events WHERE id = 19") == [(2038,)]
    # A commit made by another process shows after register_tables, as it warned.
    cli = [sys.executable, "-m", "mor", "delete", "db.events", "--warehouse", str(warehouse), "--where", "id = 16"]
    subprocess.run(cli, check=True, capture_output=True)
    assert sql_rows(spark, "SELECT count(*) FROM db_events") == [(9,)]
    mor.spark.register_tables(spark, warehouse=str(warehouse))
    assert sql_rows(spark, "SELECT * FROM db_events") == canonical(events.refresh().scan().to_arrow())
    assert sql_rows(spark, "SELECT count(*) FROM db_events") == [(8,)]

    catalog.create_table("db.later", SCHEMA).append(rows([7]))
    assert mor.spark.register_tables(spark, warehouse=str(warehouse), namespace="db") == {
        "db.events": "db_events",
        "db.later": "db_later",
    }
    assert sql_rows(spark, "SELECT id FROM db_later") == [(7,)]


def test_views_of_every_kind_of_table_read_the_live_rows(spark: Any, catalog: mor.Catalog, warehouse: Path) -> None:
    """Views are read_table's DataFrames: equality deletes, deletion vectors, partitions, nested
    columns and an empty table read as the local reader reads them."""
    nested = pa.schema([pa.field("id", pa.int64(), nullable=False), ("tags", pa.list_(pa.string())),
                        ("addr", pa.struct([("city", pa.string())]))])  # fmt: skip
    tables = {
        "kinds.equality": catalog.create_table("kinds.equality", SCHEMA, partition_by=["category"]),
        "kinds.vectors": catalog.create_table("kinds.vectors", SCHEMA, properties={"format-version": "3"}),
        "kinds.nested": catalog.create_table("kinds.nested", nested),
        "kinds.empty": catalog.create_table("kinds.empty", SCHEMA),
    }
    tables["kinds.equality"].append(rows(range(30)))
    tables["kinds.equality"].delete_rows(pa.table({"id": [3, 4, 25]}))
    tables["kinds.vectors"].append(rows(range(30)))
    tables["kinds.vectors"].delete("id % 3 = 0")
    tables["kinds.nested"].append(pa.table({"id": [1, 2], "tags": [["a"], None], "addr": [{"city": "Oslo"}, None]}, schema=nested))
    tables["kinds.nested"].delete("addr.city = 'Oslo'")
    views = mor.spark.register_tables(spark, warehouse=str(warehouse), namespace="kinds")
    for identifier, table in tables.items():
        assert sql_rows(spark, f"SELECT * FROM {views[identifier]}") == canonical(table.scan().to_arrow()), identifier
    assert sql_rows(spark, "SELECT count(*) FROM kinds_empty") == [(0,)]


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


def first_line(error: BaseException) -> str:
    return str(error).splitlines()[0]


def test_a_format_mor_read_names_the_mor_error_on_its_first_line(spark: Any, catalog: mor.Catalog, warehouse: Path, read_mor: Any) -> None:
    catalog.create_table("db.events", SCHEMA).append(rows(range(10)))
    nowhere = str(warehouse / "nowhere")
    cases = [
        (lambda: read_mor("db.missing"), NoSuchTableError, "table db.missing does not exist"),
        (lambda: read_mor("db.events", filter="nope = 1"), InvalidFilterError, "nope"),
        (lambda: read_mor("db.events", columns="id,nope"), InvalidFilterError, "nope"),
        (lambda: spark.read.format("mor").option("warehouse", nowhere).load("db.events"), InvalidArgumentError, "no warehouse"),
    ]
    for read, error, words in cases:
        # Straight through Spark: Spark's type, and the mor error alone on the first line.
        with pytest.raises(AnalysisException) as caught:
            read().collect()
        assert f"mor.errors.{error.__name__}: " in first_line(caught.value) and words in first_line(caught.value)
        assert "Traceback" not in str(caught.value)
        # Through spark_errors: the mor type itself, its message first, Spark's error as the cause.
        with pytest.raises(error) as typed:
            with mor.spark.spark_errors():
                read().collect()
        assert words in first_line(typed.value) and not first_line(typed.value).startswith("[")
        assert isinstance(typed.value.__cause__, AnalysisException)


def test_mor_entry_points_raise_the_mor_error_itself(spark: Any, catalog: mor.Catalog, warehouse: Path) -> None:
    catalog.create_table("db.events", SCHEMA).append(rows(range(10)))
    calls = [
        (lambda: mor.spark.read_table(spark, "db.missing", warehouse=str(warehouse)), NoSuchTableError),
        (lambda: mor.spark.read_table(spark, "db.events", warehouse=str(warehouse), filter="nope = 1"), InvalidFilterError),
        (lambda: MorTable.for_name(spark, "db.missing", warehouse=str(warehouse)), NoSuchTableError),
        (lambda: MorTable.for_name(spark, "db.events", warehouse=str(warehouse)).delete("nope = 1"), InvalidFilterError),
        (lambda: MorTable.for_name(spark, "db.events", warehouse=str(warehouse)).update("id = 1", {"nope": "1"}), InvalidArgumentError),
        (lambda: mor.spark.register_tables(spark, warehouse=str(warehouse / "nowhere")), InvalidArgumentError),
    ]
    for call, error in calls:
        with pytest.raises(error) as caught:
            call()
        assert not first_line(caught.value).startswith("[") and "Traceback" not in str(caught.value)


def test_a_session_without_mor_registered_gets_a_hint(spark: Any, catalog: mor.Catalog, warehouse: Path) -> None:
    catalog.create_table("db.events", SCHEMA).append(rows(range(3)))
    other = spark.newSession()  # the same SparkContext, a session of its own: format "mor" not registered there
    with pytest.raises(SparkSetupError, match=r"mor\.spark\.register\(spark\)") as caught:
        with mor.spark.spark_errors():
            other.read.format("mor").option("warehouse", str(warehouse)).load("db.events").collect()
    assert "DATA_SOURCE_NOT_FOUND" in str(caught.value.__cause__)


def test_workers_without_mor_get_a_hint() -> None:
    # What Spark raises when its Python workers run an interpreter without mor (the data source is
    # pickled by reference to the package): a worker traceback ending in the import error.
    worker_text = (
        "[PYTHON_DATA_SOURCE_ERROR] Failed to create Python data source instance: Traceback (most recent call last):\n"
        '  File "/usr/lib/python3/dist-packages/pyspark/serializers.py", line 460, in loads\n'
        "ModuleNotFoundError: No module named 'mor'\n"
    )
    for spark_error in (AnalysisException(message=worker_text), PythonException(message=worker_text)):
        with pytest.raises(SparkSetupError, match="PYSPARK_PYTHON") as caught:
            with mor.spark.spark_errors():
                raise spark_error
        assert sys.executable in str(caught.value) and caught.value.__cause__ is spark_error
