"""Every write checked against the table as it is when it commits (issue 38): a handle loaded
before a NOT NULL or a CHECK constraint cannot slip rows past it; exactly-once writes survive
expiry; the change feed refuses a start it no longer has; constraints follow renamed columns and
keep their columns from being dropped; add_files keeps CHECK constraints; overwrite's data must
lie within its `where`."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from unit_helpers import SCHEMA, files_under, make_rows, scan_ids

import mor


@pytest.fixture
def table(catalog: mor.Catalog) -> mor.Table:
    """Ids 0..29, value = id / 2, in partitions by category."""
    t = catalog.create_table("db.t", schema=SCHEMA, partition_by=["category"])
    t.append(make_rows(range(30)))
    return t


def _with_value(ids: list[int], value: float | None) -> pa.Table:
    rows = make_rows(ids)
    return rows.set_column(3, "value", pa.array([value] * len(ids), pa.float64()))


# Each write puts a row with `value` = the given value into the table (ids 1-4 exist; 100+ are new).
WRITES: dict[str, Callable[[mor.Table, float | None], Any]] = {
    "append": lambda t, v: t.append(_with_value([100], v)),
    "overwrite": lambda t, v: t.overwrite(_with_value([1], v), where="id = 1"),
    "update": lambda t, v: t.update({"value": pa.scalar(v, pa.float64())}, where="id = 2"),
    "update-cow": lambda t, v: t.update({"value": pa.scalar(v, pa.float64())}, where="id = 2", mode="copy-on-write"),
    "upsert": lambda t, v: t.upsert(_with_value([3, 200], v), on=["id"]),
    "upsert-equality": lambda t, v: t.upsert(_with_value([3], v), on=["id"], strategy="equality"),
    "merge": lambda t, v: t.merge(_with_value([4], v), on=["id"], when_matched_update={"value": pc.field("source.value")}),
    "merge-insert": lambda t, v: t.merge(_with_value([300], v), on=["id"], when_not_matched_insert="*"),
}


def _unchanged(catalog: mor.Catalog, table: mor.Table) -> Callable[[], None]:
    location, files = table.metadata_location, files_under(table.location)

    def check() -> None:
        assert catalog.load_table(table.identifier).metadata_location == location
        assert files_under(table.location) == files

    return check


@pytest.mark.parametrize("write", WRITES)
def test_a_handle_loaded_before_set_not_null_cannot_write_a_null(catalog: mor.Catalog, table: mor.Table, write: str) -> None:
    stale = catalog.load_table("db.t")
    table.set_not_null("value")
    unchanged = _unchanged(catalog, table)
    with pytest.raises(mor.ConstraintViolationError, match="'value' is NOT NULL"):
        WRITES[write](stale, None)
    unchanged()
    fresh = catalog.load_table("db.t")
    assert fresh.scan(filter="value is null").count() == 0
    assert fresh.scan(filter="value is not null").count() == 30


@pytest.mark.parametrize("write", WRITES)
def test_a_handle_loaded_before_a_constraint_cannot_break_it(catalog: mor.Catalog, table: mor.Table, write: str) -> None:
    stale = catalog.load_table("db.t")
    table.add_constraint("non_negative", "value >= 0")
    unchanged = _unchanged(catalog, table)
    with pytest.raises(mor.ConstraintViolationError, match="'non_negative'"):
        WRITES[write](stale, -1.0)
    unchanged()


@pytest.mark.parametrize("write", WRITES)
def test_a_stale_handle_whose_rows_keep_the_new_rules_commits(catalog: mor.Catalog, table: mor.Table, write: str) -> None:
    stale = catalog.load_table("db.t")
    table.set_not_null("value")
    table.add_constraint("non_negative", "value >= 0")
    assert WRITES[write](stale, 7.0) is not None
    fresh = catalog.load_table("db.t")
    assert fresh.scan(filter="value = 7").count() >= 1
    assert fresh.scan(filter="value is null or value < 0").count() == 0


def test_a_stale_append_of_valid_rows_reads_back_only_what_metrics_cannot_prove(catalog: mor.Catalog, table: mor.Table) -> None:
    """The new rules hold by the files' metrics (no nulls, every value in bounds): nothing is read."""
    stale = catalog.load_table("db.t")
    table.set_not_null("value")
    table.add_constraint("bounded", "value between 0 and 1000")
    stale.append(make_rows(range(100, 110)))
    assert scan_ids(catalog.load_table("db.t")) == [*range(30), *range(100, 110)]


