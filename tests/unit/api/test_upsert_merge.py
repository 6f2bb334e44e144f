"""UPSERT (position and equality strategies, copy-on-write) and MERGE INTO: the rows each
gives, the files each writes, null-safe and multi-column keys, and arguments that make no
sense, which write nothing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from unit_helpers import (
    SCHEMA,
    RecordingFileIO,
    TableState,
    assert_no_orphans,
    data_file_holding,
    live_data_paths,
    live_delete_entries,
    make_rows,
    rows_of,
    sorted_rows,
    table_rows,
)

import mor

MakeTable = Callable[..., mor.Table]
Row = dict[str, Any]
MODES = ["merge-on-read", "copy-on-write"]
WAYS = [
    pytest.param("merge-on-read", "position", id="mor-position"),
    pytest.param("merge-on-read", "equality", id="mor-equality"),
    pytest.param("copy-on-write", "position", id="cow"),
]


def _renamed(ids: list[int], name: str) -> pa.Table:
    """make_rows(ids) with every name replaced, so a replaced row shows."""
    rows = make_rows(ids)
    return rows.set_column(2, "name", pa.array([f"{name}{i}" for i in ids]))


def _upserted(old: list[Row], new: pa.Table, on: list[str]) -> list[Row]:
    """The model: rows whose key is in `new` go, every row of `new` comes. A key with a null
    matches nothing (SQL's `=`)."""
    new_rows = new.to_pylist()
    keys = {key for r in new_rows if None not in (key := tuple(r[k] for k in on))}
    return sorted_rows([r for r in old if tuple(r[k] for k in on) not in keys] + new_rows)


# == UPSERT ====================================================================================


@pytest.mark.parametrize(("mode", "strategy"), WAYS)
@pytest.mark.parametrize("partition_by", [None, ["category"]], ids=["unpartitioned", "partitioned"])
def test_upsert_replaces_existing_keys_and_inserts_new_ones(
    make_table: MakeTable, mode: str, strategy: str, partition_by: list[str] | None
) -> None:
    table = make_table(range(0, 20), range(20, 30), partition_by=partition_by)
    new = _renamed([3, 15, 25, 40, 41], "u")
    new = new.set_column(1, "category", pa.array(["c", "b", "a", "a", None]))  # 3 and 25 change partition

    snapshot = table.upsert(new, on=["id"], mode=mode, strategy=strategy)

    assert snapshot is not None and snapshot.operation == "overwrite"
    assert len(table.snapshots()) == 3
    assert table_rows(table) == _upserted(make_rows(range(30)).to_pylist(), new, ["id"])
    assert_no_orphans(table)


@pytest.mark.parametrize(("mode", "strategy"), WAYS)
def test_upserts_stack(make_table: MakeTable, mode: str, strategy: str) -> None:
    table = make_table(range(0, 10))
    first, second = _renamed([1, 2, 20], "u"), _renamed([2, 20, 21], "v")
    table.upsert(first, on=["id"], mode=mode, strategy=strategy)
    table.upsert(second, on=["id"], mode=mode, strategy=strategy)
    expected = _upserted(_upserted(make_rows(range(10)).to_pylist(), first, ["id"]), second, ["id"])
    assert table_rows(table) == expected


def test_equality_upsert_writes_equality_deletes_and_data_in_one_snapshot_and_reads_no_data(make_table: MakeTable) -> None:
    table = make_table(range(0, 20), range(20, 30), partition_by=["category"])
    table.delete("id = 7")  # a position delete file, which must not be read either
    data_before = live_data_paths(table)
    recording = RecordingFileIO()
    table.io = recording
    new = _renamed([3, 25, 40], "u")

    snapshot = table.upsert(new, on=["id"], strategy="equality")

    assert snapshot is not None and snapshot == table.current_snapshot()
    assert len(table.snapshots()) == 4  # two appends, the delete, ONE upsert
    assert [p for p in recording.opened if p.endswith(".parquet")] == []
    assert data_before.isdisjoint(recording.opened)
    assert snapshot.operation == "overwrite"
    s = snapshot.summary
    assert s["added-equality-delete-files"] == "1"
    assert s["added-equality-deletes"] == "3"
    assert s.get("added-position-delete-files", "0") == "0"
    assert s["added-data-files"] == "3"  # one per partition of the new rows (a: 3, b: 40, c: 25)
    assert s["added-records"] == "3"
    assert s.get("deleted-data-files", "0") == "0"
    assert data_before <= live_data_paths(table)
    equality = [e for e in live_delete_entries(table) if e.content == 2]
    (entry,) = equality
    assert entry.data_file["equality_ids"] == [1]
    assert entry.data_sequence_number == snapshot.sequence_number
    assert entry.manifest["content"] == 1
    # The new rows carry the same sequence number, so the deletes do not hit them.
    assert table_rows(table) == _upserted([r for r in make_rows(range(30)).to_pylist() if r["id"] != 7], new, ["id"])
    assert data_before <= set(recording.opened)  # the scan above read through the fake


def test_equality_upsert_keyed_on_the_partition_column_writes_partition_scoped_deletes(make_table: MakeTable) -> None:
    table = make_table(range(0, 30), partition_by=["category"])
    specs = table.metadata.partition_specs
    new = _renamed([3, 15], "u")  # a and b
    table.upsert(new, on=["id", "category"], strategy="equality")
    assert table.metadata.partition_specs == specs
    partitions = sorted(e.data_file["partition"]["category"] for e in live_delete_entries(table))
    assert partitions == ["a", "b"]
    assert table_rows(table) == _upserted(make_rows(range(30)).to_pylist(), new, ["id", "category"])


def test_position_upsert_writes_position_deletes(make_table: MakeTable) -> None:
    table = make_table(range(0, 20), range(20, 30))
    data_before = live_data_paths(table)
    new = _renamed([3, 5, 40], "u")

    snapshot = table.upsert(new, on=["id"], mode="merge-on-read", strategy="position")

    assert snapshot is not None and snapshot.operation == "overwrite"
    s = snapshot.summary
    assert s["added-position-delete-files"] == "1"
    assert s["added-position-deletes"] == "2"
    assert s.get("added-equality-delete-files", "0") == "0"
    assert s["added-data-files"] == "1"
    assert s["added-records"] == "3"
    (delete,) = live_delete_entries(table)
    assert delete.content == 1
    assert delete.data_file["referenced_data_file"] in data_before
    assert data_before <= live_data_paths(table)
    assert table_rows(table) == _upserted(make_rows(range(30)).to_pylist(), new, ["id"])


def test_copy_on_write_upsert_writes_no_delete_file(make_table: MakeTable) -> None:
    table = make_table(range(0, 20), range(20, 30))
    new = _renamed([3, 40], "u")
    snapshot = table.upsert(new, on=["id"], mode="copy-on-write")
    assert snapshot is not None and snapshot.operation == "overwrite"
    assert live_delete_entries(table) == []
    assert snapshot.summary["deleted-data-files"] == "1"
    assert table_rows(table) == _upserted(make_rows(range(30)).to_pylist(), new, ["id"])


@pytest.mark.parametrize(("mode", "strategy"), WAYS)
def test_upsert_with_multi_column_keys(make_table: MakeTable, mode: str, strategy: str) -> None:
    # id 1 is (a, n1), id 11 is (b, n11): the crossed tuples (a, n11), (b, n1) are new keys.
    table = make_table(range(0, 30))
    new = rows_of(
        [
            {"id": 101, "category": "a", "name": "n11", "value": 1.0},
            {"id": 102, "category": "b", "name": "n1", "value": 2.0},
            {"id": 103, "category": "a", "name": "n2", "value": 3.0},  # replaces id 2
        ]
    )
    table.upsert(new, on=["category", "name"], mode=mode, strategy=strategy)
    assert table_rows(table) == _upserted(make_rows(range(30)).to_pylist(), new, ["category", "name"])
    assert [r["id"] for r in table_rows(table) if r["id"] in (1, 2, 11)] == [1, 11]


@pytest.mark.parametrize(("mode", "strategy"), WAYS)
def test_upsert_keys_with_a_null_match_no_row(make_table: MakeTable, mode: str, strategy: str) -> None:
    """As SQL's `=`: a key with a null replaces no row (not one with the same nulls) and is
    inserted; source rows with the same null key are not duplicates."""
    table = make_table()
    old = [
        {"id": 1, "category": None, "name": "x", "value": 1.0},
        {"id": 2, "category": None, "name": None, "value": 2.0},
        {"id": 3, "category": "a", "name": None, "value": 3.0},
        {"id": 4, "category": "a", "name": "x", "value": 4.0},
    ]
    table.append(rows_of(old))
    new = rows_of(
        [
            {"id": 11, "category": None, "name": "x", "value": 10.0},
            {"id": 12, "category": None, "name": None, "value": 20.0},
            {"id": 13, "category": None, "name": None, "value": 30.0},
            {"id": 14, "category": "a", "name": "x", "value": 40.0},  # replaces 4
        ]
    )
    table.upsert(new, on=["category", "name"], mode=mode, strategy=strategy)
    assert [r["id"] for r in table_rows(table)] == [1, 2, 3, 11, 12, 13, 14]
    assert table_rows(table) == _upserted(sorted_rows(old), new, ["category", "name"])


@pytest.mark.parametrize(("mode", "strategy"), WAYS)
def test_upsert_replaces_every_row_of_a_key_the_table_holds_twice(make_table: MakeTable, mode: str, strategy: str) -> None:
    """An upsert leaves one row per upserted key, whatever the strategy: the strategies are
    ways to write the same change (and the stateful model expects exactly this)."""
    table = make_table([1, 2, 3], [2])  # id 2 twice, in two files
    new = _renamed([2, 4], "u")
    table.upsert(new, on=["id"], mode=mode, strategy=strategy)
    assert table_rows(table) == _upserted(make_rows([1, 2, 3, 2]).to_pylist(), new, ["id"])


def test_upsert_of_no_rows_commits_nothing(make_table: MakeTable) -> None:
    table = make_table(range(0, 10))
    state = TableState(table)
    for mode, strategy in [("merge-on-read", "position"), ("merge-on-read", "equality"), ("copy-on-write", "position")]:
        assert table.upsert(make_rows([]), on=["id"], mode=mode, strategy=strategy) is None
    state.assert_unchanged()


@pytest.mark.parametrize(("mode", "strategy"), WAYS)
def test_upsert_into_an_empty_table_inserts(make_table: MakeTable, mode: str, strategy: str) -> None:
    table = make_table()
    snapshot = table.upsert(make_rows([1, 2]), on=["id"], mode=mode, strategy=strategy)
    assert snapshot is not None
    assert table_rows(table) == sorted_rows(make_rows([1, 2]))


@pytest.mark.parametrize(("mode", "strategy"), WAYS)
@pytest.mark.parametrize(
    ("rows", "on"),
    [
        pytest.param(make_rows([1, 2, 1]), ["id"], id="one-column"),
        pytest.param(make_rows([50, 51]), ["category"], id="one-column-new-keys"),
        pytest.param(
            rows_of(
                [{"id": 1, "category": "a", "name": "x"}, {"id": 2, "category": None, "name": "x"}, {"id": 3, "category": "a", "name": "x"}]
            ),
            ["category", "name"],
            id="two-column",
        ),
    ],
)
def test_duplicate_keys_are_refused_and_write_nothing(
    make_table: MakeTable, mode: str, strategy: str, rows: pa.Table, on: list[str]
) -> None:
    table = make_table(range(0, 30), partition_by=["category"])
    state = TableState(table)
    with pytest.raises(mor.DuplicateKeyError) as raised:
        table.upsert(rows, on=on, mode=mode, strategy=strategy)
    assert isinstance(raised.value, ValueError)
    assert isinstance(raised.value, mor.InvalidArgumentError)
    state.assert_unchanged()


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        pytest.param({"mode": "copy-on-write", "strategy": "equality"}, mor.InvalidArgumentError, id="equality-with-cow"),
        pytest.param({"strategy": "nope"}, mor.InvalidArgumentError, id="unknown-strategy"),
        pytest.param({"mode": "copy-on-write", "strategy": "nope"}, mor.InvalidArgumentError, id="unknown-strategy-cow"),
        pytest.param({"mode": "nope"}, mor.InvalidArgumentError, id="unknown-mode"),
        pytest.param({"on": ["nope"]}, mor.SchemaMismatchError, id="unknown-key"),
        pytest.param({"on": ["value"]}, mor.SchemaMismatchError, id="double-key"),
        pytest.param({"on": ["value"], "strategy": "equality"}, mor.SchemaMismatchError, id="double-key-equality"),
        pytest.param({"on": []}, mor.InvalidArgumentError, id="no-key"),
        pytest.param({"on": "id"}, mor.InvalidArgumentError, id="key-as-string"),
    ],
)
def test_upsert_arguments_that_make_no_sense_write_nothing(make_table: MakeTable, kwargs: dict[str, Any], error: type[Exception]) -> None:
    table = make_table(range(0, 30), partition_by=["category"])
    state = TableState(table)
    with pytest.raises(error):
        table.upsert(_renamed([3, 40], "u"), **{"on": ["id"], **kwargs})
    state.assert_unchanged()


