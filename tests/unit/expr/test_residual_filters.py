"""Arithmetic, functions and column-against-column predicates (residuals) give DuckDB's rows in
scans, DELETE (both modes) and UPDATE; the plain part of a filter still prunes, and pruning
never drops a file holding a matching row."""

from __future__ import annotations

import datetime as dt
import tempfile
from decimal import Decimal

import pyarrow as pa
import pytest
from examples import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyiceberg.expressions import EqualTo

import mor
from mor.expr.filters import bind_filter, parse_filter, pruning_filter
from mor.expr.residual import Residual
from tests import duckdb_rows

NAN = float("nan")
UTC = dt.UTC
ROWS = pa.table(
    {
        "id": pa.array(range(12), pa.int64()),
        "a": pa.array([1, 2, None, -3, 4, 5, 0, 7, 8, None, -10, 11], pa.int32()),
        "b": pa.array([10, None, 3, 4, -5, 6, 7, 0, 9, 10, 11, -12], pa.int64()),
        "x": pa.array([1.5, -2.5, NAN, None, 0.0, -0.0, 3.25, -1.0, 100.0, NAN, 2.0, -7.5], pa.float64()),
        "name": pa.array(["Ab", "ab", "AB", None, "xyz", "X", "", "abc", "Abcd", "q", None, "ABX"]),
        "fare": pa.array(
            [
                Decimal(v) if v else None
                for v in ["1.50", "149.50", "2.25", None, "-3.10", "0.00", "7.00", "12.34", "5.55", "1.00", "9.99", "149.49"]
            ],
            pa.decimal128(10, 2),
        ),  # fmt: skip
        "tz": pa.array(
            [dt.datetime(2024 + i % 3, 1 + i, 1 + i, i, tzinfo=UTC) if i % 5 else None for i in range(12)], pa.timestamp("us", tz="UTC")
        ),
        "tag": pa.array(["t"] * 12),
    }
)
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), *(f for f in ROWS.schema if f.name != "id")])

CASES = [
    "id % 7 = 0",
    "id % 3 != 1",
    "a % 2 = 1",
    "a % 3 = -1",
    "b % nullif(a, 0) = 1",
    "a + b > 10",
    "a - b < 0",
    "a * 2 >= b",
    "a / 2 > 1",
    "b / nullif(a, 0) < 0",
    "-a > 2",
    "lower(name) = 'ab'",
    "upper(name) like 'AB%'",
    "lower(name) not like 'ab%'",
    "lower(name) in ('x', 'q')",
    "length(name) > 2",
    "length(name) = 0",
    "abs(x) > 1",
    "abs(x) <= 1",
    "isnan(x * 2) or a = 1",
    "x % 2 = 1.5",
    "x % 0.5 = 0 and x < 3",
    "fare % 1 = 0.5",
    "fare % 0.07 > 0.03",
    "x > a",
    "x = x",
    "abs(a) between 1 and 5",
    "a + 1 not between 0 and 5",
    "coalesce(a, 0) = 0",
    "coalesce(a, b, -1) > 5",
    "a > b",
    "a = b or id = 3",
    "id % 7 = 0 or a = 1",
    "not (id % 7 = 0 or a = 1)",
    "id % 2 = 0 and a > 0",
    "not (a % 2 = 0)",
    "(a + b) * 2 > 20 or name is null",
    "(a + b) is null",
    "a + b is not null and b > 0",
    "fare * 2 > 3",
    "fare + a > 10",
    "fare - 0.005 < 1.5",
    "fare > x",
    "year(tz) = 2025",
    "month(tz) > 6",
    "day(tz) = 8",
    "date(tz) = '2025-08-08'",
    "date(tz) < date '2025-01-01'",
    "year(tz) = 2025 or a = 2",
    "id + 0 > 5 and id < 9",
    "abs(fare) > 3",
    "round(fare, 0) = 150",
    "round(fare, 1) = 5.6",
    "round(fare, -1) = 150",
    "-fare < 0",
    "coalesce(name, 'none') = 'none'",
    "'ab' = lower(name)",
    "lower(name) < upper(name)",
]


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> mor.Table:
    return _table(mor.load_catalog(tmp_path_factory.mktemp("residual") / "warehouse", create=True), "scan")


def _table(catalog: mor.Catalog, name: str, rows: pa.Table = ROWS, schema: pa.Schema = SCHEMA) -> mor.Table:
    table = catalog.create_table(f"db.{name}", schema=schema, partition_by=["tag"])
    for start in range(0, rows.num_rows, 4):  # three files: pruning takes part
        table.append(rows.slice(start, 4).cast(schema))
    return table


def duckdb_ids(where: str, rows: pa.Table = ROWS) -> list[int]:
    return duckdb_rows.duckdb_ids(rows, where)


def ids(table: mor.Table, where: str | None = None) -> list[int]:
    return sorted(table.scan(filter=where).to_arrow().column("id").to_pylist())


