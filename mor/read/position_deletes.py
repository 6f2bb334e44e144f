"""Position deletes: load delete files once, merge their sorted runs, apply as keep-masks."""

from __future__ import annotations

import threading
from typing import Iterable

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from mor.errors import UnsupportedFeatureError
from mor.format.content_file import DeleteFile
from mor.format.spec import DELETE_FILE_PATH_NAME, DELETE_POS_NAME
from mor.io.fileio import FileIO, unreadable

NO_POSITIONS = np.empty(0, dtype=np.int64)


def read_position_delete_file(io: FileIO, delete_file: DeleteFile) -> dict[str, np.ndarray]:
    """{data file path: sorted deleted positions} for every data file the delete file names."""
    if delete_file.file_format != "PARQUET":
        raise UnsupportedFeatureError(f"{delete_file.file_format} delete files are not supported: {delete_file.file_path}")
    try:
        with io.open_input(delete_file.file_path) as f:
            table = pq.read_table(f, columns=[DELETE_FILE_PATH_NAME, DELETE_POS_NAME], read_dictionary=[DELETE_FILE_PATH_NAME])
        paths = table.column(DELETE_FILE_PATH_NAME).combine_chunks()
        positions = table.column(DELETE_POS_NAME).cast(pa.int64()).to_numpy()
    except (OSError, pa.ArrowException, KeyError, ValueError, TypeError) as e:
        raise unreadable("position delete file", delete_file.file_path, e) from e
    if not isinstance(paths, pa.DictionaryArray):
        paths = paths.dictionary_encode()
    dictionary = paths.dictionary.to_pylist()
    if len(dictionary) == 1:
        return {dictionary[0]: _sorted(positions)}
    codes = paths.indices.to_numpy(zero_copy_only=False)
    return {path: _sorted(positions[codes == code]) for code, path in enumerate(dictionary)}


def _sorted(positions: np.ndarray) -> np.ndarray:
    positions = np.ascontiguousarray(positions, dtype=np.int64)
    if positions.size > 1 and not bool(np.all(positions[1:] >= positions[:-1])):
        positions = np.sort(positions)
    return positions


class DeleteFileCache:
    """Each delete file is read once per scan, however many tasks share it. Thread-safe."""

    def __init__(self, io: FileIO):
        self.io = io
        self._loaded: dict[str, dict[str, np.ndarray]] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    def positions(self, delete_file: DeleteFile) -> dict[str, np.ndarray]:
        with self._guard:
            lock = self._locks.setdefault(delete_file.file_path, threading.Lock())
        with lock:
            if delete_file.file_path not in self._loaded:
                self._loaded[delete_file.file_path] = read_position_delete_file(self.io, delete_file)
            return self._loaded[delete_file.file_path]


def merge_sorted_runs(runs: Iterable[np.ndarray]) -> np.ndarray:
    """One sorted, duplicate-free array of positions from several sorted runs."""
    runs = [r for r in runs if r.size]
    if not runs:
        return NO_POSITIONS
    if len(runs) == 1:
        return runs[0]
    # Sort and drop repeats ourselves: np.unique hashes (numpy 2), 20-30x slower than sorting
    # here (0.115 s against 0.004 s for five runs of 100k positions).
    merged = np.sort(np.concatenate(runs))
    first = np.empty(len(merged), dtype=bool)
    first[0] = True
    np.not_equal(merged[1:], merged[:-1], out=first[1:])
    return merged if first.all() else merged[first]


def deleted_positions(data_file_path: str, delete_files: Iterable[DeleteFile], cache: DeleteFileCache) -> np.ndarray:
    return merge_sorted_runs(cache.positions(f).get(data_file_path, NO_POSITIONS) for f in delete_files)


def keep_mask(deleted: np.ndarray, start: int, length: int) -> np.ndarray | None:
    """Boolean mask over rows [start, start+length) that drops deleted positions; None keeps all."""
    lo, hi = np.searchsorted(deleted, [start, start + length])
    if lo == hi:
        return None
    mask = np.ones(length, dtype=bool)
    mask[deleted[lo:hi] - start] = False
    return mask


def apply_mask(batch: pa.RecordBatch, mask: np.ndarray | None) -> pa.RecordBatch:
    return batch if mask is None else batch.filter(pa.array(mask))
