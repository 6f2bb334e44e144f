"""Position deletes: load delete files (v2 Parquet files, v3 deletion vectors) once, merge
their sorted runs, apply as keep-masks."""

from __future__ import annotations

import contextlib
import threading
from collections import Counter, deque
from collections.abc import Iterable
from concurrent.futures import Future

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from mor.errors import CorruptMetadataError, UnsupportedFeatureError
from mor.format import deletion_vector
from mor.format.content_file import DeleteFile, referenced_path
from mor.format.spec import DELETE_FILE_PATH_NAME, DELETE_POS_NAME
from mor.io.fileio import FileIO, is_object_store, unreadable
from mor.io.threads import IO_POOL
from mor.planning.task import FileScanTask
from mor.read.decoded_cache import SHARED, DecodedFileCache

NO_POSITIONS = np.empty(0, dtype=np.int64)
NO_POSITIONS.flags.writeable = False
WHOLE_FILE_BYTES = 8 << 20
PREFETCH_BYTES = 64 << 20  # positions fetched ahead of the reader, at most (estimated: 8 bytes each)


def read_position_delete_file(io: FileIO, delete_file: DeleteFile) -> dict[str, np.ndarray]:
    """{data file path: sorted deleted positions} for every data file the delete file names."""
    if delete_file.is_deletion_vector:
        return {_dv_target(delete_file): read_deletion_vector(io, delete_file)}
    if delete_file.file_format != "PARQUET":
        raise UnsupportedFeatureError(f"{delete_file.file_format} delete files are not supported: {delete_file.file_path}")
    # A file whose metadata names its one data file needs only `pos`: skipping the path column
    # halves the cost of the small files a stack of DELETEs leaves (measured: 100 files, 34 -> 20 ms).
    only = referenced_path(delete_file)
    columns = [DELETE_POS_NAME] if only is not None else [DELETE_FILE_PATH_NAME, DELETE_POS_NAME]
    try:
        with io.open_input(delete_file.file_path) as f:
            # A small file is fetched whole and parsed from memory: half the cost of letting the
            # reader seek around it (0.1 against 0.2 ms a file), and one request on object stores.
            source = pa.BufferReader(f.read_buffer()) if delete_file.file_size_in_bytes <= WHOLE_FILE_BYTES else f
            table = pq.ParquetFile(source, read_dictionary=[DELETE_FILE_PATH_NAME]).read(columns=columns, use_threads=False)
        positions = integers(table.column(DELETE_POS_NAME).cast(pa.int64()))
        if only is not None:
            return {only: _sorted(positions)}
        paths = table.column(DELETE_FILE_PATH_NAME).combine_chunks()
    except (OSError, pa.ArrowException, KeyError, ValueError, TypeError) as e:
        raise unreadable("position delete file", delete_file.file_path, e) from e
    if not isinstance(paths, pa.DictionaryArray):
        paths = paths.dictionary_encode()
    dictionary = paths.dictionary.to_pylist()
    if len(dictionary) == 1:
        return {dictionary[0]: _sorted(positions)}
    codes = integers(paths.indices)
    return {path: _sorted(positions[codes == code]) for code, path in enumerate(dictionary)}


def read_deletion_vector(io: FileIO, dv: DeleteFile) -> np.ndarray:
    """The sorted positions of a deletion vector: one ranged read of its blob."""
    offset, length = dv.content_offset, dv.content_size_in_bytes
    if offset is None or length is None:
        raise CorruptMetadataError(f"deletion vector {dv.file_path} has no content_offset / content_size_in_bytes")
    try:
        with io.open_input(dv.file_path, whole=False) as f:  # one ranged GET on S3
            f.seek(offset)
            blob = f.read(length)
    except (OSError, pa.ArrowException, ValueError) as e:
        raise unreadable("deletion vector file", dv.file_path, e) from e
    if len(blob) != length:
        raise CorruptMetadataError(f"deletion vector {dv.file_path}: {length} bytes at offset {offset} are past its end")
    positions = deletion_vector.deserialize(blob, f"deletion vector {dv.file_path} at offset {offset}")
    if len(positions) != dv.record_count:
        raise CorruptMetadataError(
            f"deletion vector {dv.file_path} at offset {offset} holds {len(positions)} positions, its manifest says {dv.record_count}"
        )
    return positions


def _dv_target(dv: DeleteFile) -> str:
    if dv.referenced_data_file is None:
        raise CorruptMetadataError(f"deletion vector {dv.file_path} has no referenced_data_file")
    return dv.referenced_data_file


