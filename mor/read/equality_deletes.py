"""Equality deletes: a hash anti-join of data rows against the deleted key tuples.

Delete files are grouped by their `equality_ids`; for each group the union of their keys is
built once (and cached for every task that needs the same files). A key tuple is turned into
one integer code, column by column, using only the values present in the deletes, so the
anti-join per batch is a few vectorized `index_in` calls and one `is_in`, whatever the number
of key columns. A null key value matches a null data value, as the spec requires.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from typing import Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyiceberg.schema import Schema

from mor.errors import UnsupportedFeatureError
from mor.format.content_file import DeleteFile
from mor.io.fileio import FileIO, unreadable
from mor.write.arrow_schema import FIELD_ID_KEY, to_arrow_type


class EqualityKeySet:
    """A set of key tuples (the deleted keys of one `equality_ids` group, or the keys of DML
    source rows), ready to probe batches with: null-safe, vectorized.

    A tuple gets one integer code, column by column: the code of the column prefix so far
    combined with the value's code in that column, then looked up among the combinations that
    occur in the keys, so codes stay below the number of keys. -1 means "not a key"."""

    def __init__(self, names: list[str], keys: pa.Table):
        if not names:
            raise ValueError("an equality key needs at least one column")
        self.names = names
        self.types = [keys.schema.field(n).type for n in names]
        self.columns = [_ValueIndex(pc.unique(keys.column(n).combine_chunks())) for n in names]
        self.prefixes: list[np.ndarray] = []  # sorted distinct (prefix, value) pair codes, per extra column
        code = self.columns[0].lookup(keys.column(names[0]))
        for name, index in zip(names[1:], self.columns[1:]):
            pair = code * len(index) + index.lookup(keys.column(name))
            self.prefixes.append(np.unique(pair))
            code = np.searchsorted(self.prefixes[-1], pair)
        self.distinct_keys = len(self.prefixes[-1]) if self.prefixes else len(self.columns[0])
        # Every code in 0..n-1 occurs among the key rows; remember one key row for each.
        self.key_row_of_code = np.empty(self.distinct_keys, dtype=np.int64)
        self.key_row_of_code[code] = np.arange(len(code), dtype=np.int64)

    def _codes(self, rows: pa.RecordBatch | pa.Table) -> np.ndarray:
        code = None
        for name, expected, index, prefixes in zip(self.names, self.types, self.columns, [None, *self.prefixes]):
            column = rows.column(name)
            if column.type != expected:
                column = column.cast(expected)
            c = index.lookup(column)
            if code is None:
                code = c
                continue
            assert prefixes is not None
            known = (code >= 0) & (c >= 0)
            pair = np.where(known, code * len(index) + c, -1)
            code = _find_sorted(prefixes, pair, known)
        assert code is not None
        return code

    def row_codes(self, rows: pa.RecordBatch | pa.Table) -> pa.Array:
        """Per row, the index of a key row with the same tuple, or null when its tuple is
        not a key."""
        code = self._codes(rows)
        found = code >= 0
        key_rows = np.zeros(len(code), dtype=np.int64)
        key_rows[found] = self.key_row_of_code[code[found]]
        return pa.array(key_rows, type=pa.int64(), mask=~found)

    def deleted_mask(self, batch: pa.RecordBatch) -> np.ndarray:
        """True for rows whose key tuple is in the set."""
        return self._codes(batch) >= 0


_INT32_VIEW = (pa.types.is_date32, pa.types.is_time32)
_INT64_VIEW = (pa.types.is_date64, pa.types.is_time64, pa.types.is_timestamp, pa.types.is_duration)


DENSE_LOOKUP_MAX_ENTRIES = 1 << 24  # int32 codes: at most 64 MiB per key column


class _ValueIndex:
    """The code of each value in a fixed set of distinct values (its index there), or -1. A
    null value matches a null in the set. Integer-like values are found through a table built
    once (a dense array over [min, max] when that range is small enough, else a sorted copy for
    binary search), so no hash table is rebuilt per batch."""

    def __init__(self, values: pa.Array):
        self.values = values
        nulls = np.asarray(values.is_null().to_numpy(zero_copy_only=False), dtype=bool)
        self.null_code = int(np.flatnonzero(nulls)[0]) if nulls.any() else -1
        self.sorted: np.ndarray | None = None
        if _integer_like(values.type):
            present = np.flatnonzero(~nulls)
            ints = _as_int64(values)[present]
            order = np.argsort(ints, kind="stable")
            self.sorted, self.sorted_codes = ints[order], present[order]
        self.dense: np.ndarray | None = None
        if self.sorted is not None and len(self.sorted):
            self.low, high = int(self.sorted[0]), int(self.sorted[-1])
            if high - self.low < DENSE_LOOKUP_MAX_ENTRIES:
                # Codes for low-1 .. high+1: values outside the range clip onto a -1 at either end.
                self.dense = np.full(high - self.low + 3, -1, dtype=np.int32)
                self.dense[self.sorted - self.low + 1] = self.sorted_codes

    def __len__(self) -> int:
        return len(self.values)

    def lookup(self, column: pa.Array | pa.ChunkedArray) -> np.ndarray:
        if isinstance(column, pa.ChunkedArray):
            column = column.combine_chunks()
        if self.sorted is None:
            found = pc.index_in(column, value_set=self.values, skip_nulls=False)
            return np.asarray(pc.fill_null(found, -1).to_numpy(zero_copy_only=False), dtype=np.int64)
        data = _as_int64(column)
        if self.dense is not None:
            codes = self.dense.take(np.clip(data - (self.low - 1), 0, len(self.dense) - 1)).astype(np.int64)
        elif len(self.sorted):
            pos = np.minimum(np.searchsorted(self.sorted, data), len(self.sorted) - 1)
            codes = np.where(self.sorted[pos] == data, self.sorted_codes[pos], -1)
        else:
            codes = np.full(len(data), -1, dtype=np.int64)
        if column.null_count:
            codes[np.asarray(column.is_null().to_numpy(zero_copy_only=False), dtype=bool)] = self.null_code
        return codes


def _find_sorted(sorted_values: np.ndarray, values: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Index of each valid value in `sorted_values`, or -1."""
    if not len(sorted_values):
        return np.full(len(values), -1, dtype=np.int64)
    pos = np.minimum(np.searchsorted(sorted_values, values), len(sorted_values) - 1)
    return np.where(valid & (sorted_values[pos] == values), pos, -1)


