"""`compact`: data files with deletes (and small files) rewritten with their deletes applied;
same rows now and at every snapshot, in mor and pyiceberg; delete files that apply to nothing
leave; the new files keep the read snapshot's data sequence number; races lose nothing."""

from __future__ import annotations

import pyarrow as pa
import pytest
from pyiceberg.expressions import EqualTo, In
from pyiceberg.table import StaticTable
from unit_helpers import assert_no_orphans, live_delete_entries, live_raw_entries, make_rows, scan_ids

import mor
from mor.maintenance import compact as compact_module


def pyiceberg_ids(table: mor.Table, snapshot_id: int | None = None) -> list[int]:
    return sorted(StaticTable.from_metadata(table.metadata_location).scan(snapshot_id=snapshot_id).to_arrow()["id"].to_pylist())


def history(table: mor.Table) -> dict[int, list[int]]:
    return {s.snapshot_id: scan_ids(table, snapshot_id=s.snapshot_id) for s in table.snapshots()}


def data_file_count(table: mor.Table) -> int:
    return len(table.scan().plan_files())


def keys(ids: list[int]) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64())})


@pytest.mark.parametrize("partition_by", [None, ["category"]])
def test_position_deletes_are_applied_and_leave(catalog: mor.Catalog, partition_by: list[str] | None) -> None:
    table = catalog.create_table("db.t", schema=make_rows([]).schema, partition_by=partition_by)
    table.append(make_rows(range(0, 300)))
    table.append(make_rows(range(300, 600)))
    for k in range(6):
        table.delete(In("id", [k, 301 + k, 150 + 2 * k]))
    table.update({"value": -1.0}, where="id = 200")
    expected, before = scan_ids(table), history(table)
    read_sequence_number = table.current_snapshot().sequence_number

    result = table.compact()

    snapshot = table.current_snapshot()
    assert result.snapshot_id == snapshot.snapshot_id and snapshot.operation == "replace"
    assert scan_ids(table) == expected == pyiceberg_ids(table)
    assert live_delete_entries(table) == []
    assert result.removed_position_delete_files > 0 and result.removed_equality_delete_files == 0
    assert result.written_rows == len(expected) and result.rewritten_rows > result.written_rows
    for entry in live_raw_entries(table):  # every file was rewritten: all keep the read snapshot's number
        assert entry.snapshot_id == snapshot.snapshot_id
        assert entry.data_sequence_number == read_sequence_number
        assert entry.file_sequence_number == snapshot.sequence_number
    assert history(table) == {**before, snapshot.snapshot_id: expected}
    assert table.scan(filter="id = 200").to_arrow()["value"].to_pylist() == [-1.0]
    assert_no_orphans(table)


def test_equality_deletes_are_applied_and_leave(catalog: mor.Catalog) -> None:
    table = catalog.create_table("db.t", schema=make_rows([]).schema, partition_by=["category"])
    table.append(make_rows(range(100)))
    table.delete_rows(keys([1, 2, 45]))
    table.upsert(make_rows([3, 4, 500]), on=["id"], strategy="equality")
    table.append(make_rows([1]))  # newer than the delete of 1: it stays
    expected = scan_ids(table)
    assert 1 in expected and 2 not in expected

    result = table.compact()

    assert scan_ids(table) == expected
    assert live_delete_entries(table) == []
    assert result.removed_equality_delete_files == 2
    assert result.removed_equality_delete_bytes > 0


def test_an_equality_delete_committed_meanwhile_still_applies(catalog: mor.Catalog, monkeypatch: pytest.MonkeyPatch) -> None:
    table = catalog.create_table("db.t", schema=make_rows([]).schema)
    table.append(make_rows(range(100)))
    table.delete(In("id", [0, 1]))
    race(monkeypatch, lambda: catalog.load_table("db.t").delete_rows(keys([50, 51])))

    table.compact()

    assert scan_ids(table) == [i for i in range(2, 100) if i not in (50, 51)]
    (task,) = table.scan().plan_files()
    assert [f.record_count for f in task.equality_deletes] == [2]  # the new file is older than it
    assert task.position_deletes == ()


