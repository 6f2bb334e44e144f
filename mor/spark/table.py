"""`MorTable`: a mor table with Delta Lake's Python API, conditions and values evaluated by Spark.

    t = MorTable.for_name(spark, "db.events", warehouse="warehouse")
    t.delete("category = 'x'")
    t.update("id < 10", set={"n": "n + 1"})                    # SQL strings or Columns
    (t.alias("t").merge(updates.alias("s"), "t.id = s.id")
        .when_matched_update(set={"n": "s.n"}, condition="s.n > t.n")
        .when_matched_delete(condition="s.deleted")
        .when_not_matched_insert_all()
        .execute())                                           # whenMatchedUpdate(...) ... too

Conditions and values are Spark SQL text or `pyspark.sql.Column`s. Each verb reads the target's
live rows through format "mor" with their `_file`/`_pos` (mor/spark/apply_changes.py), lets Spark
evaluate the condition, values and join, and hands the resulting change rows to one job that
writes delete files (or deletion vectors, or copy-on-write rewrites, per the table's
`write.delete.mode`/`write.update.mode`/`write.merge.mode`) and new rows, then commits one snapshot
through `run_dml` (mor/dml/runner.py), with the local conflict checks and re-planning. A condition given as
text that also parses as a mor filter (`parse_filter`) prunes the files read; others read every
file. On a v3 table an updated row keeps its `_row_id`.

MERGE follows Delta: the matched clauses are tried in order and the first whose condition holds
applies (likewise the not-matched ones); a matched row no clause applies to stays; a target row
that several source rows match and a clause changes is a DuplicateKeyError; update values not
given keep the target's, insert values not given are null. The source is named by its own alias
(`df.alias("s")`), else "source"; the target by `alias(...)`, else "target".

Bad input is refused before anything is written: a condition Spark cannot resolve is an
InvalidFilterError, a value that does not store into its column a SchemaMismatchError (store
assignment as for writes, mor/spark/store_assignment.py). Every method raises mor errors as
themselves, not wrapped by Spark (mor/spark/errors.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import reduce
from typing import TYPE_CHECKING, Any, TypeVar

from pyiceberg.expressions import AlwaysTrue, BooleanExpression
from pyiceberg.schema import Schema
from pyiceberg.types import TimestamptzType
from pyspark.errors import AnalysisException
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_schema as spark_to_arrow_schema
from pyspark.sql.types import LongType, MapType, StringType, StructField, StructType, TimestampType

from mor.api.table import Table
from mor.dml.runner import run_dml, write_mode
from mor.errors import InvalidArgumentError, InvalidFilterError, MorError, SchemaMismatchError
from mor.expr.filters import bind_filter, filter_field_ids, parse_filter
from mor.format.properties import DELETE_MODE_PROPERTY, MERGE_MODE_PROPERTY, UPDATE_MODE_PROPERTY
from mor.format.spec import ROW_ID_NAME
from mor.spark.apply_changes import WRITE_COLUMN, TargetRows, apply_changes, check_writable_columns, target_rows
from mor.spark.errors import spark_errors
from mor.spark.fast_path import read_table
from mor.spark.options import TableRef
from mor.spark.scan import FILE_COLUMN, POS_COLUMN, check_metadata_columns_free
from mor.spark.store_assignment import check_assignable
from mor.spark.types import spark_type

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from mor.format.metadata import Snapshot

ColumnLike = str | Column
T = TypeVar("T")

HISTORY_SCHEMA = StructType(
    [
        StructField("snapshot_id", LongType(), False),
        StructField("parent_id", LongType()),
        StructField("sequence_number", LongType(), False),
        StructField("timestamp", TimestampType(), False),
        StructField("operation", StringType()),
        StructField("summary", MapType(StringType(), StringType())),
    ]
)


def _column(value: ColumnLike) -> Column:
    return F.expr(value) if isinstance(value, str) else value


def _condition(value: ColumnLike | None) -> Column:
    return F.lit(True) if value is None else _column(value)


def _resolved(what: str, error: type[MorError], build: Callable[[], T]) -> T:
    """`build()`, whose DataFrame Spark analyses as it is built: an unresolvable column or a bad
    expression becomes `error`."""
    try:
        return build()
    except AnalysisException as e:
        raise error(f"{what}: {str(e).splitlines()[0]}") from e


class MorTable:
    """A mor table, for Spark (see the module docstring). Made by `for_name` or `for_path`."""

    def __init__(self, spark: SparkSession, table: Table, alias: str | None = None):
        self.spark = spark
        self.table = table
        self._alias = alias

    @classmethod
    def for_name(
        cls, spark: SparkSession, name: str, warehouse: str | None = None, uri: str | None = None,
        properties: Mapping[str, str] | None = None, token: str | None = None, credential: str | None = None,
    ) -> MorTable:  # fmt: skip
        """The catalog table `namespace.table` (catalog as `load_catalog` takes it; `token` or
        `credential` for a REST catalog)."""
        options = {**(properties or {}), **({"token": token} if token else {}), **({"credential": credential} if credential else {})}
        with spark_errors():
            return cls(spark, TableRef(name, warehouse, uri, tuple(sorted(options.items()))).open())

    @classmethod
    def for_path(cls, spark: SparkSession, location: str, properties: Mapping[str, str] | None = None) -> MorTable:
        """A table by its metadata file or folder: read-only (DML raises MorError)."""
        with spark_errors():
            return cls(spark, TableRef(location, properties=tuple(sorted((properties or {}).items()))).open())

    def alias(self, name: str) -> MorTable:
        """This table under `name` in MERGE conditions and values."""
        return MorTable(self.spark, self.table, name)

    # -- reading and maintenance -----------------------------------------------------------------

    @spark_errors()
    def to_df(self) -> DataFrame:
        """The table's live rows (`mor.spark.read_table`), as of its latest commit."""
        return read_table(self.spark, self._fresh())

    toDF = to_df

    @spark_errors()
    def history(self) -> DataFrame:
        """The snapshots, newest first: id, parent, sequence number, time, operation, summary."""
        import datetime as dt

        snapshots: list[Snapshot] = sorted(self._fresh().snapshots(), key=lambda s: (s.sequence_number, s.timestamp_ms), reverse=True)
        rows = [
            (s.snapshot_id, s.parent_snapshot_id, s.sequence_number, dt.datetime.fromtimestamp(s.timestamp_ms / 1000, dt.UTC),
             s.operation or None, dict(s.summary))
            for s in snapshots
        ]  # fmt: skip
        return self.spark.createDataFrame(rows, HISTORY_SCHEMA)

    @spark_errors()
    def compact(self, **kwargs: Any) -> Any:
        """Compact the table: `mor.spark.maintenance.compact` (distributed) when mor has it, else
        `Table.compact` on the driver; keyword arguments as theirs."""
        try:
            from mor.spark import maintenance
        except ImportError:
            maintenance = None
        if maintenance is not None and hasattr(maintenance, "compact"):
            return maintenance.compact(self.spark, self._fresh(), **kwargs)
        return self._fresh().compact(**kwargs)

    # -- DML -------------------------------------------------------------------------------------

    @spark_errors()
    def delete(self, condition: ColumnLike | None = None) -> Snapshot | None:
        """Remove the live rows where `condition` holds (every row when None)."""
        table = self._writable()
        mode = write_mode(table, None, DELETE_MODE_PROPERTY)
        pruning = self._pruning(condition)

        def plan() -> Any:
            target = target_rows(self.spark, table, pruning)
            matched = _resolved("bad delete condition", InvalidFilterError, lambda: target.rows.filter(_condition(condition)))
            changes = matched.select(FILE_COLUMN, POS_COLUMN, F.lit(False).alias(WRITE_COLUMN))
            return apply_changes(self.spark, table, target, changes, "delete", mode, pruning)

        return run_dml(table, "delete", plan)

    @spark_errors()
    def update(self, condition: ColumnLike | None = None, set: Mapping[str, ColumnLike] | None = None) -> Snapshot | None:
        """Set columns of the live rows where `condition` holds: `set` maps columns to Spark SQL
        text or Columns over the row (`{"n": "n + 1"}`)."""
        if not set:
            raise InvalidArgumentError("update needs set={column: value, ...}")
        table = self._writable()
        check_writable_columns(table)
        mode = write_mode(table, None, UPDATE_MODE_PROPERTY)
        pruning = self._pruning(condition)
        self._check_columns(table, set, "update")

        def plan() -> Any:
            target = target_rows(self.spark, table, pruning)
            matched = _resolved("bad update condition", InvalidFilterError, lambda: target.rows.filter(_condition(condition)))
            values = {f.name: _column(set[f.name]) if f.name in set else F.col(f"`{f.name}`") for f in table.schema().fields}
            changes = _resolved(
                "bad update value", InvalidArgumentError,
                lambda: matched.select(
                    F.col(FILE_COLUMN), F.col(POS_COLUMN), F.lit(True).alias(WRITE_COLUMN),
                    *[c.alias(n) for c, n in zip(_stored(table, matched, values), values)],
                    *_row_ids(target, F.col(ROW_ID_NAME)),
                ),
            )  # fmt: skip
            return apply_changes(self.spark, table, target, changes, "update", mode, pruning)

        return run_dml(table, "update", plan)

    def merge(self, source: DataFrame, condition: ColumnLike) -> MorMergeBuilder:
        """A MERGE of `source` into this table on `condition` (over both aliases); add clauses,
        then `execute()`."""
        return MorMergeBuilder(self, source, condition)

    # -- helpers ---------------------------------------------------------------------------------

    def _fresh(self) -> Table:
        if not self.table.read_only:  # a catalog table: see commits made since
            self.table.refresh()
        return self.table

    def _writable(self) -> Table:
        table = self._fresh()
        table.operations()
        check_metadata_columns_free(table.schema())
        return table

    def _pruning(self, condition: ColumnLike | None) -> BooleanExpression:
        """The mor filter of a text condition that is one (files it cannot match are not read),
        else AlwaysTrue."""
        if not isinstance(condition, str):
            return AlwaysTrue()
        try:
            row_filter = parse_filter(condition)
            bind_filter(self.table.schema(), row_filter)
        except MorError:
            return AlwaysTrue()
        if not _session_in_utc(self.spark) and _reads_timestamptz(self.table.schema(), row_filter):
            # A zone-less time means UTC to mor's filter but the session's zone to Spark's condition:
            # pruning by mor's reading could skip files that Spark's condition matches.
            return AlwaysTrue()
        return row_filter

    @staticmethod
    def _check_columns(table: Table, values: Mapping[str, Any], verb: str) -> None:
        names = {f.name for f in table.schema().fields}
        unknown = [c for c in values if c not in names]
        if unknown:
            raise InvalidArgumentError(f"{verb} names columns {unknown} that table {table.identifier} does not have")


