"""DELETE: merge-on-read position delete files, whole-file removal, copy-on-write, stacking,
and reads that skip row groups while deletes stay aligned."""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from unit_helpers import (
    FILE_PATH_ID,
    POS_ID,
    SCHEMA,
    assert_no_orphans,
    assert_rows_are,
    files_under,
    live_data_paths,
    live_delete_entries,
    live_raw_entries,
    local,
    read_avro,
    scan_ids,
)

import mor

MakeTable = Callable[..., mor.Table]


def _long(value: int) -> bytes:
    return value.to_bytes(8, "little", signed=True)


def _positions_of(data_path: str, ids: set[int]) -> list[int]:
    column = pq.read_table(local(data_path), columns=["id"]).column("id").to_pylist()
    return [pos for pos, i in enumerate(column) if i in ids]


def _data_file_holding(table: mor.Table, row_id: int) -> str:
    for path in live_data_paths(table):
        if row_id in pq.read_table(local(path), columns=["id"]).column("id").to_pylist():
            return path
    raise AssertionError(f"no live data file holds id {row_id}")


# -- merge-on-read -----------------------------------------------------------------------------


def test_merge_on_read_writes_one_position_delete_file_per_data_file(make_table: MakeTable) -> None:
    table = make_table(range(0, 60), partition_by=["category"])  # a: 0-9,30-39  b: 10-19,40-49  c: ...
    data_before = live_data_paths(table)
    deleted = {1, 2, 15, 33}
    file_a, file_b = _data_file_holding(table, 1), _data_file_holding(table, 15)

    snapshot = table.delete("id in (1, 2, 15, 33)")

    assert snapshot is not None and snapshot == table.current_snapshot()
    assert live_data_paths(table) == data_before  # no data file touched
    deletes = {e.data_file["referenced_data_file"]: e for e in live_delete_entries(table)}
    assert set(deletes) == {file_a, file_b}
    for target, entry in deletes.items():
        wanted = _positions_of(target, deleted)
        assert entry.content == 1
        assert entry.manifest["content"] == 1  # in a DELETES manifest
        header, _ = read_avro(entry.manifest["manifest_path"])
        assert header["content"] == "deletes"
        assert entry.data_file["file_format"] == "PARQUET"
        assert entry.data_file["record_count"] == len(wanted)
        assert entry.data_sequence_number == snapshot.sequence_number
        assert entry.snapshot_id == snapshot.snapshot_id
        lower, upper = entry.bounds("lower_bounds"), entry.bounds("upper_bounds")
        assert lower[FILE_PATH_ID] == upper[FILE_PATH_ID] == target.encode()  # whole, not truncated
        assert (lower[POS_ID], upper[POS_ID]) == (_long(min(wanted)), _long(max(wanted)))
        data_entry = next(e for e in live_raw_entries(table) if e.path == target)
        assert entry.data_file["partition"] == data_entry.data_file["partition"]

        rows = pq.read_table(local(entry.path))
        assert rows.column_names == ["file_path", "pos"]
        assert rows.column("file_path").to_pylist() == [target] * len(wanted)
        assert rows.column("pos").to_pylist() == wanted  # sorted by pos
        schema = pq.read_schema(local(entry.path))
        assert schema.field("file_path").metadata[b"PARQUET:field_id"] == str(FILE_PATH_ID).encode()
        assert schema.field("pos").metadata[b"PARQUET:field_id"] == str(POS_ID).encode()
        parquet_schema = pq.ParquetFile(local(entry.path)).schema
        assert [parquet_schema.column(i).max_definition_level for i in range(2)] == [0, 0]  # both required
        assert parquet_schema.column(0).physical_type == "BYTE_ARRAY"
        assert parquet_schema.column(1).physical_type == "INT64"

    assert_rows_are(table.scan().to_arrow(), set(range(60)) - deleted)


