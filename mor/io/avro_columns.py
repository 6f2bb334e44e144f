"""Avro files read into Arrow columns: a compiled decoder for large files, fastavro for small ones.

Planning a table of a million files decodes a million manifest entries. fastavro builds a
Python dict per record (and per metric of every column) holding the GIL: about 40 us an entry.
polars' Avro reader (Rust) decodes into Arrow without the GIL, about 6 us an entry, so the
manifests of one plan decode in parallel and only the fields asked for are kept, as Arrow
arrays (a tenth of the memory of Python values, and their size is known). It costs 0.2 s to
import and a few milliseconds a file more than fastavro on files of a few entries, so it reads
only files of `COMPILED_FROM` bytes or more; a file it cannot read (it refuses a schema that
names one fixed type twice) goes to fastavro, whose records are then made into the same
columns. Both give the same values (checked over every manifest of the Iceberg Java fixtures:
tests/unit/io/test_avro_columns.py): columns keyed by field path (`data_file.file_path`: a
field of a record field); `to_pylist()` gives nested records as dicts, arrays as lists. A field
the file's schema lacks has no column.

Map fields stored as arrays of key-value records (Iceberg's metrics) can be cut to some keys
(`keep_keys`): a plan whose filter names two columns needs their metrics, not the other
columns'.
"""

from __future__ import annotations

import io
import os
import threading
from collections.abc import Collection, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, cast

import fastavro
import numpy as np
import pyarrow as pa

from mor.io.avro_arrow import Unsupported, arrow_array, named_types

COMPILED_FROM = int(os.environ.get("MOR_AVRO_COMPILED_FROM_BYTES", 256 * 1024))


class _DecodeBudget:
    """A large manifest decodes whole before its fields are picked (a hundred megabytes for
    100,000 entries, and polars' allocator keeps what it frees for a while). Large files decode
    one per core but one (the caller keeps that core busy turning columns into files: on two
    cores a second decoder of large files saved no time and cost 250 MB at the peak of a plan of
    1M + 1M files); small ones side by side while the bytes being decoded stay under `limit`."""

    def __init__(self, decoders: int, limit: int):
        self.decoders, self.limit = decoders, limit
        self.running: list[int] = []
        self.changed = threading.Condition()

    @contextmanager
    def held(self, size: int) -> Iterator[None]:
        with self.changed:
            self.changed.wait_for(lambda: not self.running or (sum(self.running) + size <= self.limit) or len(self.running) < self.decoders)
            self.running.append(size)
        try:
            yield
        finally:
            with self.changed:
                self.running.remove(size)
                self.changed.notify_all()


_DECODING = _DecodeBudget(max(1, (os.cpu_count() or 1) - 1), 4 << 20)

Columns = dict[str, pa.Array]


def read_avro_columns(data: bytes, paths: tuple[str, ...], keep_keys: Mapping[str, Collection[int]] | None = None) -> tuple[Columns, int]:
    """The fields at `paths` (`name`, or `record.name` one level down) of every record of the
    Avro file `data`, as Arrow arrays, and the number of records. `keep_keys`: for some of
    those paths (arrays of `{key, value}` records), only the items of these keys. Raises what
    the decoder raises on bytes that are not Avro (the caller names the file)."""
    keep_keys = keep_keys or {}
    if len(data) >= COMPILED_FROM:
        try:
            return _compiled(data, paths, keep_keys)
        except Exception:  # a schema it cannot read (a named type used twice): fastavro reads every valid file
            pass
    reader = fastavro.reader(io.BytesIO(data))
    records = cast(list[dict[str, Any]], list(reader))  # a record schema's datums are dicts
    if not records:
        return {}, 0
    named = named_types(reader.writer_schema)
    fields = _fields(reader.writer_schema, named)
    columns: Columns = {}
    for path in paths:
        outer, _, inner = path.partition(".")
        field_schema = fields.get(outer)
        if inner and field_schema is not None:
            field_schema = _fields(field_schema, named).get(inner)
        if field_schema is None:
            continue
        values = [r[outer][inner] for r in records] if inner else [r[outer] for r in records]
        if path in keep_keys:
            keys = keep_keys[path]
            values = [None if items is None else [kv for kv in items if kv["key"] in keys] for items in values]
        try:
            columns[path] = arrow_array(values, field_schema, named)
        except Unsupported:  # not a manifest's type: Arrow infers it (importing pandas)
            columns[path] = pa.array(values)
    return columns, len(records)