@pytest.mark.parametrize(("mode", "strategy"), WAYS)
def test_upsert_rows_that_do_not_fit_the_schema_write_nothing(make_table: MakeTable, mode: str, strategy: str) -> None:
    table = make_table(range(0, 10))
    state = TableState(table)
    with pytest.raises(mor.SchemaMismatchError):
        table.upsert(make_rows([1]).drop_columns(["name"]), on=["id"], mode=mode, strategy=strategy)
    state.assert_unchanged()


# == MERGE =====================================================================================

OPS_SCHEMA = pa.schema([("id", pa.int64()), ("op", pa.string()), ("value", pa.float64())])


def _source(rows: list[tuple[int, str, float | None]]) -> pa.Table:
    return pa.table({"id": [r[0] for r in rows], "op": [r[1] for r in rows], "value": [r[2] for r in rows]}, schema=OPS_SCHEMA)


@pytest.mark.parametrize("mode", MODES)
def test_matched_delete_with_a_condition_and_update_of_the_rest(make_table: MakeTable, mode: str) -> None:
    table = make_table(range(0, 20), range(20, 30))
    source = _source([(3, "D", None), (4, "U", 40.0), (25, "D", None), (26, "U", None), (99, "U", 9.0)])

    snapshot = table.merge(
        source,
        on=["id"],
        when_matched_delete=pc.field("source.op") == "D",
        when_matched_update={"value": pc.field("source.value"), "name": pc.field("source.op")},
        mode=mode,
    )

    assert snapshot is not None and snapshot.operation == "overwrite"
    expected = [r for r in make_rows(range(30)).to_pylist() if r["id"] not in (3, 25)]
    expected = [{**r, "value": {4: 40.0, 26: None}[r["id"]], "name": "U"} if r["id"] in (4, 26) else r for r in expected]
    assert table_rows(table) == sorted_rows(expected)  # 99 is not inserted: no insert clause
    assert_no_orphans(table)