@pytest.mark.parametrize("where", CASES)
def test_a_scan_gives_duckdbs_rows(table: mor.Table, where: str) -> None:
    assert ids(table, where) == duckdb_ids(where)


@pytest.mark.parametrize("where", CASES[::3])
@pytest.mark.parametrize("mode", ["merge-on-read", "copy-on-write"])
def test_delete_keeps_the_rows_duckdb_keeps(catalog: mor.Catalog, where: str, mode: str) -> None:
    table = _table(catalog, "d")
    table.delete(where, mode=mode)
    assert ids(table) == duckdb_ids(f"NOT ({where}) OR ({where}) IS NULL")


@pytest.mark.parametrize("where", CASES[1::3])
def test_update_changes_the_rows_duckdb_selects(catalog: mor.Catalog, where: str) -> None:
    table = _table(catalog, "u")
    table.update({"tag": "'changed'"}, where=where)
    assert ids(table, "tag = 'changed'") == duckdb_ids(where)
    assert ids(table) == list(range(12))


def test_the_plain_part_still_prunes_and_an_or_with_a_residual_keeps_every_file(catalog: mor.Catalog) -> None:
    table = _table(catalog, "p")
    all_files = len(table.scan().plan_files())
    assert len(table.scan(filter="id < 4 and id % 2 = 0").plan_files()) == 1
    assert len(table.scan(filter="id < 4 or id % 2 = 0").plan_files()) == all_files == 3
    assert len(table.scan(filter="not (id >= 4 or a + 0 = 1)").plan_files()) == 1
    assert ids(table, "not (id >= 4 or a + 0 = 1)") == duckdb_ids("not (id >= 4 or a + 0 = 1)")


def test_a_residual_reads_as_true_for_pruning(table: mor.Table) -> None:
    schema = table.schema()
    expr = parse_filter("a % 2 = 0 or id = 3")
    assert isinstance(expr.left, Residual)  # type: ignore[attr-defined]
    assert str(pruning_filter(schema, expr)) == "AlwaysTrue()"
    assert pruning_filter(schema, parse_filter("a % 2 = 0 and id = 3")) == EqualTo("id", 3)
    assert pruning_filter(schema, parse_filter("not (a % 2 = 0 and id = 3)")) == parse_filter("true")
    bind_filter(schema, expr)


@pytest.mark.parametrize("where", ["b % 0 = 0", "b / a < 0", "b % a = 1", "a / (b - b) > 1"])
def test_a_zero_divisor_is_an_error_as_in_ansi_sql(table: mor.Table, where: str) -> None:
    """Spark's ANSI DIVIDE_BY_ZERO (DuckDB gives NULL): the whole scan or delete fails, nothing is deleted."""
    with pytest.raises(mor.InvalidFilterError, match="divide by zero"):
        table.scan(filter=where).to_arrow()
    with pytest.raises(mor.InvalidFilterError, match="divide by zero"):
        table.delete(where)
    assert table.scan().count() == ROWS.num_rows


@pytest.mark.parametrize(
    ("where", "message"),
    [
        ("lower(a) = 'x'", "lower.. takes string"),
        ("name + 1 > 2", "needs numbers"),
        ("name % 2 = 0", "needs numbers"),
        ("name > a", "cannot compare"),
        ("nope % 2 = 0", "unknown column 'nope'"),
        ("a = lower(name, name)", "provided arguments \\(2\\) is greater than the maximum"),
        ("frob(a) = 1", "function frob\\(\\) is not supported"),
        ("a + = 1", "expected a value"),
        ("(a + 1 = 2", "expected"),
        ("a " + "+ 1 " * 70 + "> 0", "at most 64"),
        ("(" * 68 + "a" + ")" * 68 + " = 1", "levels deep"),
        ("isnan(lower(name))", "isnan.. takes a number"),
        ("a = (b > 1 or x > 1)", "a condition as an operand"),  # not "function or()": sqlglot's or is a function node
    ],
)
def test_bad_terms_are_refused_with_a_useful_message(table: mor.Table, where: str, message: str) -> None:
    with pytest.raises(mor.InvalidFilterError, match=message):
        table.scan(filter=where).to_arrow()


def test_the_syntax_help_lists_every_form() -> None:
    with pytest.raises(mor.InvalidFilterError) as e:
        parse_filter("id <")
    for form in [
        "between",
        "date '...'",
        "timestamp '...'",
        "on timestamptz, without zone is UTC",
        "midnight",
        "+ - * / %",
        "lower(s)",
        "abs(x)",
        "coalesce",
        "year(t)",
        "decimal(10,2)",
    ]:
        assert form in str(e.value), form