def test_merge_on_read_delete_summary(make_table: MakeTable) -> None:
    table = make_table(range(0, 60), partition_by=["category"])
    before = table.current_snapshot()
    assert before is not None
    snapshot = table.delete("id in (1, 2, 15, 33)")
    assert snapshot is not None
    summary = snapshot.summary
    assert snapshot.operation == "delete"
    assert snapshot.parent_snapshot_id == before.snapshot_id
    assert snapshot.sequence_number == before.sequence_number + 1
    assert summary["added-delete-files"] == "2"
    assert summary["added-position-delete-files"] == "2"
    assert summary["added-position-deletes"] == "4"
    assert summary["changed-partition-count"] == "2"
    assert summary.get("added-data-files", "0") == "0"
    assert summary.get("deleted-data-files", "0") == "0"
    assert summary.get("added-records", "0") == "0"
    assert summary["total-records"] == "60"  # data file records; position deletes are counted apart
    assert summary["total-data-files"] == "3"
    assert summary["total-delete-files"] == "2"
    assert summary["total-position-deletes"] == "4"
    assert summary["total-equality-deletes"] == "0"
    delete_sizes = sum(e.data_file["file_size_in_bytes"] for e in live_delete_entries(table))
    assert summary["added-files-size"] == str(delete_sizes)
    assert int(summary["total-files-size"]) == int(before.summary["total-files-size"]) + delete_sizes


def test_delete_of_every_live_row_of_a_file_removes_the_file(make_table: MakeTable) -> None:
    table = make_table(range(0, 5), range(5, 10))
    doomed = _data_file_holding(table, 0)
    snapshot = table.delete("id in (0, 1, 2, 3, 4)")
    assert snapshot is not None
    assert snapshot.operation == "delete"
    assert snapshot.summary["deleted-data-files"] == "1"
    assert snapshot.summary["deleted-records"] == "5"
    assert snapshot.summary.get("added-delete-files", "0") == "0"
    assert snapshot.summary["total-data-files"] == "1"
    assert snapshot.summary["total-records"] == "5"
    assert snapshot.summary["total-delete-files"] == "0"
    assert doomed not in live_data_paths(table)
    assert live_delete_entries(table) == []
    assert_rows_are(table.scan().to_arrow(), range(5, 10))


def test_whole_partition_delete_drops_files_by_metadata(make_table: MakeTable) -> None:
    table = make_table(range(0, 30), partition_by=["category"])
    snapshot = table.delete("category = 'b'")
    assert snapshot is not None
    assert snapshot.summary["deleted-data-files"] == "1"
    assert snapshot.summary.get("added-delete-files", "0") == "0"
    assert live_delete_entries(table) == []
    assert_rows_are(table.scan().to_arrow(), [*range(0, 10), *range(20, 30)])


def test_removing_a_file_also_removes_its_delete_files(make_table: MakeTable) -> None:
    table = make_table(range(0, 5), range(5, 10))
    table.delete("id = 0")
    assert len(live_delete_entries(table)) == 1
    snapshot = table.delete("id < 5")  # the rest of the file's live rows
    assert snapshot is not None
    assert snapshot.summary["deleted-data-files"] == "1"
    assert snapshot.summary["removed-delete-files"] == "1"
    assert snapshot.summary["removed-position-deletes"] == "1"
    assert snapshot.summary["total-delete-files"] == "0"
    assert snapshot.summary["total-position-deletes"] == "0"
    assert live_delete_entries(table) == []
    assert_rows_are(table.scan().to_arrow(), range(5, 10))


@pytest.mark.parametrize(
    "where",
    [
        pytest.param("id = 999", id="pruned-by-metrics"),
        pytest.param("name = 'n1x'", id="read-but-no-match"),
        pytest.param("id = 3", id="already-deleted"),
        pytest.param("category = 'z'", id="pruned-by-partition"),
    ],
)
def test_delete_matching_nothing_commits_nothing(make_table: MakeTable, where: str) -> None:
    table = make_table(range(0, 30), partition_by=["category"])
    table.delete("id = 3")
    location, files = table.metadata_location, files_under(table.location)
    assert table.delete(where) is None
    assert table.metadata_location == location
    assert files_under(table.location) == files


