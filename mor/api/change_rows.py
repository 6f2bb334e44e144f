"""Matching rows of a change feed by value, vectorized: carried-over rows cancel, and a removed
and an added row with the same key become an update.

Rows are matched through dense group ids: each column is dictionary-encoded over both sides at
once (nulls as a value of their own, so matching is null-safe; nested values by their Python
repr, which Arrow cannot hash), and the codes are combined column by column into one integer per
row (mixed radix, renumbered densely whenever the next column could overflow 62 bits). One
`np.unique` over those integers numbers the distinct rows: sorting 64-bit integers, not the rows
of a code matrix (which numpy compares as byte strings, ten times slower).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def group_ids(parts: Sequence[pa.Table], columns: Sequence[str]) -> list[np.ndarray]:
    """For each table, a group id per row: equal ids exactly when the rows hold equal values in
    `columns` (null equals null), across all the tables."""
    lengths = [p.num_rows for p in parts]
    total = sum(lengths)
    if not columns or total == 0:
        return [np.zeros(n, dtype=np.int64) for n in lengths]
    combined = pa.concat_tables([p.select(list(columns)) for p in parts])
    key, distinct = np.zeros(total, dtype=np.int64), 1
    for c in columns:
        codes = _codes(combined.column(c))
        width = int(codes.max(initial=0)) + 1
        if distinct * width >= _RADIX_LIMIT:
            key, distinct = _dense(key)
        key, distinct = key * width + codes, distinct * width
    return list(np.split(_dense(key)[0], np.cumsum(lengths)[:-1]))


_RADIX_LIMIT = 1 << 62  # combined keys stay below it: no int64 overflow


def _dense(key: np.ndarray) -> tuple[np.ndarray, int]:
    """`key` renumbered 0..k-1 (equal keys, equal numbers), and k."""
    distinct, inverse = np.unique(key, return_inverse=True)
    return inverse.reshape(-1).astype(np.int64), len(distinct)


def _codes(column: pa.ChunkedArray) -> np.ndarray:
    array = column.combine_chunks()
    if pa.types.is_nested(array.type):
        array = pa.array([None if v is None else repr(v) for v in array.to_pylist()], pa.string())
    if pa.types.is_null(array.type):
        return np.zeros(len(array), dtype=np.int64)
    encoded = pc.dictionary_encode(array, null_encoding="encode")
    return encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)


def occurrences(ids: np.ndarray) -> np.ndarray:
    """0 for the first row of each group id, 1 for the second, ... (in row order)."""
    order = np.argsort(ids, kind="stable")
    ordered = ids[order]
    run_start = np.r_[0, np.nonzero(ordered[1:] != ordered[:-1])[0] + 1] if len(ids) else np.empty(0, np.int64)
    starts = np.repeat(run_start, np.diff(np.r_[run_start, len(ids)]))
    out = np.empty(len(ids), dtype=np.int64)
    out[order] = np.arange(len(ids)) - starts
    return out


def cancel_equal_rows(removed: np.ndarray, added: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Keep-masks for two sides given their rows' group ids: rows equal on both sides cancel
    one for one (the multiset difference both ways)."""
    if not len(removed) or not len(added):
        return np.ones(len(removed), dtype=bool), np.ones(len(added), dtype=bool)
    width = max(len(removed), len(added)) + 1
    key_removed = removed * width + occurrences(removed)
    key_added = added * width + occurrences(added)
    return ~np.isin(key_removed, key_added), ~np.isin(key_added, key_removed)


def pair_by_key(removed: np.ndarray, added: np.ndarray, removed_ok: np.ndarray, added_ok: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Indexes (removed, added), aligned, of the keys held by exactly one removed and one added
    row; rows not `ok` (a null in their key) never pair."""
    size = int(max(removed.max(initial=-1), added.max(initial=-1))) + 1
    count_removed = np.bincount(removed[removed_ok], minlength=size)
    count_added = np.bincount(added[added_ok], minlength=size)
    single = (count_removed == 1) & (count_added == 1)
    before = np.nonzero(removed_ok & single[removed])[0]
    after = np.nonzero(added_ok & single[added])[0]
    before = before[np.argsort(removed[before], kind="stable")]
    after = after[np.argsort(added[after], kind="stable")]
    return before, after


def has_no_null(table: pa.Table, columns: Sequence[str]) -> np.ndarray:
    ok = np.ones(table.num_rows, dtype=bool)
    for c in columns:
        ok &= ~table.column(c).is_null().to_numpy(zero_copy_only=False)
    return ok
