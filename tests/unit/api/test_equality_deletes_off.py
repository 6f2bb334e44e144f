"""`mor.write.equality-deletes.enabled=false`: delete_rows and equality UPSERT write no equality
delete file (readers such as pyiceberg 0.12 cannot apply one), and leave the same rows.

Each scenario runs twice: on a reference table with the defaults (equality deletes, checked to
be written) and on a table with the property off, in either delete/merge mode. After every
step both tables hold the same rows; the second never holds an equality delete file, by its
snapshot summaries and by the plan of every snapshot; pyiceberg reads each of its snapshots.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest
from pyiceberg.table import StaticTable as PyIcebergStaticTable
from unit_helpers import make_rows, rows_of, sorted_rows

import mor
from mor.format.properties import equality_deletes_enabled

PROPERTY = "mor.write.equality-deletes.enabled"
MakeTable = Callable[..., mor.Table]

LAYOUTS = [
    pytest.param(None, id="unpartitioned"),
    pytest.param(["category"], id="category"),
    pytest.param(["bucket(4, id)"], id="bucket"),
]
MODES = ["merge-on-read", "copy-on-write"]

NULL_KEYED = [
    {"id": 100, "category": None, "name": None, "value": 1.0},
    {"id": 101, "category": "a", "name": None, "value": 2.0},
    {"id": 102, "category": None, "name": "n102", "value": 3.0},
]


def _changed(ids: list[int], value: float) -> pa.Table:
    rows = make_rows(ids)
    return rows.set_column(rows.schema.get_field_index("value"), "value", pa.array([value] * len(ids), pa.float64()))


# Each step: (what it does, the call). Keys repeat, miss, are null, span two columns, and
# reach rows an earlier UPSERT wrote.
STEPS: list[tuple[str, Callable[[mor.Table], object]]] = [
    ("append", lambda t: t.append(make_rows(range(60)))),
    ("append nulls", lambda t: t.append(rows_of(NULL_KEYED))),
    ("delete_rows id", lambda t: t.delete_rows(pa.table({"id": [3, 7, 7, 999]}))),
    ("upsert equality", lambda t: t.upsert(_changed([10, 11, 200], -1.0), on=["id"], strategy="equality")),
    (
        "delete_rows (category, name), null-safe",
        lambda t: t.delete_rows(pa.table({"category": [None, "a", "b"], "name": [None, None, "n12"]})),
    ),
    ("delete_rows nothing", lambda t: t.delete_rows(pa.table({"id": [12345]}))),
    ("upsert equality again", lambda t: t.upsert(_changed([10, 40, 201], -2.0), on=["id"], strategy="equality")),
    ("delete_rows upserted", lambda t: t.delete_rows(pa.table({"id": [200, 41]}))),
]


def _has_equality_deletes(table: mor.Table, snapshot_id: int) -> bool:
    return any(t.equality_deletes for t in table.scan(snapshot_id=snapshot_id).plan_files())


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("partition_by", LAYOUTS)
def test_same_rows_without_equality_deletes(make_table: MakeTable, partition_by: list[str] | None, mode: str) -> None:
    reference = make_table(name="reference", partition_by=partition_by)
    off = make_table(
        name="off",
        partition_by=partition_by,
        properties={PROPERTY: "false", "write.delete.mode": mode, "write.merge.mode": mode},
    )
    snapshots_off: list[int] = []
    for what, step in STEPS:
        before = off.current_snapshot()
        step(reference)
        step(off)
        assert sorted_rows(off.scan().to_arrow()) == sorted_rows(reference.scan().to_arrow()), what
        after = off.current_snapshot()
        if what == "delete_rows nothing":
            assert after == before, "a delete by keys that no live row holds committed a snapshot"
            continue
        assert after is not None and after != before, what
        snapshots_off.append(after.snapshot_id)
        summary = after.summary
        assert "added-equality-delete-files" not in summary, (what, summary)
        assert not _has_equality_deletes(off, after.snapshot_id), what
        if what.startswith("delete_rows"):
            assert summary["operation"] == ("delete" if mode == "merge-on-read" else "overwrite"), (what, summary)
            if mode == "merge-on-read":
                assert int(summary["added-position-delete-files"]) >= 1 and "added-data-files" not in summary, (what, summary)
            else:
                assert "added-delete-files" not in summary and int(summary["deleted-data-files"]) >= 1, (what, summary)
    # The reference did write equality deletes, so the comparison above meant something.
    current = reference.current_snapshot()
    assert current is not None and _has_equality_deletes(reference, current.snapshot_id)
    assert int(current.summary["total-equality-deletes"]) > 0
    assert off.current_snapshot().summary.get("total-equality-deletes", "0") == "0"
    # The rows every step should have left (a model, independent of both tables).
    expected = [r for r in make_rows(range(60)).to_pylist() if r["id"] not in (3, 7, 10, 11, 12, 40, 41)]
    expected += [NULL_KEYED[2]]
    expected += _changed([11], -1.0).to_pylist() + _changed([10, 40, 201], -2.0).to_pylist()
    assert sorted_rows(off.scan().to_arrow()) == sorted_rows(expected)

    # pyiceberg 0.12 reads every snapshot of the table without equality deletes.
    static = PyIcebergStaticTable.from_metadata(off.metadata_location)
    for snapshot_id in snapshots_off:
        ours = sorted_rows(off.scan(snapshot_id=snapshot_id).to_arrow())
        assert sorted_rows(static.scan(snapshot_id=snapshot_id).to_arrow()) == ours, snapshot_id


def test_default_writes_equality_deletes_and_pyiceberg_refuses_them(make_table: MakeTable) -> None:
    """The default is unchanged, and the reason for the property still holds: the day pyiceberg
    applies equality deletes, this fails and the property's documentation needs a look."""
    table = make_table(range(20))
    table.delete_rows(pa.table({"id": [1, 2]}))
    snapshot = table.current_snapshot()
    assert snapshot is not None and snapshot.summary["added-equality-delete-files"] == "1"
    with pytest.raises(ValueError, match="PyIceberg does not yet support equality deletes"):
        PyIcebergStaticTable.from_metadata(table.metadata_location).scan().to_arrow()