@pytest.mark.parametrize("mode", MODES)
def test_matched_delete_alone(make_table: MakeTable, mode: str) -> None:
    table = make_table(range(0, 10))
    snapshot = table.merge(_source([(3, "D", None), (50, "D", None)]), on=["id"], when_matched_delete=True, mode=mode)
    assert snapshot is not None
    assert snapshot.operation == ("delete" if mode == "merge-on-read" else "overwrite")  # a rewrite adds data
    assert [r["id"] for r in table_rows(table)] == [i for i in range(10) if i != 3]


@pytest.mark.parametrize("mode", MODES)
def test_matched_update_with_source_and_target_expressions(make_table: MakeTable, mode: str) -> None:
    table = make_table(range(0, 10))
    source = _source([(2, "x", 100.0), (5, "y", 200.0)])
    table.merge(
        source,
        on=["id"],
        when_matched_update={
            "value": pc.field("value") + pc.field("source.value"),  # target + source
            "name": pc.binary_join_element_wise(pc.field("name"), pc.field("source.op"), "/"),
            "category": "'m'",
        },
        mode=mode,
    )
    plus, op = {2: 100.0, 5: 200.0}, {2: "x", 5: "y"}
    expected = [
        {**r, "value": r["value"] + plus[r["id"]], "name": f"{r['name']}/{op[r['id']]}", "category": "m"} if r["id"] in plus else r
        for r in make_rows(range(10)).to_pylist()
    ]
    assert table_rows(table) == sorted_rows(expected)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("partition_by", [None, ["category"]], ids=["unpartitioned", "partitioned"])
