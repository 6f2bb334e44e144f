"""Scan planning: which files a scan reads, and which delete files apply to each."""

from __future__ import annotations

import itertools
import pickle
from collections.abc import Callable

import pytest
from pyiceberg.expressions import AlwaysTrue
from unit_helpers import FILE_PATH_ID, live_data_paths, live_delete_entries, make_rows

import mor
from mor.format.content_file import DataFile, DeleteFile
from mor.format.spec import FileContent
from mor.planning.delete_index import DeleteFileIndex, applies_to

MakeTable = Callable[..., mor.Table]


def _by_data_file(tasks: list[mor.FileScanTask]) -> dict[str, list[str]]:
    return {t.data_file.file_path: [d.file_path for d in t.delete_files] for t in tasks}


def test_delete_files_follow_sequence_numbers_through_the_api(make_table: MakeTable) -> None:
    table = make_table(range(0, 10))  # seq 1: file A
    (file_a,) = live_data_paths(table)
    s2 = table.delete("id = 1")  # seq 2: D1 on A
    table.append(make_rows(range(1000, 1010)))  # seq 3: file B
    (file_b,) = live_data_paths(table) - {file_a}
    table.delete("id = 1001")  # seq 4: D2 on B
    table.delete("id = 2")  # seq 5: D3 on A
    deletes = {e.data_sequence_number: e.path for e in live_delete_entries(table)}
    assert sorted(deletes) == [2, 4, 5]

    tasks = table.scan().plan_files()
    assert _by_data_file(tasks) == {file_a: [deletes[2], deletes[5]], file_b: [deletes[4]]}
    seqs = {t.data_file.file_path: (t.data_file.data_sequence_number, [d.data_sequence_number for d in t.delete_files]) for t in tasks}
    assert seqs == {file_a: (1, [2, 5]), file_b: (3, [4])}
    for t in tasks:
        assert all(d.content == FileContent.POSITION_DELETES for d in t.delete_files)
        assert t.position_deletes == t.delete_files and t.equality_deletes == ()

    # At snapshot 2 only A and D1 exist.
    assert s2 is not None
    assert _by_data_file(table.scan(snapshot_id=s2.snapshot_id).plan_files()) == {file_a: [deletes[2]]}


def test_plan_prunes_files_by_metrics_and_partitions(make_table: MakeTable) -> None:
    table = make_table(range(0, 30), range(100, 130), partition_by=["category"])
    assert len(table.scan().plan_files()) == 6
    by_id = table.scan(filter="id >= 100").plan_files()
    assert len(by_id) == 3
    assert all(t.data_file.lower_bounds is not None for t in by_id)
    by_partition = table.scan(filter="category = 'a'").plan_files()
    assert {t.data_file.partition for t in by_partition} == {("a",)}
    assert len(by_partition) == 2
    assert table.scan(filter="id > 5000").plan_files() == []


def test_plan_of_an_empty_table_is_empty(make_table: MakeTable) -> None:
    assert make_table().scan().plan_files() == []


def test_plan_is_stable_and_tasks_pickle(make_table: MakeTable) -> None:
    table = make_table(range(0, 30), range(30, 60), partition_by=["category"])
    table.delete("id in (1, 45)")
    tasks = table.scan(filter="id < 50").plan_files()
    assert tasks == table.scan(filter="id < 50").plan_files()
    again = pickle.loads(pickle.dumps(tasks))
    assert again == tasks
    assert [t.data_file.data_sequence_number for t in again] == [t.data_file.data_sequence_number for t in tasks]
    assert [[d.data_sequence_number for d in t.delete_files] for t in again] == [
        [d.data_sequence_number for d in t.delete_files] for t in tasks
    ]


# -- the spec's rules, on hand-made files --------------------------------------------------------

PARTITIONED_SPEC, UNPARTITIONED_SPEC = 0, 1
UNPARTITIONED_IDS = frozenset({UNPARTITIONED_SPEC})


def _data(path: str, seq: int, partition: tuple[str, ...] = ("a",), spec_id: int = PARTITIONED_SPEC) -> DataFile:
    return DataFile(FileContent.DATA, path, "PARQUET", spec_id, partition, 10, 100, data_sequence_number=seq, file_sequence_number=seq)


def _pos(
    path: str, seq: int, partition: tuple[str, ...] = ("a",), *, target: str | None = None, bounds: tuple[str, str] | None = None
) -> DeleteFile:
    lower = upper = None
    if bounds is not None:
        lower, upper = {FILE_PATH_ID: bounds[0].encode()}, {FILE_PATH_ID: bounds[1].encode()}
    return DeleteFile(
        FileContent.POSITION_DELETES, path, "PARQUET", PARTITIONED_SPEC, partition, 1, 10,
        lower_bounds=lower, upper_bounds=upper, referenced_data_file=target,
        data_sequence_number=seq, file_sequence_number=seq,
    )  # fmt: skip


def _eq(path: str, seq: int, partition: tuple[str, ...] = ("a",), spec_id: int = PARTITIONED_SPEC) -> DeleteFile:
    return DeleteFile(
        FileContent.EQUALITY_DELETES, path, "PARQUET", spec_id, partition, 1, 10, equality_ids=(1,),
        data_sequence_number=seq, file_sequence_number=seq,
    )  # fmt: skip