def test_an_idempotent_write_replayed_after_compaction_and_expiry_commits_nothing(table: mor.Table) -> None:
    first = table.append(make_rows([100, 101]), idempotency=("job", 1))
    assert first is not None
    table.delete("id < 5")
    table.append(make_rows([200]))
    table.compact()
    result = table.expire_snapshots(older_than=dt.datetime.now(dt.UTC) + dt.timedelta(seconds=1), allow_short_retention=True)
    assert first.snapshot_id in result.expired_snapshot_ids
    assert all(s.summary.get("mor.txn-app-id") != "job" for s in table.snapshots())  # the summary is gone
    location = table.metadata_location
    replay = table.append(make_rows([100, 101]), idempotency=("job", 1))
    assert table.metadata_location == location
    assert replay is not None and replay.snapshot_id == table.current_snapshot().snapshot_id  # type: ignore[union-attr]
    assert scan_ids(table).count(100) == 1
    older = table.append(make_rows([100]), idempotency=("job", 0))  # an older version: committed too
    assert table.metadata_location == location and older is not None
    table.append(make_rows([102]), idempotency=("job", 2))
    assert scan_ids(table).count(102) == 1


def test_the_app_version_is_a_table_property_set_with_the_snapshot(table: mor.Table) -> None:
    table.append(make_rows([100]), idempotency=("job", 3))
    assert table.properties["mor.txn-version.job"] == "3"
    table.update({"value": 1.0}, where="id = 100", idempotency=("job", 4))
    assert table.properties["mor.txn-version.job"] == "4"


def _expire_all_but_current(table: mor.Table) -> None:
    table.expire_snapshots(older_than=dt.datetime.now(dt.UTC) + dt.timedelta(seconds=1), allow_short_retention=True)


def test_a_change_feed_from_an_expired_time_is_refused_naming_the_oldest_start(table: mor.Table) -> None:
    start = table.current_snapshot()
    assert start is not None
    table.append(make_rows([100]))
    table.delete("id = 1")
    _expire_all_but_current(table)
    oldest = table.current_snapshot()
    assert oldest is not None and len(table.snapshots()) == 1
    for kwargs in ({"from_timestamp": start.timestamp_ms}, {"from_snapshot_id": start.snapshot_id}, {}):
        with pytest.raises(mor.ExpiredHistoryError) as info:
            table.changes(**kwargs).to_arrow()
        assert info.value.oldest_snapshot_id == oldest.snapshot_id
        assert f"from_snapshot_id={oldest.snapshot_id}" in str(info.value)
        with pytest.raises(mor.NoSuchSnapshotError):  # the same family as a scan's time travel
            table.changes(**kwargs)
    assert table.changes(from_snapshot_id=oldest.snapshot_id).to_arrow().num_rows == 0
    assert table.changes(from_timestamp=oldest.timestamp_ms).to_arrow().num_rows == 0


def test_a_change_feed_with_its_whole_history_still_starts_before_the_first_snapshot(catalog: mor.Catalog) -> None:
    t = catalog.create_table("db.fresh", schema=SCHEMA)
    t.append(make_rows([1, 2]))
    first = t.current_snapshot()
    assert first is not None
    rows = t.changes(from_timestamp=first.timestamp_ms - 1000).to_arrow()
    assert sorted(rows.column("id").to_pylist()) == [1, 2] and set(rows.column("_change_type").to_pylist()) == {"INSERT"}
    assert t.changes().to_arrow().num_rows == 2


def test_a_renamed_column_keeps_its_constraint(table: mor.Table) -> None:
    table.add_constraint("non_negative", "value >= 0")
    table.rename_column("value", "amount")
    table.add_column("value", pa.float64())  # a new column of the constraint's old name is another column
    table.append(make_rows([100]).rename_columns(["id", "category", "name", "amount"]).append_column("value", pa.array([-1.0])))
    bad = make_rows([101]).rename_columns(["id", "category", "name", "amount"]).set_column(3, "amount", pa.array([-1.0]))
    with pytest.raises(mor.ConstraintViolationError, match="value is now amount"):
        table.append(bad.append_column("value", pa.array([1.0])))
    table.drop_column("value")  # the new one: no constraint uses it


