"""Any text given as a filter or a value either reads or is refused with mor's own error
(InvalidFilterError, InvalidArgumentError) saying where: never another exception from sqlglot or
from the translation of its tree, whatever the words and symbols."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.dataset as ds
from hypothesis import given, settings
from hypothesis import strategies as st

import mor
from mor.expr.arrow_rows import to_arrow_filter
from mor.expr.filters import bind_filter, parse_filter
from mor.expr.values import parse_value, table_scope, text_expression
from mor.format.arrow_types import from_arrow_schema
from tests.examples import examples

ROWS = pa.table(
    {
        "id": pa.array([1, 2, None], pa.int64()),
        "s": ["a", None, "it's"],
        "a": pa.array([{"b": 1.5}, None, {"b": float("nan")}], pa.struct([("b", pa.float64())])),
        "x y": pa.array([True, None, False]),
        "q": pa.array([None, 0, 3], pa.int32()),
    }
)
SCHEMA = from_arrow_schema(ROWS.schema)

WORDS = [
    "id", "s", "a.b", "`x y`", '"q"', "1", "-2.5", "1e3", "'t'", "'it''s'", "null", "true", "nan", "and", "or", "not",
    "in", "between", "like", "ilike", "escape", "is", "distinct", "from", "case", "when", "then", "else", "end", "if",
    "cast", "as", "int", "decimal(5,2)", "date", "timestamp", "interval", "day", "month", "extract", "year", "starts",
    "with", "lower", "concat", "coalesce", "size", "substring", "date_add", "current_date", "now", "select", "over",
    "(", ")", ",", "=", "<=>", "<>", "<", ">=", "+", "-", "*", "/", "%", "||", "::", ";", "[", "]", ".", "?", "$",
]  # fmt: skip


@settings(max_examples=examples(300), deadline=None)
@given(words=st.lists(st.sampled_from(WORDS), min_size=1, max_size=12))
def test_any_text_reads_or_is_refused_with_mors_error(words: list[str]) -> None:
    """Parsed, bound and evaluated on rows: a MorError (what is wrong, in mor's words), Arrow's
    error for a value that does not convert (which scans and DML report as mor's), or an answer;
    never a crash of the translation (AttributeError, KeyError, RecursionError, ...)."""
    text = " ".join(words)
    try:
        bound = bind_filter(SCHEMA, parse_filter(text))
        selected = ROWS.filter(to_arrow_filter(bound, SCHEMA))
        assert selected.num_rows <= ROWS.num_rows and selected.schema == ROWS.schema, text
    except mor.MorError as e:
        assert str(e), text  # says what is wrong
    except pa.ArrowInvalid:  # a value that does not cast or overflows: scans say so as InvalidFilterError
        pass
    try:
        parse_value(text, "s")
        expression = text_expression(text, pa.string(), table_scope(SCHEMA), "s")
        values = ds.dataset(ROWS).to_table(columns={"v": expression}).column("v")
        assert len(values) == ROWS.num_rows and values.type == pa.string(), text
    except mor.MorError as e:
        assert str(e), text
    except pa.ArrowInvalid:
        pass