def _stored(table: Table, rows: DataFrame, values: Mapping[str, Column]) -> list[Column]:
    """`values` (one per table column) cast to the table's Spark types, after checking that each
    stores into its column (SchemaMismatchError before anything is written)."""
    fields = table.schema().fields
    typed = rows.select(*[values[f.name].alias(f.name) for f in fields]).schema
    try:
        arrow = spark_to_arrow_schema(typed, timezone="UTC")
    except (TypeError, NotImplementedError) as e:
        raise SchemaMismatchError(f"values of {typed.simpleString()} cannot be written: {e}") from e
    check_assignable(arrow, table.schema())
    return [values[f.name].cast(spark_type(f.field_type)) for f in fields]


def _row_ids(target: TargetRows, row_id: Column) -> list[Column]:
    return [row_id.alias(ROW_ID_NAME)] if target.row_ids else []


@dataclass(frozen=True)
class _Clause:
    condition: ColumnLike | None
    values: Mapping[str, ColumnLike] | None = None  # None: every column from the source (`*_all`)
    delete: bool = False


@dataclass(frozen=True)
class MorMergeBuilder:
    """The clauses of a MERGE, added in order (each method returns a new builder)."""

    table: MorTable
    source: DataFrame
    condition: ColumnLike
    matched: tuple[_Clause, ...] = ()
    not_matched: tuple[_Clause, ...] = field(default=())

    def when_matched_update(self, set: Mapping[str, ColumnLike], condition: ColumnLike | None = None) -> MorMergeBuilder:
        return replace(self, matched=(*self.matched, _Clause(condition, dict(set))))

    def when_matched_update_all(self, condition: ColumnLike | None = None) -> MorMergeBuilder:
        return replace(self, matched=(*self.matched, _Clause(condition)))

    def when_matched_delete(self, condition: ColumnLike | None = None) -> MorMergeBuilder:
        return replace(self, matched=(*self.matched, _Clause(condition, delete=True)))

    def when_not_matched_insert(self, values: Mapping[str, ColumnLike], condition: ColumnLike | None = None) -> MorMergeBuilder:
        return replace(self, not_matched=(*self.not_matched, _Clause(condition, dict(values))))

    def when_not_matched_insert_all(self, condition: ColumnLike | None = None) -> MorMergeBuilder:
        return replace(self, not_matched=(*self.not_matched, _Clause(condition)))

    # Delta's names, so Delta code ports with a rename of the table class.
    whenMatchedUpdate = when_matched_update
    whenMatchedUpdateAll = when_matched_update_all
    whenMatchedDelete = when_matched_delete
    whenNotMatchedInsert = when_not_matched_insert
    whenNotMatchedInsertAll = when_not_matched_insert_all

    @spark_errors()
    def execute(self) -> Snapshot | None:
        """Run the MERGE: one snapshot, or None when no clause changed anything."""
        if not self.matched and not self.not_matched:
            raise InvalidArgumentError("merge needs at least one when_matched_* or when_not_matched_* clause")
        table = self.table._writable()
        if any(not c.delete for c in self.matched) or self.not_matched:
            check_writable_columns(table)
        for clause in (*self.matched, *self.not_matched):
            if clause.values is not None:
                MorTable._check_columns(table, clause.values, "merge")
        mode = write_mode(table, None, MERGE_MODE_PROPERTY)
        source = _aliased(self.source)

        def plan() -> Any:
            target = target_rows(self.table.spark, table)
            changes = self._changes(table, source, target)
            return apply_changes(self.table.spark, table, target, changes, "merge", mode)

        return run_dml(table, "merge", plan)

    def _changes(self, table: Table, source: DataFrame, target: TargetRows) -> DataFrame:
        names = [f.name for f in table.schema().fields]
        rows = target.rows.alias(self.table._alias or "target")
        how = "left" if self.not_matched else "inner"  # unmatched source rows only matter to inserts
        joined = _resolved("bad merge condition", InvalidFilterError, lambda: source.join(rows, _column(self.condition), how))
        matched = rows[FILE_COLUMN].isNotNull()
        chosen: Column | None = None  # the number of the clause that applies to each joined row
        for i, clause in enumerate(self.matched):
            chosen = _first(chosen, matched & _condition(clause.condition), i)
        for j, clause in enumerate(self.not_matched):
            chosen = _first(chosen, ~matched & _condition(clause.condition), len(self.matched) + j)
        assert chosen is not None
        clauses = [*self.matched, *self.not_matched]
        writes = [i for i, c in enumerate(clauses) if not c.delete]
        values = {}
        for i in writes:
            clause, is_update = clauses[i], i < len(self.matched)
            given = clause.values if clause.values is not None else {n: _source_column(source, n) for n in names}
            default: Callable[[str], Column] = (lambda n: rows[f"`{n}`"]) if is_update else (lambda n: F.lit(None))
            raw = {n: _column(given[n]) if n in given else default(n) for n in names}
            what = "merge update value" if is_update else "merge insert value"
            values[i] = _resolved(f"bad {what}", InvalidArgumentError, lambda raw=raw: _stored(table, joined, raw))  # type: ignore[misc]
        action = F.col("__mor_clause")
        columns = [
            reduce(
                lambda acc, i: acc.when(action == i, values[i][k]), writes[1:], F.when(action == writes[0], values[writes[0]][k])
            ).alias(n)
            for k, n in enumerate(names)
        ] if writes else []  # fmt: skip
        removes = action < len(self.matched)
        checked = _resolved("bad merge clause condition", InvalidFilterError, lambda: joined.withColumn("__mor_clause", chosen))
        row_id = [F.when(removes, rows[ROW_ID_NAME]).alias(ROW_ID_NAME)] if target.row_ids and writes else []
        return checked.where(action.isNotNull()).select(
            F.when(removes, rows[FILE_COLUMN]).alias(FILE_COLUMN),
            F.when(removes, rows[POS_COLUMN]).alias(POS_COLUMN),
            action.isin(writes).alias(WRITE_COLUMN) if writes else F.lit(False).alias(WRITE_COLUMN),
            *columns,
            *row_id,
        )


