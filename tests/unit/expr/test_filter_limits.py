"""Filters of any size or depth end in rows or InvalidFilterError, never in a crash
(mor/expr/shape.py; spec/predicates.md, "Limits").

pyarrow overflowed its C stack on a 10,000-term `or` (a segmentation fault that killed the
process), so those reads run in a child process: a crash fails the test, not the test run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest
from pyiceberg.expressions import And, EqualTo, In, LessThan, Not, NotEqualTo, NotIn, Or

import mor
from mor.expr.filters import parse_filter
from mor.expr.shape import MAX_DEPTH, MAX_TERMS, MERGE_AT

SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("v", pa.float64())])
IDS = [None, *range(200)]
VALUES = [float("nan") if i is not None and i % 7 == 0 else (None if i is not None and i % 5 == 0 else 1.0) for i in IDS]

CHILD = """
import json, sys
import mor
warehouse, filter_text = sys.argv[1], sys.stdin.read()
table = mor.load_catalog(warehouse, create=False).load_table("db.t")
out = {}
for verb in ("count", "delete"):
    try:
        if verb == "count":
            out[verb] = table.scan(filter=filter_text).count()
        else:
            table.delete(filter_text)
            out[verb] = table.refresh().scan().count()
    except mor.MorError as e:
        out[verb] = f"{type(e).__name__}: {str(e)[:200]}"