def test_turning_it_off_later_keeps_earlier_equality_deletes(make_table: MakeTable) -> None:
    """Only new deletes change: an equality delete already committed still applies."""
    table = make_table(range(30), partition_by=["category"])
    table.delete_rows(pa.table({"id": [1]}))
    table.set_properties(**{PROPERTY: "FALSE"})  # case-insensitive, like Iceberg's booleans
    table.delete_rows(pa.table({"id": [2]}))
    table.upsert(_changed([1, 3], 9.0), on=["id"], strategy="equality")
    summary = table.current_snapshot().summary
    assert "added-equality-delete-files" not in summary and summary["total-equality-deletes"] == "1"
    expected = [r for r in make_rows(range(30)).to_pylist() if r["id"] not in (1, 2, 3)] + _changed([1, 3], 9.0).to_pylist()
    assert sorted_rows(table.scan().to_arrow()) == sorted_rows(expected)
    table.set_properties(**{PROPERTY: "true"})
    table.delete_rows(pa.table({"id": [4]}))
    assert table.current_snapshot().summary["added-equality-delete-files"] == "1"


def test_a_concurrent_delete_of_the_same_rows_is_replanned(catalog: mor.Catalog, make_table: MakeTable) -> None:
    """With the property off, delete_rows reads rows, so it takes part in conflict checks like a
    DELETE: a concurrent delete of one of its rows makes it plan again on the new state."""
    first = make_table(range(20), properties={PROPERTY: "false"})
    second = catalog.load_table("db.t")
    first.delete("id = 5")
    snapshot = second.delete_rows(pa.table({"id": [5, 6]}))
    assert snapshot is not None and snapshot.summary["added-position-deletes"] == "1"  # only row 6 was still live
    assert sorted(second.scan().to_arrow().column("id").to_pylist()) == [i for i in range(20) if i not in (5, 6)]


def test_copy_on_write_upsert_with_equality_strategy_when_off(make_table: MakeTable) -> None:
    """The equality strategy is merge-on-read only, unless the table turns equality deletes off:
    then it is the position strategy, which copy-on-write supports."""
    on = make_table(range(10), name="on")
    with pytest.raises(mor.InvalidArgumentError, match="merge-on-read only"):
        on.upsert(_changed([1], 0.0), on=["id"], mode="copy-on-write", strategy="equality")
    off = make_table(range(10), name="off", properties={PROPERTY: "false"})
    off.upsert(_changed([1], 0.0), on=["id"], mode="copy-on-write", strategy="equality")
    summary = off.current_snapshot().summary
    assert "added-delete-files" not in summary and summary["deleted-data-files"] == "1"


@pytest.mark.parametrize("value", ["yes", "", "0", "off"])
def test_the_property_takes_true_or_false_only(make_table: MakeTable, value: str) -> None:
    table = make_table(range(5))
    location = table.metadata_location
    with pytest.raises(mor.InvalidArgumentError, match=PROPERTY):
        table.set_properties(**{PROPERTY: value})
    assert table.metadata_location == location
    with pytest.raises(mor.InvalidArgumentError, match=PROPERTY):
        make_table(name="other", properties={PROPERTY: value})
    # A value another engine wrote past our check is refused where it is used, not guessed.
    with pytest.raises(mor.InvalidArgumentError, match=PROPERTY):
        equality_deletes_enabled({PROPERTY: value})
    assert equality_deletes_enabled({}) is True
    assert equality_deletes_enabled({PROPERTY: "False"}) is False


def test_the_quickstart_says_which_snapshots_pyiceberg_reads(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from mor.cli import main

    assert main(["quickstart", "--warehouse", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert PROPERTY in out
    history = [line for line in out.splitlines() if "  seq=" in line]
    table = mor.load_catalog(tmp_path).load_table("demo.events")
    assert len(history) == len(table.snapshots())
    for line, snapshot in zip(history, table.snapshots()):
        has_equality = _has_equality_deletes(table, snapshot.snapshot_id)
        expected = "pyiceberg: cannot read (equality deletes)" if has_equality else "pyiceberg: same row count"
        assert line.endswith(expected), line
    assert history[-1].endswith("cannot read (equality deletes)")
