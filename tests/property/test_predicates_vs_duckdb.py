"""Differential test of row filters: mor's scan, DELETE (both modes) and UPDATE against DuckDB
running the same statement on the same rows (spec/predicates.md).

Tables hold nulls, NaN, infinities and -0.0, in one or more files, unpartitioned or partitioned
by one of the filtered columns; predicates combine comparisons, IN / NOT IN, BETWEEN, null and
NaN checks, prefix matches, LIKE patterns and casts with AND / OR / NOT. Rows carry a unique id, so results compare
as lists sorted by id.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import pyarrow as pa
import pytest
from examples import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mor

duckdb = pytest.importorskip("duckdb")

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("i", pa.int64()), ("f", pa.float64()), ("s", pa.string())])
NAN = float("nan")

ints = st.one_of(st.none(), st.integers(-3, 3))
floats = st.one_of(st.none(), st.just(NAN), st.sampled_from([-2.5, -1.0, -0.0, 0.0, 0.5, 2.0, math.inf, -math.inf]))
strings = st.one_of(st.none(), st.sampled_from(["", "a", "ab", "abc", "b", "ba", "B", "a'b"]))
appends = st.lists(st.lists(st.tuples(ints, floats, strings), min_size=1, max_size=8), min_size=1, max_size=3)
partitionings = st.sampled_from([None, ["s"], ["f"], ["i"]])

# Values are written the same way in both languages.
int_values = st.integers(-4, 4).map(str)
float_values = st.sampled_from(["-2.5", "-1", "0", "-0.0", "0.5", "1.5", "2", "3"])
string_values = st.sampled_from(["''", "'a'", "'ab'", "'b'", "'abc'", "'a''b'"])
values = {"i": int_values, "f": float_values, "s": string_values}
prefixes = st.sampled_from(["", "a", "ab", "b", "B"])

Pred = tuple[str, str]  # (mor filter text, DuckDB SQL)


def _comparison(column: str) -> st.SearchStrategy[Pred]:
    return st.tuples(st.sampled_from(["=", "!=", "<", "<=", ">", ">="]), values[column]).map(
        lambda t: (f"{column} {t[0]} {t[1]}", f"{column} {t[0]} {t[1]}")
    )


def _in_list(column: str) -> st.SearchStrategy[Pred]:
    lists = st.lists(values[column], min_size=1, max_size=4).map(", ".join)
    return st.tuples(st.booleans(), lists).map(
        lambda t: (f"{column} {'not in' if t[0] else 'in'} ({t[1]})", f"{column} {'NOT IN' if t[0] else 'IN'} ({t[1]})")
    )


def _between(column: str) -> st.SearchStrategy[Pred]:
    return st.tuples(st.booleans(), values[column], values[column]).map(
        lambda t: (f"{column} {'not ' * t[0]}between {t[1]} and {t[2]}", f"{column} {'NOT ' * t[0]}BETWEEN {t[1]} AND {t[2]}")
    )


def _null_check(column: str) -> st.SearchStrategy[Pred]:
    return st.sampled_from([(f"{column} is null", f"{column} IS NULL"), (f"{column} is not null", f"{column} IS NOT NULL")])


nan_checks = st.sampled_from(
    # `is nan` is two-valued (false for a null); DuckDB's isnan(NULL) is NULL.
    [("f is nan", "coalesce(isnan(f), false)"), ("f is not nan", "NOT coalesce(isnan(f), false)")]
)
prefix_matches = st.tuples(st.sampled_from(["starts with", "not starts with", "like", "not like"]), prefixes).map(
    lambda t: (
        f"s {t[0]} '{t[1]}{'%' * ('like' in t[0])}'",
        f"{'NOT ' * t[0].startswith('not')}starts_with(s, '{t[1]}')",
    )
)
# SQL's LIKE, `%` and `_` anywhere (DuckDB has no default escape: a pattern without one means the same)
like_patterns = st.tuples(st.booleans(), st.sampled_from(["like", "ilike"]), st.text(alphabet="ab%_B", max_size=4)).map(
    lambda t: (f"s {'not ' * t[0]}{t[1]} '{t[2]}'", f"s {'NOT ' * t[0]}{t[1].upper()} '{t[2]}'")
)
# Casts of a column (whole numbers and text, where Spark SQL and DuckDB agree) and of a value
casts = st.one_of(
    st.tuples(st.sampled_from(["=", "<", ">="]), int_values).map(
        lambda t: (f"cast(i as string) {t[0]} '{t[1]}'", f"cast(i as varchar) {t[0]} '{t[1]}'")
    ),
    st.tuples(st.sampled_from(["=", "<", ">="]), float_values).map(
        lambda t: (f"i::double {t[0]} {t[1]}", f"cast(i as double) {t[0]} {t[1]}")
    ),
    st.tuples(st.sampled_from(["=", "!=", ">"]), int_values).map(lambda t: (f"i {t[0]} cast('{t[1]}' as bigint)", f"i {t[0]} {t[1]}")),
)
constants = st.sampled_from([("true", "true"), ("false", "false")])

leaves = st.one_of(
    *[f(c) for c in ("i", "f", "s") for f in (_comparison, _in_list, _between, _null_check)],
    _comparison("f"),  # NaN and -0.0 make float comparisons the likeliest to differ
    _comparison("f"),
    nan_checks,
    prefix_matches,
    like_patterns,
    casts,
    constants,
)


def _combine(children: st.SearchStrategy[Pred]) -> st.SearchStrategy[Pred]:
    def join(word: str) -> st.SearchStrategy[Pred]:
        return st.tuples(children, children).map(lambda t: (f"({t[0][0]}) {word} ({t[1][0]})", f"({t[0][1]}) {word} ({t[1][1]})"))

    return st.one_of(join("and"), join("or"), children.map(lambda p: (f"not ({p[0]})", f"NOT ({p[1]})")))


predicates = st.recursive(leaves, _combine, max_leaves=5)
# (column, mor's value, DuckDB's): Python literals, and SQL text over the old row, the same in both
updates = st.sampled_from(
    [
        ("s", mor.lit("upd"), "'upd'"), ("i", 99, "99"), ("f", 9.5, "9.5"),
        ("s", "'upd'", "'upd'"), ("s", "upper(s)", "upper(s)"), ("s", "coalesce(s, 'none')", "coalesce(s, 'none')"),
        ("i", "i + 1", "i + 1"), ("i", "coalesce(i, 0) * -2", "coalesce(i, 0) * -2"), ("i", "i % 2 - abs(i)", "i % 2 - abs(i)"),
        ("f", "f * 2", "f * 2"), ("f", "i / 2", "i / 2"), ("f", "coalesce(f, i, -1.5)", "coalesce(f, i, -1.5)"),
        ("s", "length(s)", "CAST(length(s) AS VARCHAR)"), ("i", "null", "NULL"),
    ]
)  # fmt: skip


def _canonical(rows: list[dict[str, Any]]) -> list[tuple]:
    """Rows in id order, NaN as a string (NaN != NaN would fail any comparison)."""
    out = []
    for r in sorted(rows, key=lambda r: r["id"]):
        f = r["f"]
        out.append((r["id"], r["i"], "NaN" if isinstance(f, float) and math.isnan(f) else f, r["s"]))
    return out


class Model:
    """DuckDB holding the same rows as one mor table."""

    def __init__(self, data: pa.Table):
        self.db = duckdb.connect()
        self.db.register("source", data)
        self.db.execute("CREATE TABLE t AS SELECT * FROM source")

    def rows(self, where: str = "true") -> list[tuple]:
        cursor = self.db.execute(f"SELECT id, i, f, s FROM t WHERE {where}")
        return _canonical([dict(zip(("id", "i", "f", "s"), r, strict=True)) for r in cursor.fetchall()])


def _rows(table: mor.Table, where: str | None = None) -> list[tuple]:
    scan = table.scan(filter=where) if where is not None else table.scan()
    return _canonical(scan.to_arrow().to_pylist())


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> mor.Catalog:
    return mor.load_catalog(tmp_path_factory.mktemp("warehouse"))


_names = itertools.count()


@settings(max_examples=examples(100), deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    batches=appends,
    partition_by=partitionings,
    mode=st.sampled_from(["merge-on-read", "copy-on-write"]),
    where=predicates,
    where_update=predicates,
    update=updates,
)
def test_scan_delete_and_update_agree_with_duckdb(
    catalog: mor.Catalog,
    batches: list[list[tuple]],
    partition_by: list[str] | None,
    mode: str,
    where: Pred,
    where_update: Pred,
    update: tuple[str, Any, str],
) -> None:
    data_appends, next_id = [], 0
    for rows in batches:
        columns = {"id": list(range(next_id, next_id + len(rows))), "i": [], "f": [], "s": []}
        for i, f, s in rows:
            columns["i"].append(i)
            columns["f"].append(f)
            columns["s"].append(s)
        data_appends.append(pa.table(columns, schema=SCHEMA))
        next_id += len(rows)
    everything = pa.concat_tables(data_appends)
    column, value, sql_value = update
    text, sql = where
    text_update, sql_update = where_update

    table = catalog.create_table(f"db.t{next(_names)}", schema=SCHEMA, partition_by=partition_by)
    for data in data_appends:
        if data.num_rows:
            table.append(data)  # one file per append and partition
    model = Model(everything)
    assert _rows(table, text) == model.rows(sql), text

    table.delete(text, mode=mode)
    model.db.execute(f"DELETE FROM t WHERE {sql}")
    assert _rows(table) == model.rows(), f"delete {text}"

    table.update({column: value}, where=text_update, mode=mode)
    model.db.execute(f"UPDATE t SET {column} = {sql_value} WHERE {sql_update}")
    assert _rows(table) == model.rows(), f"update {text_update}"
    assert _rows(table, text_update) == model.rows(sql_update), text_update
