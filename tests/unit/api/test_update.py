"""UPDATE ... SET ... WHERE: both modes give the same rows; merge-on-read is one `overwrite`
snapshot of position deletes plus a data file, copy-on-write rewrites files; literals and
pyarrow expressions; a changed partition column moves the row; errors write nothing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from unit_helpers import (
    SCHEMA,
    TableState,
    assert_no_orphans,
    data_file_holding,
    live_data_paths,
    live_delete_entries,
    live_raw_entries,
    local,
    make_rows,
    rows_of,
    sorted_rows,
    table_rows,
)

import mor

MakeTable = Callable[..., mor.Table]
MODES = ["merge-on-read", "copy-on-write"]
Row = dict[str, Any]


def _expected(ids: range, where: Callable[[Row], bool], change: Callable[[Row], Row]) -> list[Row]:
    return sorted_rows([change(r) if where(r) else r for r in make_rows(ids).to_pylist()])


# -- both modes, same rows ---------------------------------------------------------------------

CASES = [
    pytest.param(
        {"name": "'x'"},
        "id = 5",
        lambda r: r["id"] == 5,
        lambda r: {**r, "name": "x"},
        id="literal",
    ),
    pytest.param(
        {"value": pc.field("value") + 1, "name": None},
        "id < 4 or id = 17",
        lambda r: r["id"] < 4 or r["id"] == 17,
        lambda r: {**r, "value": r["value"] + 1, "name": None},
        id="expression-and-null",
    ),
    pytest.param(
        {"id": pc.field("id") + 100, "value": pc.field("value") * pc.field("value")},
        "category = 'b'",
        lambda r: r["category"] == "b",
        lambda r: {**r, "id": r["id"] + 100, "value": r["value"] * r["value"]},
        id="key-and-expression-of-two-columns",
    ),
    pytest.param(
        {"name": pc.binary_join_element_wise(pc.field("name"), pc.field("category"), "-")},
        "true",  # update needs an explicit where
        lambda r: True,
        lambda r: {**r, "name": f"{r['name']}-{r['category']}"},
        id="every-row",
    ),
    pytest.param(
        {"category": "'z'", "value": 0},
        "name = 'n7' or id >= 28",
        lambda r: r["id"] == 7 or r["id"] >= 28,
        lambda r: {**r, "category": "z", "value": 0.0},
        id="partition-column-and-int-into-double",
    ),
    pytest.param(
        {"value": "value + 1", "name": "upper(name) ", "category": mor.lit("a + b")},
        "id >= 25",
        lambda r: r["id"] >= 25,
        lambda r: {**r, "value": r["value"] + 1, "name": r["name"].upper(), "category": "a + b"},
        id="sql-text-and-a-literal-text",
    ),
]


@pytest.mark.parametrize(("assignments", "where", "matches", "change"), CASES)
@pytest.mark.parametrize("partition_by", [None, ["category"]], ids=["unpartitioned", "partitioned"])
def test_both_modes_give_the_expected_rows(
    catalog: mor.Catalog,
    assignments: dict[str, Any],
    where: str | None,
    matches: Callable[[Row], bool],
    change: Callable[[Row], Row],
    partition_by: list[str] | None,
) -> None:
    expected = _expected(range(0, 30), matches, change)
    for mode in MODES:
        table = catalog.create_table(f"db.{mode.replace('-', '_')}", schema=SCHEMA, partition_by=partition_by)
        table.append(make_rows(range(0, 20)))
        table.append(make_rows(range(20, 30)))
        snapshot = table.update(assignments, where=where, mode=mode)
        assert snapshot is not None and snapshot.operation == "overwrite", mode
        assert table_rows(table) == expected, mode
        assert_no_orphans(table)


def test_the_table_property_chooses_the_mode(make_table: MakeTable) -> None:
    table = make_table(range(0, 10), properties={"write.update.mode": "copy-on-write"})
    table.update({"name": "'x'"}, where="id = 1")
    assert live_delete_entries(table) == []
    table.update({"name": "'y'"}, where="id = 2", mode="merge-on-read")
    assert len(live_delete_entries(table)) == 1


# -- what merge-on-read and copy-on-write write ------------------------------------------------


def test_merge_on_read_commits_one_overwrite_of_position_deletes_and_a_data_file(make_table: MakeTable) -> None:
    table = make_table(range(0, 10), range(10, 20))
    before = table.current_snapshot()
    assert before is not None
    data_before = live_data_paths(table)
    first_file = data_file_holding(table, 3)

    snapshot = table.update({"name": "'x'", "value": pc.field("value") + 1}, where="id in (3, 5)", mode="merge-on-read")

    assert snapshot is not None and snapshot == table.current_snapshot()
    assert len(table.snapshots()) == 3  # two appends and ONE update
    assert snapshot.parent_snapshot_id == before.snapshot_id
    assert snapshot.operation == "overwrite"
    s = snapshot.summary
    assert s["added-position-delete-files"] == "1"
    assert s["added-position-deletes"] == "2"
    assert s["added-data-files"] == "1"
    assert s["added-records"] == "2"
    assert s.get("deleted-data-files", "0") == "0"
    assert s.get("added-equality-delete-files", "0") == "0"
    assert s["total-records"] == "22"  # data file records; 2 of them deleted by position

    new_files = live_data_paths(table) - data_before
    assert data_before <= live_data_paths(table)  # nothing rewritten
    (new_file,) = new_files
    assert sorted_rows(pq.read_table(local(new_file))) == sorted_rows(
        [{**r, "name": "x", "value": r["value"] + 1} for r in make_rows([3, 5]).to_pylist()]
    )
    (delete,) = live_delete_entries(table)
    assert delete.content == 1
    assert delete.manifest["content"] == 1
    assert delete.data_file["referenced_data_file"] == first_file
    assert delete.data_sequence_number == snapshot.sequence_number
    rows = pq.read_table(local(delete.path))
    assert rows.column("file_path").to_pylist() == [first_file, first_file]
    assert rows.column("pos").to_pylist() == [3, 5]  # the positions of ids 3 and 5 in the first file
    changed = _expected(range(20), lambda r: r["id"] in (3, 5), lambda r: {**r, "name": "x", "value": r["value"] + 1})
    assert table_rows(table) == changed


def test_copy_on_write_rewrites_the_touched_files(make_table: MakeTable) -> None:
    table = make_table(range(0, 10), range(10, 20))
    touched = data_file_holding(table, 3)
    untouched = data_file_holding(table, 15)

    snapshot = table.update({"name": "'x'"}, where="id in (3, 5)", mode="copy-on-write")

    assert snapshot is not None and snapshot.operation == "overwrite"
    assert len(table.snapshots()) == 3
    assert live_delete_entries(table) == []
    assert snapshot.summary.get("added-delete-files", "0") == "0"
    assert snapshot.summary["deleted-data-files"] == "1"
    assert snapshot.summary["deleted-records"] == "10"
    live = live_data_paths(table)
    assert touched not in live
    assert untouched in live
    rewritten = [pq.read_table(local(p)) for p in live - {untouched}]
    assert sum(t.num_rows for t in rewritten) == 10  # 8 kept + 2 updated
    assert snapshot.summary["total-records"] == "20"
    assert table_rows(table) == _expected(range(20), lambda r: r["id"] in (3, 5), lambda r: {**r, "name": "x"})


def test_merge_on_read_update_of_every_live_row_of_a_file_drops_the_file(make_table: MakeTable) -> None:
    table = make_table(range(0, 5), range(5, 10))
    old = data_file_holding(table, 0)
    snapshot = table.update({"name": "'x'"}, where="id < 5", mode="merge-on-read")
    assert snapshot is not None and snapshot.operation == "overwrite"
    assert old not in live_data_paths(table)
    assert live_delete_entries(table) == []
    assert table_rows(table) == _expected(range(10), lambda r: r["id"] < 5, lambda r: {**r, "name": "x"})


@pytest.mark.parametrize("mode", MODES)
def test_update_skips_rows_deleted_before(make_table: MakeTable, mode: str) -> None:
    table = make_table(range(0, 10))
    table.delete("id = 1")
    table.delete_rows(pa.table({"id": [2]}))
    table.update({"name": "'x'"}, where="id < 4", mode=mode)
    expected = _expected(range(10), lambda r: r["id"] < 4, lambda r: {**r, "name": "x"})
    assert table_rows(table) == [r for r in expected if r["id"] not in (1, 2)]


@pytest.mark.parametrize("mode", MODES)
def test_an_updated_row_can_be_updated_again(make_table: MakeTable, mode: str) -> None:
    table = make_table(range(0, 10))
    table.update({"value": pc.field("value") + 1}, where="id = 4", mode=mode)
    table.update({"value": pc.field("value") * 10}, where="id in (4, 6)", mode=mode)
    got = {r["id"]: r["value"] for r in table_rows(table)}
    assert got[4] == (2.0 + 1) * 10
    assert got[6] == 3.0 * 10
    assert len(got) == 10 and table.scan().to_arrow().num_rows == 10


# -- partition columns -------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_updating_a_partition_column_moves_the_row(make_table: MakeTable, mode: str) -> None:
    table = make_table(range(0, 30), partition_by=["category"])  # a: 0-9, b: 10-19, c: 20-29
    data_before = live_data_paths(table)

    snapshot = table.update({"category": "'b'"}, where="id = 3", mode=mode)

    assert snapshot is not None
    new_entries = [e for e in live_raw_entries(table) if e.content == 0 and e.path not in data_before]
    holding_3 = [e for e in new_entries if 3 in pq.read_table(local(e.path), columns=["id"]).column("id").to_pylist()]
    (moved,) = holding_3
    assert moved.data_file["partition"] == {"category": "b"}
    assert moved.manifest["partition_spec_id"] == table.spec().spec_id
    assert "/data/category=b/" in moved.path
    assert pq.read_table(local(moved.path)).to_pylist() == [{**make_rows([3]).to_pylist()[0], "category": "b"}]
    assert [r["id"] for r in table_rows(table, filter="category = 'a'")] == [i for i in range(10) if i != 3]
    assert [r["id"] for r in table_rows(table, filter="category = 'b'")] == [3, *range(10, 20)]


@pytest.mark.parametrize("mode", MODES)
def test_rows_moved_to_a_new_partition_and_a_null_one(make_table: MakeTable, mode: str) -> None:
    table = make_table(range(0, 30), partition_by=["category"])
    table.update({"category": "'new'"}, where="id in (1, 11)", mode=mode)
    table.update({"category": None}, where="id = 21", mode=mode)
    partitions = {e.data_file["partition"]["category"] for e in live_raw_entries(table) if e.content == 0}
    assert {"new", None} <= partitions
    assert [r["id"] for r in table_rows(table, filter="category = 'new'")] == [1, 11]
    assert [r["id"] for r in table_rows(table, filter="category is null")] == [21]
    assert table.scan().to_arrow().num_rows == 30


# -- nothing to do, errors ---------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("where", ["id = 999", "name = 'nope'", "category = 'z'", "id = 1"])
def test_no_match_commits_nothing(make_table: MakeTable, mode: str, where: str) -> None:
    table = make_table(range(0, 30), partition_by=["category"])
    table.delete("id = 1")
    state = TableState(table)
    assert table.update({"name": "'x'"}, where=where, mode=mode) is None
    state.assert_unchanged()


def test_update_of_an_empty_table_commits_nothing(make_table: MakeTable) -> None:
    table = make_table()
    state = TableState(table)
    assert table.update({"name": "'x'"}, where="true") is None
    state.assert_unchanged()


BAD_UPDATES = [
    pytest.param({"nope": 1}, mor.SchemaMismatchError, id="unknown-column"),
    pytest.param({"Name": "x"}, mor.SchemaMismatchError, id="wrong-case-column"),
    pytest.param({"name": "x", "nope": 1}, mor.SchemaMismatchError, id="unknown-among-known"),
    pytest.param({"id": "abc"}, mor.SchemaMismatchError, id="string-into-long"),
    pytest.param({"value": "abc"}, mor.SchemaMismatchError, id="string-into-double"),
    pytest.param({"id": 2**70}, mor.SchemaMismatchError, id="out-of-range"),
    pytest.param({"id": None}, mor.SchemaMismatchError, id="null-into-required"),
    pytest.param({"id": pc.field("category")}, mor.SchemaMismatchError, id="string-expression-into-long"),
    pytest.param({"name": pc.field("name") + 1}, mor.SchemaMismatchError, id="expression-that-cannot-evaluate"),
    pytest.param({"name": pc.field("nope")}, mor.SchemaMismatchError, id="expression-of-unknown-column"),
    pytest.param({}, mor.InvalidArgumentError, id="nothing-to-set"),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("assignments", "error"), BAD_UPDATES)
def test_a_bad_update_writes_nothing(make_table: MakeTable, mode: str, assignments: dict[str, Any], error: type[Exception]) -> None:
    table = make_table(range(0, 30), partition_by=["category"])
    state = TableState(table)
    with pytest.raises(error):
        table.update(assignments, where="id < 15", mode=mode)
    state.assert_unchanged()
    assert table.scan().to_arrow().num_rows == 30


@pytest.mark.parametrize(
    ("where", "error"),
    [
        pytest.param("nope = 1", mor.InvalidFilterError, id="unknown-filter-column"),
        pytest.param("id <<< 1", mor.InvalidFilterError, id="bad-filter-text"),
    ],
)
def test_a_bad_filter_writes_nothing(make_table: MakeTable, where: str, error: type[Exception]) -> None:
    table = make_table(range(0, 10))
    state = TableState(table)
    with pytest.raises(error):
        table.update({"name": "'x'"}, where=where)
    state.assert_unchanged()


def test_an_unknown_mode_writes_nothing(make_table: MakeTable) -> None:
    table = make_table(range(0, 10))
    state = TableState(table)
    with pytest.raises(mor.InvalidArgumentError):
        table.update({"name": "'x'"}, where="id = 1", mode="merge-on-write")
    state.assert_unchanged()


def test_required_column_null_from_an_expression_is_refused(make_table: MakeTable) -> None:
    table = make_table()
    table.append(rows_of([{"id": 1, "category": None}, {"id": 2, "category": "a"}]))
    state = TableState(table)
    with pytest.raises(mor.SchemaMismatchError, match="id"):
        table.update({"id": pc.field("category").cast(pa.int64())}, where="id = 1")  # null for row 1
    state.assert_unchanged()