def _sorted(positions: np.ndarray) -> np.ndarray:
    positions = np.ascontiguousarray(positions, dtype=np.int64)
    if positions.size > 1 and not bool(np.all(positions[1:] >= positions[:-1])):
        positions = np.sort(positions)
    return positions


class DeleteFileCache:
    """Each delete file is read once per scan, however many tasks share it, and at most once
    per process while it stays in the shared cache (`mor.read.decoded_cache`). Thread-safe.

    Given the scan's tasks, a file is dropped from this scan's memory after the last task that
    needs it is `done`, so a streaming read holds only the deletes still ahead of it; and
    `prefetch()` fetches the object-store delete files ahead of the reader, in task order,
    several at once, holding at most PREFETCH_BYTES of positions not yet needed."""

    def __init__(self, io: FileIO, tasks: Iterable[FileScanTask] | None = None, shared: DecodedFileCache | None = SHARED):
        self.io = io
        self.shared = shared
        self._loaded: dict[tuple[str, int | None], dict[str, np.ndarray]] = {}
        self._locks: dict[tuple[str, int | None], threading.Lock] = {}
        self._guard = threading.Lock()
        self._users: Counter[tuple[str, int | None]] | None = None
        self._ahead: deque[DeleteFile] = deque()  # files to prefetch, in task order
        self._started: set[tuple[str, int | None]] = set()  # loaded, being loaded, or prefetched
        self._held: dict[tuple[str, int | None], int] = {}  # prefetched, not yet dropped: bytes
        self._held_bytes = 0
        if tasks is not None:
            tasks = list(tasks)
            self._users = Counter(f.key for t in tasks for f in t.position_deletes)
            first = {f.key: f for t in tasks for f in t.position_deletes}  # insertion order: task order
            self._ahead.extend(f for f in first.values() if is_object_store(f.file_path))

    def positions(self, delete_file: DeleteFile) -> dict[str, np.ndarray]:
        path = delete_file.key  # a Puffin file holds several deletion vectors
        with self._guard:
            lock = self._locks.setdefault(path, threading.Lock())
            self._started.add(path)
        with lock:
            found = self._loaded.get(path)
            if found is None:
                found = self._load(delete_file)
                with self._guard:
                    if self._still_needed(path):  # not when a late prefetch finds its tasks done
                        self._loaded[path] = found
            return found

    def _still_needed(self, key: tuple[str, int | None]) -> bool:
        return self._users is None or key not in self._users or self._users[key] > 0

    def done(self, task: FileScanTask) -> None:
        if self._users is None:
            return
        with self._guard:
            for f in task.position_deletes:
                self._users[f.key] -= 1
                if self._users[f.key] <= 0:
                    self._loaded.pop(f.key, None)
                    self._locks.pop(f.key, None)
                    self._held_bytes -= self._held.pop(f.key, 0)
        if self._ahead:
            self.prefetch()

    def prefetch(self) -> list[Future[None]]:
        """Start fetching the next delete files in object storage (a GET costs milliseconds of
        waiting: the reader would pay them one after another) on the shared I/O threads, while
        those prefetched and not yet done hold less than PREFETCH_BYTES. A no-op without tasks
        or for local files. A file that fails is left for the reader, which raises its error.
        Returns the fetches it started."""
        pool = None
        started: list[Future[None]] = []
        while True:
            with self._guard:
                if not self._ahead or self._held_bytes >= PREFETCH_BYTES:
                    return started
                f = self._ahead.popleft()
                if f.key in self._started:
                    continue
                self._started.add(f.key)
                self._held[f.key] = 8 * max(1, f.record_count)  # int64 positions
                self._held_bytes += self._held[f.key]
            pool = pool or IO_POOL.get()
            started.append(pool.submit(self._prefetch_one, f))

    def _prefetch_one(self, delete_file: DeleteFile) -> None:
        with self._guard:
            if not self._still_needed(delete_file.key):
                return  # its tasks read it themselves meanwhile
        with contextlib.suppress(Exception):
            self.positions(delete_file)

    def _load(self, delete_file: DeleteFile) -> dict[str, np.ndarray]:
        if self.shared is None or not self.shared.max_bytes:
            return read_position_delete_file(self.io, delete_file)
        key = ("positions", delete_file.key, delete_file.file_size_in_bytes)
        found = self.shared.get(key)
        if found is None:
            found = read_position_delete_file(self.io, delete_file)
            for array in found.values():
                array.flags.writeable = False  # shared between scans: nobody may change it
            self.shared.put(key, found, sum(a.nbytes + len(p) for p, a in found.items()))
        return found