def test_star_update_and_star_insert(make_table: MakeTable, mode: str, partition_by: list[str] | None) -> None:
    table = make_table(range(0, 30), partition_by=partition_by)
    source = _renamed([4, 14, 44], "s").set_column(1, "category", pa.array(["b", "b", "c"]))
    table.merge(source, on=["id"], when_matched_update="*", when_not_matched_insert="*", mode=mode)
    assert table_rows(table) == _upserted(make_rows(range(30)).to_pylist(), source, ["id"])


@pytest.mark.parametrize("mode", MODES)
def test_star_takes_source_columns_by_name_not_position(make_table: MakeTable, mode: str) -> None:
    table = make_table(range(0, 10))
    source = _renamed([4, 44], "s").select(["value", "name", "id", "category"])
    table.merge(source, on=["id"], when_matched_update="*", when_not_matched_insert="*", mode=mode)
    assert table_rows(table) == _upserted(make_rows(range(10)).to_pylist(), _renamed([4, 44], "s"), ["id"])


@pytest.mark.parametrize("mode", MODES)
def test_not_matched_insert_with_a_condition(make_table: MakeTable, mode: str) -> None:
    table = make_table(range(0, 10))
    source = _source([(1, "I", 1.0), (20, "I", 20.0), (21, "skip", 21.0), (22, "I", None)])
    snapshot = table.merge(
        source,
        on=["id"],
        when_not_matched_insert={"id": pc.field("source.id"), "value": pc.field("source.value"), "name": "'new'"},
        when_not_matched_insert_if=pc.field("source.op") == "I",
        mode=mode,
    )
    assert snapshot is not None and snapshot.operation == "append"  # nothing matched is changed
    inserted = [
        {"id": 20, "category": None, "name": "new", "value": 20.0},
        {"id": 22, "category": None, "name": "new", "value": None},
    ]
    assert table_rows(table) == sorted_rows(make_rows(range(10)).to_pylist() + inserted)