def test_a_concurrent_append_of_matching_rows_is_seen_by_the_conflict_check(catalog: mor.Catalog) -> None:
    table = _table(catalog, "c")
    table.set_properties(**{"mor.dml.replan.num-retries": "0"})  # a true conflict raises instead of re-planning
    stale = catalog.load_table("db.c")
    table.append(ROWS.slice(0, 1).cast(SCHEMA))  # id 0: 0 % 7 = 0
    with pytest.raises(mor.CommitConflictError):
        stale.delete("id % 7 = 0", mode="merge-on-read")
    # Rows the predicate does not match are no conflict: the check evaluates it on the rows.
    stale = catalog.load_table("db.c")
    table.append(ROWS.slice(1, 1).cast(SCHEMA))  # id 1
    stale.delete("id % 7 = 0", mode="merge-on-read")
    assert ids(catalog.load_table("db.c")) == [1, 1, 2, 3, 4, 5, 6, 8, 9, 10, 11]


# -- a property: random tables and predicates against DuckDB ---------------------------------

_COLUMNS = ["a", "b", "s"]
_INT_TERMS = st.sampled_from(["a", "b", "1", "-2", "7"])


@st.composite
def _int_term(draw: st.DrawFn, depth: int = 0) -> str:
    if depth > 1 or draw(st.booleans()):
        return draw(_INT_TERMS)
    op = draw(st.sampled_from(["+", "-", "*", "%", "abs"]))
    if op == "abs":
        return f"abs({draw(_int_term(depth + 1))})"
    if op == "%":  # a divisor that may be zero is an error (ANSI), tested apart: DuckDB says NULL
        return f"({draw(_int_term(depth + 1))} % {draw(st.sampled_from(['1', '-2', '7', 'nullif(a, 0)']))})"
    return f"({draw(_int_term(depth + 1))} {op} {draw(_int_term(depth + 1))})"


@st.composite
def _predicate(draw: st.DrawFn, depth: int = 0) -> str:
    leaves = ["cmp", "cmp", "str", "like", "null", "in", "between", "distinct", "truth"]
    kind = draw(st.sampled_from([*leaves, "and", "or", "not"] if depth < 2 else leaves))
    if kind == "in":  # a null among the items: NULL wherever no item equals, under NOT too
        items = draw(st.lists(st.sampled_from(["1", "-2", "7", "null", "a"]), min_size=1, max_size=4))
        return f"{draw(_int_term())} {draw(st.sampled_from(['in', 'not in']))} ({', '.join(items)})"
    if kind == "between":
        low, high = (draw(st.sampled_from(["-2", "1", "null", "b"])) for _ in range(2))
        return f"{draw(_int_term())} {draw(st.sampled_from(['between', 'not between']))} {low} and {high}"
    if kind == "distinct":
        right = draw(st.sampled_from(["null", "1", "b"]))
        return f"{draw(_int_term())} is {draw(st.sampled_from(['', 'not ']))}distinct from {right}"
    if kind == "truth":  # never NULL
        return f"({draw(_predicate(2))}) is {draw(st.sampled_from(['', 'not ']))}{draw(st.sampled_from(['true', 'false']))}"
    if kind == "like":  # SQL's LIKE on text and on whole numbers cast to text (the same words in DuckDB)
        pattern = draw(st.text(alphabet="aAb1-%_", max_size=4))
        subject = draw(st.sampled_from(["s", "lower(s)", f"cast({draw(_int_term())} as varchar)"]))
        return f"{subject} {draw(st.sampled_from(['like', 'not like']))} '{pattern}'"
    if kind == "cmp":
        return f"{draw(_int_term())} {draw(st.sampled_from(['=', '!=', '<', '<=', '>', '>=']))} {draw(_int_term())}"
    if kind == "str":
        function = draw(st.sampled_from(["lower", "upper"]))
        return f"{function}(s) {draw(st.sampled_from(['=', '!=', '<']))} '{draw(st.sampled_from(['a', 'B', 'ab', '']))}'"
    if kind == "null":
        return f"{draw(_int_term())} is {draw(st.sampled_from(['', 'not ']))}null"
    if kind == "not":
        return f"not ({draw(_predicate(depth + 1))})"
    return f"({draw(_predicate(depth + 1))}) {kind} ({draw(_predicate(depth + 1))})"


_SMALL_INTS = st.one_of(st.none(), st.integers(-20, 20))
_RANDOM_SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("a", pa.int32()), ("b", pa.int64()), ("s", pa.string())])


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=st.lists(
        st.tuples(_SMALL_INTS, _SMALL_INTS, st.one_of(st.none(), st.sampled_from(["a", "A", "b", "aB", ""]))), min_size=1, max_size=12
    ),
    where=_predicate(),
)
def test_random_predicates_on_random_tables_give_duckdbs_rows(rows: list[tuple[int | None, int | None, str | None]], where: str) -> None:
    data = pa.table(
        {"id": list(range(len(rows))), "a": [r[0] for r in rows], "b": [r[1] for r in rows], "s": [r[2] for r in rows]},
        schema=_RANDOM_SCHEMA,
    )
    with tempfile.TemporaryDirectory() as folder:
        table = mor.load_catalog(f"{folder}/warehouse", create=True).create_table("db.t", schema=_RANDOM_SCHEMA)
        half = len(rows) // 2
        table.append(data.slice(0, half))
        table.append(data.slice(half))
        assert ids(table, where) == duckdb_ids(where, data), where