def race(monkeypatch: pytest.MonkeyPatch, concurrent) -> list[int]:  # type: ignore[no-untyped-def]
    """Run `concurrent()` once, after compaction has written its files and before it commits.
    Returns a list that counts the plans written."""
    real = compact_module.write_compaction
    pending, plans = [concurrent], []

    def written_then_raced(*args, **kwargs):  # type: ignore[no-untyped-def]
        validate = real(*args, **kwargs)
        plans.append(1)
        while pending:
            pending.pop()()
        return validate

    monkeypatch.setattr(compact_module, "write_compaction", written_then_raced)
    return plans


def test_a_position_delete_committed_meanwhile_makes_it_plan_again(catalog: mor.Catalog, monkeypatch: pytest.MonkeyPatch) -> None:
    table = catalog.create_table("db.t", schema=make_rows([]).schema)
    table.append(make_rows(range(100)))
    table.delete(In("id", [0, 1]))
    plans = race(monkeypatch, lambda: catalog.load_table("db.t").delete(In("id", [60, 61])))

    result = table.compact()

    assert len(plans) == 2  # the first plan conflicted with the concurrent DELETE
    assert scan_ids(table) == [i for i in range(2, 100) if i not in (60, 61)]
    assert live_delete_entries(table) == [] and result.written_rows == 96
    assert_no_orphans(table)


def test_without_replans_the_conflict_is_raised_and_nothing_is_lost(catalog: mor.Catalog, monkeypatch: pytest.MonkeyPatch) -> None:
    table = catalog.create_table("db.t", schema=make_rows([]).schema)
    table.set_properties(**{"mor.dml.replan.num-retries": "0"})
    table.append(make_rows(range(100)))
    table.delete(In("id", [0, 1]))
    race(monkeypatch, lambda: catalog.load_table("db.t").delete(In("id", [60, 61])))

    with pytest.raises(mor.CommitConflictError, match="position deletes"):
        table.compact()

    fresh = catalog.load_table("db.t")
    assert fresh.current_snapshot().operation == "delete"
    assert scan_ids(fresh) == [i for i in range(2, 100) if i not in (60, 61)]
    assert_no_orphans(fresh)


def test_a_data_file_removed_meanwhile_makes_it_plan_again(catalog: mor.Catalog, monkeypatch: pytest.MonkeyPatch) -> None:
    table = catalog.create_table("db.t", schema=make_rows([]).schema)
    table.append(make_rows(range(100)))
    table.append(make_rows(range(100, 200)))
    table.delete(In("id", [0, 100]))
    plans = race(monkeypatch, lambda: catalog.load_table("db.t").delete("id >= 150", mode="copy-on-write"))

    table.compact()

    assert len(plans) == 2
    assert scan_ids(table) == [*range(1, 100), *range(101, 150)]
    assert_no_orphans(table)


def test_where_limits_it_to_matching_partitions(catalog: mor.Catalog) -> None:
    table = catalog.create_table("db.t", schema=make_rows([]).schema, partition_by=["category"])
    table.append(make_rows(range(90)))  # categories a, b, c in runs of ten
    table.delete(In("id", [0, 10, 20]))  # one row in each partition
    expected = scan_ids(table)

    result = table.compact(where="category = 'a'")

    assert result.rewritten_data_files == 1 and result.removed_position_delete_files == 1
    by_category = {t.data_file.partition: len(t.delete_files) for t in table.scan().plan_files()}
    assert sorted(by_category.values()) == [0, 1, 1]
    assert scan_ids(table) == expected


def test_rows_move_into_the_default_spec_grouped_by_its_partitions(catalog: mor.Catalog) -> None:
    """After a spec change, compaction writes the default spec (Iceberg's rewrite_data_files
    does); an old file whose spec has every default-spec field (by id) groups with the default
    spec's files of the same partition, and `where` prunes each spec by its own fields."""
    table = catalog.create_table("db.t", schema=make_rows([]).schema, partition_by=["category"])
    for start in (0, 30):
        table.append(make_rows(range(start, start + 30)))  # a, b, c in runs of ten
    table.update_spec().add_field("bucket(2, id)").commit()  # spec 1: [category, id_bucket_2]
    table.append(make_rows(range(60, 90)))
    table.update_spec().remove_field("id_bucket_2").commit()  # [category] again: spec 0
    assert table.spec().spec_id == 0
    table.append(make_rows(range(90, 120)))
    expected, before = scan_ids(table), history(table)

    result = table.compact(where="category = 'a'", min_input_files=2)

    tasks = table.scan().plan_files()
    a_files = [t for t in tasks if t.data_file.partition[0] == "a"]
    assert [(t.data_file.spec_id, t.data_file.partition) for t in a_files] == [(0, ("a",))]  # all in one file
    assert result.rewritten_data_files == 3 + 2  # spec 0: three appends; spec 1: both buckets
    assert {t.data_file.spec_id for t in tasks if t.data_file.partition[0] != "a"} == {0, 1}  # untouched
    after = history(table)
    assert scan_ids(table) == expected and all(after[s] == ids for s, ids in before.items())
    assert pyiceberg_ids(table) == expected


