"""UPDATE and MERGE find their rows on the predicate's (or keys') columns, then read the other
columns of the matched rows only: a wide table's row groups without a match are never decoded.

What is read is measured through the table's own file system: `FileIO.fs` is swapped for a
local file system that counts the bytes each file hands out (a fake, not a mock)."""

from __future__ import annotations

import functools
import threading
from collections import Counter

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

import mor

COLUMNS = 100  # wide enough that one column is a hundredth of a row group
ROWS = 4000
ROW_GROUP_ROWS = 500  # 8 row groups


class _CountingFile:
    """A read-only Python file over a local file that counts the bytes it returns."""

    def __init__(self, inner: pa.NativeFile, count: CountingFileSystem):
        self.inner, self.count = inner, count
        self.closed = False

    def read(self, n: int = -1) -> bytes:
        data = self.inner.read() if n is None or n < 0 else self.inner.read(n)
        self.count.add(len(data))
        return data

    def seek(self, offset: int, whence: int = 0) -> int:
        return self.inner.seek(offset, whence)

    def tell(self) -> int:
        return self.inner.tell()

    def size(self) -> int:
        return self.inner.size()

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def writable(self) -> bool:
        return False

    def close(self) -> None:
        self.closed = True
        self.inner.close()


class CountingFileSystem(pafs.FileSystemHandler):
    """The local file system; `bytes_read` counts what data files hand out."""

    def __init__(self) -> None:
        self.local = pafs.LocalFileSystem()
        self.bytes_read = 0
        self._lock = threading.Lock()

    def add(self, n: int) -> None:
        with self._lock:
            self.bytes_read += n

    def open_input_file(self, path: str) -> pa.NativeFile:
        inner = self.local.open_input_file(path)
        if "/data/" in path and path.endswith(".parquet") and "deletes" not in path:
            return pa.PythonFile(_CountingFile(inner, self), mode="r")
        return inner

    # The rest: the local file system as it is.
    def get_type_name(self) -> str:
        return "counting-local"

    def normalize_path(self, path: str) -> str:
        return self.local.normalize_path(path)

    def get_file_info(self, paths):  # type: ignore[no-untyped-def]
        return self.local.get_file_info(paths)

    def get_file_info_selector(self, selector):  # type: ignore[no-untyped-def]
        return self.local.get_file_info(selector)

    def create_dir(self, path: str, recursive: bool) -> None:
        self.local.create_dir(path, recursive=recursive)

    def delete_dir(self, path: str) -> None:
        self.local.delete_dir(path)

    def delete_dir_contents(self, path: str, missing_dir_ok: bool = False) -> None:
        self.local.delete_dir_contents(path, missing_dir_ok=missing_dir_ok)

    def delete_root_dir_contents(self) -> None:
        raise OSError("not here")

    def delete_file(self, path: str) -> None:
        self.local.delete_file(path)

    def move(self, src: str, dest: str) -> None:
        self.local.move(src, dest)

    def copy_file(self, src: str, dest: str) -> None:
        self.local.copy_file(src, dest)

    def open_input_stream(self, path: str) -> pa.NativeFile:
        return self.local.open_input_stream(path)

    def open_output_stream(self, path: str, metadata):  # type: ignore[no-untyped-def]
        return self.local.open_output_stream(path, metadata=metadata)

    def open_append_stream(self, path: str, metadata):  # type: ignore[no-untyped-def]
        return self.local.open_append_stream(path, metadata=metadata)


@functools.cache  # Arrow tables are immutable: the 4,000 rows of strings are built once
def _wide_rows(ids: range) -> pa.Table:
    # Even ids only, so `id = <odd>` lies inside every row group's bounds: metrics prune nothing.
    columns = {"id": pa.array([2 * i for i in ids], pa.int64())}
    for c in range(1, COLUMNS):
        columns[f"c{c}"] = pa.array([f"value {i} of column {c}" for i in ids], pa.string())
    return pa.table(columns)


@pytest.fixture(params=["2", "3"], ids=["v2", "v3"])
def wide(catalog: mor.Catalog, request: pytest.FixtureRequest) -> tuple[mor.Table, CountingFileSystem]:
    t = catalog.create_table(
        "db.wide", schema=_wide_rows(range(0)).schema,
        properties={"write.parquet.row-group-limit": str(ROW_GROUP_ROWS), "format-version": request.param},
    )  # fmt: skip
    t.append(_wide_rows(range(ROWS)))
    (task,) = t.scan().plan_files()
    assert pq.ParquetFile(task.data_file.file_path.removeprefix("file://")).metadata.num_row_groups == ROWS // ROW_GROUP_ROWS
    counting = CountingFileSystem()
    t.io.fs = pafs.PyFileSystem(counting)
    return t, counting


