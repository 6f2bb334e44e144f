"""table.changes(): ranges, keys, columns and filters, errors, and what each kind of commit
emits (the model test in tests/stateful/test_change_feed_model.py covers random histories)."""

from __future__ import annotations

import datetime as dt
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType

import mor
from mor.api.change_rows import cancel_equal_rows, group_ids, occurrences, pair_by_key

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])


def rows(ids: list[int], prefix: str = "v") -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "v": [f"{prefix}{i}" for i in ids]}, schema=SCHEMA)


def feed(changes: pa.Table) -> Counter[tuple]:
    return Counter((r["_change_type"], r["id"], r.get("v")) for r in changes.to_pylist())


@pytest.fixture
def table(tmp_path: Path) -> mor.Table:
    return mor.load_catalog(tmp_path / "wh", create=True).create_table("db.t", schema=SCHEMA)


def test_each_kind_of_commit(table: mor.Table) -> None:
    table.append(rows(list(range(6))))
    s1 = table.current_snapshot().snapshot_id
    table.delete("id = 1")  # position delete
    table.delete_rows(pa.table({"id": pa.array([2], pa.int64())}))  # equality delete
    table.delete("id = 3", mode="copy-on-write")  # rewrite: rows 0, 4, 5 carried over
    table.update({"v": "'new'"}, where="id = 4")
    table.compact(min_input_files=1)  # replace: nothing
    table.truncate()
    out = table.changes(from_snapshot_id=s1, on=["id"]).to_arrow()
    assert out.schema.names == ["id", "v", "_change_type", "_change_ordinal", "_commit_snapshot_id"]
    assert out.schema.field("_change_ordinal").type == pa.int32()
    by_ordinal: dict[int, Counter[tuple]] = {}
    for r in out.to_pylist():
        by_ordinal.setdefault(r["_change_ordinal"], Counter())[(r["_change_type"], r["id"], r["v"])] += 1
    assert by_ordinal == {
        0: Counter({("DELETE", 1, "v1"): 1}),
        1: Counter({("DELETE", 2, "v2"): 1}),
        2: Counter({("DELETE", 3, "v3"): 1}),
        3: Counter({("UPDATE_BEFORE", 4, "v4"): 1, ("UPDATE_AFTER", 4, "new"): 1}),
        4: Counter({("DELETE", 0, "v0"): 1, ("DELETE", 4, "new"): 1, ("DELETE", 5, "v5"): 1}),  # truncate; compaction has no ordinal
    }
    ids = [s.snapshot_id for s in table.metadata.ancestors(table.current_snapshot().snapshot_id)][::-1]
    compaction = next(s for s in table.snapshots() if s.operation == "replace")
    assert set(out.column("_commit_snapshot_id").to_pylist()) == set(ids[1:]) - {compaction.snapshot_id}


def test_without_keys_an_update_is_a_delete_and_an_insert(table: mor.Table) -> None:
    table.append(rows([1, 2]))
    table.update({"v": "'x'"}, where="id = 2")
    last = table.changes(from_snapshot_id=table.current_snapshot().parent_snapshot_id).to_arrow()
    assert feed(last) == Counter({("DELETE", 2, "v2"): 1, ("INSERT", 2, "x"): 1})


def test_identifier_fields_pair_updates(tmp_path: Path) -> None:
    schema = Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "v", StringType()), identifier_field_ids=[1])
    table = mor.load_catalog(tmp_path / "wh", create=True).create_table("db.k", schema=schema)
    table.append(rows([1, 2]))
    table.upsert(rows([2, 3], prefix="w"), on=["id"])
    last = table.changes(from_snapshot_id=table.current_snapshot().parent_snapshot_id).to_arrow()
    assert feed(last) == Counter({("UPDATE_BEFORE", 2, "v2"): 1, ("UPDATE_AFTER", 2, "w2"): 1, ("INSERT", 3, "w3"): 1})


def test_v3_row_lineage_pairs_updates_without_keys(tmp_path: Path) -> None:
    table = mor.load_catalog(tmp_path / "wh", create=True).create_table("db.v3", schema=SCHEMA, format_version=3)
    table.append(rows([1, 2, 3]))
    table.update({"v": "'x'"}, where="id = 2")  # keeps _row_id
    table.upsert(rows([3], prefix="w"), on=["id"], strategy="equality")  # a new _row_id: no pair
    out = table.changes(from_snapshot_id=table.snapshots()[0].snapshot_id).to_arrow()
    assert feed(out) == Counter(
        {("UPDATE_BEFORE", 2, "v2"): 1, ("UPDATE_AFTER", 2, "x"): 1, ("DELETE", 3, "v3"): 1, ("INSERT", 3, "w3"): 1}
    )
    assert "_row_id" not in out.schema.names  # read to pair, not selected
    with_lineage = table.changes(columns=["id", "_row_id"]).to_arrow()
    assert "_row_id" in with_lineage.schema.names


