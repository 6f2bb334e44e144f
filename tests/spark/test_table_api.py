"""MorTable, the Delta-style API: the same rows as the local verbs (v2 and v3, merge-on-read and
copy-on-write), Delta's MERGE semantics, bad input refused with the table unchanged."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyiceberg.expressions import EqualTo
from spark_helpers import SCHEMA, canonical, rows, source_rows, spark_rows

import mor
import mor.spark
from mor.errors import (
    DuplicateKeyError,
    InvalidArgumentError,
    InvalidFilterError,
    MorError,
    RetentionTooShortError,
    SchemaMismatchError,
)
from mor.spark.table import MorTable


def twin_tables(catalog: mor.Catalog, version: int, properties: dict[str, str] | None = None) -> tuple[mor.Table, mor.Table]:
    """Two tables with the same history: one changed locally, one through MorTable."""
    tables = []
    for name in ("db.local", "db.spark"):
        t = catalog.create_table(name, SCHEMA, format_version=version, properties=properties)
        t.append(rows(range(0, 60)))
        t.append(rows(range(60, 100)))
        t.delete("id in (3, 10, 17, 40, 65)")
        tables.append(t)
    return tables[0], tables[1]


def with_lineage(table: mor.Table) -> list[tuple]:
    columns = [f.name for f in SCHEMA] + (["_row_id"] if table.metadata.format_version >= 3 else [])
    return canonical(table.scan(columns=columns).to_arrow())


@pytest.mark.parametrize(
    ("version", "mode"), [(2, "merge-on-read"), (3, "merge-on-read"), (2, "copy-on-write")], ids=["v2", "v3", "v2-cow"]
)
def test_delete_and_update_change_the_rows_the_local_verbs_change(
    spark: Any, catalog: mor.Catalog, warehouse: Path, version: int, mode: str
) -> None:
    from pyspark.sql import functions as F

    properties = {"write.delete.mode": mode, "write.update.mode": mode}
    local, remote = twin_tables(catalog, version, properties)
    t = MorTable.for_name(spark, "db.spark", warehouse=str(warehouse))

    local.delete("category = 'a' and id < 80")
    t.delete("category = 'a' and id < 80")  # text that is also a mor filter: prunes files
    local.update({"n": "n * 2", "category": "'z'"}, where="id >= 30 and id < 70")
    t.update(F.col("id").between(30, 69), set={"n": F.col("n") * 2, "category": "'z'"})  # Columns, and SQL text
    local.update({"n": "n + 1"}, where="category is null")
    t.update("category IS NULL", set={"n": "n + 1"})

    remote.refresh()
    assert with_lineage(remote) == with_lineage(local)  # v3: updated rows keep their _row_id
    assert remote.current_snapshot().operation == local.current_snapshot().operation
    assert len(remote.snapshots()) == len(local.snapshots())  # one snapshot per verb
    assert spark_rows(t.to_df()) == canonical(local.scan().to_arrow())


@pytest.mark.parametrize("version", [2, 3])
def test_merge_changes_the_rows_the_local_merge_changes(spark: Any, catalog: mor.Catalog, warehouse: Path, version: int) -> None:
    local, _ = twin_tables(catalog, version)
    source = source_rows(list(range(50, 130, 2)), n=1000)
    local.merge(source, on=["id"], when_matched_delete="source.id > 90", when_matched_update="*", when_not_matched_insert="*")
    (
        MorTable.for_name(spark, "db.spark", warehouse=str(warehouse))
        .alias("t")
        .merge(spark.createDataFrame(source).alias("s"), "t.id = s.id")
        .whenMatchedDelete(condition="s.id > 90")
        .whenMatchedUpdateAll()
        .whenNotMatchedInsertAll()
        .execute()
    )
    remote = catalog.load_table("db.spark")
    assert canonical(remote.scan().to_arrow()) == canonical(local.scan().to_arrow())
    assert len(remote.snapshots()) == len(local.snapshots())
    if version >= 3:  # updated rows keep their _row_id; inserted rows get new ones (numbered by the files they land in)
        old = [r for r in with_lineage(local) if r[0] < 100]
        assert [r for r in with_lineage(remote) if r[0] < 100] == old
        new_ids = [r[-1] for r in with_lineage(remote)]
        assert len(set(new_ids)) == len(new_ids) and None not in new_ids


def test_merge_tries_matched_clauses_in_order_and_inserts_given_values(spark: Any, catalog: mor.Catalog, warehouse: Path) -> None:
    from pyspark.sql import functions as F

    table = catalog.create_table("db.t", pa.schema([("id", pa.int64()), ("v", pa.int64()), ("note", pa.string())]))
    table.append(pa.table({"id": [1, 2, 3, 4], "v": [10, 20, 30, 40], "note": ["a", "b", "c", "d"]}))
    source = spark.createDataFrame([(1, 5), (2, 50), (3, 7), (9, 90), (10, 1)], "id long, v long")
    (
        MorTable.for_name(spark, "db.t", warehouse=str(warehouse))
        .merge(source, "target.id = source.id")  # default aliases
        .when_matched_update(set={"v": "source.v + target.v"}, condition="source.v > target.v")
        .when_matched_delete(condition=F.col("source.v") < 6)
        .when_matched_update(set={"note": F.lit("kept")})
        .when_not_matched_insert(values={"id": "source.id", "v": "source.v * 2"}, condition="source.v > 10")
        .execute()
    )
    assert canonical(catalog.load_table("db.t").scan().to_arrow()) == [
        (2, 70, "b"),  # first clause
        (3, 30, "kept"),  # third clause: the first two do not hold
        (4, 40, "d"),  # unmatched target row
        (9, 180, None),  # inserted; note not given: null
    ]  # 1 deleted by the second clause; 10 not inserted (its condition fails)


def test_a_target_row_matched_by_two_source_rows_is_refused(spark: Any, catalog: mor.Catalog, warehouse: Path) -> None:
    local, remote = twin_tables(catalog, 2)
    before = remote.metadata_location
    source = spark.createDataFrame([(5, 1), (5, 2)], "id long, n long")
    with pytest.raises(DuplicateKeyError, match="several source rows"):
        MorTable.for_name(spark, "db.spark", warehouse=str(warehouse)).merge(source, "source.id = target.id").when_matched_update(
            set={"n": "source.n"}
        ).execute()
    remote.refresh()
    assert remote.metadata_location == before


@pytest.mark.parametrize(
    ("change", "error"),
    [
        (lambda t: t.delete("nope = 1"), InvalidFilterError),
        (lambda t: t.update("id = 1", set={"nope": "1"}), InvalidArgumentError),
        (lambda t: t.update("id = 1", set={"n": "nope + 1"}), SchemaMismatchError),  # as the local API's
        (lambda t: t.update("id = 1", set={"n": "'x'"}), SchemaMismatchError),  # string into long
        (lambda t: t.update("id = 5", set={"id": "NULL"}), SchemaMismatchError),  # null into a required column, found by the task
        (lambda t: t.merge(t.to_df(), "target.id = source.nope").when_matched_delete().execute(), InvalidFilterError),
        (lambda t: t.merge(t.to_df(), "target.id = source.id").execute(), InvalidArgumentError),
    ],
    ids=["condition", "unknown-column", "value", "unsafe-cast", "null-into-required", "merge-condition", "no-clause"],
)
def test_bad_input_is_a_typed_error_and_leaves_the_table_unchanged(
    spark: Any, catalog: mor.Catalog, warehouse: Path, change: Any, error: type[MorError]
) -> None:
    _, remote = twin_tables(catalog, 2)
    before = remote.metadata_location
    files = {p for p in Path(warehouse).rglob("*") if p.is_file()}
    with pytest.raises(error):
        change(MorTable.for_name(spark, "db.spark", warehouse=str(warehouse)))
    remote.refresh()
    assert remote.metadata_location == before
    assert {p for p in Path(warehouse).rglob("*") if p.is_file()} == files


def test_history_compaction_and_read_only_tables(spark: Any, catalog: mor.Catalog, warehouse: Path) -> None:
    _, remote = twin_tables(catalog, 2)
    t = MorTable.for_name(spark, "db.spark", warehouse=str(warehouse))
    history = t.history().collect()
    assert [r.snapshot_id for r in history] == [s.snapshot_id for s in reversed(remote.snapshots())]
    assert [r.operation for r in history] == ["delete", "append", "append"]
    assert history[0].summary["operation"] == "delete"
    expected = canonical(remote.scan().to_arrow())
    t.compact(min_input_files=1)
    remote.refresh()
    assert remote.current_snapshot().operation == "replace"
    assert spark_rows(t.to_df()) == expected

    static = MorTable.for_path(spark, remote.metadata_location)
    assert spark_rows(static.toDF()) == expected
    with pytest.raises(MorError, match="read-only"):
        static.delete("id = 1")


def test_every_verb_returns_the_snapshot_it_commits_and_none_when_nothing_changes(
    spark: Any, catalog: mor.Catalog, warehouse: Path
) -> None:
    table = catalog.create_table("db.t", SCHEMA)
    table.append(rows(range(0, 20)))
    table.append(rows(range(20, 30)))
    t = MorTable.for_name(spark, "db.t", warehouse=str(warehouse))
    source = spark.createDataFrame(source_rows([1, 2, 100], n=7).to_pandas())
    verbs = [
        lambda: t.delete("id = 0"),
        lambda: t.delete(EqualTo("id", 1)),
        lambda: t.delete("id >= 20"),  # every row of the second file
        lambda: t.delete("id = 2", mode="copy-on-write"),
        lambda: t.update("id = 3", set={"n": "n + 1"}),
        lambda: t.update(EqualTo("id", 4), set={"n": "n + 1"}),
        lambda: t.merge(source, ["id"]).when_matched_update_all().when_not_matched_insert_all().execute(),
        lambda: t.alias("t").merge(source.alias("s"), "t.id = s.id").when_matched_delete().execute(),
        lambda: t.upsert(source, ["id"]),
        lambda: mor.spark.delete(spark, table.refresh(), "id = 5"),
        lambda: t.delete(),  # every row
    ]
    for verb in verbs:
        snapshot = verb()
        assert snapshot is not None and snapshot == table.refresh().current_snapshot()
    nothing = [
        lambda: t.delete("id = 12345"),
        lambda: t.update("id = 12345", set={"n": "n + 1"}),
        lambda: t.merge(source, ["id"]).when_matched_delete().execute(),
    ]
    current = table.refresh().current_snapshot()
    for verb in nothing:
        assert verb() is None
    assert table.refresh().current_snapshot() == current


def test_expire_snapshots_and_restore_from_spark(spark: Any, catalog: mor.Catalog, warehouse: Path) -> None:
    table = catalog.create_table("db.t", SCHEMA)
    table.append(rows(range(0, 10)))
    first = table.current_snapshot()
    table.delete("id < 5")
    t = MorTable.for_name(spark, "db.t", warehouse=str(warehouse))
    restored = t.restore(first.snapshot_id)
    assert restored == table.refresh().current_snapshot() and table.scan().to_arrow().num_rows == 10
    with pytest.raises(RetentionTooShortError, match="allow_short_retention"):
        t.expire_snapshots(older_than=dt.timedelta(0))
    older = {s.snapshot_id for s in table.refresh().snapshots()} - {restored.snapshot_id}
    expired = t.expire_snapshots(older_than=dt.datetime.now(dt.UTC).isoformat(), allow_short_retention=True)
    assert older and set(expired.expired_snapshot_ids) == older
    assert [s.snapshot_id for s in table.refresh().snapshots()] == [restored.snapshot_id]
    assert spark_rows(t.to_df()) == canonical(rows(range(0, 10)))


def test_a_value_spark_cannot_parse_says_why_in_the_first_line(spark: Any, catalog: mor.Catalog, warehouse: Path) -> None:
    """Spark's parse errors start with a blank line: the message keeps Spark's reason, not just
    "bad update value:" (issue 54 item 4). (A Column among the values makes it Spark's plan; mor's
    own parse error says what and where too: tests/unit/expr.)"""
    from pyspark.sql import functions as F

    twin_tables(catalog, 2)
    with pytest.raises(InvalidArgumentError) as raised:
        MorTable.for_name(spark, "db.spark", warehouse=str(warehouse)).update("id = 1", set={"n": "n +* 1", "category": F.col("category")})
    first = str(raised.value).splitlines()[0]
    assert first.startswith("bad update value: ") and "PARSE_SYNTAX_ERROR" in first, first