print(json.dumps(out))
"""


@pytest.fixture
def table(catalog: mor.Catalog) -> mor.Table:
    t = catalog.create_table("db.t", schema=SCHEMA)
    t.append(pa.table({"id": IDS, "v": VALUES}, schema=SCHEMA))
    return t


def in_child(warehouse: Path, filter_text: str) -> dict[str, object]:
    done = subprocess.run([sys.executable, "-c", CHILD, str(warehouse)], input=filter_text, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"exit {done.returncode}: {done.stderr[-2000:]}"
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def ids(table: mor.Table, row_filter: object) -> list[int | None]:
    return sorted(table.scan(filter=row_filter).to_arrow().column("id").to_pylist(), key=lambda i: (i is not None, i))


@pytest.mark.subprocess
def test_ten_thousand_equalities_joined_by_or_read_as_an_in_list(warehouse: Path, table: mor.Table) -> None:
    text = " or ".join(f"id = {i}" for i in range(50, 10_050))
    assert in_child(warehouse, text) == {"count": 150, "delete": 51}  # 51: the null id and ids 0..49


@pytest.mark.subprocess
def test_ten_thousand_other_predicates_are_refused(warehouse: Path, table: mor.Table) -> None:
    text = " or ".join(f"(id = {i} and v > {i})" for i in range(10_000))
    refused = f"InvalidFilterError: the filter has 20000 predicates; at most {MAX_TERMS}"
    assert in_child(warehouse, text) == {"count": refused + " (an 'in' list counts as one: write col in (1, 2, ...))",
                                         "delete": refused + " (an 'in' list counts as one: write col in (1, 2, ...))"}  # fmt: skip
    assert table.refresh().scan().count() == len(IDS)


def test_deep_text_is_refused_or_read_never_a_recursion_error(table: mor.Table) -> None:
    assert ids(table, "not " * 5000 + "id = 3") == [3]
    assert ids(table, "not " * 5001 + "id < 198") == [198, 199]
    assert ids(table, "(" * 3000 + "id = 3" + ")" * 3000) == [3]  # parentheses around one predicate add no depth
    nested = "(" * 3000 + " and ".join(["id < 9 or v is null"] * 2) + ")" * 3000
    assert ids(table, nested) == sorted(set(range(9)) | {i for i in range(200) if i % 5 == 0 and i % 7})  # v null
    deep = "id = 1"
    for i in range(3000):
        deep = f"({deep} {'and' if i % 2 else 'or'} id < {i % 50})"
    with pytest.raises(mor.InvalidFilterError, match=rf"nests 3000 levels deep; at most {MAX_DEPTH}"):
        table.scan(filter=deep)
    with pytest.raises(mor.InvalidFilterError, match="expected '\\)' to close a '\\(' .* \\(offset 3005\\)"):
        table.scan(filter="(" * 3000 + "id = 1")


def test_the_limits_are_where_the_spec_says(table: mor.Table) -> None:
    def nested(depth: int) -> str:
        text = "id = 1"
        for i in range(depth):
            text = f"({text} {'and' if i % 2 else 'or'} id < {i % 50})"
        return text

    assert ids(table, nested(MAX_DEPTH)) is not None
    with pytest.raises(mor.InvalidFilterError, match=f"nests {MAX_DEPTH + 1} levels"):
        table.scan(filter=nested(MAX_DEPTH + 1))
    many = " or ".join(f"id < {i}" if i % 2 else f"v > {i}" for i in range(MAX_TERMS))
    assert ids(table, many) == ids(table, f"id < {MAX_TERMS - 1} or v > 0")
    with pytest.raises(mor.InvalidFilterError, match=f"has {MAX_TERMS + 1} predicates"):
        table.scan(filter=many + " or v > 1")
    with pytest.raises(mor.InvalidFilterError, match=f"has {MAX_TERMS + 1} predicates"):
        table.delete(many + " or v > 1")
    assert table.refresh().scan().count() == len(IDS)


def test_expression_objects_built_deep_are_balanced_or_refused(table: mor.Table) -> None:
    chain = EqualTo("id", 0)
    for i in range(1, 10_000):
        chain = Or(chain, EqualTo("id", i))  # 10,000 levels deep as built
    assert isinstance(parse_filter(chain), In)
    assert ids(table, chain) == list(range(200))
    lopsided = LessThan("id", 0)
    for i in range(1, 1_000):
        lopsided = Or(LessThan("id", i), lopsided)
    assert ids(table, lopsided) == list(range(200))  # id < 999
    assert table.scan(filter=And(lopsided, Not(chain))).count() == 0
    many = LessThan("id", 0)
    for i in range(1, 10_000):
        many = Or(many, LessThan("id", i))
    with pytest.raises(mor.InvalidFilterError, match="has 10000 predicates"):
        table.scan(filter=many)
    alternating = LessThan("id", 0)
    for i in range(1, 5_000):
        alternating = (Or if i % 2 else And)(alternating, LessThan("id", i % 100))
    with pytest.raises(mor.InvalidFilterError, match="levels deep"):
        table.scan(filter=alternating)
    with pytest.raises(mor.InvalidFilterError, match="levels deep"):
        table.delete(alternating)
    small = Or(EqualTo("id", 1), EqualTo("id", 2))
    assert parse_filter(small) is small  # nothing to change: the same object


def test_equality_chains_as_lists_keep_three_valued_logic(table: mor.Table) -> None:
    """A null id is in neither answer; NaN is false for `=` and true for `!=`."""
    values = list(range(0, 2 * MERGE_AT + 10, 2))
    eq = " or ".join(f"id = {i}" for i in values)
    assert isinstance(parse_filter(eq), In)
    assert ids(table, eq) == values
    ne = " and ".join(f"id != {i}" for i in values)
    assert isinstance(parse_filter(ne), NotIn)
    assert ids(table, ne) == [i for i in range(200) if i not in values]
    assert ids(table, f"not ({eq})") == ids(table, ne)
    v_eq = " or ".join(["v = 1.0"] * (MERGE_AT + 1) + ["v = 2.0"] * MERGE_AT)
    assert ids(table, v_eq) == [i for i, v in zip(IDS, VALUES) if v == 1.0]
    v_ne = " and ".join([f"v != {x}.5" for x in range(MERGE_AT + 1)])
    assert isinstance(parse_filter(v_ne), NotIn)
    assert ids(table, v_ne) == [i for i, v in zip(IDS, VALUES) if v is not None]  # NaN rows too
    mixed = " or ".join([f"id = {i}" for i in range(MERGE_AT + 1)] + ["v is null", "id = 150"])
    assert ids(table, mixed) == sorted(
        {i for i, v in zip(IDS, VALUES) if v is None} | set(range(MERGE_AT + 1)) | {150}, key=lambda i: (i is not None, i)
    )
    assert isinstance(parse_filter(" and ".join(["id != 1", "id != 2"] * MERGE_AT)), (And, NotEqualTo, NotIn))