@pytest.mark.parametrize("mode", MODES)
def test_a_matched_row_with_no_applicable_clause_stays_unchanged(make_table: MakeTable, mode: str) -> None:
    table = make_table(range(0, 10), range(10, 20))
    first, second = data_file_holding(table, 3), data_file_holding(table, 13)
    source = _source([(3, "keep", 30.0), (13, "keep", 130.0), (4, "D", None), (5, "U", 50.0)])
    table.merge(
        source,
        on=["id"],
        when_matched_delete=pc.field("source.op") == "D",
        when_matched_update={"value": pc.field("source.value")},
        when_matched_update_if=pc.field("source.op") == "U",
        mode=mode,
    )
    expected = [{**r, "value": 50.0} if r["id"] == 5 else r for r in make_rows(range(20)).to_pylist() if r["id"] != 4]
    assert table_rows(table) == sorted_rows(expected)
    # The second file holds only an untouched matched row (13): nothing rewrites or deletes in it.
    assert second in live_data_paths(table)
    assert [d.data_file["referenced_data_file"] for d in live_delete_entries(table)] == ([] if mode == "copy-on-write" else [first])
    assert (first in live_data_paths(table)) == (mode == "merge-on-read")


@pytest.mark.parametrize("mode", MODES)
def test_nothing_to_do_commits_nothing(make_table: MakeTable, mode: str) -> None:
    table = make_table(range(0, 10))
    state = TableState(table)
    source = _source([(3, "keep", 1.0), (50, "skip", 2.0)])
    assert (
        table.merge(
            source,
            on=["id"],
            when_matched_delete=pc.field("source.op") == "D",
            when_not_matched_insert={"id": pc.field("source.id")},
            when_not_matched_insert_if=pc.field("source.op") == "I",
            mode=mode,
        )
        is None
    )
    state.assert_unchanged()


@pytest.mark.parametrize("mode", MODES)
def test_a_source_key_matching_several_rows_updates_all_of_them(make_table: MakeTable, mode: str) -> None:
    table = make_table([1, 2, 3], [2, 4], [2])  # id 2 three times, in three files
    table.merge(_source([(2, "x", 99.0)]), on=["id"], when_matched_update={"value": pc.field("source.value")}, mode=mode)
    got = table_rows(table)
    assert [(r["id"], r["value"]) for r in got] == [(1, 0.5), (2, 99.0), (2, 99.0), (2, 99.0), (3, 1.5), (4, 2.0)]


