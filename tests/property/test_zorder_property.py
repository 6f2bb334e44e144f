"""The Z-order key against the definitions: normalisation is order preserving (a < b gives a
lower-or-equal value, equal values the same one, nulls lowest) for every type it takes, and
between two rows that tie on every other column the key follows the remaining column."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
from examples import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from mor.write.zorder import normalised, zorder_key

VALUES = {
    "int": (pa.int64(), st.integers(-(2**63), 2**63 - 1)),
    "int32": (pa.int32(), st.integers(-(2**31), 2**31 - 1)),
    "double": (pa.float64(), st.floats(allow_nan=False, width=64)),
    "string": (pa.string(), st.text(max_size=12)),
    "binary": (pa.binary(), st.binary(max_size=12)),
    "date": (pa.date32(), st.dates(dt.date(1, 1, 1), dt.date(9999, 12, 31))),
    "timestamp": (pa.timestamp("us"), st.datetimes(dt.datetime(1900, 1, 1), dt.datetime(2200, 1, 1))),
}


def _key(value: object) -> tuple:
    return (value is not None, value)


@settings(max_examples=examples(60), deadline=None)
@given(
    st.sampled_from(sorted(VALUES)).flatmap(lambda k: st.tuples(st.just(k), st.lists(st.none() | VALUES[k][1], min_size=1, max_size=40)))
)
def test_normalisation_preserves_order(case: tuple[str, list]) -> None:
    kind, values = case
    out = normalised(pa.array(values, VALUES[kind][0]))
    for i, a in enumerate(values):
        for j, b in enumerate(values):
            if _key(a) < _key(b) and not (isinstance(a, float) and a == b):
                assert out[i] < out[j]
            if _key(a) == _key(b):
                assert out[i] == out[j]


columns = st.integers(2, 4).flatmap(
    lambda k: st.lists(st.lists(st.none() | st.integers(-50, 50), min_size=k, max_size=k), min_size=2, max_size=60)
)


@settings(max_examples=examples(80), deadline=None)
@given(columns, st.data())
def test_key_follows_a_column_where_the_others_tie(rows: list[list[int | None]], data: st.DataObject) -> None:
    k = len(rows[0])
    arrays = [pa.array([r[c] for r in rows], pa.int64()) for c in range(k)]
    key = zorder_key(arrays)
    free = data.draw(st.integers(0, k - 1))
    for i, a in enumerate(rows):
        for j, b in enumerate(rows):
            if all(a[c] == b[c] for c in range(k) if c != free) and _key(a[free]) < _key(b[free]):
                assert key[i] < key[j]
