"""Row-group pruning: the planner's metrics test, applied to one row group's statistics.

A row group that cannot match the filter is skipped, and positions keep counting across it,
so position deletes stay aligned even when row groups are skipped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import pyarrow.parquet as pq
from pyiceberg.conversions import to_bytes
from pyiceberg.schema import Schema
from pyiceberg.types import BinaryType, DecimalType, PrimitiveType, StringType, TimestampType, TimestamptzType, TimeType
from pyiceberg.utils.decimal import unscaled_to_decimal


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
    """Iceberg bounds of a row group from Parquet statistics in the file's physical form; None
    (keep the row group) when the file's form has no safe conversion."""
    lo, hi = stats.min_raw, stats.max_raw
    if isinstance(ftype, (TimestampType, TimestamptzType, TimeType)):
        unit = _time_unit(col, "Timestamp" if isinstance(ftype, (TimestampType, TimestamptzType)) else "Time")
        if unit is None:
            return None  # INT96 or unknown: no safe conversion, do not prune
        lo, hi = lo * unit[0] // unit[1], -((-hi * unit[0]) // unit[1])
    if isinstance(ftype, DecimalType):
        # The unscaled value (an int, or big-endian two's complement bytes) at the file's scale,
        # which Iceberg keeps equal to the table's (only the precision may widen).
        if col.scale != ftype.scale or not isinstance(lo, (int, bytes)) or not isinstance(hi, (int, bytes)):
            return None
        lo, hi = _unscaled_decimal(lo, ftype.scale), _unscaled_decimal(hi, ftype.scale)
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


def _unscaled_decimal(raw: int | bytes, scale: int) -> Decimal:
    unscaled = int.from_bytes(raw, "big", signed=True) if isinstance(raw, bytes) else raw
    return unscaled_to_decimal(unscaled, scale)


_LEGACY_UNITS = {
    "Timestamp": {"TIMESTAMP_MICROS": (1, 1), "TIMESTAMP_MILLIS": (1000, 1)},
    "Time": {"TIME_MICROS": (1, 1), "TIME_MILLIS": (1000, 1)},
}


def _time_unit(column: Any, logical_name: str) -> tuple[int, int] | None:
    """(multiplier, divisor) that turn a Parquet time or timestamp column's stored unit into
    microseconds: TIME(MILLIS) is an INT32, every other unit an INT64."""
    logical = str(column.logical_type)
    if not logical.startswith(logical_name + "("):
        return _LEGACY_UNITS[logical_name].get(column.converted_type)  # files without logical types
    for unit, factor in (("microseconds", (1, 1)), ("milliseconds", (1000, 1)), ("nanoseconds", (1, 1000))):
        if unit in logical:
            physical = "INT32" if logical_name == "Time" and unit == "milliseconds" else "INT64"
            return factor if column.physical_type == physical else None
    return None
