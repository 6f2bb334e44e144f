"""Row filter semantics (spec/predicates.md): SQL's three-valued logic, NaN above every number,
pruning that agrees with the rows, and the filter text parser."""

from __future__ import annotations

import dataclasses
import math

import pyarrow as pa
import pytest
from pyiceberg.expressions import GreaterThan, In
from pyiceberg.expressions import parser as pyiceberg_parser
from pyiceberg.expressions.visitors import rewrite_not

import mor
from mor.expr.filters import FileFilter, parse_filter

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("i", pa.int64()), ("f", pa.float64()), ("s", pa.string())])
NAMES = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string())])
NAN = float("nan")
# id:   0      1      2     3
ROWS = {"i": [1, None, 3, 5], "f": [1.0, None, NAN, 5.0], "s": ["a", None, "ab", "b"]}

CASES = [
    # A null operand makes a comparison NULL: not selected, also not under NOT.
    ("i = 1", [0]),
    ("i != 1", [2, 3]),
    ("i <> 1", [2, 3]),
    ("not i = 1", [2, 3]),
    ("i < 3", [0]),
    ("not i < 3", [2, 3]),
    ("i <= 3", [0, 2]),
    ("i > 1", [2, 3]),
    ("i >= 3", [2, 3]),
    ("3 > i", [0]),
    ("i in (1, 3)", [0, 2]),
    ("i not in (1, 3)", [3]),
    ("not i in (1, 3)", [3]),
    ("not (i in (1, 3))", [3]),
    ("i between 1 and 3", [0, 2]),
    ("i not between 1 and 3", [3]),
    ("s starts with 'a'", [0, 2]),
    ("s not starts with 'a'", [3]),
    ("s like 'a%'", [0, 2]),
    ("s not like 'a%'", [3]),
    ("not s like 'a%'", [3]),
    ("s like 'ab'", [2]),
    # is null / is not null are two-valued.
    ("i is null", [1]),
    ("i is not null", [0, 2, 3]),
    ("not i is null", [0, 2, 3]),
    # Kleene AND / OR / NOT.
    ("i = 1 or s = 'b'", [0, 3]),
    ("not (i = 1 or s = 'b')", [2]),
    ("i = 1 or i is null", [0, 1]),
    ("not (i > 100 and s is null)", [0, 2, 3]),  # row 1: NULL and TRUE is NULL
    ("not (i > 100 and s is not null)", [0, 1, 2, 3]),  # row 1: NULL and FALSE is FALSE
    ("i > 100 or true", [0, 1, 2, 3]),
    ("true", [0, 1, 2, 3]),
    ("false", []),
    # NaN sorts above every number; is nan / is not nan are two-valued.
    ("f > 2", [2, 3]),
    ("f >= 5", [2, 3]),
    ("not f <= 2", [2, 3]),
    ("f < 2", [0]),
    ("f <= 5", [0, 3]),
    ("not f > 2", [0]),
    ("f = 5", [3]),
    ("f != 1", [2, 3]),
    ("f in (1.0, 5)", [0, 3]),
    ("f not in (1.0)", [2, 3]),
    ("f between 0 and 10", [0, 3]),
    ("f is nan", [2]),
    ("f is not nan", [0, 1, 3]),
    ("not f is nan", [0, 1, 3]),
]


def _table(catalog: mor.Catalog, name: str, partition_by: list[str] | None = None) -> mor.Table:
    table = catalog.create_table(f"db.{name}", schema=SCHEMA, partition_by=partition_by)
    table.append(pa.table({"id": [0, 1, 2, 3], **ROWS}, schema=SCHEMA))
    return table


def _ids(table: mor.Table, **scan: object) -> list[int]:
    return sorted(table.scan(**scan).to_arrow().column("id").to_pylist())  # type: ignore[arg-type]


@pytest.mark.parametrize(("where", "expected"), CASES, ids=[c[0] for c in CASES])
def test_scan_delete_and_update_select_the_rows_where_the_predicate_is_true(catalog: mor.Catalog, where: str, expected: list[int]) -> None:
    table = _table(catalog, "scan")
    assert _ids(table, filter=where) == expected
    table.delete(where, mode="merge-on-read")
    assert _ids(table) == [i for i in range(4) if i not in expected]

    table = _table(catalog, "cow")
    table.delete(where, mode="copy-on-write")
    assert _ids(table) == [i for i in range(4) if i not in expected]

    table = _table(catalog, "update")
    table.update({"s": "'changed'"}, where=where)
    assert _ids(table, filter="s = 'changed'") == expected


