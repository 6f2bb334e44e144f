"""Differential test of values as SQL text (mor.expr.values): random expressions over random
rows with nulls, evaluated by mor as UPDATE evaluates a value (SQL text -> a pyarrow expression
of the target column's type) and by DuckDB as `CAST(expression AS type)` on the same rows.

Where Spark's store assignment and DuckDB's cast differ, DuckDB is told Spark's rule: a
fraction goes to a whole number toward zero (`trunc`), as Spark's ANSI cast does (DuckDB
rounds). Values stay small, so no arithmetic overflows, and divisors are non-zero constants
(DuckDB gives NULL for a division by zero, IEEE and Spark infinity)."""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest
from examples import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mor.dml.expressions import as_expression, project
from mor.expr.values import table_scope
from mor.format.arrow_types import from_arrow_schema

duckdb = pytest.importorskip("duckdb")

SCHEMA = pa.schema(
    [pa.field("id", pa.int64(), nullable=False), ("i", pa.int64()), ("j", pa.int32()), ("d", pa.decimal128(6, 2)),
     ("f", pa.float64()), ("s", pa.string())]
)  # fmt: skip
TARGETS = {  # target column -> (Arrow type, DuckDB type)
    "i": (pa.int64(), "BIGINT"), "j": (pa.int32(), "INTEGER"), "d": (pa.decimal128(12, 2), "DECIMAL(12,2)"),
    "f": (pa.float64(), "DOUBLE"), "s": (pa.string(), "VARCHAR"),
}  # fmt: skip

small = st.integers(-3, 3)
row = st.tuples(
    st.one_of(st.none(), small),
    st.one_of(st.none(), small),
    st.one_of(st.none(), st.sampled_from([Decimal("-2.25"), Decimal("0.00"), Decimal("1.50"), Decimal("3.75")])),
    st.one_of(st.none(), st.sampled_from([-2.5, -0.0, 0.5, 1.25, 3.0])),
    st.one_of(st.none(), st.sampled_from(["", "a", "Ab", "xYz", "it's"])),
)

Expr = tuple[str, str]  # (mor's text, DuckDB's SQL)


def _same(text: str) -> Expr:
    return (text, text)


def _ints(depth: int) -> st.SearchStrategy[Expr]:
    leaves = st.one_of(st.sampled_from(["i", "j"]).map(_same), small.map(lambda n: _same(f"({n})")))
    if depth == 0:
        return leaves
    sub = _ints(depth - 1)
    return st.one_of(
        leaves,
        st.tuples(sub, st.sampled_from(["+", "-", "*"]), sub).map(
            lambda t: (f"({t[0][0]} {t[1]} {t[2][0]})", f"({t[0][1]} {t[1]} {t[2][1]})")
        ),
        sub.map(lambda a: (f"abs({a[0]})", f"abs({a[1]})")),
        sub.map(lambda a: (f"(-{a[0]})", f"(-{a[1]})")),  # parenthesized: -- starts a comment in SQL
        st.tuples(sub, sub).map(lambda t: (f"coalesce({t[0][0]}, {t[1][0]})", f"coalesce({t[0][1]}, {t[1][1]})")),
        st.tuples(sub, st.sampled_from([-2, 2, 3])).map(lambda t: (f"({t[0][0]} % {t[1]})", f"({t[0][1]} % {t[1]})")),
    )


def _decimals(depth: int) -> st.SearchStrategy[Expr]:
    """Decimal terms; one product at most (mor, like Arrow, sizes a product of decimals by
    adding their digits and refuses more than 38, where Spark would drop places)."""
    leaves = st.one_of(_ints(0), st.just(_same("d")), st.sampled_from(["1.5", "0.25", "2"]).map(_same))
    products = st.tuples(leaves, leaves).map(lambda t: (f"({t[0][0]} * {t[1][0]})", f"({t[0][1]} * {t[1][1]})"))
    if depth == 0:
        return leaves
    sub = _decimals(depth - 1)
    return st.one_of(
        leaves,
        products,
        st.tuples(sub, st.sampled_from(["+", "-"]), sub).map(lambda t: (f"({t[0][0]} {t[1]} {t[2][0]})", f"({t[0][1]} {t[1]} {t[2][1]})")),
        sub.map(lambda a: (f"abs({a[0]})", f"abs({a[1]})")),
        st.tuples(sub, sub).map(lambda t: (f"coalesce({t[0][0]}, {t[1][0]})", f"coalesce({t[0][1]}, {t[1][1]})")),
    )


def _floats(depth: int) -> st.SearchStrategy[Expr]:
    leaves = st.one_of(_decimals(1), st.just(_same("f")))
    sub = leaves if depth == 0 else _floats(depth - 1)
    return st.one_of(
        leaves,
        st.tuples(sub, st.sampled_from(["+", "-"]), sub).map(lambda t: (f"({t[0][0]} {t[1]} {t[2][0]})", f"({t[0][1]} {t[1]} {t[2][1]})")),
        sub.map(lambda a: (f"({a[0]} * f)", f"({a[1]} * f)")),
        st.tuples(sub, st.sampled_from(["2", "-4", "0.5"])).map(lambda t: (f"({t[0][0]} / {t[1]})", f"({t[0][1]} / {t[1]})")),
    )


