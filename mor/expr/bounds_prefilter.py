"""A first pass of file pruning over a manifest's columns: the files whose integer bounds rule a
filter out, found for every entry at once.

pyiceberg's metrics evaluator judges one file at a time (about 10 us each: a tenth of planning
a million files with a filter, and every file must first become an object). A filter's
comparisons of an integer-like column (int, long, date, time, timestamps) with a literal are
judged here on the bounds' bytes as numpy arrays (not by pyarrow.compute, whose scalars import
pandas), and only the files left become objects for the evaluator, which decides as before.
So this pass may keep a file the evaluator prunes, never prune one it keeps: it prunes only by
the rules the evaluator applies to the same bounds (`x < c` cannot match where lower(x) >= c,
...); anything else (another type, a negation, a missing or odd-sized bound, a field inside a
list or map) keeps the file.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pyarrow as pa
from pyiceberg.expressions import (
    AlwaysFalse,
    And,
    BooleanExpression,
    BoundEqualTo,
    BoundGreaterThan,
    BoundGreaterThanOrEqual,
    BoundIn,
    BoundLessThan,
    BoundLessThanOrEqual,
    BoundPredicate,
    Or,
)
from pyiceberg.schema import Schema
from pyiceberg.types import (
    DateType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StructType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
)

Mask = np.ndarray  # one bool per manifest entry: True where the file may match

_WIDTHS = {IntegerType: 4, DateType: 4, LongType: 8, TimeType: 8, TimestampType: 8, TimestamptzType: 8}
_WIDTHS |= {TimestampNanoType: 8, TimestamptzNanoType: 8}
_INT64 = (-(2**63), 2**63 - 1)
_COMPARISONS = (BoundLessThan, BoundLessThanOrEqual, BoundGreaterThan, BoundGreaterThanOrEqual, BoundEqualTo, BoundIn)


class BoundsPrefilter:
    """Built from the bound expression the metrics evaluator evaluates (its pruning form)."""

    def __init__(self, bound: BooleanExpression, schema: Schema):
        self.expr = bound
        self.widths = _judged_fields(schema)

    @property
    def prunes(self) -> bool:
        """Whether some part of the filter can rule a file out here."""
        return _prunes(self.expr, self.widths)

    def may_match(self, columns: Mapping[str, pa.Array], count: int) -> Mask | None:
        """Per entry of a manifest decoded into `columns` (mor/format/manifest.py's paths),
        False where the file cannot match; None when nothing here can prune."""
        if not self.prunes or count == 0:
            return None
        bounds = _Bounds(columns, count, self.widths)
        mask = _visit(self.expr, bounds)
        counts = columns.get("data_file.record_count")
        if counts is not None:  # the evaluator keeps a file of unknown count (old imports: -1)
            mask |= (_numbers(counts) < 0) | ~_valid(counts)
        return mask


def _judged_fields(schema: Schema) -> dict[int, int]:
    """Field id -> bound width in bytes, for integer-like fields outside lists and maps."""
    out: dict[int, int] = {}

    def walk(fields: tuple[NestedField, ...]) -> None:
        for f in fields:
            if isinstance(f.field_type, StructType):
                walk(f.field_type.fields)
            elif not isinstance(f.field_type, (ListType, MapType)) and type(f.field_type) in _WIDTHS:
                out[f.field_id] = _WIDTHS[type(f.field_type)]

    walk(schema.fields)
    return out


def _prunes(expr: BooleanExpression, widths: dict[int, int]) -> bool:
    if isinstance(expr, AlwaysFalse):
        return True
    if isinstance(expr, (And, Or)):
        return _prunes(expr.left, widths) or _prunes(expr.right, widths)
    return isinstance(expr, _COMPARISONS) and expr.term.ref().field.field_id in widths


class _Bounds:
    """The lower and upper bounds of the judged fields, decoded when first asked for."""

    def __init__(self, columns: Mapping[str, pa.Array], count: int, widths: dict[int, int]):
        self.columns, self.count, self.widths = columns, count, widths
        self.decoded: dict[tuple[str, int], tuple[np.ndarray, np.ndarray]] = {}

    def of(self, which: str, field_id: int) -> tuple[np.ndarray, np.ndarray]:
        """(values, known): the bound of each entry as int64, and whether it has one."""
        key = (which, field_id)
        if key not in self.decoded:
            self.decoded[key] = self._decode(self.columns.get(f"data_file.{which}_bounds"), field_id)
        return self.decoded[key]

    def _decode(self, column: pa.Array | None, field_id: int) -> tuple[np.ndarray, np.ndarray]:
        values, known = np.zeros(self.count, np.int64), np.zeros(self.count, np.bool_)
        if not isinstance(column, (pa.ListArray, pa.LargeListArray)) or not pa.types.is_struct(column.type.value_type):
            return values, known
        offsets = _numbers(column.offsets)
        items = column.values.slice(offsets[0], offsets[-1] - offsets[0])  # the key-value records, in entry order
        if len(items) == 0:
            return values, known
        rows = np.repeat(np.arange(self.count), np.diff(offsets))
        data = items.field("value")
        if not pa.types.is_binary(data.type) and not pa.types.is_large_binary(data.type):
            return values, known
        ends = np.frombuffer(data.buffers()[1], np.int64 if pa.types.is_large_binary(data.type) else np.int32)
        ends = ends[data.offset : data.offset + len(data) + 1]
        width = self.widths[field_id]
        mine = (_numbers(items.field("key")) == field_id) & (np.diff(ends) == width) & _valid(data) & _valid(items)
        if column.null_count:
            mine &= _valid(column)[rows]
        if not mine.any():
            return values, known
        raw = np.frombuffer(data.buffers()[2], np.uint8)
        starts = ends[:-1][mine].astype(np.int64)
        picked = raw[starts[:, None] + np.arange(width)]  # every value `width` bytes, little-endian
        values[rows[mine]] = np.ascontiguousarray(picked).view(np.dtype(f"<i{width}")).ravel()
        known[rows[mine]] = True
        return values, known


def _numbers(array: pa.Array) -> np.ndarray:
    """An integer array's values (nulls as whatever lies there): from its buffer, since
    `to_numpy` imports pandas."""
    dtype = np.dtype(f"<i{array.type.bit_width // 8}")
    return np.frombuffer(array.buffers()[1], dtype)[array.offset : array.offset + len(array)]


def _valid(array: pa.Array) -> np.ndarray:
    if array.null_count == 0:
        return np.ones(len(array), np.bool_)
    bits = np.frombuffer(array.buffers()[0], np.uint8)
    return np.unpackbits(bits, bitorder="little")[array.offset : array.offset + len(array)].astype(np.bool_)


def _visit(expr: BooleanExpression, bounds: _Bounds) -> Mask:
    everything = np.ones(bounds.count, np.bool_)
    if isinstance(expr, AlwaysFalse):
        return ~everything
    if isinstance(expr, And):
        return _visit(expr.left, bounds) & _visit(expr.right, bounds)
    if isinstance(expr, Or):
        return _visit(expr.left, bounds) | _visit(expr.right, bounds)
    if not isinstance(expr, _COMPARISONS) or expr.term.ref().field.field_id not in bounds.widths:
        return everything
    return ~_ruled_out(expr, bounds)


def _ruled_out(pred: BoundPredicate, bounds: _Bounds) -> Mask:
    """Where the bounds say no row matches, as the metrics evaluator reads them."""
    field_id = pred.term.ref().field.field_id
    lower, has_lower = bounds.of("lower", field_id)
    upper, has_upper = bounds.of("upper", field_id)
    if isinstance(pred, BoundIn):
        values = [v.value for v in pred.literals]
        if not all(type(v) is int and _INT64[0] <= v <= _INT64[1] for v in values):
            return np.zeros(bounds.count, np.bool_)
        literals = np.array(sorted(values), np.int64)
        if len(literals) == 0:
            return np.ones(bounds.count, np.bool_)
        # No literal within [lower, upper]: the first literal >= lower is past upper (or none is).
        first = np.searchsorted(literals, np.where(has_lower, lower, np.iinfo(np.int64).min), "left")
        past = first >= len(literals)
        beyond = has_upper & ~past & (literals[np.minimum(first, len(literals) - 1)] > upper)
        return (has_lower & past) | beyond
    c = pred.literal.value
    if type(c) is not int or not _INT64[0] <= c <= _INT64[1]:
        return np.zeros(bounds.count, np.bool_)
    if isinstance(pred, BoundLessThan):
        return has_lower & (lower >= c)
    if isinstance(pred, BoundLessThanOrEqual):
        return has_lower & (lower > c)
    if isinstance(pred, BoundGreaterThan):
        return has_upper & (upper <= c)
    if isinstance(pred, BoundGreaterThanOrEqual):
        return has_upper & (upper < c)
    return (has_lower & (lower > c)) | (has_upper & (upper < c))  # BoundEqualTo
