"""`mor.spark.delete/update/merge/upsert/compact`: functions over MorTable that take Spark SQL
text and Columns (as Delta's Python API does) and still take pyarrow expressions, recognised by
type; each leaves the rows the local verb leaves. Mixed languages are refused, table unchanged."""

from __future__ import annotations

from typing import Any

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from pyiceberg.expressions import GreaterThanOrEqual
from spark_helpers import SCHEMA, canonical, rows, source_rows

import mor
from mor import MergeClauses
from mor.errors import InvalidArgumentError, InvalidFilterError, SchemaMismatchError


def twins(catalog: mor.Catalog) -> tuple[mor.Table, mor.Table]:
    tables = []
    for name in ("db.local", "db.spark"):
        t = catalog.create_table(name, SCHEMA)
        t.append(rows(range(0, 40)))
        t.append(rows(range(40, 80)))
        tables.append(t)
    return tables[0], tables[1]


def live(table: mor.Table) -> list[tuple]:
    return canonical(table.refresh().scan().to_arrow())


def test_sql_text_values_are_evaluated_not_written(spark: Any, catalog: mor.Catalog) -> None:
    local, remote = twins(catalog)
    local.update({"category": "upper(category)", "n": "n + 1"}, where="id < 10")
    mor.spark.update(spark, remote, {"category": "upper(category)", "n": "n + 1"}, where="id < 10")
    assert live(remote) == live(local)
    assert "A" in {r[1] for r in live(remote)}  # not the text "upper(category)"


def test_spark_only_conditions_and_columns(spark: Any, catalog: mor.Catalog) -> None:
    from pyspark.sql import functions as F

    local, remote = twins(catalog)
    local.delete("id % 7 = 3")
    mor.spark.delete(spark, remote, "pmod(id, 7) = 3")  # a Spark function mor's filter does not have
    local.update({"n": -1}, where="category = 'b'")
    mor.spark.update(spark, remote, {"n": F.lit(-1)}, where=F.col("category") == "b")
    assert live(remote) == live(local)


def test_a_pyiceberg_filter_is_a_condition_on_spark_too(spark: Any, catalog: mor.Catalog) -> None:
    local, remote = twins(catalog)
    local.update({"n": "n * 10", "category": "'moved'"}, where="id >= 60")
    mor.spark.update(spark, remote, {"n": "n * 10", "category": "'moved'"}, where="id >= 60")
    local.delete(GreaterThanOrEqual("id", 75))
    mor.spark.delete(spark, remote, GreaterThanOrEqual("id", 75))
    assert live(remote) == live(local)
    assert "moved" in {r[1] for r in live(remote)}


def test_mixed_languages_and_bad_text_are_refused_and_change_nothing(spark: Any, catalog: mor.Catalog) -> None:
    from pyspark.sql import functions as F

    _, remote = twins(catalog)
    before = live(remote)
    snapshots = len(remote.snapshots())
    with pytest.raises(InvalidArgumentError, match="pyarrow expression, which the local API takes"):
        mor.spark.update(spark, remote, {"n": pc.field("n") + 1, "category": F.lit("x")}, where="id < 3")
    with pytest.raises(InvalidFilterError):
        mor.spark.delete(spark, remote, "no_such_column = 1")
    with pytest.raises(SchemaMismatchError, match="no_such_column"):
        mor.spark.update(spark, remote, {"n": "no_such_column + 1"}, where="id < 3")
    with pytest.raises(SchemaMismatchError, match="no_such_column"):  # Spark's plan (a Column among the values): the same error
        mor.spark.update(spark, remote, {"n": "no_such_column + 1", "category": F.lit("x")}, where="id < 3")
    with pytest.raises(InvalidArgumentError, match="local API"):
        mor.spark.MorTable(spark, remote).merge(spark.createDataFrame(rows([1], n=5)), ["id"]).when_matched_update(
            {"n": pc.field("source.n")}
        ).execute()
    assert live(remote) == before and len(remote.refresh().snapshots()) == snapshots


@pytest.mark.parametrize("mode", ["merge-on-read", "copy-on-write"])
def test_merge_with_sql_clauses_on_keys_matches_the_local_merge(spark: Any, catalog: mor.Catalog, mode: str) -> None:
    local, remote = twins(catalog)
    source = source_rows(list(range(30, 100, 3)), n=1000)
    local.merge(
        source, on=["id"], mode=mode,
        clauses=MergeClauses()
        .when_matched_delete("source.id > 70")
        .when_matched_update({"n": "source.n + n"}, "category = 'a'")
        .when_matched_update({"category": "'other'"})
        .when_not_matched_insert_all("source.id < 95"),
    )  # fmt: skip
    mor.spark.merge(
        spark, remote, spark.createDataFrame(source), on=["id"], mode=mode,
        clauses=MergeClauses()
        .when_matched_delete("source.id > 70")
        .when_matched_update({"n": "source.n + target.n"}, "target.category = 'a'")
        .when_matched_update({"category": "'other'"})
        .when_not_matched_insert_all("source.id < 95"),
    )  # fmt: skip
    assert live(remote) == live(local)