@pytest.mark.parametrize("partition_by", [["f"], ["s"], None], ids=["by-f", "by-s", "unpartitioned"])
@pytest.mark.parametrize("where", ["f > 2", "f >= 5", "not f <= 2", "f > 100", "f != 1", "f is nan"])
def test_pruning_keeps_files_holding_nan_for_greater_than(catalog: mor.Catalog, partition_by: list[str] | None, where: str) -> None:
    """Column bounds and partition summaries leave NaN out, and pyiceberg rules out a file of
    NaNs only for `>`: pruning must still keep the NaN rows that `x > c` selects."""
    table = catalog.create_table("db.t", schema=SCHEMA, partition_by=partition_by)
    table.append(pa.table({"id": [0, 1], "i": [1, 2], "f": [1.0, 2.0], "s": ["a", "a"]}, schema=SCHEMA))
    table.append(pa.table({"id": [2, 3], "i": [3, 4], "f": [NAN, NAN], "s": ["n", "n"]}, schema=SCHEMA))
    table.append(pa.table({"id": [4, 5], "i": [5, 6], "f": [NAN, 1.5], "s": ["m", "m"]}, schema=SCHEMA))
    nan_ids = [2, 3, 4]
    expected = nan_ids if where != "f != 1" else [1, 2, 3, 4, 5]
    assert _ids(table, filter=where) == expected
    table.delete(where)
    assert _ids(table) == [i for i in range(6) if i not in expected]


def test_merge_on_read_delete_in_a_nan_partition(catalog: mor.Catalog) -> None:
    """Iceberg: NaN partition values are equal (bit layout with NaNs normalized)."""
    table = catalog.create_table("db.t", schema=SCHEMA, partition_by=["f"])
    table.append(pa.table({"id": [0, 1], "i": [1, 2], "f": [NAN, NAN], "s": ["a", "b"]}, schema=SCHEMA))
    table.delete("s = 'a'", mode="merge-on-read")
    assert _ids(table) == [1]


def test_row_group_pruning_keeps_row_groups_of_nans(catalog: mor.Catalog) -> None:
    table = catalog.create_table("db.t", schema=SCHEMA, properties={"write.parquet.row-group-limit": "2"})
    f = [1.0, 2.0, 3.0, NAN, NAN, NAN]  # row groups: no NaN, NaN outside the bounds, NaNs only
    table.append(pa.table({"id": range(6), "i": range(6), "f": f, "s": ["x"] * 6}, schema=SCHEMA))
    assert _ids(table, filter="f > 10") == [3, 4, 5]
    table.delete("f >= 10", mode="merge-on-read")
    assert _ids(table) == [0, 1, 2]


def test_the_metrics_shortcut_needs_known_null_and_nan_counts(catalog: mor.Catalog) -> None:
    """A whole file is taken by its metrics only when they prove no null and no NaN: a file from
    another writer without NaN counts may hold NaNs that `f < c` does not select."""
    table = catalog.create_table("db.t", schema=SCHEMA)
    table.append(pa.table({"id": [0, 1], "i": [1, 2], "f": [1.0, 2.0], "s": ["a", "b"]}, schema=SCHEMA))
    (task,) = table.scan().plan_files()
    schema, specs = table.schema(), table.metadata.specs()
    both, ints = FileFilter(schema, specs, parse_filter("f < 10 and i < 10")), FileFilter(schema, specs, parse_filter("i < 10"))
    assert both.every_row_matches(task.data_file)
    no_nan_counts = dataclasses.replace(task.data_file, nan_value_counts=None)
    assert not both.every_row_matches(no_nan_counts)
    assert ints.every_row_matches(no_nan_counts)  # not floating point
    no_null_counts = dataclasses.replace(task.data_file, null_value_counts=None)
    assert not both.every_row_matches(no_null_counts)


def test_a_whole_file_delete_by_metrics_agrees_with_the_rows(catalog: mor.Catalog) -> None:
    table = catalog.create_table("db.t", schema=SCHEMA)
    table.append(pa.table({"id": [0, 1], "i": [1, 2], "f": [6.0, 7.0], "s": ["a", "b"]}, schema=SCHEMA))
    table.append(pa.table({"id": [2, 3], "i": [1, 2], "f": [6.0, NAN], "s": ["a", "b"]}, schema=SCHEMA))
    table.append(pa.table({"id": [4, 5], "i": [1, None], "f": [6.0, 7.0], "s": ["a", "b"]}, schema=SCHEMA))
    table.delete("f < 10 and i != 7")
    assert _ids(table) == [3, 5]


# -- literals ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("where", "message"), [("f = nan", "is nan"), ("i = null", "is null"), ("null != i", "is null")])
def test_literals_that_would_change_meaning_are_refused(catalog: mor.Catalog, where: str, message: str) -> None:
    """A bare `nan` (use `is nan`, or the text 'NaN') and a comparison with null written as such
    (never true, always a mistake: use `is null`); IN and BETWEEN with a null follow SQL."""
    table = _table(catalog, "t")
    with pytest.raises(mor.InvalidFilterError, match=message):
        table.scan(filter=where)
    with pytest.raises(mor.InvalidFilterError, match=message):
        table.delete(where)
    assert _ids(table) == [0, 1, 2, 3]