def _fields(schema: Any, named: dict[str, Any]) -> dict[str, Any]:
    """The fields of a record schema (or of the record in a union with null) by name; none for another type."""
    if isinstance(schema, str):
        schema = named.get(schema, schema)
    if isinstance(schema, list):
        records = [s for s in schema if s != "null"]
        return _fields(records[0], named) if len(records) == 1 else {}
    if not isinstance(schema, dict) or schema.get("type") != "record":
        return {}
    return {f["name"]: f["type"] for f in schema["fields"]}


def _compiled(data: bytes, paths: tuple[str, ...], keep_keys: Mapping[str, Collection[int]]) -> tuple[Columns, int]:
    import polars as pl  # only for large files: its import costs 0.2 s

    with _DECODING.held(len(data)):
        return _pick(pl.read_avro(io.BytesIO(data)), paths, keep_keys)


def _pick(frame: Any, paths: tuple[str, ...], keep_keys: Mapping[str, Collection[int]]) -> tuple[Columns, int]:
    import polars as pl

    picked: list[pl.Expr] = []
    for path in paths:
        outer, _, inner = path.partition(".")
        if outer not in frame.columns:
            continue
        column = pl.col(outer)
        if inner:
            dtype = frame.schema[outer]
            if not isinstance(dtype, pl.Struct) or inner not in [f.name for f in dtype.fields]:
                continue
            column = column.struct.field(inner)
        if path in keep_keys:
            keys = list(keep_keys[path])
            column = column.list.eval(pl.element().filter(pl.element().struct.field("key").is_in(keys)))
        picked.append(column.alias(path))
    table = frame.select(picked).to_arrow() if picked else pa.table({})
    return {name: table.column(name).combine_chunks() for name in table.column_names}, frame.height


def take_rows(columns: Columns, rows: list[int]) -> Columns:
    """The values of `columns` at `rows` (in that order)."""
    count = len(next(iter(columns.values()))) if columns else 0
    if len(rows) == count and rows == list(range(count)):
        return dict(columns)  # every row in order (most manifests keep every entry): no copy
    indices = pa.Array.from_buffers(pa.int64(), len(rows), [None, pa.py_buffer(np.array(rows, np.int64))])  # pa.array imports pandas
    return {path: column.take(indices) for path, column in columns.items()}


def python_values(column: pa.Array, as_maps: bool = False) -> list[Any]:
    """The values of a column. `as_maps`: an array of `{key, value}` records per row (how Avro
    stores a map with non-string keys) becomes a dict per row, made from the flat key and value
    arrays: several times faster than a dict per record."""
    flat = isinstance(column, (pa.ListArray, pa.LargeListArray)) and pa.types.is_struct(column.type.value_type)
    if not as_maps or column.null_count or not flat:  # (every list empty: Arrow typed its items null)
        values = column.to_pylist()
        return [None if items is None else {kv["key"]: kv["value"] for kv in items} for items in values] if as_maps else values
    offsets = column.offsets.to_pylist()
    first = offsets[0]  # a slice's records sit at offsets[0]:offsets[-1] of the whole child array
    items = column.values.slice(first, offsets[-1] - first)
    keys, values = items.field("key").to_pylist(), items.field("value").to_pylist()
    return [
        dict(zip(keys[start - first : stop - first], values[start - first : stop - first])) for start, stop in zip(offsets, offsets[1:])
    ]
