"""The predicate conformance table (tests/predicate_cases.py) in Spark: Spark SQL itself judges
the table (`spark.sql` over the same rows), and the Column that mor's filters become for Spark's
native reader (mor/spark/columns.py), `mor.spark.read_table`, and the `format("mor")` source
with option `filter` select exactly the table's rows (DuckDB judges the table too, in
tests/unit/expr/test_conformance.py, where it agrees with Spark)."""

from __future__ import annotations

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


def _ids(df: Any) -> tuple[int, ...]:
    return tuple(sorted(r["id"] for r in df.select("id").collect()))


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.text)
def test_spark_sql_judges_the_table(case: Case, spark: Any, frame: Any) -> None:
    """The expected rows are Spark SQL's own answer (ANSI mode, as mor's text is read)."""
    frame.createOrReplaceTempView("conformance_rows")
    with_ansi = spark.conf.get("spark.sql.ansi.enabled")
    spark.conf.set("spark.sql.ansi.enabled", "true")
    try:
        assert _ids(spark.sql(f"select id from conformance_rows where {case.spark}")) == case.expected
    finally:
        spark.conf.set("spark.sql.ansi.enabled", with_ansi)


@pytest.mark.parametrize("case", PLAIN, ids=lambda c: c.text)
def test_spark_column(case: Case, frame: Any, warehouse_with_rows: Path) -> None:
    schema = mor.load_catalog(warehouse_with_rows).load_table(NAME).schema()
    assert _ids(frame.filter(to_column(bind_filter(schema, parse_filter(case.text))))) == case.expected


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.text)
def test_read_table_and_the_source(case: Case, spark: Any, warehouse_with_rows: Path) -> None:
    table = mor.load_catalog(warehouse_with_rows).load_table(NAME)
    assert _ids(mor.spark.read_table(spark, table, filter=case.text)) == case.expected
    source = spark.read.format("mor").option("warehouse", str(warehouse_with_rows)).option("filter", case.text).load(NAME)
    assert _ids(source) == case.expected