def _integer_like(t: pa.DataType) -> bool:
    return pa.types.is_integer(t) or any(p(t) for p in _INT32_VIEW + _INT64_VIEW)


def _as_int64(array: pa.Array) -> np.ndarray:
    """Integer-like values as int64 (nulls as 0: callers look at validity separately)."""
    if any(p(array.type) for p in _INT32_VIEW):
        array = array.view(pa.int32())
    elif any(p(array.type) for p in _INT64_VIEW):
        array = array.view(pa.int64())
    if array.null_count:
        array = pc.fill_null(array, 0)
    return np.asarray(array.to_numpy(zero_copy_only=False)).astype(np.int64, copy=False)


def read_equality_delete_file(io: FileIO, delete_file: DeleteFile, schema: Schema) -> pa.Table:
    """The key rows of one equality delete file, with table column names and types."""
    if delete_file.file_format != "PARQUET":
        raise UnsupportedFeatureError(f"{delete_file.file_format} delete files are not supported: {delete_file.file_path}")
    ids = delete_file.equality_ids or ()
    try:
        with io.open_input(delete_file.file_path) as f:
            parquet = pq.ParquetFile(f)
            by_id = {int(fl.metadata[FIELD_ID_KEY]): fl.name for fl in parquet.schema_arrow if fl.metadata and FIELD_ID_KEY in fl.metadata}
            fields = [schema.find_field(i) for i in ids]
            file_columns = [by_id.get(f.field_id, f.name) for f in fields]
            table = parquet.read(columns=file_columns)
        return pa.table(
            [table.column(c).cast(to_arrow_type(f.field_type)) for c, f in zip(file_columns, fields, strict=True)],
            names=[f.name for f in fields],
        )
    except (OSError, pa.ArrowException, KeyError, ValueError, TypeError) as e:
        raise unreadable("equality delete file", delete_file.file_path, e) from e


class EqualityDeleteCache:
    """Key sets built once per (equality ids, files) and shared by the tasks that need them."""

    def __init__(self, io: FileIO, schema: Schema):
        self.io = io
        self.schema = schema
        self._files: dict[str, pa.Table] = {}
        self._sets: dict[tuple, EqualityKeySet] = {}
        self._lock = threading.Lock()

    def key_sets(self, delete_files: Iterable[DeleteFile]) -> list[EqualityKeySet]:
        groups: dict[tuple[int, ...], list[DeleteFile]] = defaultdict(list)
        for f in delete_files:
            groups[tuple(f.equality_ids or ())].append(f)
        out = []
        for ids, files in sorted(groups.items()):
            key = (ids, tuple(sorted(f.file_path for f in files)))
            with self._lock:
                if key not in self._sets:
                    tables = [self._file(f) for f in files]
                    names = [self.schema.find_column_name(i) for i in ids]
                    self._sets[key] = EqualityKeySet(names, pa.concat_tables(tables))  # type: ignore[arg-type]
                out.append(self._sets[key])
        return out

    def _file(self, delete_file: DeleteFile) -> pa.Table:
        if delete_file.file_path not in self._files:
            self._files[delete_file.file_path] = read_equality_delete_file(self.io, delete_file, self.schema)
        return self._files[delete_file.file_path]
