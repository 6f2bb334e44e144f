"""Z-order: one key per row that interleaves the bits of two to four columns, so rows close in
every column at once land close together, and files cut from rows in key order have narrow
min/max ranges on each of those columns (min/max pruning then skips most files for a filter
on any of them).

Each column is first normalised to an order-preserving unsigned integer: its dense rank among
the values being ordered (nulls first: rank 0), computed by Arrow for any orderable type
(integers, floats, strings and binary compared whole, dates, times, timestamps, decimals,
booleans). A rank rather than a fixed bit pattern of the value (sign bit flipped, IEEE bits,
the first bytes of a string) because the key has only 64 bits: with `k` columns each gets
64 // k of them, and a fixed pattern spends its high bits on the type's whole range (an id
from 0 to 10^6 leaves the top 44 bits of an int64 zero), while a rank spends them on the
values present. Ranks beyond the bits a column gets are shifted right (still order
preserving: equal or adjacent values may share a key). Then bit `j` of column `i` becomes bit
`j * k + (k - 1 - i)` of the key, and rows are ordered by key (ties keep their input order).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from mor.errors import InvalidArgumentError

MIN_COLUMNS = 2
MAX_COLUMNS = 4
KEY_BITS = 64


def normalised(values: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Order-preserving unsigned integers for `values`: dense ranks, nulls lowest (0)."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if len(values) == 0:
        return np.zeros(0, dtype=np.uint64)
    ranks = pc.rank(values, sort_keys=[("", "ascending", "at_start")], tiebreaker="dense")
    return ranks.to_numpy(zero_copy_only=False).astype(np.uint64) - np.uint64(1)  # nulls (if any) rank 0


def interleave(columns: list[np.ndarray]) -> np.ndarray:
    """The Z-order key of unsigned integer columns (each fitted into 64 // k bits)."""
    k = len(columns)
    if not MIN_COLUMNS <= k <= MAX_COLUMNS:
        raise InvalidArgumentError(f"a Z-order interleaves {MIN_COLUMNS} to {MAX_COLUMNS} columns, got {k}")
    bits = KEY_BITS // k
    fitted = []
    for c in columns:
        c = np.asarray(c, dtype=np.uint64)
        top = int(c.max()) if len(c) else 0
        excess = max(top.bit_length() - bits, 0)
        fitted.append(c >> np.uint64(excess) if excess else c)
    key = np.zeros(len(columns[0]), dtype=np.uint64)
    one = np.uint64(1)
    for j in range(bits):
        for i, c in enumerate(fitted):
            key |= ((c >> np.uint64(j)) & one) << np.uint64(j * k + (k - 1 - i))
    return key


def zorder_key(columns: list[pa.Array | pa.ChunkedArray]) -> np.ndarray:
    return interleave([normalised(c) for c in columns])


def zorder_indices(columns: list[pa.Array | pa.ChunkedArray]) -> np.ndarray:
    """Indices that put rows in Z-order of `columns` (stable)."""
    return np.argsort(zorder_key(columns), kind="stable")
