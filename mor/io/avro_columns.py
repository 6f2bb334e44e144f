"""Avro files read into columns: a compiled decoder for large files, fastavro for small ones.

Planning a table of a million files decodes a million manifest entries. fastavro builds a
Python dict per record (and per metric of every column) holding the GIL: about 40 us an entry.
polars' Avro reader (Rust) decodes into Arrow columns without the GIL, about 6 us an entry, so
the manifests of one plan decode in parallel, and only the fields asked for become Python
values; it costs 0.2 s to import and a few milliseconds a file more than fastavro on files of a
few entries, so it reads only files of `COMPILED_FROM` bytes or more, and only for the lean
columns of a plan without metrics (see `read_avro_columns`), and a file it cannot read
(it refuses a schema that names one fixed type twice) goes to fastavro. Both give the same values
(checked over every manifest of the Iceberg Java fixtures: tests/unit/io/test_avro_columns.py):
columns keyed by field path (`data_file.file_path`: a field of a record field), nested records
as dicts, arrays as lists. A field the file's schema lacks has no column.
"""

from __future__ import annotations

import io
import os
from typing import Any, cast

import fastavro

COMPILED_FROM = int(os.environ.get("MOR_AVRO_COMPILED_FROM_BYTES", 256 * 1024))

Columns = dict[str, list[Any]]


def read_avro_columns(data: bytes, paths: tuple[str, ...], compiled: bool = True) -> tuple[Columns, int]:
    """The fields at `paths` (`name`, or `record.name` one level down) of every record of the
    Avro file `data`, as columns, and the number of records. Raises what the decoder raises on
    bytes that are not Avro (the caller names the file). `compiled=False`: fastavro whatever the
    size (a column of small records, such as metric maps, costs more memory as polars' lists of
    dicts than as fastavro's records, for little time saved)."""
    if compiled and len(data) >= COMPILED_FROM:
        try:
            return _compiled(data, paths)
        except Exception:  # a schema it cannot read (a named type used twice): fastavro reads every valid file
            pass
    records = cast(list[dict[str, Any]], list(fastavro.reader(io.BytesIO(data))))  # a record schema's datums are dicts
    if not records:
        return {}, 0
    columns: Columns = {}
    for path in paths:
        outer, _, inner = path.partition(".")
        first = records[0].get(outer)
        if outer not in records[0] or (inner and not (isinstance(first, dict) and inner in first)):
            continue
        columns[path] = [r[outer][inner] for r in records] if inner else [r[outer] for r in records]
    return columns, len(records)


def _compiled(data: bytes, paths: tuple[str, ...]) -> tuple[Columns, int]:
    import polars as pl  # only for large files: its import costs 0.2 s

    frame = pl.read_avro(io.BytesIO(data))
    columns: Columns = {}
    for path in paths:
        outer, _, inner = path.partition(".")
        if outer not in frame.columns:
            continue
        series = frame.get_column(outer)
        if inner:
            if not isinstance(series.dtype, pl.Struct) or inner not in [f.name for f in series.dtype.fields]:
                continue
            series = series.struct.field(inner)
        columns[path] = series.to_list()
    return columns, frame.height