@pytest.mark.parametrize(
    ("where", "expected"),
    [  # Spark's answers: 'NaN' is the double NaN, which equals itself and sorts above every number
        ("f = 'NaN'", [2]),
        ("f > 'NaN'", []),
        ("f >= 'NaN'", [2]),
        ("f < 'NaN'", [0, 3]),
        ("f <= 'NaN'", [0, 2, 3]),
        ("f != 'NaN'", [0, 3]),
        ("f in (1.0, 'nan')", [0, 2]),
        ("f not in (1.0, 'nan')", [3]),
        ("not (f = 'NaN')", [0, 3]),
        ("i in (1, 3, null)", [0, 2]),
        ("i not in (1, null)", []),
        ("not (i not in (1, null))", [0]),
        ("i between 3 and null", []),
        ("not (i between 3 and null)", [0]),
        ("i <=> null", [1]),
        ("i <=> 3", [2]),
        ("i is distinct from 3", [0, 1, 3]),
        ("(i > 1) is not true", [0, 1]),
        ("(i > 1) is false", [0]),
    ],
)
def test_nan_and_null_in_values_are_sqls(catalog: mor.Catalog, where: str, expected: list[int]) -> None:
    table = _table(catalog, "t")
    assert _ids(table, filter=where) == expected
    table.delete(where)
    assert _ids(table) == sorted(set(range(4)) - set(expected))


def test_nan_literal_objects_are_refused_by_pyiceberg() -> None:
    with pytest.raises(ValueError, match="NaN"):
        GreaterThan("f", math.nan)
    with pytest.raises(ValueError, match="NaN"):
        In("f", [1.0, math.nan])


def test_whole_numbers_written_as_decimals_compare_with_integers(catalog: mor.Catalog) -> None:
    table = _table(catalog, "t")
    assert _ids(table, filter="i = 3.0") == [2]
    assert _ids(table, filter="i < 1e1") == [0, 2, 3]


def test_fractions_and_out_of_range_numbers_compare_exactly_with_integers(catalog: mor.Catalog) -> None:
    table = _table(catalog, "t")
    assert _ids(table, filter="i > 1.5") == [2, 3]
    assert _ids(table, filter="i in (1, 2.5)") == [0]
    assert _ids(table, filter="i < 99999999999999999999") == [0, 2, 3]
    assert _ids(table, filter="not (i = 1.5)") == [0, 2, 3]  # a null stays NULL


# -- filter text -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("id <", "expected a value after the operator"),
        ("id = 'abc", "unterminated string"),
        ("id <<< 3", "expected a value"),
        ("id is nul", "expected null, nan, true or false after 'is'"),
        ("id in (1, 2", "expected ')' to close a '(' (or ','"),
        ("id = 1 name = 'x'", "expected an operator, a value or a column"),
        ("(id = 1", "expected ')'"),
        ("name like 'a\\\\b'", "may precede only '%', '_' or itself"),
        ("name like 'a' escape 'xy'", "one character"),
        ("id # 1", "expected an operator, a value or a column"),
        ("and = 1", "a column named like a keyword is quoted: `and`"),
        ("id starts 'a'", "expected an operator"),
        ("x = 1 +", "expected a value after the operator"),
        ("x in (1,,2)", "expected a value, found ','"),
        ("x = frob(1)", "function frob() is not supported"),
    ],
)
def test_parse_errors_say_what_and_where_briefly(text: str, problem: str) -> None:
    with pytest.raises(mor.InvalidFilterError) as e:
        parse_filter(text)
    message = str(e.value)
    assert problem in message
    assert "offset" in message
    assert "function" in message or ("filter syntax" in message and "starts with" in message and "is not null" in message)
    assert len(message) < 1200  # never a grammar dump


def test_parse_error_in_a_long_filter_shows_only_the_place() -> None:
    text = "id in (" + ", ".join(map(str, range(5000))) + ") and name = "
    with pytest.raises(mor.InvalidFilterError, match="expected a value") as e:
        parse_filter(text)
    assert len(str(e.value)) < 1200


def test_unknown_column_error_names_it_and_the_columns(catalog: mor.Catalog) -> None:
    table = _table(catalog, "t")
    with pytest.raises(mor.InvalidFilterError, match=r"nope.*columns: id, i, f, s"):
        table.scan(filter="nope > 1")


