"""DELETE, UPDATE and MERGE whose conditions and values Spark evaluates (Spark SQL text and
Columns): the plans `MorTable` (mor/spark/table.py) hands to `run_dml`.

Each plan reads the target's live rows through format "mor" with their `_file`/`_pos`
(mor/spark/apply_changes.py), lets Spark evaluate the condition, values and join, and hands the
resulting change rows to one job that writes delete files (or deletion vectors, or copy-on-write
rewrites) and new rows. A text condition that also parses as a mor filter prunes the files read.

MERGE follows Delta: the matched clauses are tried in order and the first whose condition holds
applies (likewise the not-matched ones); a matched row no clause applies to stays; a target row
that several source rows match and a clause changes is a DuplicateKeyError; update values not
given keep the target's, insert values not given are null.

Bad input is refused before anything is written: a condition Spark cannot resolve is an
InvalidFilterError, a value that does not store into its column a SchemaMismatchError (store
assignment as for writes, mor/spark/store_assignment.py). A string into a date or timestamp
column is parsed as Spark's CAST parses it; one that does not parse fails the job that writes
the changes, with a SchemaMismatchError naming the column, and nothing is committed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial, reduce
from typing import TYPE_CHECKING, Any, TypeVar

import pyarrow.compute as pc
from pyiceberg.expressions import AlwaysTrue, BooleanExpression
from pyiceberg.schema import Schema
from pyiceberg.types import TimestamptzType
from pyspark.errors import AnalysisException
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_schema as spark_to_arrow_schema
from pyspark.sql.types import DataType, StringType

from mor.api.table import Table
from mor.commit.snapshot_producer import Changes, Validator
from mor.dml.merge_clauses import DELETE, MergeClauses
from mor.errors import InvalidArgumentError, InvalidFilterError, MorError, SchemaMismatchError
from mor.expr.filters import bind_filter, filter_field_ids, parse_filter
from mor.expr.values import Lit
from mor.format.spec import ROW_ID_NAME
from mor.spark.apply_changes import WRITE_COLUMN, TargetRows, apply_changes, target_rows
from mor.spark.columns import to_column
from mor.spark.file_paths import FILE_COLUMN, POS_COLUMN
from mor.spark.jvm_bridge import java_dataframe
from mor.spark.store_assignment import check_assignable, parses_text
from mor.spark.types import spark_type

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

T = TypeVar("T")
Plan = Callable[[], "tuple[Changes, Validator] | None"]
CLAUSE_COLUMN = "__mor_clause"  # the number of the MERGE clause that applies to a joined row


def as_column(value: Any, what: str) -> Column:
    """A condition or value as Spark evaluates it: SQL text, a Column, a pyiceberg filter, or
    (values) a Python literal."""
    if isinstance(value, Column):
        return value
    if isinstance(value, Lit):  # mor.lit(...): the value itself, text too
        return F.lit(value.value)
    if isinstance(value, str):
        return F.expr(value)
    if isinstance(value, pc.Expression):
        raise InvalidArgumentError(
            f"{what} {value} is a pyarrow expression, which the local API takes; on Spark give Spark SQL text "
            "(a text value quoted: \"'x'\") or a Column"
        )
    if isinstance(value, BooleanExpression):
        raise InvalidArgumentError(f"{what} {value!r} is a pyiceberg filter among Spark SQL text or Columns: give all of one kind")
    return F.lit(value)


def condition_column(condition: Any, schema: Schema) -> Column:
    """A condition as a Column; None is every row, a pyiceberg filter translates exactly."""
    if condition is None:
        return F.lit(True)
    if isinstance(condition, BooleanExpression):
        return to_column(bind_filter(schema, condition))
    return as_column(condition, "the condition")


def resolved(what: str, error: type[MorError], build: Callable[[], T]) -> T:
    """`build()`, whose DataFrame Spark analyses as it is built: an unresolvable column or a bad
    expression becomes `error`."""
    try:
        return build()
    except AnalysisException as e:
        first = next((line for line in str(e).splitlines() if line.strip()), type(e).__name__)  # a parse error starts with a blank line
        if "UNRESOLVED_COLUMN" in first and "value" in what:  # a column the table lacks, as locally; or a bare word meant as text
            first += " (text is SQL: a text value is quoted, \"'closed'\", or mor.lit('closed'))"
            error = SchemaMismatchError
        raise error(f"{what}: {first}") from e


def delete_plan(spark: SparkSession, table: Table, condition: Column, mode: str, pruning: BooleanExpression) -> Plan:
    def plan() -> tuple[Changes, Validator] | None:
        target = target_rows(spark, table, pruning)
        matched = resolved("bad delete condition", InvalidFilterError, lambda: target.rows.filter(condition))
        changes = matched.select(FILE_COLUMN, POS_COLUMN, F.lit(False).alias(WRITE_COLUMN))
        return apply_changes(spark, table, target, changes, "delete", mode, pruning)

    return plan


def update_plan(
    spark: SparkSession, table: Table, condition: Column, values: Mapping[str, Column], mode: str, pruning: BooleanExpression
) -> Plan:
    """`values`: the columns set (the others keep their value)."""

    def plan() -> tuple[Changes, Validator] | None:
        target = target_rows(spark, table, pruning)
        matched = resolved("bad update condition", InvalidFilterError, lambda: target.rows.filter(condition))
        row = {f.name: values.get(f.name, F.col(f"`{f.name}`")) for f in table.schema().fields}
        changes = resolved(
            "bad update value", InvalidArgumentError,
            lambda: matched.select(
                F.col(FILE_COLUMN), F.col(POS_COLUMN), F.lit(True).alias(WRITE_COLUMN),
                *[c.alias(n) for c, n in zip(_stored(table, matched, row), row)],
                *_row_ids(target, F.col(ROW_ID_NAME)),
            ),
        )  # fmt: skip
        return apply_changes(spark, table, target, changes, "update", mode, pruning)

    return plan


def merge_plan(
    spark: SparkSession, table: Table, source: DataFrame, condition: Column | list[str], clauses: MergeClauses, target_alias: str, mode: str
) -> Plan:
    """`source` under its alias (`aliased`); `condition` over both aliases, or the key columns
    (matched as SQL's `=`: a key with a null matches nothing)."""

    def plan() -> tuple[Changes, Validator] | None:
        target = target_rows(spark, table)
        changes = _merge_changes(table, source, condition, clauses, target, target_alias)
        return apply_changes(spark, table, target, changes, "merge", mode)

    return plan


def _merge_changes(
    table: Table, source: DataFrame, on: Column | list[str], clauses: MergeClauses, target: TargetRows, alias: str
) -> DataFrame:
    names = [f.name for f in table.schema().fields]
    rows = target.rows.alias(alias)
    if isinstance(on, Column):
        condition = on
    else:
        condition = reduce(lambda a, b: a & b, [source[f"`{k}`"] == rows[f"`{k}`"] for k in on])
    how = "left" if clauses.has_insert else "inner"  # unmatched source rows only matter to inserts
    joined = resolved("bad merge condition", InvalidFilterError, lambda: source.join(rows, condition, how))
    matched = rows[FILE_COLUMN].isNotNull()
    listed = list(clauses)
    chosen: Column | None = None  # the number of the clause that applies to each joined row
    for i, clause in enumerate(listed):
        holds = condition_column(clause.condition, table.schema())
        chosen = _first(chosen, (matched if i < len(clauses.matched) else ~matched) & holds, i)
    assert chosen is not None  # MergeClauses.check: at least one clause
    writes = [i for i, c in enumerate(listed) if c.action != DELETE]
    values = {}
    for i in writes:
        clause, is_update = listed[i], i < len(clauses.matched)
        given = clause.values if clause.values is not None else {n: _source_column(source, n) for n in names}
        default: Callable[[str], Column] = (lambda n: rows[f"`{n}`"]) if is_update else (lambda n: F.lit(None))
        raw = {n: as_column(given[n], f"the value of {n!r}") if n in given else default(n) for n in names}
        what = "merge update value" if is_update else "merge insert value"
        values[i] = resolved(f"bad {what}", InvalidArgumentError, partial(_stored, table, joined, raw))
    action = F.col(CLAUSE_COLUMN)
    columns = [
        reduce(
            lambda acc, i: acc.when(action == i, values[i][k]), writes[1:], F.when(action == writes[0], values[writes[0]][k])
        ).alias(n)
        for k, n in enumerate(names)
    ] if writes else []  # fmt: skip
    removes = action < len(clauses.matched)
    checked = resolved("bad merge clause condition", InvalidFilterError, lambda: joined.withColumn(CLAUSE_COLUMN, chosen))
    row_id = [F.when(removes, rows[ROW_ID_NAME]).alias(ROW_ID_NAME)] if target.row_ids and writes else []
    return checked.where(action.isNotNull()).select(
        F.when(removes, rows[FILE_COLUMN]).alias(FILE_COLUMN),
        F.when(removes, rows[POS_COLUMN]).alias(POS_COLUMN),
        action.isin(writes).alias(WRITE_COLUMN) if writes else F.lit(False).alias(WRITE_COLUMN),
        *columns,
        *row_id,
    )


def _stored(table: Table, rows: DataFrame, values: Mapping[str, Column]) -> list[Column]:
    """`values` (one per table column) cast to the table's Spark types, after checking that each
    stores into its column (SchemaMismatchError before anything is written)."""
    fields = table.schema().fields
    typed = rows.select(*[values[f.name].alias(f.name) for f in fields]).schema
    texts = [f for f, t in zip(fields, typed.fields) if isinstance(t.dataType, StringType) and parses_text(f.field_type)]
    if texts:
        values = {**values, **{f.name: _parsed(values[f.name], f.name, spark_type(f.field_type)) for f in texts}}
        typed = rows.select(*[values[f.name].alias(f.name) for f in fields]).schema
    try:
        arrow = spark_to_arrow_schema(typed, timezone="UTC")
    except (TypeError, NotImplementedError) as e:
        raise SchemaMismatchError(f"values of {typed.simpleString()} cannot be written: {e}") from e
    check_assignable(arrow, table.schema())
    return [values[f.name].cast(spark_type(f.field_type)) for f in fields]


def _parsed(text: Column, name: str, target: DataType) -> Column:
    """A string value parsed into a date or timestamp column as Spark's CAST parses it. A string
    that does not parse stops the job with a message in the shape of a mor error's line, which
    mor/spark/errors.py raises on the driver as that error."""
    parsed = text.try_cast(target)
    refusal = F.concat(
        F.lit(f"mor.errors.SchemaMismatchError: column {name!r}: '"), text, F.lit(f"' is not a {target.simpleString()} value")
    )
    return F.when(text.isNull() | parsed.isNotNull(), parsed).otherwise(F.raise_error(refusal))


def _row_ids(target: TargetRows, row_id: Column) -> list[Column]:
    return [row_id.alias(ROW_ID_NAME)] if target.row_ids else []


def _first(chosen: Column | None, condition: Column, number: int) -> Column:
    return F.when(condition, F.lit(number)) if chosen is None else chosen.when(condition, F.lit(number))


def _source_column(source: DataFrame, name: str) -> Column:
    if name not in source.columns:
        raise SchemaMismatchError(f"*_all clauses need source column {name!r}, which the source does not have")
    return source[f"`{name}`"]


def aliased(source: DataFrame) -> DataFrame:
    """The source under its own alias, else "source"."""
    try:
        plan = java_dataframe(source).queryExecution().analyzed()  # classic Spark: is the top of the plan an alias?
        if plan.nodeName() == "SubqueryAlias":
            return source
    except Exception:
        pass
    return source.alias("source")


_UTC_ZONES = {"UTC", "Etc/UTC", "GMT", "Etc/GMT", "Z", "+00:00", "Zulu", "UCT", "Etc/UCT", "Universal", "Etc/Universal"}


def pruning_filter(spark: SparkSession, table: Table, condition: Any) -> BooleanExpression:
    """The mor filter of a condition that is one (files it cannot match are not read), else
    AlwaysTrue: a pyiceberg filter as it is, SQL text when it parses as a mor filter."""
    if isinstance(condition, BooleanExpression):
        return condition
    if not isinstance(condition, str):
        return AlwaysTrue()
    try:
        row_filter = parse_filter(condition)
        bind_filter(table.schema(), row_filter)
    except MorError:
        return AlwaysTrue()
    if not session_in_utc(spark) and _reads_timestamptz(table.schema(), row_filter):
        # A zone-less time means UTC to mor's filter but the session's zone to Spark's condition:
        # pruning by mor's reading could skip files that Spark's condition matches.
        return AlwaysTrue()
    return row_filter


def session_in_utc(spark: SparkSession) -> bool:
    return (spark.conf.get("spark.sql.session.timeZone") or "UTC") in _UTC_ZONES


def _reads_timestamptz(schema: Schema, row_filter: BooleanExpression) -> bool:
    ids = filter_field_ids(schema, row_filter)
    return any(isinstance(schema.find_field(i).field_type, TimestamptzType) for i in ids)
