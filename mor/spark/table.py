"""`MorTable`: a mor table with Delta Lake's Python API, Spark's one DML engine for mor tables.

    t = MorTable.for_name(spark, "db.events", warehouse="warehouse")
    t.delete("category = 'x'")
    t.update("id < 10", set={"n": "n + 1"})                    # SQL strings or Columns
    (t.alias("t").merge(updates.alias("s"), "t.id = s.id")
        .when_matched_update(set={"n": "s.n"}, condition="s.n > t.n")
        .when_matched_delete(condition="s.deleted")
        .when_not_matched_insert_all()
        .execute())                                           # whenMatchedUpdate(...) ... too
    t.merge(updates, ["id"]).when_matched_update_all().execute()  # on key columns
    t.upsert(updates, ["id"])

`mor.spark.delete/update/merge/upsert/compact` (mor/spark/functions.py) are this class's verbs
as functions. Conditions and values are Spark SQL text or `pyspark.sql.Column`s; values may also
be Python literals or `mor.lit(...)` (text as itself); a condition may be a pyiceberg filter. The
text means the same wherever it runs: mor reads Spark SQL too (mor/expr), so the engine is
chosen by the plan's shape, never by what the text means:
  - DELETE/UPDATE whose condition and values are text, literals or a pyiceberg filter that mor
    evaluates, in a session in UTC: mor's matcher finds the rows on the executors, no shuffle
    (mor/spark/dml.py); with a Column, or a function only Spark evaluates, Spark's plan
    (mor/spark/sql_dml.py);
  - MERGE on key columns (a list of names for the condition) with no Column in its clauses, and
    every UPSERT: the key engine (mor/spark/dml_merge.py), which merges a small source on the
    driver; any other MERGE, Spark's join.
A `pyarrow.compute` expression is the local API's, refused here (InvalidArgumentError). Every verb commits one
snapshot through `run_dml` (mor/dml/runner.py) with the local conflict checks and re-planning,
in the table's `write.delete.mode`/`write.update.mode`/`write.merge.mode` unless `mode=` says
otherwise; `idempotency=(app_id, version)` as the local verbs'. On a v3 table an updated row
keeps its `_row_id`.

Bad input is refused before anything is written (mor/spark/sql_dml.py says how). Every method
raises mor errors as themselves, not wrapped by Spark (mor/spark/errors.py).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import pyarrow.compute as pc
from pyiceberg.expressions import BooleanExpression
from pyspark.sql import Column, DataFrame
from pyspark.sql.types import LongType, MapType, StringType, StructField, StructType, TimestampType

from mor.api.table import Table
from mor.dml.merge_clauses import MergeClauses
from mor.dml.runner import run_dml, write_mode
from mor.dml.update import updated_columns
from mor.errors import InvalidArgumentError, MorError
from mor.expr.filters import bind_filter, parse_filter
from mor.format.properties import DELETE_MODE_PROPERTY, MERGE_MODE_PROPERTY, UPDATE_MODE_PROPERTY
from mor.spark.apply_changes import check_writable_columns
from mor.spark.dml import matched_rows_plan
from mor.spark.dml_merge import PATHS, key_engine_reads, merge_on_keys, upsert_on_keys
from mor.spark.errors import spark_errors
from mor.spark.fast_path import read_table
from mor.spark.file_paths import check_metadata_columns_free
from mor.spark.options import TableRef
from mor.spark.sql_dml import aliased, as_column, condition_column, delete_plan, merge_plan, pruning_filter, session_in_utc, update_plan

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from mor.format.metadata import Snapshot
    from mor.maintenance.compact import CompactionResult
    from mor.maintenance.expire import ExpireResult

ColumnLike = str | Column

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


class MorTable:
    """A mor table, for Spark (see the module docstring). Made by `for_name` or `for_path`."""

    def __init__(self, spark: SparkSession, table: Table, alias: str | None = None, *, refresh: bool = True):
        """`refresh`: each verb first sees the commits made since (as Delta's table does);
        False works on `table` as it is, as the local verbs do (mor/spark/functions.py). Registers
        mor with `spark` (`mor.spark.register`: cheap once done), which the verbs read through."""
        from mor.spark.registration import register

        register(spark)
        self.spark = spark
        self.table = table
        self._alias = alias
        self._refresh = refresh

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

    def branch(self, name: str) -> MorTable:
        """This table's branch `name`: reads see its head, DML and compaction commit to it."""
        with spark_errors():
            return MorTable(self.spark, self.table.branch(name), self._alias, refresh=self._refresh)

    @spark_errors()
    def restore(self, version: int | dt.datetime | str) -> Snapshot:
        """Delta's RESTORE TABLE ... TO VERSION / TIMESTAMP AS OF: the table as it was at
        `version` (a snapshot id, or a time: a datetime or ISO text, the snapshot current then)
        made current again, in one commit (`Table.restore`)."""
        if isinstance(version, str):
            version = _time(version, "restore takes a snapshot id or a time")
        return self._writable().restore(version)

    def alias(self, name: str) -> MorTable:
        """This table under `name` in MERGE conditions and values."""
        return MorTable(self.spark, self.table, name, refresh=self._refresh)

    # -- reading and maintenance -----------------------------------------------------------------

    @spark_errors()
    def to_df(self) -> DataFrame:
        """The table's live rows (`mor.spark.read_table`), as of its latest commit."""
        return read_table(self.spark, self._fresh())

    toDF = to_df

    @spark_errors()
    def history(self) -> DataFrame:
        """The snapshots, newest first: id, parent, sequence number, time, operation, summary."""
        snapshots: list[Snapshot] = sorted(self._fresh().snapshots(), key=lambda s: (s.sequence_number, s.timestamp_ms), reverse=True)
        rows = [
            (s.snapshot_id, s.parent_snapshot_id, s.sequence_number, dt.datetime.fromtimestamp(s.timestamp_ms / 1000, dt.UTC),
             s.operation or None, dict(s.summary))
            for s in snapshots
        ]  # fmt: skip
        return self.spark.createDataFrame(rows, HISTORY_SCHEMA)

    @spark_errors()
    def inspect(self, name: str, snapshot_id: int | None = None) -> DataFrame:
        """A metadata table (`"files"`, `"snapshots"`, `"partitions"`, ...: mor/api/inspect.py)
        as a DataFrame, with the columns Iceberg-Spark's `db.t.<name>` has; `snapshot_id` for
        the tables of one snapshot (default: the current one)."""
        from mor.api.inspect import METADATA_TABLES, SNAPSHOT_TABLES  # imported on first use

        if name not in METADATA_TABLES:
            raise InvalidArgumentError(f"no metadata table {name!r}; there are {', '.join(sorted(METADATA_TABLES))}")
        read = getattr(self._fresh().inspect, name)
        if snapshot_id is not None and name not in SNAPSHOT_TABLES:
            raise InvalidArgumentError(f"snapshot_id goes with {', '.join(sorted(SNAPSHOT_TABLES))}, not {name}")
        return self.spark.createDataFrame(read() if snapshot_id is None else read(snapshot_id))

    @spark_errors()
    def expire_snapshots(
        self,
        older_than: dt.timedelta | dt.datetime | str | None = None,
        retain_last: int | None = None,
        *,
        allow_short_retention: bool = False,
        dry_run: bool = False,
    ) -> ExpireResult:
        """`Table.expire_snapshots` on the table as of now: snapshots older than `older_than` (an
        age, a time, or ISO text) beyond the newest `retain_last` of each branch removed, with the
        files only they read; the table's retention settings apply, as locally."""
        if isinstance(older_than, str):
            older_than = _time(older_than, "expire_snapshots' older_than is an age or a time")
        return self._writable().expire_snapshots(older_than, retain_last, allow_short_retention=allow_short_retention, dry_run=dry_run)

    def compact(self, *args: Any, **options: Any) -> CompactionResult:
        """`Table.compact` (its arguments, every option of it) with the bins rewritten on Spark's
        executors: `mor.spark.compact` (mor/spark/maintenance.py) on the table as of now."""
        from mor.spark.maintenance import compact  # imported on first use

        return compact(self.spark, self._fresh(), *args, **options)

    # -- DML -------------------------------------------------------------------------------------

    @spark_errors()
    def delete(self, condition: Any = None, *, mode: str | None = None, idempotency: tuple[str, int] | None = None) -> Snapshot | None:
        """Remove the live rows where `condition` holds (every row when None): SQL text, a Column,
        or a pyiceberg filter. The new snapshot, or None when no row matched."""
        table = self._writable()
        mode = write_mode(table, mode, DELETE_MODE_PROPERTY)
        read = _read_by_mor(self.spark, table, condition, None)
        if read is not None:
            plan = matched_rows_plan(self.spark, table, read[0], mode)
        else:
            pruning = pruning_filter(self.spark, table, condition)
            plan = delete_plan(self.spark, table, condition_column(condition, table.schema()), mode, pruning)
        return run_dml(table, "delete", plan, idempotency=idempotency)

    @spark_errors()
    def update(
        self,
        condition: Any = None,
        set: Mapping[str, Any] | None = None,
        *,
        mode: str | None = None,
        idempotency: tuple[str, int] | None = None,
    ) -> Snapshot | None:
        """Set columns of the live rows where `condition` holds (every row when None): `set`
        maps columns to Spark SQL text, Columns or literals over the row (`{"n": "n + 1"}`). The
        new snapshot, or None when no row matched."""
        if not set:
            raise InvalidArgumentError("update needs set={column: value, ...}")
        table = self._writable()
        self._check_columns(table, set, "update")
        mode = write_mode(table, mode, UPDATE_MODE_PROPERTY)
        read = _read_by_mor(self.spark, table, condition, set)
        if read is not None:
            plan = matched_rows_plan(self.spark, table, read[0], mode, read[1])
        else:
            nested = [n for n in set if _is_field(table, n)]
            if nested:
                raise InvalidArgumentError(
                    f"fields inside structs ({', '.join(nested)}) are set by Spark SQL text or literals, not Columns"
                )
            check_writable_columns(table)
            values = {n: as_column(v, f"the value of {n!r}") for n, v in set.items()}
            pruning = pruning_filter(self.spark, table, condition)
            plan = update_plan(self.spark, table, condition_column(condition, table.schema()), values, mode, pruning)
        return run_dml(table, "update", plan, idempotency=idempotency)

    def merge(self, source: DataFrame, condition: ColumnLike | Sequence[str]) -> MorMergeBuilder:
        """A MERGE of `source` into this table on `condition` (over both aliases), or on key
        columns (a list of names, matched as SQL's `=`: a key with a null matches no row); add clauses, then `execute()`."""
        return MorMergeBuilder(self, source, condition)

    @spark_errors()
    def upsert(
        self,
        source: DataFrame,
        on: Sequence[str],
        *,
        mode: str | None = None,
        path: str = "auto",
        idempotency: tuple[str, int] | None = None,
    ) -> Snapshot | None:
        """Replace the live rows holding a key (`on`) of `source` with its row, insert the rest
        (`table.upsert`, mor/spark/dml_merge.py). `path` as `MorMergeBuilder.execute`'s."""
        table = self._writable()
        return upsert_on_keys(self.spark, table, source, list(on), write_mode(table, mode, MERGE_MODE_PROPERTY), path, idempotency)

    # -- helpers ---------------------------------------------------------------------------------

    def _fresh(self) -> Table:
        if self._refresh and not self.table.read_only:  # a catalog table: see commits made since
            self.table.refresh()
        return self.table

    def _writable(self) -> Table:
        table = self._fresh()
        table.operations()
        check_metadata_columns_free(table.schema())
        return table

    @staticmethod
    def _check_columns(table: Table, values: Mapping[str, Any], verb: str) -> None:
        names = {f.name for f in table.schema().fields}
        unknown = [c for c in values if c not in names and not (verb == "update" and _is_field(table, c))]
        if unknown:
            raise InvalidArgumentError(f"{verb} names columns {unknown} that table {table.identifier} does not have")


def _is_field(table: Table, name: str) -> bool:
    """Does `name` (`addr.city`) name a field inside a struct column?"""
    try:
        table.schema().find_field(name)
    except ValueError:
        return False
    return "." in name


def _time(text: str, what: str) -> dt.datetime:
    try:
        return dt.datetime.fromisoformat(text)
    except ValueError:
        raise InvalidArgumentError(f"{what} (a time as ISO text: '2025-01-15 12:00'), not {text!r}") from None


def _refuse_pyarrow(what: str, parts: Iterable[Any]) -> None:
    """On Spark, conditions and values are Spark SQL text, Columns or literals: a pyarrow
    expression is the local API's (its rows are Arrow's), refused with where it belongs."""
    for part in parts:
        if isinstance(part, pc.Expression):
            raise InvalidArgumentError(
                f"{part} is a pyarrow expression, which the local API takes (table.{what}(...)); on Spark "
                'give Spark SQL text ("n + 1", a text value quoted: "\'x\'") or a Column'
            )


def _read_by_mor(
    spark: SparkSession, table: Table, condition: Any, values: Mapping[str, Any] | None
) -> tuple[BooleanExpression, dict[str, pc.Expression] | None] | None:
    """The filter and new columns of a DELETE or UPDATE that mor's own matcher runs on the
    executors (no shuffle: each task reads and changes its own files), or None for Spark's plan.
    mor reads the same Spark SQL text as Spark (mor/expr), so this is a choice of engine by the
    plan's shape, never of meaning: mor's when every part is text, a literal or a pyiceberg
    filter that mor reads without complaint, in a session whose zone is UTC (mor's reading of a
    zone-less time); Spark's for Columns, or text with what only Spark evaluates."""
    parts = [condition, *(values or {}).values()]
    _refuse_pyarrow("update" if values else "delete", parts)
    if any(isinstance(p, Column) for p in parts) or not session_in_utc(spark):
        return None
    if condition is not None and not isinstance(condition, (str, BooleanExpression)):
        return None
    try:
        row_filter = _bound(table, condition)
        columns = updated_columns(table, dict(values)) if values else None
    except MorError:
        # A function mor does not evaluate, a column named in another case (Spark resolves names
        # case-insensitively), or a mistake: Spark's plan reads it, or says in Spark's words what is wrong.
        return None
    return row_filter, columns


def _bound(table: Table, condition: BooleanExpression | str | None) -> BooleanExpression:
    row_filter = parse_filter(condition)
    bind_filter(table.schema(), row_filter)  # InvalidFilterError now, not in a task
    return row_filter


@dataclass(frozen=True)
class MorMergeBuilder:
    """The clauses of a MERGE (a `MergeClauses`, mor/dml/merge_clauses.py), added in order: each
    method returns a new builder."""

    table: MorTable
    source: DataFrame
    condition: ColumnLike | Sequence[str]
    clauses: MergeClauses = MergeClauses()

    def when_matched_update(self, set: Mapping[str, Any], condition: Any = None) -> MorMergeBuilder:
        return replace(self, clauses=self.clauses.when_matched_update(set, condition))

    def when_matched_update_all(self, condition: Any = None) -> MorMergeBuilder:
        return replace(self, clauses=self.clauses.when_matched_update_all(condition))

    def when_matched_delete(self, condition: Any = None) -> MorMergeBuilder:
        return replace(self, clauses=self.clauses.when_matched_delete(condition))

    def when_not_matched_insert(self, values: Mapping[str, Any], condition: Any = None) -> MorMergeBuilder:
        return replace(self, clauses=self.clauses.when_not_matched_insert(values, condition))

    def when_not_matched_insert_all(self, condition: Any = None) -> MorMergeBuilder:
        return replace(self, clauses=self.clauses.when_not_matched_insert_all(condition))

    # Delta's names, so Delta code ports with a rename of the table class.
    whenMatchedUpdate = when_matched_update
    whenMatchedUpdateAll = when_matched_update_all
    whenMatchedDelete = when_matched_delete
    whenNotMatchedInsert = when_not_matched_insert
    whenNotMatchedInsertAll = when_not_matched_insert_all

    @spark_errors()
    def execute(self, *, mode: str | None = None, path: str = "auto", idempotency: tuple[str, int] | None = None) -> Snapshot | None:
        """Run the MERGE: one snapshot, or None when no clause changed anything. `path`, for a
        MERGE on key columns that the key engine runs: "auto" (a small source merged on the
        driver), "driver" or "distributed" (mor/spark/dml_merge.py)."""
        clauses = self.clauses
        clauses.check()
        if path not in PATHS:
            raise InvalidArgumentError(f"path must be one of {list(PATHS)}, got {path!r}")
        table = self.table._writable()
        for clause in clauses:
            if clause.values is not None:
                MorTable._check_columns(table, clause.values, "merge")
        mode = write_mode(table, mode, MERGE_MODE_PROPERTY)
        keys = _key_names(self.condition)
        _refuse_pyarrow("merge", clauses.expressions())
        by_keys = keys is not None and not any(isinstance(e, Column) for e in clauses.expressions())
        if by_keys and keys is not None and key_engine_reads(table, self.source, keys, clauses):
            # the key engine: an equi-join on the keys, by mor (a small source on the driver); it reads the clauses' text as Spark's
            return merge_on_keys(self.table.spark, table, self.source, keys, clauses, mode, path, idempotency)
        if clauses.has_update or clauses.has_insert:
            check_writable_columns(table)
        condition = keys if keys is not None else as_column(self.condition, "the merge condition")
        plan = merge_plan(self.table.spark, table, aliased(self.source), condition, clauses, self.table._alias or "target", mode)
        return run_dml(table, "merge", plan, idempotency=idempotency)


def _key_names(condition: object) -> list[str] | None:
    """The key columns of a condition given as a list of names; None for SQL text or a Column."""
    if isinstance(condition, (str, Column)):
        return None
    if isinstance(condition, Sequence) and condition and all(isinstance(k, str) for k in condition):
        return list(condition)
    raise InvalidArgumentError(f"a merge condition is Spark SQL text, a Column or a list of key columns, got {condition!r}")
