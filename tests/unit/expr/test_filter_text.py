"""Filters written back as filter text for messages (mor/expr/text.py): the text reads back as
the same filter, bound or not, and never as pyiceberg's constructor repr."""

from __future__ import annotations

import pyarrow as pa
import pytest

from mor.expr.filters import bind_filter, parse_filter
from mor.expr.text import MAX_CHARS, filter_text
from mor.format.arrow_types import from_arrow_schema

SCHEMA = from_arrow_schema(
    pa.schema([("id", pa.int64()), ("s", pa.string()), ("d", pa.decimal128(10, 2)), ("day", pa.date32()), ("ts", pa.timestamp("us")),
               ("b", pa.bool_()), ("f", pa.float64())])
)  # fmt: skip
FILTERS = [
    "id < 3 and (d * 1.1) > 100",
    "s in ('a', 'b''c') or not (id = 4 and s is null)",
    "(id > 1 or id < -1) and s != 'x'",
    "day >= date '2025-01-01' and ts < timestamp '2025-01-02 10:00:00'",
    "s starts with 'ab' and f is not nan and b",
    "lower(s) like '%x_' or id % 7 = 0",
    "d in (1.50, 2.25) and id not in (1, 2, 3)",
]


@pytest.mark.parametrize("text", FILTERS)
def test_the_text_reads_back_as_the_same_filter(text: str) -> None:
    expr = parse_filter(text)
    bound = bind_filter(SCHEMA, expr)
    for written in (filter_text(expr), filter_text(bound)):
        assert "Bound" not in written and "Reference" not in written
        assert bind_filter(SCHEMA, parse_filter(written)) == bound, written


def test_a_long_filter_is_cut() -> None:
    text = filter_text(parse_filter("id in (" + ", ".join(map(str, range(1000))) + ")"))
    assert len(text) == MAX_CHARS and text.endswith("...")