def _bytes_read(counting: CountingFileSystem, action) -> int:  # type: ignore[no-untyped-def]
    before = counting.bytes_read
    action()
    return counting.bytes_read - before


def test_an_update_matching_nothing_reads_only_the_predicate_columns(wide) -> None:  # type: ignore[no-untyped-def]
    t, counting = wide
    location = t.metadata_location
    scan = _bytes_read(counting, lambda: t.scan().to_arrow())
    delete = _bytes_read(counting, lambda: t.delete("id = 1001"))
    update = _bytes_read(counting, lambda: t.update({"c7": "'changed'"}, where="id = 1001"))
    assert t.metadata_location == location  # nothing matched, nothing committed
    # One column of 300 (plus the footer), as a DELETE reads: not every column of every row group.
    assert update <= delete * 1.1 + 4096
    assert update < scan / 10, (update, scan)


def test_an_update_decodes_only_the_row_groups_holding_a_match(wide) -> None:  # type: ignore[no-untyped-def]
    t, counting = wide
    scan = _bytes_read(counting, lambda: t.scan().to_arrow())
    update = _bytes_read(counting, lambda: t.update({"c7": "'changed'", "c8": pc.field("c9")}, where="id in (1000, 1002)"))
    assert update < scan / 4, (update, scan)  # the row group of ids 1000, 1002 (of 8) and the id column
    changed = t.scan(filter="id in (1000, 1002)").to_arrow().sort_by("id")
    assert changed.column("c7").to_pylist() == ["changed"] * 2
    assert changed.column("c8").to_pylist() == [f"value {i} of column 9" for i in (500, 501)]
    assert changed.column("c10").to_pylist() == [f"value {i} of column 10" for i in (500, 501)]
    assert t.scan().count() == ROWS


def test_a_merge_matching_nothing_reads_only_the_keys(wide) -> None:  # type: ignore[no-untyped-def]
    t, counting = wide
    scan = _bytes_read(counting, lambda: t.scan().to_arrow())
    source = pa.table({"id": pa.array([1001, 1003], pa.int64()), "c7": ["x", "y"]})
    merge = _bytes_read(counting, lambda: t.merge(source, on=["id"], when_matched_update={"c7": pc.field("source.c7")}))
    assert merge < scan / 10, (merge, scan)
    assert t.scan().count() == ROWS


def test_a_merge_update_keeps_the_other_columns_and_row_ids(wide) -> None:  # type: ignore[no-untyped-def]
    t, counting = wide
    v3 = t.metadata.format_version >= 3
    before = t.scan(filter="id in (2, 3000)", columns=["id", "_row_id"] if v3 else ["id"]).to_arrow().sort_by("id")
    source = pa.table({"id": pa.array([2, 3000], pa.int64()), "c7": ["x", "y"]})
    scan = _bytes_read(counting, lambda: t.scan().to_arrow())
    merge = _bytes_read(counting, lambda: t.merge(source, on=["id"], when_matched_update={"c7": pc.field("source.c7")}))
    assert merge < scan / 2, (merge, scan)  # 2 row groups of 8, and the keys
    after = t.scan(filter="id in (2, 3000)", columns=["id", "c7", "c9", *(["_row_id"] if v3 else [])]).to_arrow().sort_by("id")
    assert after.column("c7").to_pylist() == ["x", "y"]
    assert after.column("c9").to_pylist() == [f"value {i} of column 9" for i in (1, 1500)]
    if v3:
        assert after.column("_row_id").to_pylist() == before.column("_row_id").to_pylist()
    assert Counter(t.scan(columns=["id"]).to_arrow().column("id").to_pylist()).most_common(1)[0][1] == 1


def test_an_upsert_by_position_reads_only_the_keys(wide) -> None:  # type: ignore[no-untyped-def]
    t, counting = wide
    scan = _bytes_read(counting, lambda: t.scan().to_arrow())
    # Odd keys no row holds, inside the bounds of row groups 1 to 3: found on the key column alone.
    new = _wide_rows(range(2)).set_column(0, "id", pa.array([1001, 3001], pa.int64()))
    upsert = _bytes_read(counting, lambda: t.upsert(new, on=["id"]))
    assert upsert < scan / 10, (upsert, scan)
    assert t.scan().count() == ROWS + 2