def test_delete_on_an_empty_table_commits_nothing(make_table: MakeTable) -> None:
    table = make_table()
    location = table.metadata_location
    assert table.delete("id = 1") is None
    assert table.metadata_location == location
    assert table.current_snapshot() is None


def test_deletes_stack(make_table: MakeTable) -> None:
    table = make_table(range(0, 20))
    first = table.delete("id = 1")
    second = table.delete("id in (2, 1)")  # 1 is gone already: only 2 is deleted now
    assert first is not None and second is not None
    deletes = sorted(live_delete_entries(table), key=lambda e: e.data_sequence_number)
    assert len(deletes) == 2
    assert [e.data_file["record_count"] for e in deletes] == [1, 1]
    assert [e.data_sequence_number for e in deletes] == [first.sequence_number, second.sequence_number]
    assert deletes[0].data_file["referenced_data_file"] == deletes[1].data_file["referenced_data_file"]
    assert second.summary["total-delete-files"] == "2"
    assert second.summary["total-position-deletes"] == "2"
    (task,) = table.scan().plan_files()
    assert sorted(f.file_path for f in task.delete_files) == sorted(e.path for e in deletes)
    assert_rows_are(table.scan().to_arrow(), [i for i in range(20) if i not in (1, 2)])


def test_delete_by_a_non_key_column(make_table: MakeTable) -> None:
    table = make_table(range(0, 40))
    table.delete("name in ('n7', 'n8', 'n39') or value > 18.5")
    assert_rows_are(table.scan().to_arrow(), [i for i in range(38) if i not in (7, 8)])


def test_delete_with_a_null_comparison(make_table: MakeTable) -> None:
    table = make_table()
    table.append(pa.table({"id": [1, 2, 3], "category": ["a", None, "b"], "name": ["x", "y", "z"], "value": [1.0, 2.0, 3.0]}))
    table.delete("category is null")
    assert scan_ids(table) == [1, 3]
    table.delete("category != 'a'")
    assert scan_ids(table) == [1]


NULLS_AND_NANS = [
    pytest.param("category != 'x'", ["a", None, "b"], id="not-equal-with-null"),
    pytest.param("category != 'x'", ["a", None, "b", "x"], id="not-equal-with-null-and-a-match-for-x"),
    pytest.param("category != 'x'", [None, None], id="not-equal-only-nulls"),
    pytest.param("not category = 'x'", ["a", None, "b"], id="not-of-equal-with-null"),
    pytest.param("category not in ('x', 'y')", ["a", None, "b"], id="not-in-with-null"),
    pytest.param("category is not null", ["a", None, "b"], id="is-not-null"),
    pytest.param("category < 'c'", ["a", None, "b"], id="less-than-with-null"),
    pytest.param("category not like 'z%'", ["a", None, "b"], id="not-starts-with-with-null"),
]


@pytest.mark.parametrize("mode", ["merge-on-read", "copy-on-write"])
@pytest.mark.parametrize(("where", "categories"), NULLS_AND_NANS)
def test_delete_removes_exactly_the_rows_a_scan_with_the_predicate_returns(
    make_table: MakeTable, where: str, categories: list[str | None], mode: str
) -> None:
    """Whatever a predicate makes of nulls, DELETE and scan must make the same of it, whether
    the delete reads the file or decides from its column metrics alone."""
    table = make_table()
    n = len(categories)
    table.append(pa.table({"id": range(n), "category": categories, "name": ["n"] * n, "value": [1.0] * n}).cast(SCHEMA))
    matched = scan_ids(table, filter=where)
    table.delete(where, mode=mode)
    assert scan_ids(table) == [i for i in range(n) if i not in matched]


@pytest.mark.parametrize("mode", ["merge-on-read", "copy-on-write"])
@pytest.mark.parametrize("where", ["value != 2.5", "value > 0", "value < 100", "value is nan", "value is not nan"])
def test_delete_and_scan_agree_on_nans(make_table: MakeTable, where: str, mode: str) -> None:
    table = make_table()
    values = [1.0, float("nan"), 3.0, None]
    table.append(pa.table({"id": range(4), "category": ["a"] * 4, "name": ["n"] * 4, "value": values}).cast(SCHEMA))
    matched = scan_ids(table, filter=where)
    table.delete(where, mode=mode)
    assert scan_ids(table) == [i for i in range(4) if i not in matched]


