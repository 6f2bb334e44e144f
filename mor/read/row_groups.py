"""Row-group pruning: the planner's metrics test, applied to one row group's statistics.

A row group that cannot match the filter is skipped, and positions keep counting across it,
so position deletes stay aligned even when row groups are skipped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pyarrow.parquet as pq
from pyiceberg.conversions import to_bytes
from pyiceberg.schema import Schema
from pyiceberg.types import BinaryType, PrimitiveType, StringType, TimestampType, TimestamptzType


@dataclass
class RowGroupMetrics:
    """Duck-types the metrics fields of a data file, for the metrics evaluator."""

    record_count: int
    value_counts: dict[int, int] = field(default_factory=dict)
    null_value_counts: dict[int, int] = field(default_factory=dict)
    nan_value_counts: dict[int, int] = field(default_factory=dict)
    lower_bounds: dict[int, bytes] = field(default_factory=dict)
    upper_bounds: dict[int, bytes] = field(default_factory=dict)


def row_group_metrics(meta: pq.FileMetaData, index: int, id_by_column: dict[str, int], schema: Schema) -> RowGroupMetrics:
    rg = meta.row_group(index)
    m = RowGroupMetrics(rg.num_rows)
    for c in range(rg.num_columns):
        col = rg.column(c)
        fid = id_by_column.get(col.path_in_schema)
        if fid is None:
            continue
        ftype = schema.find_field(fid).field_type
        stats = col.statistics
        if not isinstance(ftype, PrimitiveType) or stats is None:
            continue
        m.value_counts[fid] = rg.num_rows
        if stats.has_null_count:
            m.null_value_counts[fid] = stats.null_count
        if stats.has_min_max and (bounds := _bounds(ftype, meta.schema.column(c), stats)) is not None:
            m.lower_bounds[fid], m.upper_bounds[fid] = bounds
    return m


def _bounds(ftype: PrimitiveType, col: Any, stats: Any) -> tuple[bytes, bytes] | None:
    lo, hi = stats.min_raw, stats.max_raw
    if isinstance(ftype, (TimestampType, TimestamptzType)):
        unit = _timestamp_unit(col)
        if unit is None:
            return None  # INT96 or unknown: no safe conversion, do not prune
        lo, hi = lo * unit[0] // unit[1], -((-hi * unit[0]) // unit[1])
    if isinstance(ftype, StringType):
        lo = lo.decode("utf-8", "replace") if isinstance(lo, bytes) else lo
        hi = hi.decode("utf-8", "replace") if isinstance(hi, bytes) else hi
    if isinstance(ftype, BinaryType):
        lo = lo.encode() if isinstance(lo, str) else lo
        hi = hi.encode() if isinstance(hi, str) else hi
    try:
        return to_bytes(ftype, lo), to_bytes(ftype, hi)
    except (TypeError, ValueError, OverflowError, AttributeError):
        return None


def _timestamp_unit(column: Any) -> tuple[int, int] | None:
    """(multiplier, divisor) that turn a Parquet column's stored unit into microseconds."""
    if column.physical_type != "INT64":
        return None
    logical = str(column.logical_type).lower()
    for unit, factor in (("microseconds", (1, 1)), ("milliseconds", (1000, 1)), ("nanoseconds", (1, 1000))):
        if unit in logical:
            return factor
    return (1, 1) if column.converted_type == "TIMESTAMP_MICROS" else None