def _strings(depth: int) -> st.SearchStrategy[Expr]:
    leaves = st.one_of(st.just(_same("s")), st.sampled_from(["'q'", "'It''s'", "''"]).map(_same))
    if depth == 0:
        return leaves
    sub = _strings(depth - 1)
    return st.one_of(
        leaves,
        st.tuples(st.sampled_from(["upper", "lower"]), sub).map(lambda t: (f"{t[0]}({t[1][0]})", f"{t[0]}({t[1][1]})")),
        st.tuples(sub, sub).map(lambda t: (f"coalesce({t[0][0]}, {t[1][0]})", f"coalesce({t[0][1]}, {t[1][1]})")),
        _ints(1).map(lambda a: (f"cast({a[0]} as string)", f"CAST({a[1]} AS VARCHAR)")),
    )


def _conditions() -> st.SearchStrategy[Expr]:
    """Filters over the row, as a CASE's conditions and as values of their own (true/false/null)."""
    comparisons = st.tuples(_ints(1), st.sampled_from(["<", "<=", ">", ">=", "=", "<>"]), _ints(1)).map(
        lambda t: (f"{t[0][0]} {t[1]} {t[2][0]}", f"{t[0][1]} {t[1]} {t[2][1]}")
    )
    others = st.sampled_from(
        ["s like 'a%'", "s like '%b'", "s is null", "s in ('a', 'Ab')", "i between -1 and 2", "f > 0.5", "d is not null"]
    )
    atoms = st.one_of(comparisons, others.map(_same))
    return st.one_of(
        atoms,
        st.tuples(atoms, st.sampled_from(["and", "or"]), atoms).map(
            lambda t: (f"({t[0][0]}) {t[1]} ({t[2][0]})", f"({t[0][1]}) {t[1]} ({t[2][1]})")
        ),
        atoms.map(lambda a: (f"not ({a[0]})", f"NOT ({a[1]})")),
    )


def _cases(values: st.SearchStrategy[Expr]) -> st.SearchStrategy[Expr]:
    """Searched CASEs (branches may be null; without else the CASE is null) and simple ones."""
    branch = st.one_of(values, st.just(_same("null")))
    searched = st.tuples(st.lists(st.tuples(_conditions(), branch), min_size=1, max_size=3), st.one_of(st.none(), branch)).map(
        lambda t: tuple(
            "case " + " ".join(f"when {c[k]} then {v[k]}" for c, v in t[0]) + ("" if t[1] is None else f" else {t[1][k]}") + " end"
            for k in (0, 1)
        )
    )
    simple = st.tuples(st.lists(st.tuples(small, branch), min_size=1, max_size=3), branch).map(
        lambda t: tuple("case i " + " ".join(f"when {n} then {v[k]}" for n, v in t[0]) + f" else {t[1][k]} end" for k in (0, 1))
    )
    return st.one_of(searched, simple)  # type: ignore[arg-type]


# (target column, mor's text, DuckDB's SQL of the stored value)
assignments = st.one_of(
    st.tuples(st.sampled_from(["i", "j"]), _cases(_ints(1))).map(lambda t: (t[0], t[1][0], f"CAST({t[1][1]} AS {TARGETS[t[0]][1]})")),
    _cases(_strings(1)).map(lambda e: ("s", e[0], f"CAST({e[1]} AS VARCHAR)")),
    _conditions().map(lambda e: ("s", e[0], f"CAST(({e[1]}) AS VARCHAR)")),  # a condition's truth into a text column
    st.tuples(st.sampled_from(["i", "j"]), _ints(3)).map(lambda t: (t[0], t[1][0], f"CAST({t[1][1]} AS {TARGETS[t[0]][1]})")),
    st.tuples(st.sampled_from(["i", "j"]), _floats(1)).map(lambda t: (t[0], t[1][0], f"CAST(trunc({t[1][1]}) AS {TARGETS[t[0]][1]})")),
    _decimals(2).map(lambda e: ("d", e[0], f"CAST({e[1]} AS DECIMAL(12,2))")),
    _floats(2).map(lambda e: ("f", e[0], f"CAST({e[1]} AS DOUBLE)")),
    _strings(2).map(lambda e: ("s", e[0], f"CAST({e[1]} AS VARCHAR)")),
    _decimals(1).map(lambda e: ("s", e[0], f"CAST({e[1]} AS VARCHAR)")),  # a number into a text column
)
SCOPE = table_scope(from_arrow_schema(SCHEMA))


def _same_value(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12)
    return bool(a == b) and type(a) is type(b)


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(row, min_size=1, max_size=12), assignment=assignments)
def test_values_agree_with_duckdb(rows: list[tuple[Any, ...]], assignment: tuple[str, str, str]) -> None:
    column, text, sql = assignment
    data = pa.table(
        {"id": list(range(len(rows))), **{name: [r[k] for r in rows] for k, name in enumerate(["i", "j", "d", "f", "s"])}},
        schema=SCHEMA,
    )
    target = TARGETS[column][0]
    ours = project(data, {"v": as_expression(text, target, SCOPE, column)}).column("v")
    assert ours.type == target, text
    theirs = [r[0] for r in duckdb.sql(f"SELECT {sql} FROM data ORDER BY id").fetchall()]
    mine = ours.to_pylist()
    assert len(mine) == len(theirs) and all(
        (a is None and b is None) or (a is not None and b is not None and _same_value(a, b)) for a, b in zip(mine, theirs)
    ), (text, sql, mine, theirs)
