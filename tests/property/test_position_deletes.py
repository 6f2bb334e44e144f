"""Keep-masks and merged runs against plain set arithmetic."""

from __future__ import annotations

import numpy as np
from examples import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from mor.read.position_deletes import keep_mask, merge_sorted_runs

positions = st.lists(st.integers(0, 300), max_size=80)


@settings(max_examples=examples(300), deadline=None)
@given(runs=st.lists(positions, max_size=40))
def test_merge_is_sorted_union(runs: list[list[int]]) -> None:
    """Any number of runs, each sorted and possibly repeating a position, overlapping freely."""
    merged = merge_sorted_runs(np.array(sorted(r), dtype=np.int64) for r in runs)
    assert merged.tolist() == sorted(set().union(*map(set, runs)))


@settings(max_examples=examples(200), deadline=None)
@given(deleted=positions, start=st.integers(0, 300), length=st.integers(0, 120))
def test_keep_mask_is_set_difference(deleted: list[int], start: int, length: int) -> None:
    d = np.array(sorted(set(deleted)), dtype=np.int64)
    mask = keep_mask(d, start, length)
    kept = list(range(start, start + length)) if mask is None else [start + i for i in np.flatnonzero(mask)]
    assert kept == [p for p in range(start, start + length) if p not in set(deleted)]