@pytest.mark.parametrize("mode", MODES)
def test_merge_keys_with_a_null_match_no_row(make_table: MakeTable, mode: str) -> None:
    """As SQL's `=`: neither a source nor a table key with a null is matched, so the source rows
    with one are inserted and the table rows with one stay."""
    table = make_table()
    table.append(
        rows_of(
            [
                {"id": 1, "category": None, "name": "x", "value": 1.0},
                {"id": 2, "category": None, "name": None, "value": 2.0},
                {"id": 3, "category": "a", "name": "x", "value": 3.0},
            ]
        )
    )
    source = pa.table(
        {
            "category": pa.array([None, None, "b", "a"], pa.string()),
            "name": pa.array(["x", None, None, "x"], pa.string()),
            "v": [10.0, 20.0, 30.0, 40.0],
        }
    )
    table.merge(
        source,
        on=["category", "name"],
        when_matched_update={"value": pc.field("source.v")},
        when_not_matched_insert={"id": 9, "category": pc.field("source.category"), "value": pc.field("source.v")},
        mode=mode,
    )
    assert table_rows(table) == sorted_rows(
        [
            {"id": 1, "category": None, "name": "x", "value": 1.0},
            {"id": 2, "category": None, "name": None, "value": 2.0},
            {"id": 3, "category": "a", "name": "x", "value": 40.0},
            {"id": 9, "category": None, "name": None, "value": 10.0},
            {"id": 9, "category": None, "name": None, "value": 20.0},
            {"id": 9, "category": "b", "name": None, "value": 30.0},
        ]
    )


@pytest.mark.parametrize("mode", MODES)
def test_merge_with_multi_column_keys_matches_whole_tuples(make_table: MakeTable, mode: str) -> None:
    table = make_table(range(0, 30))  # id 1 is (a, n1), id 11 is (b, n11)
    source = pa.table({"category": ["a", "b", "a"], "name": ["n11", "n1", "n2"]})
    table.merge(source, on=["category", "name"], when_matched_delete=True, mode=mode)
    assert [r["id"] for r in table_rows(table)] == [i for i in range(30) if i != 2]


def test_merge_modes_give_the_same_rows(catalog: mor.Catalog) -> None:
    results = {}
    for m in MODES:
        table = catalog.create_table(f"db.{m.replace('-', '_')}", schema=SCHEMA, partition_by=["category"])
        table.append(make_rows(range(0, 30)))
        table.delete("id = 8")
        source = _source([(i, "DUI"[i % 3], float(i)) for i in range(0, 40, 2)])
        table.merge(
            source,
            on=["id"],
            when_matched_delete=pc.field("source.op") == "D",
            when_matched_update={"value": pc.field("source.value") * 2, "category": "'z'"},
            when_not_matched_insert={"id": pc.field("source.id"), "category": pc.field("source.op")},
            when_not_matched_insert_if=pc.field("source.op") != "D",
            mode=m,
        )
        results[m] = table_rows(table)
    assert results["merge-on-read"] == results["copy-on-write"]
    model = {r["id"]: r for r in make_rows(range(30)).to_pylist() if r["id"] != 8}
    for i in range(0, 40, 2):
        op = "DUI"[i % 3]
        if i in model:
            if op == "D":
                del model[i]
            else:
                model[i] = {**model[i], "value": float(i) * 2, "category": "z"}
        elif op != "D":
            model[i] = {"id": i, "category": op, "name": None, "value": None}
    assert results["merge-on-read"] == sorted_rows(list(model.values()))


# -- MERGE errors ------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_duplicate_source_keys_are_refused_and_write_nothing(make_table: MakeTable, mode: str) -> None:
    table = make_table(range(0, 10))
    state = TableState(table)
    with pytest.raises(mor.DuplicateKeyError) as raised:
        table.merge(_source([(3, "U", 1.0), (50, "I", 2.0), (3, "D", None)]), on=["id"], when_matched_delete=True, mode=mode)
    assert isinstance(raised.value, ValueError)
    state.assert_unchanged()


IS_U, IS_I = pc.field("source.op") == "U", pc.field("source.op") == "I"
CLAUSE_ERRORS = [
    pytest.param({}, id="no-clause"),
    pytest.param({"when_matched_update": {}}, id="empty-update"),
    pytest.param({"when_matched_delete": True, "when_matched_update": {"value": 1.0}}, id="unconditional-delete-and-update"),
    pytest.param(
        {"when_matched_delete": True, "when_matched_update": "*", "when_not_matched_insert": "*"},
        id="unconditional-delete-and-star-update",
    ),
    pytest.param({"when_matched_update_if": IS_U, "when_not_matched_insert": "*"}, id="update-condition-without-update"),
    pytest.param({"when_matched_update_if": IS_U, "when_matched_delete": True}, id="update-condition-with-delete-only"),
    pytest.param({"when_not_matched_insert_if": IS_I, "when_matched_update": "*"}, id="insert-condition-without-insert"),
    pytest.param({"when_not_matched_insert_if": IS_I}, id="only-a-condition"),
    pytest.param({"when_matched_update": "all"}, id="update-neither-star-nor-dict"),
]


