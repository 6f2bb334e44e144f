"""The key set behind equality deletes and DML joins, against Python tuple membership."""

from __future__ import annotations

import pyarrow as pa
import pytest
from examples import examples
from hypothesis import given, settings
from hypothesis import strategies as st

import mor.read.equality_deletes as equality_deletes
from mor.read.equality_deletes import EqualityKeySet

ints = st.one_of(st.none(), st.integers(-5, 5), st.sampled_from([-(2**40), 2**40]))
texts = st.one_of(st.none(), st.sampled_from(["", "a", "b", "ab"]))
rows = st.lists(st.tuples(ints, texts), max_size=20)


def _table(pairs: list[tuple]) -> pa.Table:
    return pa.table({"i": pa.array([p[0] for p in pairs], pa.int64()), "s": pa.array([p[1] for p in pairs], pa.string())})


@pytest.mark.parametrize("dense_limit", [1 << 24, 0], ids=["dense-table", "binary-search"])
@settings(max_examples=examples(150), deadline=None)
@given(keys=rows.filter(bool), probe=rows)
def test_membership_is_null_safe_tuple_equality(dense_limit: int, keys: list[tuple], probe: list[tuple]) -> None:
    equality_deletes.DENSE_LOOKUP_MAX_ENTRIES, saved = dense_limit, equality_deletes.DENSE_LOOKUP_MAX_ENTRIES
    try:
        for names, project in ((["i", "s"], lambda p: p), (["i"], lambda p: p[:1]), (["s"], lambda p: p[1:])):
            key_set = EqualityKeySet(names, _table(keys).select(names))
            wanted = {project(k) for k in keys}
            assert key_set.distinct_keys == len(wanted)
            assert key_set.deleted_mask(_table(probe)).tolist() == [project(p) in wanted for p in probe]
            codes = key_set.row_codes(_table(probe)).to_pylist()
            assert [None if c is None else project(keys[c]) for c in codes] == [project(p) if project(p) in wanted else None for p in probe]
    finally:
        equality_deletes.DENSE_LOOKUP_MAX_ENTRIES = saved