def _spec_says(delete: DeleteFile, data: DataFile) -> bool:
    """The spec's 'Scan Planning' rules, written out again independently."""
    assert delete.data_sequence_number is not None and data.data_sequence_number is not None
    same_partition = delete.spec_id == data.spec_id and delete.partition == data.partition
    if delete.content == FileContent.EQUALITY_DELETES:
        return data.data_sequence_number < delete.data_sequence_number and (same_partition or delete.spec_id in UNPARTITIONED_IDS)
    if not (data.data_sequence_number <= delete.data_sequence_number and same_partition):
        return False
    if delete.referenced_data_file is not None:
        return delete.referenced_data_file == data.file_path
    lower = (delete.lower_bounds or {}).get(FILE_PATH_ID)
    upper = (delete.upper_bounds or {}).get(FILE_PATH_ID)
    path = data.file_path.encode()
    return (lower is None or lower <= path) and (upper is None or path <= upper)


def test_position_delete_applies_at_equal_sequence_number() -> None:
    """Equal sequence numbers: written by the same commit, so it applies."""
    data = _data("d/1", 3)
    assert applies_to(_pos("p", 3), data, UNPARTITIONED_IDS)
    assert applies_to(_pos("p", 4), data, UNPARTITIONED_IDS)
    assert not applies_to(_pos("p", 2), data, UNPARTITIONED_IDS)


def test_equality_delete_applies_only_to_older_data() -> None:
    data = _data("d/1", 3)
    assert not applies_to(_eq("e", 3), data, UNPARTITIONED_IDS)
    assert applies_to(_eq("e", 4), data, UNPARTITIONED_IDS)
    assert not applies_to(_eq("e", 2), data, UNPARTITIONED_IDS)


def test_partition_must_match_except_for_global_equality_deletes() -> None:
    data = _data("d/1", 1, ("a",))
    assert not applies_to(_pos("p", 2, ("b",)), data, UNPARTITIONED_IDS)
    assert not applies_to(_eq("e", 2, ("b",)), data, UNPARTITIONED_IDS)
    assert applies_to(_eq("e", 2, (), spec_id=UNPARTITIONED_SPEC), data, UNPARTITIONED_IDS)


def test_position_delete_naming_a_file_applies_only_to_it() -> None:
    data = _data("d/1", 1)
    assert applies_to(_pos("p", 2, target="d/1"), data, UNPARTITIONED_IDS)
    assert not applies_to(_pos("p", 2, target="d/2"), data, UNPARTITIONED_IDS)
    assert applies_to(_pos("p", 2, bounds=("d/1", "d/1")), data, UNPARTITIONED_IDS)
    assert not applies_to(_pos("p", 2, bounds=("d/2", "d/2")), data, UNPARTITIONED_IDS)
    assert applies_to(_pos("p", 2, bounds=("d/0", "d/5")), data, UNPARTITIONED_IDS)
    assert not applies_to(_pos("p", 2, bounds=("d/2", "d/5")), data, UNPARTITIONED_IDS)


def _all_deletes() -> list[DeleteFile]:
    deletes: list[DeleteFile] = []
    for seq, partition in itertools.product(range(1, 5), [("a",), ("b",)]):
        tag = f"{seq}{partition[0]}"
        deletes += [
            _pos(f"pos-partition-{tag}", seq, partition),
            _pos(f"pos-target-{tag}", seq, partition, target=f"d/{partition[0]}{seq}"),
            _pos(f"pos-bounds-one-{tag}", seq, partition, bounds=(f"d/{partition[0]}2", f"d/{partition[0]}2")),
            _pos(f"pos-bounds-range-{tag}", seq, partition, bounds=(f"d/{partition[0]}1", f"d/{partition[0]}3")),
            _eq(f"eq-{tag}", seq, partition),
        ]
        deletes.append(_eq(f"eq-global-{seq}", seq, (), spec_id=UNPARTITIONED_SPEC))
    return deletes


def _all_data() -> list[DataFile]:
    return [_data(f"d/{p}{seq}", seq, (p,)) for seq in range(1, 5) for p in "ab"] + [
        _data(f"u/{seq}", seq, (), UNPARTITIONED_SPEC) for seq in range(1, 5)
    ]


@pytest.mark.parametrize("data", _all_data(), ids=lambda d: d.file_path)
def test_delete_index_agrees_with_the_spec(data: DataFile) -> None:
    deletes = _all_deletes()
    index = DeleteFileIndex(deletes, UNPARTITIONED_IDS)
    want = sorted((d for d in deletes if _spec_says(d, data)), key=lambda d: (d.data_sequence_number or 0, d.file_path))
    assert list(index.for_data_file(data)) == want
    assert [d for d in deletes if applies_to(d, data, UNPARTITIONED_IDS)] == [d for d in deletes if _spec_says(d, data)]


def test_delete_index_finds_something() -> None:
    """Guard against a vacuous agreement: the grid above has matches of every kind."""
    index = DeleteFileIndex(_all_deletes(), UNPARTITIONED_IDS)
    found = index.for_data_file(_data("d/a2", 2, ("a",)))
    names = {d.file_path.rsplit("-", 1)[0] for d in found}
    assert names == {"pos-partition", "pos-target", "pos-bounds-one", "pos-bounds-range", "eq", "eq-global"}
    assert bool(index)
    assert not DeleteFileIndex([], UNPARTITIONED_IDS)


def test_residual_filter_rides_on_the_task(make_table: MakeTable) -> None:
    table = make_table(range(0, 10))
    (task,) = table.scan(filter="id > 3").plan_files()
    assert str(task.residual) == str(table.scan(filter="id > 3").row_filter)
    (task,) = table.scan().plan_files()
    assert task.residual == AlwaysTrue()