def test_a_column_renamed_by_another_engine_keeps_its_constraint(warehouse: Path, table: mor.Table) -> None:
    from pyiceberg.catalog.sql import SqlCatalog

    table.add_constraint("non_negative", "value >= 0")
    other = SqlCatalog("default", uri=f"sqlite:///{warehouse}/catalog.db", warehouse=f"file://{warehouse}").load_table("db.t")
    with other.update_schema() as update:
        update.rename_column("value", "amount")
    table.refresh()
    bad = make_rows([101]).rename_columns(["id", "category", "name", "amount"]).set_column(3, "amount", pa.array([-1.0]))
    with pytest.raises(mor.ConstraintViolationError, match="'non_negative'"):
        table.append(bad)


@pytest.mark.parametrize("column", ["value", "info", "info.city"])
def test_dropping_a_column_a_constraint_uses_is_refused_naming_it(catalog: mor.Catalog, column: str) -> None:
    schema = SCHEMA.append(pa.field("info", pa.struct([("city", pa.string()), ("zip", pa.string())])))
    t = catalog.create_table("db.c", schema=schema)
    t.add_constraint("non_negative", "value >= 0")
    t.add_constraint("no_x", "info.city is null or info.city != 'x'")
    location = t.metadata_location
    with pytest.raises(mor.SchemaEvolutionError, match="constraint '(non_negative|no_x)'"):
        t.drop_column(column)
    assert t.metadata_location == location
    t.drop_column("info.zip")  # no constraint uses it
    t.drop_constraint("non_negative")
    t.drop_column("value")
    assert "value" not in t.arrow_schema().names
    assert not any(k.endswith(".non_negative") for k in t.properties)


def _parquet(path: Path, rows: pa.Table) -> str:
    pq.write_table(rows, path)
    return str(path)


def test_add_files_refuses_a_file_that_breaks_a_check_constraint(catalog: mor.Catalog, table: mor.Table, tmp_path: Path) -> None:
    table.add_constraint("non_negative", "value >= 0")
    unchanged = _unchanged(catalog, table)
    bad = _parquet(tmp_path / "bad.parquet", _with_value([300, 301], -1.0))
    with pytest.raises(mor.ConstraintViolationError, match="'non_negative'.*bad.parquet"):
        table.add_files(bad)
    unchanged()
    rows = make_rows([303, 304, 305]).set_column(3, "value", pa.array([None, 1.0, 2.0], pa.float64()))
    table.drop_constraint("non_negative")
    table.add_constraint("small", "value is null or value < 100")
    table.add_files(_parquet(tmp_path / "good.parquet", rows))  # the null is allowed explicitly
    assert table.scan(filter="id >= 300").count() == 3


def test_add_files_by_a_handle_loaded_before_the_constraint_is_refused(catalog: mor.Catalog, table: mor.Table, tmp_path: Path) -> None:
    stale = catalog.load_table("db.t")
    table.add_constraint("non_negative", "value >= 0")
    bad = _parquet(tmp_path / "bad.parquet", _with_value([300], -1.0))
    with pytest.raises(mor.ConstraintViolationError, match="'non_negative'"):
        stale.add_files(bad)
    assert catalog.load_table("db.t").scan().count() == 30


@pytest.mark.parametrize("mode", ["merge-on-read", "copy-on-write"])
def test_overwrite_refuses_rows_outside_its_where(catalog: mor.Catalog, table: mor.Table, mode: str) -> None:
    unchanged = _unchanged(catalog, table)
    with pytest.raises(mor.RowsOutsideWhereError, match="id < 5"):
        table.overwrite(make_rows([1, 2, 50]), where="id < 5", mode=mode)
    nulls = make_rows([1]).set_column(3, "value", pa.array([None], pa.float64()))
    with pytest.raises(mor.RowsOutsideWhereError):  # NULL is not TRUE: outside
        table.overwrite(nulls, where="value < 2", mode=mode)
    unchanged()
    table.overwrite(make_rows([1, 2]), where="id < 5", mode=mode)
    table.overwrite(make_rows([1, 2]), where="id < 5", mode=mode)  # a rerun: the same rows
    assert scan_ids(table) == [1, 2, *range(5, 30)]
    table.overwrite(make_rows([1, 50]), where="id < 5", mode=mode, allow_rows_outside_where=True)
    assert scan_ids(table) == [1, *range(5, 30), 50]
    with pytest.raises(mor.InvalidArgumentError):
        table.overwrite(make_rows([1]), where="id < 5", allow_rows_outside_where="yes")  # type: ignore[arg-type]