# -- copy-on-write -----------------------------------------------------------------------------


def test_copy_on_write_gives_the_same_rows_with_an_overwrite(make_table: MakeTable) -> None:
    mor_table = make_table(range(0, 60), name="mor", partition_by=["category"])
    cow_table = make_table(range(0, 60), name="cow", partition_by=["category"])
    where = "id in (1, 2, 15, 33) or name = 'n59'"
    mor_table.delete(where)
    snapshot = cow_table.delete(where, mode="copy-on-write")
    assert snapshot is not None
    assert mor_table.scan().to_arrow().sort_by("id") == cow_table.scan().to_arrow().sort_by("id")
    assert snapshot.operation == "overwrite"
    assert live_delete_entries(cow_table) == []
    summary = snapshot.summary
    assert summary.get("added-delete-files", "0") == "0"
    assert summary["deleted-data-files"] == "3"
    assert summary["added-data-files"] == "3"
    assert summary["deleted-records"] == "60"
    assert summary["added-records"] == "55"
    assert summary["total-records"] == "55"
    assert summary["total-delete-files"] == "0"
    assert_rows_are(cow_table.scan().to_arrow(), set(range(60)) - {1, 2, 15, 33, 59})


def test_copy_on_write_folds_in_earlier_position_deletes(make_table: MakeTable) -> None:
    table = make_table(range(0, 10))
    table.delete("id = 4")
    snapshot = table.delete("id = 6", mode="copy-on-write")
    assert snapshot is not None
    assert snapshot.summary["removed-delete-files"] == "1"
    assert snapshot.summary["added-records"] == "8"
    assert live_delete_entries(table) == []
    (path,) = live_data_paths(table)
    assert pq.read_table(local(path)).num_rows == 8
    assert_rows_are(table.scan().to_arrow(), [0, 1, 2, 3, 5, 7, 8, 9])
    assert_no_orphans(table)


def test_copy_on_write_of_every_row_is_a_delete(make_table: MakeTable) -> None:
    table = make_table(range(0, 5), range(5, 10))
    snapshot = table.delete("id >= 5", mode="copy-on-write")
    assert snapshot is not None
    assert snapshot.operation == "delete"
    assert snapshot.summary.get("added-data-files", "0") == "0"
    assert_rows_are(table.scan().to_arrow(), range(0, 5))


def test_delete_mode_table_property_sets_the_default(make_table: MakeTable) -> None:
    table = make_table(range(0, 10), properties={"write.delete.mode": "copy-on-write"})
    snapshot = table.delete("id = 1")
    assert snapshot is not None and snapshot.operation == "overwrite"
    assert live_delete_entries(table) == []
    snapshot = table.delete("id = 2", mode="merge-on-read")  # an explicit mode wins
    assert snapshot is not None and snapshot.operation == "delete"
    assert len(live_delete_entries(table)) == 1


def test_delete_mode_set_later_changes_the_default(make_table: MakeTable) -> None:
    table = make_table(range(0, 10))
    assert table.properties["write.delete.mode"] == "merge-on-read"
    table.set_properties(**{"write.delete.mode": "copy-on-write"})
    snapshot = table.delete("id = 1")
    assert snapshot is not None and snapshot.operation == "overwrite"
    reloaded = table.refresh()
    assert reloaded.properties["write.delete.mode"] == "copy-on-write"


# -- row groups ---------------------------------------------------------------------------------

SMALL_ROW_GROUPS = {"write.parquet.row-group-limit": "100"}
DELETED = {5, 150, 151, 420, 777, 999, *range(300, 400), 1500}


@pytest.fixture
def row_group_table(make_table: MakeTable) -> mor.Table:
    """1000 rows in 10 row groups of 100 (ids in order), a second file of 1000 more, and
    deletes in several row groups, a whole row group (300-399) among them."""
    table = make_table(range(0, 1000), range(1000, 2000), properties=SMALL_ROW_GROUPS)
    for path in live_data_paths(table):
        assert pq.ParquetFile(local(path)).metadata.num_row_groups == 10
    table.delete("id in (5, 150, 151, 420, 777, 999, 1500)")
    table.delete("id >= 300 and id < 400")  # found by reading row group 3 only
    return table