def test_keyword_merge_in_sql_and_upsert(spark: Any, catalog: mor.Catalog) -> None:
    local, remote = twins(catalog)
    source = source_rows([5, 6, 200], n=7)
    local.merge(source, on=["id"], when_matched_update={"n": "source.n * 2"}, when_not_matched_insert="*")
    mor.spark.merge(spark, remote, spark.createDataFrame(source), on=["id"], when_matched_update={"n": "source.n * 2"},
                    when_not_matched_insert="*")  # fmt: skip
    more = source_rows([6, 7, 300], n=50)
    local.upsert(more, on=["id"])
    mor.spark.upsert(spark, remote, spark.createDataFrame(more), on=["id"])
    assert live(remote) == live(local)


def test_compact_on_spark_takes_every_option_of_the_local_compact(spark: Any, catalog: mor.Catalog) -> None:
    local, remote = twins(catalog)
    for t in (local, remote):
        t.delete("id in (1, 2, 41)")
    expected = local.compact(min_input_files=1, sort_by=["n desc"])
    result = mor.spark.compact(spark, remote, min_input_files=1, sort_by=["n desc"])
    assert (result.rewritten_data_files, result.written_rows) == (expected.rewritten_data_files, expected.written_rows)
    assert live(remote) == live(local)
    for task in remote.scan().plan_files():  # every rewritten file holds its rows in the order asked for
        n = pq.read_table(task.data_file.file_path.removeprefix("file://"), columns=["n"]).column("n").to_pylist()
        assert n == sorted(n, reverse=True)


def test_one_value_language_in_spark_and_locally(spark: Any, catalog: mor.Catalog) -> None:
    """The same text sets the same values through Spark and the local API; mor.lit is the text
    itself on both; a bare word is an error suggesting the quotes on both."""
    local, remote = twins(catalog)
    values = {"n": "n * 2 + 1", "category": "upper(category)"}
    local.update(values, where="id < 10")
    mor.spark.update(spark, remote, values, where="id < 10")
    local.update({"category": mor.lit("n + 1")}, where="id = 20")
    mor.spark.update(spark, remote, {"category": mor.lit("n + 1")}, where="id = 20")
    assert live(remote) == live(local)
    assert "n + 1" in {r[1] for r in live(remote)}
    for update in (
        lambda: local.update({"category": "closed"}, where="id = 1"),
        lambda: mor.spark.update(spark, remote, {"category": "closed"}, where="id = 1"),
    ):
        with pytest.raises(mor.MorError, match="'closed'"):
            update()
    assert live(remote) == live(local)


def test_text_mor_does_not_read_runs_on_sparks_plan(spark: Any, catalog: mor.Catalog) -> None:
    """Text with what only Spark reads (a column named in another case, Spark's names being
    case-insensitive; a function mor lacks) runs on Spark's plan, with Spark's answer."""
    local, remote = twins(catalog)
    local.update({"n": "n + 1"}, where="id < 5")
    mor.spark.update(spark, remote, {"n": "N + 1"}, where="ID < 5")
    local.delete("id % 10 = 3")
    mor.spark.delete(spark, remote, "bround(id, -1) = id and id % 10 = 3 or pmod(id, 10) = 3 and false")
    mor.spark.delete(spark, remote, "pmod(id, 10) = 3")
    assert live(remote) == live(local)
    source = source_rows([1, 2, 500], n=7)
    local.merge(source, on=["id"], when_matched_update={"n": "source.n + n"}, when_not_matched_insert="*")
    mor.spark.merge(spark, remote, spark.createDataFrame(source), on=["id"], when_matched_update={"n": "SOURCE.N + TARGET.N"},
                    when_not_matched_insert="*")  # fmt: skip
    assert live(remote) == live(local)


def test_a_field_inside_a_struct_is_set_as_locally(spark: Any, catalog: mor.Catalog) -> None:
    """`set={"addr.city": ...}` (Delta's and Spark's UPDATE of a nested field) on Spark stores what
    the local UPDATE stores; a Column for it is refused, naming the field."""
    import pyarrow as pa
    from pyspark.sql import functions as F

    addr = pa.struct([("city", pa.string()), ("zip", pa.int32())])
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("addr", addr)])
    data = pa.table({"id": [1, 2, 3], "addr": [{"city": "oslo", "zip": 1}, None, {"city": None, "zip": 3}]}, schema=schema)
    local, remote = (catalog.create_table(f"db.{name}", schema=schema) for name in ("nested_local", "nested_spark"))
    for table in (local, remote):
        table.append(data)
    local.update({"addr.city": "upper(coalesce(addr.city, 'x'))"}, where="id > 0")
    mor.spark.update(spark, remote, {"addr.city": "upper(coalesce(addr.city, 'x'))"}, where="id > 0")
    assert canonical(remote.refresh().scan().to_arrow()) == canonical(local.refresh().scan().to_arrow())
    assert remote.scan().to_arrow().sort_by("id").column("addr").to_pylist() == [{"city": "OSLO", "zip": 1}, None, {"city": "X", "zip": 3}]
    with pytest.raises(InvalidArgumentError, match="addr.city"):
        mor.spark.update(spark, remote, {"addr.city": F.lit("y")}, where="id > 0")