def merge_sorted_runs(runs: Iterable[np.ndarray]) -> np.ndarray:
    """One sorted, duplicate-free array of positions from several sorted runs (a run may
    repeat a position: nothing in the spec forbids it, and row counts rely on there being none)."""
    runs = [r for r in runs if r.size]
    if not runs:
        return NO_POSITIONS
    # Sort and drop repeats ourselves: np.unique hashes (numpy 2), 20-30x slower than sorting
    # here (0.115 s against 0.004 s for five runs of 100k positions).
    merged = runs[0] if len(runs) == 1 else np.sort(np.concatenate(runs))
    first = np.empty(len(merged), dtype=bool)
    first[0] = True
    np.not_equal(merged[1:], merged[:-1], out=first[1:])
    return merged if first.all() else merged[first]


def deleted_positions(
    data_file_path: str, delete_files: Iterable[DeleteFile], cache: DeleteFileCache, record_count: int | None = None
) -> np.ndarray:
    """The sorted positions of `data_file_path` that any of `delete_files` deletes (read-only).
    Given the data file's `record_count`, a position outside its rows is CorruptMetadataError
    naming the delete file: counting it would make live-row arithmetic drop rows that exist."""
    delete_files = tuple(delete_files)
    merged = _merged_positions(data_file_path, delete_files, cache)
    if record_count is not None and merged.size and (merged[0] < 0 or merged[-1] >= record_count):
        _raise_out_of_range(data_file_path, delete_files, cache, record_count)
    return merged


def _raise_out_of_range(path: str, delete_files: tuple[DeleteFile, ...], cache: DeleteFileCache, record_count: int) -> None:
    for f in delete_files:
        run = cache.positions(f).get(path, NO_POSITIONS)
        if run.size and (run[0] < 0 or run[-1] >= record_count):
            bad = int(run[0]) if run[0] < 0 else int(run[-1])
            kind = "deletion vector" if f.is_deletion_vector else "position delete file"
            raise CorruptMetadataError(f"{kind} {f.file_path} deletes position {bad} of data file {path}, which has {record_count} rows")
    raise AssertionError("a merged position is out of range but no run holds it")


def _merged_positions(data_file_path: str, delete_files: tuple[DeleteFile, ...], cache: DeleteFileCache) -> np.ndarray:
    if len(delete_files) < 2 or cache.shared is None or not cache.shared.max_bytes:
        return merge_sorted_runs(cache.positions(f).get(data_file_path, NO_POSITIONS) for f in delete_files)
    # The merge of a stack is remembered too: the next read of the same snapshot skips it.
    key = ("merged", data_file_path, tuple(sorted((f.file_path, f.content_offset or 0, f.file_size_in_bytes) for f in delete_files)))
    merged = cache.shared.get(key)
    if merged is None:
        merged = merge_sorted_runs(cache.positions(f).get(data_file_path, NO_POSITIONS) for f in delete_files)
        merged.flags.writeable = False
        cache.shared.put(key, merged, merged.nbytes)
    return merged


def keep_mask(deleted: np.ndarray, start: int, length: int) -> np.ndarray | None:
    """Boolean mask over rows [start, start+length) that drops deleted positions; None keeps all."""
    lo, hi = np.searchsorted(deleted, [start, start + length])
    if lo == hi:
        return None
    mask = np.ones(length, dtype=bool)
    mask[deleted[lo:hi] - start] = False
    return mask


def apply_mask(batch: pa.RecordBatch, mask: np.ndarray | None) -> pa.RecordBatch:
    return batch if mask is None else batch.filter(boolean_array(mask))


# pyarrow's own conversions between numpy and Arrow (`to_numpy`, `pa.array`) import pandas the
# first time they run, half a second of every `mor scan` of a table with deletes: the two a
# scan needs are done here on the buffers.
def integers(array: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """An integer array's values in numpy (zero-copy for one chunk); one with nulls, as
    `to_numpy` gives it."""
    if array.null_count:
        return array.to_numpy(zero_copy_only=False)
    chunks = array.chunks if isinstance(array, pa.ChunkedArray) else [array]
    dtype = np.dtype(str(array.type))
    parts = [np.frombuffer(c.buffers()[1], dtype, count=len(c), offset=c.offset * dtype.itemsize) for c in chunks if len(c)]
    if len(parts) == 1:
        return parts[0]
    return np.concatenate(parts) if parts else np.empty(0, dtype)


def boolean_array(mask: np.ndarray) -> pa.BooleanArray:
    """`pa.array(mask)` for a numpy bool array."""
    return pa.Array.from_buffers(pa.bool_(), len(mask), [None, pa.py_buffer(np.packbits(mask, bitorder="little"))])