@pytest.mark.parametrize(
    "text",
    [
        "id < 10 and region = 'eu'",
        "a = 1 or b = 2 and not c = 3",
        "a = 1 or b = 2 or c = 3 and d = 4 and e = 5",
        "not (a = 1 or b = 2)",
        "5 < x",
        "x >= -2.5",
        "x == 1",
        "x <> 'it''s'",
        "x in (1, 2, 3)",
        "x not in ('a', 'b')",
        "x is null or y is not null",
        "x is nan and y is not nan",
        "x like 'ab%'",
        "x like 'ab'",
        "x between 1 and 5",
        "flag = true",
        '"odd name" = 1',
        "a.b = 1",
        "true",
        "false",
    ],
)
def test_the_parser_reads_pyiceberg_filters_as_pyiceberg_does(text: str) -> None:
    assert rewrite_not(parse_filter(text)) == rewrite_not(pyiceberg_parser.parse(text))  # mor reads NOT per leaf (SQL's NULLs)


def test_a_long_or_chain_is_a_shallow_tree(catalog: mor.Catalog) -> None:
    table = _table(catalog, "t")
    assert _ids(table, filter=" or ".join(f"id = {i}" for i in range(2, 5000))) == [2, 3]


def test_starts_with_as_the_readme_writes_it(catalog: mor.Catalog) -> None:
    table = catalog.create_table("db.t", schema=NAMES)
    table.append(pa.table({"id": [0, 1, 2, 3], "name": ["abc", "abd", "xab", None]}, schema=NAMES))
    assert _ids(table, filter="name starts with 'ab'") == [0, 1]
    assert _ids(table, filter="name STARTS WITH 'ab' and not name like 'abd'") == [0]
    assert _ids(table, filter="name not starts with 'ab'") == [2]
    assert _ids(table, filter="name like 'a%'") == [0, 1]


def test_like_escapes_wildcards(catalog: mor.Catalog) -> None:
    table = catalog.create_table("db.t", schema=NAMES)
    table.append(pa.table({"id": [0, 1, 2], "name": ["a_b", "a%b", "axb"]}, schema=NAMES))
    assert _ids(table, filter="name like 'a\\_%'") == [0]
    assert _ids(table, filter="name like 'a\\%b'") == [1]


def test_big_in_lists_parse_and_select_the_right_rows(catalog: mor.Catalog) -> None:
    values = range(0, 200_000, 2)  # 100,000 values
    expr = parse_filter("id in (" + ", ".join(map(str, values)) + ")")
    assert len(expr.literals) == 100_000  # type: ignore[attr-defined]
    names = parse_filter("s not in (" + ", ".join(f"'n{i}'" for i in range(10_000)) + ")")
    assert len(names.literals) == 10_000  # type: ignore[attr-defined]
    table = _table(catalog, "t")
    assert _ids(table, filter="id in (" + ", ".join(map(str, range(3, 20_000))) + ")") == [3]
    assert _ids(table, filter="s not in (" + ", ".join(f"'n{i}'" for i in range(10_000)) + ", 'a')") == [2, 3]


def test_row_groups_without_bounds_next_to_bounded_ones(catalog: mor.Catalog) -> None:
    """A row group of only NaN (or only nulls) has no Parquet min/max: the file keeps no bounds
    for the column (NaN) or the other row groups' bounds (nulls), and appends do not fail."""
    schema = pa.schema([("id", pa.int64()), ("f", pa.float64())])
    table = catalog.create_table("db.rg", schema=schema)
    table.set_properties(**{"write.parquet.row-group-limit": "2"})
    table.append(pa.table({"id": [1, 2, 3, 4, 5, 6], "f": [float("nan"), float("nan"), None, None, 1.0, 5.0]}, schema=schema))
    table.append(pa.table({"id": [7, 8, 9, 10], "f": [None, None, 1.0, 5.0]}, schema=schema))
    assert sorted(r["id"] for r in table.scan(filter="f > 0.5").to_arrow().to_pylist()) == [1, 2, 5, 6, 9, 10]
    files = {t.data_file.record_count: t.data_file for t in table.scan().plan_files()}
    assert 2 not in (files[6].lower_bounds or {})  # NaN cannot be bounded
    assert (files[4].lower_bounds or {}).get(2) is not None  # all-null row groups do not matter


def test_a_remembered_binding_is_never_used_for_another_schema() -> None:
    """bind_filter remembers bindings by object identity (an `in` list binds slowly); the same
    expression against another schema is bound, and checked, anew."""
    from pyiceberg.schema import Schema
    from pyiceberg.types import LongType, NestedField, StringType

    from mor.expr.filters import bind_filter

    expr = In("id", list(range(1000)))
    longs = Schema(NestedField(1, "id", LongType(), required=False))
    strings = Schema(NestedField(1, "name", StringType(), required=False))
    assert bind_filter(longs, expr) is bind_filter(longs, expr)
    with pytest.raises(mor.InvalidFilterError):
        bind_filter(strings, expr)
    renamed = Schema(NestedField(7, "id", LongType(), required=False))
    assert bind_filter(renamed, expr).term.ref().field.field_id == 7  # type: ignore[attr-defined]
