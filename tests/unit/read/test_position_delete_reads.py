"""Reading position delete files: stacks of them, files naming several data files, repeats,
the shared cache of decoded files, and dropping a scan's deletes once no task needs them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.expressions import In
from unit_helpers import make_rows, scan_ids

import mor
from mor.format.content_file import DeleteFile, make_content_file
from mor.format.spec import FileContent
from mor.io.fileio import FileIO, to_uri
from mor.read import position_deletes
from mor.read.decoded_cache import SHARED, DecodedFileCache
from mor.read.position_deletes import DeleteFileCache, deleted_positions, read_position_delete_file


@pytest.fixture(autouse=True)
def empty_shared_cache():
    SHARED.clear()
    yield
    SHARED.clear()


def write_delete_file(path: Path, rows: list[tuple[str, int]], referenced: str | None = None) -> DeleteFile:
    table = pa.table({"file_path": [p for p, _ in rows], "pos": pa.array([q for _, q in rows], pa.int64())})
    pq.write_table(table, path)
    return make_content_file(
        FileContent.POSITION_DELETES, file_path=to_uri(str(path)), file_format="PARQUET", spec_id=0, partition=(),
        record_count=len(rows), file_size_in_bytes=path.stat().st_size, referenced_data_file=referenced,
    )  # fmt: skip


def test_a_file_naming_several_data_files_splits_by_path(tmp_path: Path) -> None:
    f = write_delete_file(tmp_path / "d.parquet", [("a", 1), ("a", 7), ("b", 0), ("b", 2), ("c", 5)])
    got = read_position_delete_file(FileIO(), f)
    assert {k: v.tolist() for k, v in got.items()} == {"a": [1, 7], "b": [0, 2], "c": [5]}


def test_a_file_naming_one_data_file_reads_its_positions_for_that_file(tmp_path: Path) -> None:
    f = write_delete_file(tmp_path / "d.parquet", [("a", 9), ("a", 3)], referenced="a")
    assert {k: v.tolist() for k, v in read_position_delete_file(FileIO(), f).items()} == {"a": [3, 9]}


def test_repeated_positions_across_and_within_files_count_once(tmp_path: Path) -> None:
    files = [
        write_delete_file(tmp_path / "1.parquet", [("a", 1), ("a", 1), ("a", 4)]),
        write_delete_file(tmp_path / "2.parquet", [("a", 4), ("a", 5), ("b", 1)]),
    ]
    assert deleted_positions("a", files[:1], DeleteFileCache(FileIO())).tolist() == [1, 4]
    assert deleted_positions("a", files, DeleteFileCache(FileIO())).tolist() == [1, 4, 5]


def test_stacked_deletes_read_back_exactly(catalog: mor.Catalog) -> None:
    table = catalog.create_table("db.t", schema=make_rows([]).schema)
    table.append(make_rows(range(1000)))
    deleted: set[int] = set()
    for k in range(30):
        ids = list(range(k, 1000, 31))  # leaves the ids = 30 (mod 31)
        table.delete(In("id", ids))
        deleted |= set(ids)
        if k % 10 == 9:
            assert scan_ids(table) == sorted(set(range(1000)) - deleted)
    (task,) = table.scan().plan_files()
    assert len(task.position_deletes) == 30
    SHARED.clear()
    assert scan_ids(table) == sorted(set(range(1000)) - deleted)  # cold, then warm
    assert scan_ids(table) == sorted(set(range(1000)) - deleted)
    assert table.scan().count() == 1000 - len(deleted)


def test_a_later_scan_reuses_decoded_files(catalog: mor.Catalog, monkeypatch: pytest.MonkeyPatch) -> None:
    table = catalog.create_table("db.t", schema=make_rows([]).schema)
    table.append(make_rows(range(100)))
    table.delete(In("id", [1, 2]))
    table.delete(In("id", [3]))
    SHARED.clear()  # planning the second DELETE decoded the first file
    reads: list[str] = []
    real = position_deletes.read_position_delete_file
    monkeypatch.setattr(position_deletes, "read_position_delete_file", lambda io, f: reads.append(f.file_path) or real(io, f))
    assert scan_ids(table) == [0, *range(4, 100)]
    assert len(reads) == 2
    assert scan_ids(table) == [0, *range(4, 100)]
    assert len(reads) == 2  # the second scan decoded nothing
    (task,) = table.scan().plan_files()
    merged = deleted_positions(task.data_file.file_path, task.position_deletes, DeleteFileCache(table.io))
    assert merged.tolist() == [1, 2, 3]
    with pytest.raises(ValueError):
        merged[0] = 50  # shared between scans: read-only


def test_no_shared_cache_reads_every_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = write_delete_file(tmp_path / "d.parquet", [("a", 1)])
    reads: list[str] = []
    real = position_deletes.read_position_delete_file
    monkeypatch.setattr(position_deletes, "read_position_delete_file", lambda io, f: reads.append(f.file_path) or real(io, f))
    for _ in range(2):
        assert deleted_positions("a", [f], DeleteFileCache(FileIO(), shared=DecodedFileCache(0))).tolist() == [1]
    assert len(reads) == 2


def test_a_scan_drops_deletes_after_their_last_task(tmp_path: Path) -> None:
    shared_by_both = write_delete_file(tmp_path / "ab.parquet", [("a", 1), ("b", 2)])
    only_a = write_delete_file(tmp_path / "a.parquet", [("a", 3)], referenced="a")

    class Task:
        def __init__(self, files: list[DeleteFile]):
            self.position_deletes = tuple(files)

    task_a, task_b = Task([shared_by_both, only_a]), Task([shared_by_both])
    cache = DeleteFileCache(FileIO(), [task_a, task_b], shared=None)  # type: ignore[list-item]
    assert deleted_positions("a", task_a.position_deletes, cache).tolist() == [1, 3]
    cache.done(task_a)  # type: ignore[arg-type]
    assert set(cache._loaded) == {shared_by_both.key}
    assert deleted_positions("b", task_b.position_deletes, cache).tolist() == [2]
    cache.done(task_b)  # type: ignore[arg-type]
    assert cache._loaded == {}


def test_lru_keeps_recent_entries_within_its_byte_budget() -> None:
    cache = DecodedFileCache(max_bytes=400)
    for key in "abcd":
        cache.put(key, key.upper(), 100)
    assert cache.get("a") == "A"  # now the most recent
    cache.put("e", "E", 100)  # over budget: the least recent ("b") goes
    assert cache.get("b") is None
    assert [cache.get(k) for k in "acde"] == ["A", "C", "D", "E"]
    assert cache.size == 400
    cache.put("huge", "H", 101)  # more than a quarter of the budget: never kept
    assert cache.get("huge") is None and len(cache) == 4


def test_a_replaced_file_of_another_size_is_not_served_from_the_cache(tmp_path: Path) -> None:
    path = tmp_path / "d.parquet"
    first = write_delete_file(path, [("a", 1)])
    assert deleted_positions("a", [first], DeleteFileCache(FileIO())).tolist() == [1]
    second = write_delete_file(path, [("a", p) for p in range(2, 50)])
    assert first.file_size_in_bytes != second.file_size_in_bytes
    assert deleted_positions("a", [second], DeleteFileCache(FileIO())).tolist() == list(range(2, 50))


def test_merged_positions_are_sorted_int64(tmp_path: Path) -> None:
    files = [write_delete_file(tmp_path / f"{i}.parquet", [("a", p) for p in range(i, 60, 7)], referenced="a") for i in range(7)]
    merged = deleted_positions("a", files, DeleteFileCache(FileIO()))
    assert merged.dtype == np.int64 and merged.tolist() == list(range(60))


def test_integers_and_boolean_arrays_convert_as_pyarrow_does() -> None:
    """The conversions done on the buffers (pyarrow's import pandas) give what pyarrow's give."""
    values = pa.array(np.arange(-5, 20, dtype=np.int64))
    chunked = pa.chunked_array([values.slice(3, 7), values.slice(0, 0), values.slice(11)])
    for array in (values, values.slice(4, 9), chunked, pa.chunked_array([], pa.int64()), pa.array([3, 1, 2], pa.int32())):
        got = position_deletes.integers(array)
        assert got.dtype == np.dtype(str(array.type)) and got.tolist() == array.to_pylist()
    with_null = pa.chunked_array([pa.array([1, None, 3], pa.int64())])
    np.testing.assert_array_equal(position_deletes.integers(with_null), with_null.to_numpy())
    for length in (0, 1, 7, 8, 9, 1000):
        mask = np.random.default_rng(length).random(length) < 0.5
        assert position_deletes.boolean_array(mask).equals(pa.array(mask))
