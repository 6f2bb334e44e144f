"""Column metrics of a written Parquet file, from its footer (no second pass over the data).

Metrics cover every primitive field reachable from the top through structs only, as Iceberg
Java's Parquet writer keeps them (`ParquetMetrics`): value and null counts, bounds, and NaN counts
for float/double. A field inside a list or a map gets a column size and nothing else (Java
drops their metrics: one row holds many values). String and binary bounds are truncated to
16 characters/bytes, as Iceberg's default `truncate(16)` metrics mode does (the upper bound is
rounded up so it still bounds); position-delete `file_path` bounds are kept whole, because
readers match delete files to data files by them.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyiceberg.conversions import to_bytes
from pyiceberg.schema import Schema
from pyiceberg.types import (
    BinaryType,
    DecimalType,
    DoubleType,
    FloatType,
    ListType,
    MapType,
    NestedField,
    PrimitiveType,
    StringType,
    StructType,
)
from pyiceberg.utils.decimal import unscaled_to_decimal

TRUNCATE_LENGTH = 16


@dataclass
class FileMetrics:
    record_count: int
    column_sizes: dict[int, int]
    value_counts: dict[int, int]
    null_value_counts: dict[int, int]
    nan_value_counts: dict[int, int]
    lower_bounds: dict[int, bytes]
    upper_bounds: dict[int, bytes]
    split_offsets: tuple[int, ...]

    def as_fields(self) -> dict[str, Any]:
        """The content-file fields these metrics fill."""
        return {
            "column_sizes": self.column_sizes,
            "value_counts": self.value_counts,
            "null_value_counts": self.null_value_counts,
            "nan_value_counts": self.nan_value_counts,
            "lower_bounds": self.lower_bounds,
            "upper_bounds": self.upper_bounds,
            "split_offsets": self.split_offsets,
        }


@dataclass(frozen=True)
class Leaf:
    """A primitive field as a Parquet column: its path, and whether it gets metrics."""

    field: NestedField
    names: tuple[str, ...]  # struct names from the top (only meaningful when `measured`)
    measured: bool  # reached through structs only (not inside a list or a map)


def parquet_leaves(schema: Schema) -> dict[str, Leaf]:
    """Every primitive field by its Parquet column path (`s.a`, `l.list.element`,
    `m.key_value.key`: the names pyarrow writes)."""
    return {".".join(path): leaf for path, leaf in _leaves(schema.fields, (), (), True)}


def _leaves(
    fields: list[NestedField] | tuple[NestedField, ...], path: tuple[str, ...], names: tuple[str, ...], measured: bool
) -> Iterator[tuple[tuple[str, ...], Leaf]]:
    for f in fields:
        yield from _leaves_of(f, path + (f.name,), names + (f.name,), measured)


def _leaves_of(f: NestedField, path: tuple[str, ...], names: tuple[str, ...], measured: bool) -> Iterator[tuple[tuple[str, ...], Leaf]]:
    t = f.field_type
    if isinstance(t, StructType):
        yield from _leaves(t.fields, path, names, measured)
    elif isinstance(t, ListType):
        yield from _leaves_of(t.element_field, path + ("list", "element"), names, False)
    elif isinstance(t, MapType):
        yield from _leaves_of(t.key_field, path + ("key_value", "key"), names, False)
        yield from _leaves_of(t.value_field, path + ("key_value", "value"), names, False)
    elif isinstance(t, PrimitiveType):
        yield path, Leaf(f, names, measured)


def count_nans(data: pa.Table | pa.RecordBatch, schema: Schema) -> dict[int, int]:
    """NaN count of every measured float/double field (Parquet statistics leave NaN out)."""
    out = {}
    for leaf in parquet_leaves(schema).values():
        if leaf.measured and isinstance(leaf.field.field_type, (FloatType, DoubleType)):
            column: Any = data.column(leaf.names[0])
            for name in leaf.names[1:]:
                column = pc.struct_field(column, name)  # null where a parent struct is null
            out[leaf.field.field_id] = int(pc.sum(pc.is_nan(column)).as_py() or 0)
    return out


def collect_metrics(
    meta: pq.FileMetaData,
    schema: Schema,
    data: pa.Table | None = None,
    untruncated: frozenset[int] = frozenset(),
    nan_counts: dict[int, int] | None = None,
) -> FileMetrics:
    """Metrics from the footer; NaN counts (which Parquet does not keep) from `data` or
    `nan_counts` (counted by a streaming writer as it went, with `count_nans`)."""
    leaves = parquet_leaves(schema)
    m = FileMetrics(meta.num_rows, {}, {}, {}, {}, {}, {}, ())
    lowers: dict[int, Any] = {}
    uppers: dict[int, Any] = {}
    unbounded: set[int] = set()
    offsets = []
    for rg_index in range(meta.num_row_groups):
        rg = meta.row_group(rg_index)
        if rg.num_columns:
            first = rg.column(0)
            offsets.append(first.dictionary_page_offset or first.data_page_offset)
        for c in range(rg.num_columns):
            col = rg.column(c)
            leaf = leaves.get(col.path_in_schema)
            if leaf is None:
                continue
            fid = leaf.field.field_id
            m.column_sizes[fid] = m.column_sizes.get(fid, 0) + col.total_compressed_size
            if not leaf.measured:
                continue
            m.value_counts[fid] = m.value_counts.get(fid, 0) + col.num_values
            stats = col.statistics
            if stats is None or not stats.has_null_count:
                m.null_value_counts.pop(fid, None)
            else:
                m.null_value_counts[fid] = m.null_value_counts.get(fid, 0) + stats.null_count
            ftype = leaf.field.field_type
            if stats is not None and stats.has_min_max:
                lo, hi = _physical(ftype, stats.min_raw), _physical(ftype, stats.max_raw)
                lowers[fid] = lo if fid not in lowers else min(lowers[fid], lo)
                uppers[fid] = hi if fid not in uppers else max(uppers[fid], hi)
            elif not (stats is not None and stats.has_null_count and stats.null_count == col.num_values):
                unbounded.add(fid)  # values we cannot bound (all NaN, or no statistics): no file bounds
    for fid, lo in lowers.items():
        hi = uppers[fid]
        if fid in unbounded:
            continue
        ftype = schema.find_field(fid).field_type
        keep_whole = fid in untruncated
        lower, upper = (lo, hi) if keep_whole else (_truncate_lower(lo), _truncate_upper(hi))
        if lower is not None:
            m.lower_bounds[fid] = to_bytes(ftype, lower)
        if upper is not None:
            m.upper_bounds[fid] = to_bytes(ftype, upper)
    if nan_counts is not None:
        m.nan_value_counts.update(nan_counts)
    elif data is not None:
        m.nan_value_counts.update(count_nans(data, schema))
    m.split_offsets = tuple(offsets)
    return m


def _physical(ftype: PrimitiveType, raw: Any) -> Any:
    if isinstance(ftype, DecimalType):
        # Parquet keeps the unscaled value: an int, or big-endian two's complement bytes.
        # (Not Decimal(unscaled).scaleb(): that rounds to the context's 28 digits.)
        unscaled = int.from_bytes(raw, "big", signed=True) if isinstance(raw, bytes) else int(raw)
        return unscaled_to_decimal(unscaled, ftype.scale)
    if isinstance(ftype, StringType) and isinstance(raw, bytes):
        return raw.decode("utf-8")
    if isinstance(ftype, BinaryType) and isinstance(raw, str):
        return raw.encode("utf-8")
    return raw


def _truncate_lower(value: Any) -> Any:
    if isinstance(value, (str, bytes)):
        return value[:TRUNCATE_LENGTH]
    return value


def _truncate_upper(value: Any) -> Any:
    """Truncated upper bounds must stay >= every value: bump the last kept unit, or give up."""
    if isinstance(value, str) and len(value) > TRUNCATE_LENGTH:
        chars = list(value[:TRUNCATE_LENGTH])
        while chars:
            code = ord(chars[-1]) + 1
            if code <= 0x10FFFF and not 0xD800 <= code <= 0xDFFF:
                chars[-1] = chr(code)
                return "".join(chars)
            chars.pop()
        return None
    if isinstance(value, bytes) and len(value) > TRUNCATE_LENGTH:
        data = bytearray(value[:TRUNCATE_LENGTH])
        while data:
            if data[-1] < 0xFF:
                data[-1] += 1
                return bytes(data)
            data.pop()
        return None
    return value