def _first(chosen: Column | None, condition: Column, number: int) -> Column:
    return F.when(condition, F.lit(number)) if chosen is None else chosen.when(condition, F.lit(number))


def _source_column(source: DataFrame, name: str) -> Column:
    if name not in source.columns:
        raise SchemaMismatchError(f"*_all clauses need source column {name!r}, which the source does not have")
    return source[f"`{name}`"]


def _aliased(source: DataFrame) -> DataFrame:
    """The source under its own alias, else "source"."""
    try:
        plan = source._jdf.queryExecution().analyzed()  # classic Spark: is the top of the plan an alias?
        if plan.nodeName() == "SubqueryAlias":
            return source
    except Exception:
        pass
    return source.alias("source")


_UTC_ZONES = {"UTC", "Etc/UTC", "GMT", "Etc/GMT", "Z", "+00:00", "Zulu", "UCT", "Etc/UCT", "Universal", "Etc/Universal"}


def _session_in_utc(spark: SparkSession) -> bool:
    return (spark.conf.get("spark.sql.session.timeZone") or "UTC") in _UTC_ZONES


def _reads_timestamptz(schema: Schema, row_filter: BooleanExpression) -> bool:
    ids = filter_field_ids(schema, row_filter)
    return any(isinstance(schema.find_field(i).field_type, TimestamptzType) for i in ids)