def test_min_delete_ratio_and_min_delete_files(catalog: mor.Catalog) -> None:
    table = catalog.create_table("db.t", schema=make_rows([]).schema)
    table.append(make_rows(range(0, 100)))
    table.append(make_rows(range(100, 200)))
    table.delete(In("id", list(range(0, 40))))  # 40% of the first file
    table.delete(EqualTo("id", 150))  # 1% of the second
    table.delete(EqualTo("id", 151))

    big = 1000  # a target under every file's size: no file is small, none rides along

    nothing = table.compact(min_delete_ratio=0.5, target_file_size=big)
    assert nothing.snapshot_id is None and nothing.rewritten_data_files == 0

    by_ratio = table.compact(min_delete_ratio=0.3, target_file_size=big)
    assert by_ratio.rewritten_data_files == 1 and by_ratio.written_rows == 60
    assert sorted(len(t.delete_files) for t in table.scan().plan_files())[-1] == 2

    by_count = table.compact(min_delete_ratio=1.0, min_delete_files=2, target_file_size=big)
    assert by_count.rewritten_data_files == 1 and by_count.written_rows == 98
    assert scan_ids(table) == [*range(40, 150), *range(152, 200)]


def test_small_files_ride_along_with_files_that_have_deletes(catalog: mor.Catalog) -> None:
    table = catalog.create_table("db.t", schema=make_rows([]).schema)
    table.append(make_rows(range(0, 100)))
    table.append(make_rows(range(100, 110)))
    table.delete(In("id", [0, 1]))
    result = table.compact(min_input_files=100)
    assert (result.rewritten_data_files, result.added_data_files) == (2, 1)
    assert scan_ids(table) == list(range(2, 110))


def test_small_files_are_packed_once_there_are_enough(catalog: mor.Catalog) -> None:
    table = catalog.create_table("db.t", schema=make_rows([]).schema, partition_by=["category"])
    for start in range(0, 40, 10):  # runs of ten ids: a, b, c, a
        table.append(make_rows(range(start, start + 10)))
    table.append(make_rows(range(0, 30, 3)))  # one file spanning partitions: three more files
    counts = data_file_count(table)

    assert table.compact(min_input_files=5).snapshot_id is None  # no partition has five

    result = table.compact(min_input_files=2)
    assert result.rewritten_data_files == counts
    assert data_file_count(table) == 3  # one per partition
    assert sorted(scan_ids(table)) == sorted([*range(40), *range(0, 30, 3)])


def test_output_files_roll_at_the_target_size(catalog: mor.Catalog) -> None:
    table = catalog.create_table("db.t", schema=make_rows([]).schema, properties={"write.parquet.row-group-limit": "500"})
    table.append(make_rows(range(20_000)))
    table.delete(In("id", list(range(0, 20_000, 7))))
    expected = scan_ids(table)

    result = table.compact(target_file_size=40_000)

    assert result.added_data_files > 3
    assert all(t.data_file.file_size_in_bytes < 2 * 40_000 for t in table.scan().plan_files())
    assert scan_ids(table) == expected == pyiceberg_ids(table)


def test_files_whose_rows_are_all_deleted_just_leave(catalog: mor.Catalog) -> None:
    table = catalog.create_table("db.t", schema=make_rows([]).schema)
    table.append(make_rows(range(10)))
    table.append(make_rows(range(10, 20)))
    table.delete("id < 10")
    table.delete_rows(keys([10]))

    result = table.compact()

    assert result.added_data_files == 1 and result.written_rows == 9
    assert scan_ids(table) == list(range(11, 20))
    assert live_delete_entries(table) == []