@pytest.mark.parametrize("clauses", CLAUSE_ERRORS)
def test_clauses_that_make_no_sense_are_refused(make_table: MakeTable, clauses: dict[str, Any]) -> None:
    table = make_table(range(0, 10))
    state = TableState(table)
    source = _renamed([3, 50], "s").append_column("op", pa.array(["U", "I"]))
    with pytest.raises(mor.InvalidArgumentError):
        table.merge(source, on=["id"], **clauses)
    state.assert_unchanged()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("source", "clauses"),
    [
        pytest.param(_source([(50, "I", 1.0)]), {"when_not_matched_insert": {"value": 1.0}}, id="insert-without-id"),
        pytest.param(
            _source([(3, "U", 1.0), (50, "I", 1.0)]),
            {"when_matched_update": {"value": 1.0}, "when_not_matched_insert": {"name": "x"}},
            id="insert-without-id-next-to-an-update",
        ),
        pytest.param(_source([(50, "I", 1.0)]), {"when_not_matched_insert": "*"}, id="star-insert-without-every-column"),
        pytest.param(_source([(3, "U", 1.0)]), {"when_matched_update": "*"}, id="star-update-without-every-column"),
        pytest.param(_source([(3, "U", 1.0)]), {"when_matched_update": {"nope": 1}}, id="update-of-an-unknown-column"),
        pytest.param(_source([(50, "I", 1.0)]), {"when_not_matched_insert": {"id": 1, "nope": 1}}, id="insert-of-an-unknown-column"),
        pytest.param(_source([(3, "U", 1.0)]), {"when_matched_update": {"id": "'abc'"}}, id="update-string-into-long"),
        pytest.param(_source([(3, "U", 1.0)]), {"when_matched_update": {"name": "abc"}}, id="update-bare-word"),
        pytest.param(_source([(3, "U", 1.0)]), {"when_matched_update": {"name": "upper(source.nope)"}}, id="update-text-of-unknown-column"),
        pytest.param(_source([(3, "U", 1.0)]), {"when_matched_update": {"id": "source.value * 1e30"}}, id="update-out-of-range"),
        pytest.param(_source([(3, "U", 1.0)]), {"when_matched_update": {"value": pc.field("source.op")}}, id="update-text-into-double"),
        pytest.param(
            _source([(3, "U", 1.0)]), {"when_matched_update": {"value": pc.field("source.nope")}}, id="update-from-unknown-column"
        ),
        pytest.param(_source([(3, "U", 1.0)]), {"when_matched_delete": pc.field("source.value")}, id="condition-not-boolean"),
        pytest.param(pa.table({"op": ["U"]}), {"when_matched_delete": True}, id="source-without-the-key"),
        pytest.param(_source([(3, "U", 1.0)]), {"when_matched_delete": True, "on": ["value"]}, id="double-key"),
        pytest.param(_source([(3, "U", 1.0)]), {"when_matched_delete": True, "on": ["nope"]}, id="unknown-key"),
    ],
)
def test_clauses_that_do_not_fit_the_schema_are_refused(
    make_table: MakeTable, mode: str, source: pa.Table, clauses: dict[str, Any]
) -> None:
    table = make_table(range(0, 10))
    state = TableState(table)
    with pytest.raises(mor.SchemaMismatchError):
        table.merge(source, **{"on": ["id"], **clauses}, mode=mode)
    state.assert_unchanged()


@pytest.mark.parametrize(
    "key",
    [
        pytest.param(pa.array(["x"]), id="text-key-for-a-long-column"),
        pytest.param(pa.array(["3"]), id="digits-as-text-for-a-long-column"),
        pytest.param(pa.array([3.5]), id="fractional-double-key-for-a-long-column"),  # 3.0 would be 3 (store assignment)
    ],
)
def test_a_source_key_of_the_wrong_type_is_a_schema_mismatch(make_table: MakeTable, key: pa.Array) -> None:
    """delete_rows and upsert conform keys to the table (SchemaMismatchError); MERGE must too,
    not match the text "3" to the number 3 nor blame a filter the user never wrote."""
    table = make_table(range(0, 10))
    state = TableState(table)
    with pytest.raises(mor.SchemaMismatchError):
        table.merge(pa.table({"id": key}), on=["id"], when_matched_delete=True)
    state.assert_unchanged()
