"""Delete files in object storage are fetched ahead of the reader (DeleteFileCache.prefetch):
in task order, each once, within a byte budget, and a failure is raised by the reader itself."""

from __future__ import annotations

import threading
import time
from concurrent.futures import wait

import numpy as np
import pytest

from mor.errors import CorruptMetadataError
from mor.format.content_file import DeleteFile, make_content_file
from mor.format.spec import FileContent
from mor.io.fileio import FileIO
from mor.read import position_deletes
from mor.read.position_deletes import DeleteFileCache


def delete_file(path: str, rows: int = 10) -> DeleteFile:
    return make_content_file(
        FileContent.POSITION_DELETES, file_path=path, file_format="PARQUET", spec_id=0, partition=(),
        record_count=rows, file_size_in_bytes=100 + rows, referenced_data_file=f"{path}.data",
    )  # fmt: skip


class Task:
    def __init__(self, *files: DeleteFile):
        self.position_deletes = tuple(files)


@pytest.fixture
def fetched(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every read of a delete file, by path, in order; a path with "bad" in it is damaged."""
    calls: list[str] = []
    lock = threading.Lock()

    def read(io: FileIO, f: DeleteFile) -> dict[str, np.ndarray]:
        with lock:
            calls.append(f.file_path)
        if "bad" in f.file_path:
            raise CorruptMetadataError(f"position delete file {f.file_path} is damaged")
        return {f.referenced_data_file: np.arange(f.record_count, dtype=np.int64)}

    monkeypatch.setattr(position_deletes, "read_position_delete_file", read)
    return calls


def cache_for(*tasks: Task) -> DeleteFileCache:
    return DeleteFileCache(FileIO(), list(tasks), shared=None)  # type: ignore[arg-type]


def test_object_store_delete_files_are_fetched_ahead_each_once(fetched: list[str]) -> None:
    a, b, c = (delete_file(f"s3://bucket/t/{n}.parquet") for n in "abc")
    tasks = Task(a, b), Task(b), Task(c)
    cache = cache_for(*tasks)
    wait(cache.prefetch())
    assert sorted(fetched) == sorted([a.file_path, b.file_path, c.file_path])
    for task in tasks:
        for f in task.position_deletes:
            assert cache.positions(f)[f.referenced_data_file].tolist() == list(range(10))
        cache.done(task)  # type: ignore[arg-type]
    assert len(fetched) == 3  # the reader found every file already fetched


def test_local_delete_files_are_left_to_the_reader(fetched: list[str]) -> None:
    cache = cache_for(Task(delete_file("file:///tmp/t/a.parquet")))
    assert cache.prefetch() == []
    assert fetched == []


def test_prefetch_holds_at_most_its_budget_ahead_and_resumes_as_tasks_finish(fetched: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(position_deletes, "PREFETCH_BYTES", 8 * 100 * 2)  # two files of 100 positions
    files = [delete_file(f"s3://bucket/t/{i}.parquet", rows=100) for i in range(5)]
    tasks = [Task(f) for f in files]
    cache = cache_for(*tasks)
    wait(cache.prefetch())
    assert fetched == [files[0].file_path, files[1].file_path]  # in task order
    cache.positions(files[0])
    cache.done(tasks[0])  # type: ignore[arg-type]  (starts the next fetch)
    deadline = time.monotonic() + 10
    while len(fetched) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.05)  # a fourth fetch, which would be over budget, would have started by now
    assert fetched == [f.file_path for f in files[:3]]


def test_a_file_that_fails_to_prefetch_fails_the_reader_with_its_error(fetched: list[str]) -> None:
    bad = delete_file("s3://bucket/t/bad.parquet")
    cache = cache_for(Task(bad))
    futures = cache.prefetch()
    wait(futures)
    assert all(f.exception() is None for f in futures)  # swallowed by the prefetch
    with pytest.raises(CorruptMetadataError, match="bad.parquet is damaged"):
        cache.positions(bad)
    assert fetched == [bad.file_path, bad.file_path]


def test_a_file_whose_tasks_are_done_is_not_fetched_again(fetched: list[str]) -> None:
    a = delete_file("s3://bucket/t/a.parquet")
    task = Task(a)
    cache = cache_for(task)
    cache.positions(a)
    cache.done(task)  # type: ignore[arg-type]
    assert cache.prefetch() == []  # the reader fetched it already
    cache._prefetch_one(a)  # a prefetch that was queued before the reader got to it
    assert fetched == [a.file_path]
    assert cache._loaded == {}
