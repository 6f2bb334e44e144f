"""Time travel: a scan of an older snapshot, by id or by time, reads that snapshot's rows."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

import pytest
from unit_helpers import assert_rows_are, make_rows, scan_ids

import mor
from mor.format.metadata import Snapshot

MakeTable = Callable[..., mor.Table]
History = tuple[mor.Table, list[tuple[Snapshot, list[int]]]]
UTC = dt.UTC


@pytest.fixture
def history(make_table: MakeTable) -> History:
    """A table and, for each snapshot, the ids it holds."""
    table = make_table(partition_by=["category"])
    steps: list[tuple[Snapshot | None, list[int]]] = []
    steps.append((table.append(make_rows(range(0, 30))), list(range(0, 30))))
    steps.append((table.delete("id in (1, 11)"), [i for i in range(0, 30) if i not in (1, 11)]))
    steps.append((table.append(make_rows(range(30, 40))), [i for i in range(0, 40) if i not in (1, 11)]))
    steps.append((table.delete("id = 2", mode="copy-on-write"), [i for i in range(0, 40) if i not in (1, 2, 11)]))
    steps.append((table.delete("category = 'b'"), [i for i in range(0, 40) if i not in (1, 2, 11) and (i // 10) % 3 != 1]))
    assert all(snapshot is not None for snapshot, _ in steps)
    return table, steps  # type: ignore[return-value]


def test_snapshot_timestamps_increase(history: History) -> None:
    table, steps = history
    stamps = [s.timestamp_ms for s, _ in steps]
    assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps)
    assert [s.snapshot_id for s in table.snapshots()] == [s.snapshot_id for s, _ in steps]


def test_scan_by_snapshot_id(history: History) -> None:
    table, steps = history
    for snapshot, ids in steps:
        assert_rows_are(table.scan(snapshot_id=snapshot.snapshot_id).to_arrow(), ids)
        assert table.scan(snapshot_id=snapshot.snapshot_id).count() == len(ids)


def test_scan_as_of_milliseconds(history: History) -> None:
    table, steps = history
    for i, (snapshot, ids) in enumerate(steps):
        assert scan_ids(table, as_of=snapshot.timestamp_ms) == ids
        if i + 1 < len(steps):
            just_before_next = steps[i + 1][0].timestamp_ms - 1
            assert scan_ids(table, as_of=just_before_next) == ids
    assert scan_ids(table, as_of=steps[-1][0].timestamp_ms + 10**9) == steps[-1][1]


def test_scan_as_of_datetime(history: History) -> None:
    table, steps = history
    epoch = dt.datetime(1970, 1, 1, tzinfo=UTC)
    for i, (snapshot, ids) in enumerate(steps):
        at = epoch + dt.timedelta(milliseconds=snapshot.timestamp_ms)
        assert scan_ids(table, as_of=at) == ids
        assert scan_ids(table, as_of=at.astimezone(dt.timezone(dt.timedelta(hours=-5)))) == ids
        if i + 1 < len(steps):
            before_next = epoch + dt.timedelta(milliseconds=steps[i + 1][0].timestamp_ms) - dt.timedelta(microseconds=1)
            assert scan_ids(table, as_of=before_next) == ids


def test_time_travel_survives_later_rewrites(history: History) -> None:
    """The copy-on-write step removed files from the table, not from older snapshots."""
    table, steps = history
    first, ids = steps[0]
    assert_rows_are(table.scan(snapshot_id=first.snapshot_id, filter="id < 15").to_arrow(), [i for i in ids if i < 15])
    assert table.scan(snapshot_id=first.snapshot_id, columns=["name"]).to_arrow().column_names == ["name"]


def test_time_travel_on_a_reloaded_table(catalog: mor.Catalog, history: History) -> None:
    _, steps = history
    table = catalog.load_table("db.t")
    for snapshot, ids in steps:
        assert scan_ids(table, snapshot_id=snapshot.snapshot_id) == ids


def test_history_lists_the_snapshot_log(history: History) -> None:
    table, steps = history
    entries = table.history()
    assert [e.snapshot_id for e in entries] == [s.snapshot_id for s, _ in steps]
    assert [e.made_current_at_ms for e in entries] == [s.timestamp_ms for s, _ in steps]
    assert [e.parent_snapshot_id for e in entries] == [None] + [s.snapshot_id for s, _ in steps[:-1]]
    assert all(e.is_current_ancestor for e in entries)


def test_snapshot_id_and_as_of_together_are_refused(history: History) -> None:
    table, steps = history
    with pytest.raises(mor.InvalidArgumentError):
        table.scan(snapshot_id=steps[0][0].snapshot_id, as_of=steps[0][0].timestamp_ms)


def test_before_the_first_snapshot_there_is_none(history: History) -> None:
    table, steps = history
    with pytest.raises(mor.NoSuchSnapshotError):
        table.scan(as_of=steps[0][0].timestamp_ms - 1)


def test_scan_of_a_table_without_snapshots_is_empty(make_table: MakeTable) -> None:
    table = make_table()
    got = table.scan().to_arrow()
    assert got.num_rows == 0
    assert got.column_names == ["id", "category", "name", "value"]


def test_scan_as_of_text_as_filters_write_times(history: History) -> None:
    """'2025-01-15 12:00:00.123' (UTC), with a zone, or a date (its midnight): as in filters."""
    table, steps = history
    for snapshot, ids in steps:
        at = dt.datetime.fromtimestamp(snapshot.timestamp_ms / 1000, UTC)
        assert scan_ids(table, as_of=at.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]) == ids
        in_berlin = at.astimezone(dt.timezone(dt.timedelta(hours=1)))
        assert scan_ids(table, as_of=in_berlin.isoformat(timespec="milliseconds")) == ids
    tomorrow = (dt.datetime.now(UTC) + dt.timedelta(days=1)).date()
    assert scan_ids(table, as_of=tomorrow.isoformat()) == scan_ids(table, as_of=tomorrow) == steps[-1][1]
    # The typed literals and the clock of filters too.
    first = dt.datetime.fromtimestamp(steps[0][0].timestamp_ms / 1000, UTC)
    assert scan_ids(table, as_of=f"timestamp '{first.strftime('%Y-%m-%d %H:%M:%S.%f')}'") == steps[0][1]
    assert scan_ids(table, as_of=f"timestamptz '{first.isoformat()}'") == steps[0][1]
    for now in ("current_timestamp", "now()", "current_date + interval 1 day", "current_timestamp - interval 0 seconds"):
        assert scan_ids(table, as_of=now) == steps[-1][1], now
    with pytest.raises(mor.NoSuchSnapshotError, match="had no snapshot at current_timestamp - interval 30 days"):
        table.scan(as_of="current_timestamp - interval 30 days")
    for wrong in ("yesterday", "id + 1", "date '2025-13-01'"):
        with pytest.raises(mor.InvalidArgumentError, match="is not a point in time: write '2025-01-15'"):
            table.scan(as_of=wrong)


def test_every_scan_like_result_converts_to_pandas_and_polars(history: History) -> None:
    table, steps = history
    first, last = steps[0][0], steps[-1][0]
    feed = table.changes(first.snapshot_id, last.snapshot_id)
    arrow = feed.to_arrow()
    assert feed.to_pandas().shape == (arrow.num_rows, arrow.num_columns)
    assert feed.to_polars().shape == (arrow.num_rows, arrow.num_columns)
    assert table.scan().to_polars().shape[0] == len(steps[-1][1])
