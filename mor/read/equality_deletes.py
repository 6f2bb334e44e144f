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

from mor.errors import CorruptMetadataError, UnsupportedFeatureError
from mor.format.content_file import DeleteFile
from mor.io.fileio import FileIO
from mor.write.arrow_schema import FIELD_ID_KEY, to_arrow_type


class EqualityKeySet:
    """A set of key tuples (the deleted keys of one `equality_ids` group, or the keys of DML
    source rows), ready to probe batches with: null-safe, vectorized."""

    def __init__(self, names: list[str], keys: pa.Table):
        self.names = names
        self.types = [keys.schema.field(n).type for n in names]
        self.value_sets = [pc.unique(keys.column(n).combine_chunks()) for n in names]
        # Codes of column prefixes: pair_sets[i] holds the (prefix code, value code) pairs of
        # columns 0..i+1 that occur in the deletes, so codes stay below the number of deletes.
        self.pair_sets: list[pa.Array] = []
        code = None
        for column, values in zip((keys.column(n) for n in names), self.value_sets):
            c = _index_in(column, values, skip_nulls=False)
            if code is not None:
                pair = pc.add(pc.multiply(code, len(values)), c)
                self.pair_sets.append(pc.unique(pair))
                c = _index_in(pair, self.pair_sets[-1], skip_nulls=True)
            code = c
        if code is None:
            raise ValueError("an equality key needs at least one column")
        # Every code in 0..n-1 occurs among the key rows; remember one key row for each.
        distinct = len(self.pair_sets[-1]) if self.pair_sets else len(self.value_sets[0])
        key_row_of_code = np.empty(distinct, dtype=np.int64)
        key_row_of_code[code.to_numpy(zero_copy_only=False)] = np.arange(len(code), dtype=np.int64)
        self.key_row_of_code = pa.array(key_row_of_code)
        self.distinct_keys = distinct

    def row_codes(self, rows: pa.RecordBatch | pa.Table) -> pa.Array:
        """Per row, the index of its key tuple among the key rows this set was built from
        (any one of them when keys repeat), or null when its tuple is not a key."""
        code = None
        for i, (name, values) in enumerate(zip(self.names, self.value_sets)):
            column = rows.column(name)
            if column.type != self.types[i]:
                column = column.cast(self.types[i])
            c = _index_in(column, values, skip_nulls=False)
            if code is not None:
                c = _index_in(pc.add(pc.multiply(code, len(values)), c), self.pair_sets[i - 1], skip_nulls=True)
            code = c
        # `code` indexes the last prefix set; map it back to a key row.
        return pc.take(self.key_row_of_code, code) if code is not None else pa.nulls(rows.num_rows, pa.int64())

    def deleted_mask(self, batch: pa.RecordBatch) -> np.ndarray:
        """True for rows whose key tuple is deleted."""
        valid = pc.is_valid(self.row_codes(batch))
        return np.asarray(valid.to_numpy(zero_copy_only=False), dtype=bool)


def _index_in(values: pa.Array | pa.ChunkedArray, value_set: pa.Array, skip_nulls: bool) -> pa.Array:
    out = pc.index_in(values, value_set=value_set, skip_nulls=skip_nulls)
    if isinstance(out, pa.ChunkedArray):
        out = out.combine_chunks()
    return pc.cast(out, pa.int64())


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
    except (OSError, pa.ArrowInvalid, KeyError, ValueError) as e:
        raise CorruptMetadataError(f"cannot read equality delete file {delete_file.file_path}: {e}") from e
    return pa.table(
        [table.column(c).cast(to_arrow_type(f.field_type)) for c, f in zip(file_columns, fields, strict=True)],
        names=[f.name for f in fields],
    )


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
