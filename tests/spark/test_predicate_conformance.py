"""The predicate conformance table (tests/predicate_cases.py) in Spark: Spark SQL itself judges
the table (`spark.sql` over the same rows), and the Column that mor's filters become for Spark's
native reader (mor/spark/columns.py), `mor.spark.read_table`, and the `format("mor")` source
with option `filter` select exactly the table's rows (DuckDB judges the table too, in
tests/unit/expr/test_conformance.py, where it agrees with Spark)."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from predicate_cases import CASES, ROWS, SCHEMA, SPARK_SCHEMA, Case

import mor
import mor.spark
from mor.expr.filters import bind_filter, parse_filter
from mor.expr.residual import has_residual
from mor.format.arrow_types import from_arrow_schema
from mor.spark.columns import to_column

NAME = "db.rows"
# Arithmetic and functions (residuals) have no Spark Column yet: mor's Python reader evaluates
# them (test_read_table_and_the_source); the Column runs every other case.
PLAIN = [c for c in CASES if not has_residual(bind_filter(from_arrow_schema(SCHEMA), parse_filter(c.text)))]


@pytest.fixture(scope="module")
def warehouse_with_rows(tmp_path_factory: pytest.TempPathFactory) -> Path:
    warehouse = tmp_path_factory.mktemp("conformance")
    table = mor.load_catalog(warehouse).create_table(NAME, schema=SCHEMA)
    for i in range(ROWS.num_rows):  # one file per row: pruning decides file by file
        table.append(ROWS.slice(i, 1))
    return warehouse


@pytest.fixture(scope="module")
def frame(spark: Any) -> Any:
    rows = [tuple(r.values()) for r in ROWS.to_pylist()]  # NaN stays NaN, None null
    return spark.createDataFrame(rows, SPARK_SCHEMA)


def _ids_where_true(rows: list[Any], column: str) -> tuple[int, ...]:
    return tuple(sorted(r["id"] for r in rows if r[column]))


@contextmanager
def settings(spark: Any, values: dict[str, str]) -> Iterator[None]:
    """The session's settings `values` for the block, the earlier ones back after it."""
    before = {key: spark.conf.get(key) for key in values}
    for key, value in values.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in before.items():
            spark.conf.set(key, value)


# Each case's predicate is a column of one query, the ids where it is TRUE being what `WHERE
# predicate` keeps: one Spark job for all of them instead of one each. Without sharing common
# subexpressions between the columns: shared, `10 / i` of `i != 0 and 10 / i > 1` would be
# computed for every row, ahead of the `and` that guards it, as no WHERE computes it.
ONE_QUERY = {"spark.sql.subexpressionElimination.enabled": "false"}


@pytest.fixture(scope="module")
def spark_sql_answers(spark: Any, frame: Any) -> list[tuple[int, ...]]:
    """Spark SQL's rows for each case, in CASES' order (ANSI mode, as mor's text is read)."""
    frame.createOrReplaceTempView("conformance_rows")
    with settings(spark, {"spark.sql.ansi.enabled": "true", **ONE_QUERY}):
        judged = ", ".join(f"({case.spark}) IS TRUE AS c{i}" for i, case in enumerate(CASES))
        rows = spark.sql(f"select id, {judged} from conformance_rows").collect()
    return [_ids_where_true(rows, f"c{i}") for i in range(len(CASES))]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.text)
def test_spark_sql_judges_the_table(case: Case, spark_sql_answers: list[tuple[int, ...]]) -> None:
    """The expected rows are Spark SQL's own answer (ANSI mode, as mor's text is read)."""
    assert spark_sql_answers[CASES.index(case)] == case.expected


@pytest.fixture(scope="module")
def column_answers(spark: Any, frame: Any, warehouse_with_rows: Path) -> list[tuple[int, ...]]:
    """The rows each PLAIN case's Column keeps, in PLAIN's order (a filter keeps the rows where
    its Column is TRUE)."""
    from pyspark.sql import functions as F

    schema = mor.load_catalog(warehouse_with_rows).load_table(NAME).schema()
    columns = [F.coalesce(to_column(bind_filter(schema, parse_filter(c.text))), F.lit(False)).alias(f"c{i}") for i, c in enumerate(PLAIN)]
    with settings(spark, ONE_QUERY):
        rows = frame.select("id", *columns).collect()
    return [_ids_where_true(rows, f"c{i}") for i in range(len(PLAIN))]


@pytest.mark.parametrize("case", PLAIN, ids=lambda c: c.text)
def test_spark_column(case: Case, column_answers: list[tuple[int, ...]]) -> None:
    assert column_answers[PLAIN.index(case)] == case.expected


@pytest.fixture(scope="module")
def read_answers(spark: Any, warehouse_with_rows: Path) -> dict[str, list[tuple[int, ...]]]:
    """The rows `mor.spark.read_table` and the source keep for each case, in CASES' order: each
    case's read is a DataFrame of its own, planned with its filter, and one job collects the
    union of all of them."""
    from pyspark.sql import functions as F

    table = mor.load_catalog(warehouse_with_rows).load_table(NAME)
    reads = {
        "read_table": [mor.spark.read_table(spark, table, filter=c.text) for c in CASES],
        "source": [
            spark.read.format("mor").option("warehouse", str(warehouse_with_rows)).option("filter", c.text).load(NAME) for c in CASES
        ],
    }
    answers = {}
    for how, frames in reads.items():
        tagged = [df.select(F.lit(i).alias("case"), "id") for i, df in enumerate(frames)]
        rows = functools.reduce(lambda a, b: a.unionAll(b), tagged).collect()
        answers[how] = [tuple(sorted(r["id"] for r in rows if r["case"] == i)) for i in range(len(CASES))]
    return answers


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.text)
def test_read_table_and_the_source(case: Case, read_answers: dict[str, list[tuple[int, ...]]]) -> None:
    assert read_answers["read_table"][CASES.index(case)] == case.expected
    assert read_answers["source"][CASES.index(case)] == case.expected