def test_deletes_found_through_pruned_row_groups_hit_the_right_rows(row_group_table: mor.Table) -> None:
    deletes = live_delete_entries(row_group_table)
    positions = sorted(p for e in deletes for p in pq.read_table(local(e.path)).column("pos").to_pylist())
    assert positions == sorted([5, 150, 151, 420, 777, 999, *range(300, 400), 500])
    assert_rows_are(row_group_table.scan().to_arrow(), set(range(2000)) - DELETED)


@pytest.mark.parametrize(
    ("where", "matches"),
    [
        pytest.param("id >= 400", lambda i: i >= 400, id="id >= 400"),
        pytest.param("id >= 140 and id < 160", lambda i: 140 <= i < 160, id="id >= 140 and id < 160"),
        pytest.param("id >= 290 and id < 410", lambda i: 290 <= i < 410, id="id >= 290 and id < 410"),
        pytest.param("id > 776 and id < 1001", lambda i: 776 < i < 1001, id="id > 776 and id < 1001"),
        pytest.param("id >= 1499 and id <= 1501", lambda i: 1499 <= i <= 1501, id="id >= 1499 and id <= 1501"),
        pytest.param("name = 'n777'", lambda i: i == 777, id="name = 'n777'"),
        pytest.param("name = 'n778'", lambda i: i == 778, id="name = 'n778'"),
        pytest.param("value >= 490.5", lambda i: i / 2 >= 490.5, id="value >= 490.5"),
    ],
)
def test_filtered_scan_skips_row_groups_and_keeps_deletes_aligned(
    row_group_table: mor.Table, where: str, matches: Callable[[int], bool]
) -> None:
    wanted = [i for i in range(2000) if i not in DELETED and matches(i)]
    assert_rows_are(row_group_table.scan(filter=where).to_arrow(), wanted)


def test_projected_filtered_scan_keeps_deletes_aligned(row_group_table: mor.Table) -> None:
    got = row_group_table.scan(filter="id >= 700 and id < 1000", columns=["name"]).to_arrow()
    assert got.column_names == ["name"]
    assert sorted(got.column("name").to_pylist()) == sorted(f"n{i}" for i in range(700, 1000) if i not in DELETED)


def test_later_delete_through_skipped_row_groups(row_group_table: mor.Table) -> None:
    row_group_table.delete("id >= 600 and id < 603")
    row_group_table.delete("name = 'n899'")
    gone = DELETED | {600, 601, 602, 899}
    assert_rows_are(row_group_table.scan().to_arrow(), set(range(2000)) - gone)
    assert_rows_are(row_group_table.scan(filter="id >= 550 and id < 950").to_arrow(), set(range(550, 950)) - gone)


def test_position_delete_files_have_the_spec_parquet_schema(make_table) -> None:
    """file_path is a plain required string (dictionary-encoded on disk, not a dictionary type:
    polars refuses that), pos a required long, each with its reserved field id."""
    from mor.io.fileio import to_local_path

    table = make_table(range(50))
    table.delete("id < 5")
    delete_file = table.scan().plan_files()[0].position_deletes[0]
    parquet = pq.ParquetFile(to_local_path(delete_file.file_path))
    columns = [(c.name, c.physical_type, str(c.logical_type), c.max_definition_level) for c in parquet.schema]
    assert columns == [("file_path", "BYTE_ARRAY", "String", 0), ("pos", "INT64", "None", 0)]
    arrow = parquet.schema_arrow
    assert arrow.field("file_path").type == pa.string() and arrow.field("pos").type == pa.int64()
    assert [f.metadata[b"PARQUET:field_id"] for f in arrow] == [b"2147483546", b"2147483545"]
    assert "RLE_DICTIONARY" in parquet.metadata.row_group(0).column(0).encodings