def test_delete_files_that_apply_to_nothing_leave_even_without_a_rewrite(catalog: mor.Catalog) -> None:
    table = catalog.create_table("db.t", schema=make_rows([]).schema)
    table.append(make_rows(range(10)))
    table.delete_rows(keys([3]))
    table.delete("true", mode="copy-on-write")  # every data file goes; the equality delete stays
    table.append(make_rows(range(20, 30)))  # newer than the delete
    assert len(live_delete_entries(table)) == 1

    result = table.compact()

    assert (result.rewritten_data_files, result.removed_equality_delete_files) == (0, 1)
    assert result.snapshot_id == table.current_snapshot().snapshot_id
    assert live_delete_entries(table) == [] and scan_ids(table) == list(range(20, 30))


def test_nothing_to_do_and_dry_run_commit_nothing(catalog: mor.Catalog) -> None:
    table = catalog.create_table("db.t", schema=make_rows([]).schema)
    assert table.compact().snapshot_id is None  # no snapshot at all
    table.append(make_rows(range(100)))
    assert table.compact().snapshot_id is None  # one file, no deletes
    table.delete(In("id", [1, 2]))
    before = table.metadata_location

    result = table.compact(dry_run=True)

    assert result.dry_run and result.snapshot_id is None
    assert (result.rewritten_data_files, result.removed_position_delete_files, result.added_data_files) == (1, 1, 0)
    assert catalog.load_table("db.t").metadata_location == before
    assert_no_orphans(table)


@pytest.mark.parametrize(
    "arguments",
    [
        {"target_file_size": 0},
        {"target_file_size": "big"},
        {"min_delete_ratio": 1.5},
        {"min_delete_ratio": -0.1},
        {"min_input_files": 0},
        {"min_delete_files": 0},
        {"where": "no_such_column = 1"},
        {"progress": "yes"},
    ],
)
def test_bad_arguments_raise_and_change_nothing(catalog: mor.Catalog, arguments: dict) -> None:
    table = catalog.create_table("db.t", schema=make_rows([]).schema)
    table.append(make_rows(range(10)))
    table.delete(EqualTo("id", 1))
    before = table.metadata_location
    with pytest.raises((mor.InvalidArgumentError, mor.InvalidFilterError)):
        table.compact(**arguments)
    assert catalog.load_table("db.t").metadata_location == before
    assert_no_orphans(table)


def test_progress_counts_the_bytes_of_every_file(catalog: mor.Catalog) -> None:
    table = catalog.create_table("db.t", schema=make_rows([]).schema)
    for start in range(0, 30, 10):
        table.append(make_rows(range(start, start + 10)))
        table.delete(EqualTo("id", start))
    sizes = [task.data_file.file_size_in_bytes for task in table.scan().plan_files()]
    events: list = []
    result = table.compact(progress=events.append)
    assert {(e.operation, e.stage, e.unit) for e in events} == {("compact", "rewrite data files", "bytes")}
    done = [e.done for e in events]
    assert done[0] == 0 and done == sorted(done) and done[-1] == sum(sizes) == result.rewritten_data_bytes
    assert {e.total for e in events} == {sum(sizes)}


def test_progress_advances_within_a_file(catalog: mor.Catalog) -> None:
    table = catalog.create_table("db.t", schema=make_rows([]).schema, properties={"write.parquet.row-group-limit": "10"})
    table.append(make_rows(range(100)))  # one file of 10 row groups, read a batch at a time
    table.delete(EqualTo("id", 0))
    events: list = []
    table.compact(progress=events.append)
    total = events[-1].total
    assert total is not None and events[-1].done == total
    assert len([e for e in events if 0 < e.done < total]) >= 5


def test_a_failing_write_leaves_nothing_behind(catalog: mor.Catalog, monkeypatch: pytest.MonkeyPatch) -> None:
    table = catalog.create_table("db.t", schema=make_rows([]).schema, partition_by=["category"])
    table.append(make_rows(range(90)))
    table.delete(In("id", [0, 10, 20]))
    before = table.metadata_location
    real_write = compact_module.RollingDataWriter.write
    calls = []

    def fails_on_the_second_group(self, rows):  # type: ignore[no-untyped-def]
        calls.append(1)
        if len(calls) == 2:
            raise OSError("disk full")
        return real_write(self, rows)

    monkeypatch.setattr(compact_module.RollingDataWriter, "write", fails_on_the_second_group)
    with pytest.raises(OSError, match="disk full"):
        table.compact()
    assert catalog.load_table("db.t").metadata_location == before
    assert_no_orphans(table)