def test_columns_filter_and_net_changes(table: mor.Table) -> None:
    table.append(rows([1, 2, 3, 4]))
    first = table.current_snapshot().snapshot_id
    table.delete("id = 1")
    table.append(rows([5]))
    table.delete("id = 5")
    table.update({"v": "'x'"}, where="id >= 3")
    only = table.changes(from_snapshot_id=first, columns=["id"], filter="id >= 4").to_arrow()
    assert only.schema.names == ["id", "_change_type", "_change_ordinal", "_commit_snapshot_id"]
    assert Counter((r["_change_type"], r["id"]) for r in only.to_pylist()) == Counter(
        {("INSERT", 5): 1, ("DELETE", 5): 1, ("DELETE", 4): 1, ("INSERT", 4): 1}
    )
    net = table.changes(from_snapshot_id=first, on=["id"], net_changes=True).to_arrow()
    assert feed(net) == Counter(
        {
            ("DELETE", 1, "v1"): 1,
            ("UPDATE_BEFORE", 3, "v3"): 1,
            ("UPDATE_AFTER", 3, "x"): 1,
            ("UPDATE_BEFORE", 4, "v4"): 1,
            ("UPDATE_AFTER", 4, "x"): 1,
        }
    )
    batches = list(table.changes(from_snapshot_id=first).to_batches())
    assert sum(b.num_rows for b in batches) == table.changes(from_snapshot_id=first).to_arrow().num_rows


def test_by_timestamp(table: mor.Table) -> None:
    table.append(rows([1]))
    table.append(rows([2]))
    first, second = table.snapshots()
    assert feed(table.changes(from_timestamp=first.timestamp_ms, to_timestamp=second.timestamp_ms).to_arrow()) == Counter(
        {("INSERT", 2, "v2"): 1}
    )
    before = dt.datetime.fromtimestamp(first.timestamp_ms / 1000 - 60, dt.UTC)
    assert feed(table.changes(from_timestamp=before).to_arrow()) == Counter({("INSERT", 1, "v1"): 1, ("INSERT", 2, "v2"): 1})


def test_empty_ranges_and_errors(table: mor.Table) -> None:
    assert table.changes().to_arrow().num_rows == 0  # no snapshot yet
    table.append(rows([1]))
    s = table.current_snapshot().snapshot_id
    assert table.changes(from_snapshot_id=s, to_snapshot_id=s).to_arrow().num_rows == 0
    table.append(rows([2]))
    later = table.current_snapshot().snapshot_id
    with pytest.raises(mor.InvalidArgumentError, match="not an ancestor"):
        table.changes(from_snapshot_id=later, to_snapshot_id=s)
    with pytest.raises(mor.NoSuchSnapshotError):
        table.changes(from_snapshot_id=12345)
    with pytest.raises(mor.InvalidFilterError):
        table.changes(columns=["nope"])
    with pytest.raises(mor.InvalidFilterError):
        table.changes(filter="nope = 1")
    with pytest.raises(mor.InvalidArgumentError):
        table.changes(on="id")


def test_row_matching_helpers() -> None:
    a = pa.table({"k": pa.array([1, None, 1, 2], pa.int64()), "s": ["x", "y", "x", None]})
    b = pa.table({"k": pa.array([None, 1, 3], pa.int64()), "s": ["y", "x", None]})
    ga, gb = group_ids([a, b], ["k", "s"])
    assert ga[0] == ga[2] == gb[1] and ga[1] == gb[0]  # null-safe
    assert len({ga[0], ga[1], ga[3], gb[2]}) == 4
    assert occurrences(np.array([5, 3, 5, 5, 3])).tolist() == [0, 0, 1, 2, 1]
    keep_a, keep_b = cancel_equal_rows(ga, gb)
    assert keep_a.tolist() == [False, False, True, True] and keep_b.tolist() == [False, False, True]
    before, after = pair_by_key(np.array([0, 1, 1]), np.array([1, 0, 2]), np.ones(3, bool), np.array([True, False, True]))
    assert before.tolist() == [] and after.tolist() == []  # key 1 twice on the left; key 0 not ok on the right
    nested = pa.table({"l": pa.array([[1, 2], None, [1, 2]], pa.list_(pa.int64()))})
    (g,) = group_ids([nested], ["l"])
    assert g[0] == g[2] != g[1]


def test_cli_prints_and_writes_changes(table: mor.Table, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import pyarrow.csv as pa_csv
    import pyarrow.parquet as pq

    from mor.cli import main

    table.append(rows([1, 2]))
    first = table.current_snapshot().snapshot_id
    table.update({"v": "'x'"}, where="id = 2")
    warehouse = str(tmp_path / "wh")
    assert main(["changes", "db.t", "--warehouse", warehouse, "--from", str(first), "--on", "id"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["id", "v", "_change_type", "_change_ordinal", "_commit_snapshot_id"]
    assert [line.split()[:3] for line in lines[1:]] == [["2", "v2", "UPDATE_BEFORE"], ["2", "x", "UPDATE_AFTER"]]
    out = tmp_path / "changes.parquet"
    assert main(["changes", "db.t", "--warehouse", warehouse, "--columns", "id", "--out", str(out)]) == 0
    written = pq.read_table(out)
    assert written.column_names == ["id", "_change_type", "_change_ordinal", "_commit_snapshot_id"]
    assert written.num_rows == 4  # two inserts, then a delete and an insert of id 2
    csv = tmp_path / "changes.csv"
    assert main(["changes", "db.t", "--warehouse", warehouse, "--net", "--on", "id", "--out", str(csv)]) == 0
    assert pa_csv.read_csv(csv).column("_change_type").to_pylist() == ["INSERT", "INSERT"]
    assert main(["changes", "db.t", "--warehouse", warehouse, "--out", str(tmp_path / "x.json")]) == 2
    assert "InvalidArgumentError" in capsys.readouterr().err
