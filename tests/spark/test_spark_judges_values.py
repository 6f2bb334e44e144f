"""Spark SQL judges the value conformance table (tests/value_cases.py): `INSERT INTO` a table with
the column's type `SELECT id, <text>` over the same rows, in ANSI mode, so Spark's own store
assignment gives the value or refuses it; mor's UPDATE must store the same
(tests/unit/expr/test_value_conformance.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from value_cases import CASES, ROWS, SPARK_SCHEMA, TYPES, Case


@pytest.fixture
def ansi_rows(spark: Any) -> Iterator[Any]:
    """The rows as view `value_rows`, in a session with ANSI mode and ANSI store assignment."""
    saved = {key: spark.conf.get(key) for key in ("spark.sql.ansi.enabled", "spark.sql.storeAssignmentPolicy")}
    spark.conf.set("spark.sql.ansi.enabled", "true")
    spark.conf.set("spark.sql.storeAssignmentPolicy", "ANSI")
    spark.createDataFrame([tuple(r.values()) for r in ROWS.to_pylist()], SPARK_SCHEMA).createOrReplaceTempView("value_rows")
    try:
        yield spark
    finally:
        for key, value in saved.items():
            spark.conf.set(key, value)


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.target}: {c.text}")
def test_spark_stores_what_the_table_says(case: Case, ansi_rows: Any, tmp_path: Path) -> None:
    spark = ansi_rows
    spark.sql("drop table if exists value_judge")
    spark.sql(f"create table value_judge (id bigint, v {TYPES[case.target][1]}) using parquet location '{tmp_path / 'judge'}'")
    value = f"cast({case.text} as {TYPES[case.target][1]})" if case.literal_cast else case.text
    insert = f"insert into value_judge select id, {value} from value_rows"
    try:
        if case.expected is None:
            with pytest.raises(Exception):  # noqa: B017 (Spark's analysis or its executors refuse it, each in its own type)
                spark.sql(insert)
            return
        spark.sql(insert)
        assert [r["v"] for r in spark.table("value_judge").orderBy("id").collect()] == case.expected
    finally:
        spark.sql("drop table if exists value_judge")
