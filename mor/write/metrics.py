"""Column metrics of a written Parquet file, from its footer (no second pass over the data).

Metrics cover top-level primitive columns. String bounds are truncated to 16 characters, as
Iceberg's default `truncate(16)` metrics mode does (the upper bound is rounded up so it still
bounds); position-delete `file_path` bounds are kept whole, because readers match delete files
to data files by them.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyiceberg.conversions import to_bytes
from pyiceberg.schema import Schema
from pyiceberg.types import BinaryType, DecimalType, DoubleType, FloatType, PrimitiveType, StringType

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


def collect_metrics(
    meta: pq.FileMetaData,
    schema: Schema,
    data: pa.Table | None = None,
    untruncated: frozenset[int] = frozenset(),
    nan_counts: dict[int, int] | None = None,
) -> FileMetrics:
    """Metrics from the footer; NaN counts (which Parquet does not keep) from `data` or
    `nan_counts` (counted by a streaming writer as it went)."""
    top_level = {f.name: f for f in schema.fields if isinstance(f.field_type, PrimitiveType)}
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
            field = top_level.get(col.path_in_schema)
            if field is None:
                continue
            fid = field.field_id
            m.column_sizes[fid] = m.column_sizes.get(fid, 0) + col.total_compressed_size
            m.value_counts[fid] = m.value_counts.get(fid, 0) + rg.num_rows
            stats = col.statistics
            if stats is None or not stats.has_null_count:
                m.null_value_counts.pop(fid, None)
            else:
                m.null_value_counts[fid] = m.null_value_counts.get(fid, 0) + stats.null_count
            if stats is not None and stats.has_min_max:
                lo, hi = _physical(field.field_type, stats.min_raw), _physical(field.field_type, stats.max_raw)
                lowers[fid] = lo if fid not in lowers else min(lowers[fid], lo)
                uppers[fid] = hi if fid not in uppers else max(uppers[fid], hi)
            elif not (stats is not None and stats.has_null_count and stats.null_count == rg.num_rows):
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
        for name, field in top_level.items():
            if isinstance(field.field_type, (FloatType, DoubleType)):
                m.nan_value_counts[field.field_id] = int(pc.sum(pc.is_nan(data.column(name))).as_py() or 0)
    m.split_offsets = tuple(offsets)
    return m


def _physical(ftype: PrimitiveType, raw: Any) -> Any:
    if isinstance(ftype, DecimalType):
        # Parquet keeps the unscaled value: an int, or big-endian two's complement bytes.
        unscaled = int.from_bytes(raw, "big", signed=True) if isinstance(raw, bytes) else int(raw)
        return Decimal(unscaled).scaleb(-ftype.scale)
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
