"""`mor.spark.delete/update/merge/upsert`: the verbs of `MorTable` (mor/spark/table.py) as
functions of a session and a table, in the local API's shape (`Table.delete(where)`,
`Table.merge(source, on, when_matched_update=...)`). Conditions and values are Spark SQL text,
Columns or literals (a condition may be a pyiceberg filter); MorTable's docstring says which
engine runs which plan.

    mor.spark.delete(spark, table, "id < 100")
    mor.spark.update(spark, table, {"n": "n + 1"}, where="category = 'a'")
    mor.spark.merge(spark, table, source_df, on=["id"], when_matched_update="*", when_not_matched_insert="*")
    mor.spark.upsert(spark, table, source_df, on=["id"])
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from mor.api.table import Table
from mor.dml.merge_clauses import MergeClauses
from mor.spark.table import MorMergeBuilder, MorTable

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from mor.format.metadata import Snapshot


def delete(
    spark: SparkSession, table: Table, where: Any, mode: str | None = None, *, idempotency: tuple[str, int] | None = None
) -> Snapshot | None:
    """`table.delete(where)` on Spark: SQL text, a Column or a pyiceberg filter."""
    return MorTable(spark, table, refresh=False).delete(where, mode=mode, idempotency=idempotency)


def update(
    spark: SparkSession,
    table: Table,
    set: Mapping[str, Any],
    where: Any = None,
    mode: str | None = None,
    *,
    idempotency: tuple[str, int] | None = None,
) -> Snapshot | None:
    """`table.update(set, where)` on Spark: `set` maps columns to Spark SQL text (`"n + 1"`, a
    text value is quoted: `"'x'"`), Columns or literals. `where` None: every row."""
    return MorTable(spark, table, refresh=False).update(where, set, mode=mode, idempotency=idempotency)


def merge(
    spark: SparkSession,
    table: Table,
    source: DataFrame,
    on: Sequence[str],
    when_matched_update: Mapping[str, Any] | str | None = None,
    when_matched_delete: Any = False,
    when_not_matched_insert: Mapping[str, Any] | str | None = None,
    when_matched_update_if: Any = None,
    when_not_matched_insert_if: Any = None,
    mode: str | None = None,
    path: str = "auto",
    *,
    clauses: MergeClauses | None = None,
    idempotency: tuple[str, int] | None = None,
) -> Snapshot | None:
    """`table.merge(...)` with a DataFrame source, on key columns `on`: the keyword clauses as
    `Table.merge`'s, or `clauses=` a `MergeClauses`. `path`: "auto" (a small source on the
    driver, else distributed), "driver" or "distributed"."""
    keywords = (when_matched_delete, when_matched_update, when_matched_update_if, when_not_matched_insert, when_not_matched_insert_if)
    builder = MorMergeBuilder(MorTable(spark, table, refresh=False), source, list(on), MergeClauses.of_call(clauses, *keywords))
    return builder.execute(mode=mode, path=path, idempotency=idempotency)


def upsert(
    spark: SparkSession,
    table: Table,
    source: DataFrame,
    on: Sequence[str],
    mode: str | None = None,
    path: str = "auto",
    *,
    idempotency: tuple[str, int] | None = None,
) -> Snapshot | None:
    """`table.upsert(rows, on)` with a DataFrame source; `path` as `merge`'s."""
    return MorTable(spark, table, refresh=False).upsert(source, on, mode=mode, path=path, idempotency=idempotency)
