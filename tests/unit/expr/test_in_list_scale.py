"""Large IN lists (issue 9): bound in one pass, pruned by bisection, and still selecting exactly
the rows SQL selects (spec/predicates.md), as an expression and as filter text."""

from __future__ import annotations

import gc
import pickle
import uuid
from datetime import date
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from pyiceberg.expressions import In, NotIn
from pyiceberg.expressions import parser as pyiceberg_parser
from pyiceberg.expressions.literals import (
    BinaryLiteral,
    BooleanLiteral,
    DateLiteral,
    DoubleLiteral,
    FloatLiteral,
    LongLiteral,
    StringLiteral,
    TimeLiteral,
    TimestampLiteral,
    UUIDLiteral,
)
from pyiceberg.expressions.visitors import bind
from pyiceberg.schema import Schema
from pyiceberg.types import DateType, DecimalType, DoubleType, IntegerType, LongType, NestedField, StringType

import mor
from mor.expr import filters
from mor.expr.filters import bind_filter, parse_filter
from mor.expr.literals import TimestampNanoLiteral

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("i", pa.int64()), ("f", pa.float64()), ("s", pa.string())])
N = 20_000  # rows
NAN = float("nan")


def _rows(start: int, n: int) -> pa.Table:
    ids = np.arange(start, start + n)
    i = pa.array(ids * 3, mask=ids % 7 == 0)  # some nulls
    f = (ids % 11).astype(float) / 2
    f[ids % 13 == 0] = NAN
    f_arr = pa.array(f, mask=ids % 17 == 0)
    s = pa.array([f"s{x % 5000}" for x in ids], mask=ids % 19 == 0)
    return pa.table({"id": ids, "i": i, "f": f_arr, "s": s}, schema=SCHEMA)


@pytest.fixture
def table(catalog: mor.Catalog) -> mor.Table:
    """N rows in 4 files of contiguous ids (so file bounds on `id` are disjoint)."""
    table = catalog.create_table("db.t", schema=SCHEMA)
    for start in range(0, N, N // 4):
        table.append(_rows(start, N // 4))
    return table


def _model() -> pa.Table:
    return pa.concat_tables([_rows(start, N // 4) for start in range(0, N, N // 4)])


def _ids(table: mor.Table, where: object) -> list[int]:
    return sorted(table.scan(filter=where).to_arrow().column("id").to_pylist())  # type: ignore[arg-type]


def _text(column: str, values: list[object], negate: bool = False) -> str:
    items = ", ".join(f"'{v}'" if isinstance(v, str) else repr(v) for v in values)
    return f"{column} {'not in' if negate else 'in'} ({items})"


def test_a_long_in_list_selects_what_sql_selects(table: mor.Table) -> None:
    rng = np.random.default_rng(1)
    model = _model().to_pydict()
    i_values = [int(v) for v in rng.choice(3 * N, 50_000, replace=True)]
    f_values = [float(v) / 2 for v in range(0, 8)]
    s_values = [f"s{v}" for v in range(0, 5000, 3)]
    for column, values in [("i", i_values), ("f", f_values), ("s", s_values)]:
        wanted = set(values)
        # SQL: a null is in nothing and not in nothing; NaN is not in a list of numbers.
        expect_in = [r for r, x in zip(model["id"], model[column]) if x is not None and x in wanted]
        expect_not_in = [r for r, x in zip(model["id"], model[column]) if x is not None and x not in wanted]
        assert _ids(table, In(column, values)) == expect_in
        assert _ids(table, _text(column, values)) == expect_in
        assert _ids(table, NotIn(column, values)) == expect_not_in
        assert _ids(table, _text(column, values, negate=True)) == expect_not_in
        assert _ids(table, f"not ({_text(column, values)})") == expect_not_in


def test_delete_by_a_long_in_list_removes_exactly_those_rows(table: mor.Table) -> None:
    values = list(range(0, N, 3)) + list(range(10 * N, 10 * N + 40_000))  # most values match nothing
    table.delete(In("id", values))
    assert _ids(table, None) == [x for x in range(N) if x % 3]
    table.delete(_text("id", list(range(1, N, 3))))
    assert _ids(table, None) == [x for x in range(N) if x % 3 == 2]


def test_files_are_pruned_by_the_values_within_their_bounds(table: mor.Table) -> None:
    quarter = N // 4
    inside_second = list(range(quarter + 1, 2 * quarter, 7))  # > 200 values: beyond pyiceberg's limit
    assert len(inside_second) > 200
    assert len(table.scan(filter=In("id", inside_second)).plan_files()) == 1
    around = [-5 - k for k in range(300)] + [N + k for k in range(300)]  # below and above every file
    assert table.scan(filter=In("id", around)).plan_files() == []
    assert _ids(table, In("id", around + [quarter])) == [quarter]
    strings = [f"s{k}" for k in range(300)] + ["zzz"]
    assert len(table.scan(filter=In("s", strings)).plan_files()) == 4  # every file holds s0..s299


def test_the_text_and_expression_forms_are_equal_and_behave_as_pyiceberg_objects() -> None:
    values = list(range(0, 30_000, 3))
    text = parse_filter(_text("id", values))
    expr = In("id", values)
    assert text == expr and isinstance(text, In)
    assert pickle.loads(pickle.dumps(text)) == expr
    assert ~text == NotIn("id", values)
    assert str(parse_filter(_text("id", [1, 2]))) == str(In("id", [1, 2]))
    assert parse_filter("s not in ('a', 'b', 'a')") == NotIn("s", ["a", "b"])
    assert parse_filter("id in (7, 7)") == parse_filter("id = 7")  # pyiceberg's simplification


@pytest.mark.parametrize(
    "text",
    ["x in (1, +2, -3,  4 )", "x in (1,2)", "x not in (07, 7, 8)", "x in (-0, 0, 1)", "x in (1) and y in (3, 4)",
     "(x in (1, 2)) or y not in (3, 4)"],
)  # fmt: skip
def test_lists_of_integers_read_as_pyiceberg_reads_them(text: str) -> None:
    assert parse_filter(text) == pyiceberg_parser.parse(text)


def test_lists_of_mixed_values_keep_each_value_typed() -> None:
    assert parse_filter("x in (1, 2.5, 1e3)") == In("x", [1, Decimal("2.5"), Decimal("1e3")])
    assert parse_filter("x in (1, 'a', 2)") == In("x", [1, "a", 2])


@pytest.mark.parametrize("text", ["x in ()", "x in (1,,2)", "x in (1 2)", "x in (1, 2,)", "x in (1_000, 2)"])
def test_malformed_lists_of_integers_are_refused(text: str) -> None:
    with pytest.raises(mor.InvalidFilterError, match="cannot parse filter"):
        parse_filter(text)


SCHEMA_TYPES = Schema(
    NestedField(1, "l", LongType()),
    NestedField(2, "i", IntegerType()),
    NestedField(3, "d", DoubleType()),
    NestedField(4, "s", StringType()),
    NestedField(5, "day", DateType()),
    NestedField(6, "dec", DecimalType(9, 2)),
)


@pytest.mark.parametrize(
    "expr",
    [
        In("l", range(1000)),
        NotIn("l", range(1000)),
        In("i", [1, 2, 3]),
        In("d", [1.5, 2.5]),
        In("d", [1, 2]),  # ints on a double column: converted
        In("l", [Decimal("1.0"), 2]),  # decimals with whole values on a long column
        In("s", ["a", "b", "c"]),
        In("day", ["2024-01-01", "2024-02-01"]),  # strings converted to dates
        In("day", [date(2024, 1, 1), date(2024, 1, 2)]),
        In("dec", [Decimal("1.25"), Decimal("2.50")]),
    ],
    ids=str,
)
def test_binding_gives_what_pyiceberg_binding_gives(expr: In) -> None:
    ours = filters._bind(SCHEMA_TYPES, expr, True, check=False)
    theirs = bind(SCHEMA_TYPES, expr, True)
    assert type(ours) is type(theirs)
    assert ours == theirs
    assert ours.value_set == theirs.value_set  # type: ignore[attr-defined]
    assert {type(lit) for lit in ours.literals} == {type(lit) for lit in theirs.literals}  # type: ignore[attr-defined]


def test_literals_kept_as_they_are_are_those_pyiceberg_converts_to_themselves() -> None:
    samples = [LongLiteral(5), DoubleLiteral(1.5), FloatLiteral(1.5), StringLiteral("x"), BooleanLiteral(True),
               DateLiteral(19000), TimeLiteral(1000), TimestampLiteral(10**15), UUIDLiteral(uuid.uuid4().bytes),
               BinaryLiteral(b"x"), TimestampNanoLiteral(10**18)]  # fmt: skip
    assert {type(lit) for lit in samples} == set(filters._CONVERT_TO_THEMSELVES)
    for lit in samples:
        for ftype in filters._CONVERT_TO_THEMSELVES[type(lit)]:
            assert lit.to(ftype()) is lit, (lit, ftype)


def test_values_a_long_list_cannot_hold_match_nothing_and_nan_is_spark_sqls(catalog: mor.Catalog) -> None:
    table = catalog.create_table("db.r", schema=SCHEMA)
    table.append(pa.table({"id": [0, 1, 2], "i": [5, 1000, None], "f": [None] * 3, "s": [None] * 3}, schema=SCHEMA))
    # Compared exactly (mor.expr.literals): 2**70 and 1.5 equal no int.
    assert table.scan(filter=In("i", list(range(1000)) + [2**70])).to_arrow().column("i").to_pylist() == [5]
    assert table.scan(filter=_text("i", list(range(1000)) + [1.5])).to_arrow().column("i").to_pylist() == [5]
    table.append(pa.table({"id": [3], "i": [7], "f": [float("nan")], "s": [None]}, schema=SCHEMA))
    assert table.scan(filter=_text("f", [float(v) for v in range(1000)] + ["nan"])).to_arrow().column("id").to_pylist() == [3]


def test_one_operation_binds_its_filter_once(table: mor.Table, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    real = filters._bind_set
    monkeypatch.setattr(filters, "_bind_set", lambda *args: calls.append(1) or real(*args))
    expr = In("id", list(range(0, N, 2)) + list(range(10 * N, 10 * N + 1000)))
    table.delete(expr)
    assert calls == [1]
    assert bind_filter(table.schema(), expr) is bind_filter(table.schema(), expr)


def test_what_is_remembered_of_a_filter_goes_with_it(table: mor.Table) -> None:
    expr = In("id", list(range(0, N, 2)))
    table.delete(expr)
    ours = [k for k in filters._REMEMBERED if k[1] == id(expr)]
    assert ours
    del expr
    gc.collect()
    assert not [k for k in filters._REMEMBERED if k in ours]


def test_partitioned_tables_prune_and_select_with_long_lists(catalog: mor.Catalog) -> None:
    table = catalog.create_table("db.p", schema=SCHEMA, partition_by=["bucket(4, id)", "s"])
    ids = np.arange(2000)
    names = pa.array([f"s{x % 5}" for x in ids], mask=ids % 19 == 0)
    table.append(pa.table({"id": ids, "i": ids, "f": ids / 2, "s": names}, schema=SCHEMA))
    values = list(range(0, 2000, 5)) + list(range(5000, 6000))
    assert _ids(table, In("id", values)) == list(range(0, 2000, 5))
    wanted = ["s1", "s3"] + [f"t{k}" for k in range(300)]
    assert len(table.scan(filter=In("s", wanted)).plan_files()) == 8  # 4 buckets x 2 names
    assert _ids(table, In("s", wanted)) == [x for x in range(2000) if x % 19 and x % 5 in (1, 3)]
    assert _ids(table, NotIn("s", wanted)) == [x for x in range(2000) if x % 19 and x % 5 not in (1, 3)]


@pytest.mark.parametrize("arrow_type", [pa.int64(), pa.int32()])
def test_an_integer_set_answers_as_is_in_does_with_nulls_and_extremes(arrow_type: pa.DataType) -> None:
    from mor.expr.arrow_rows import IntegerSet

    info = np.iinfo(arrow_type.to_pandas_dtype())
    values = np.arange(-3000, 3000, 3)
    column = pa.array([None, int(info.min), int(info.max), -3000, -2999, 2997, 2998, 0, 3, None, 4], arrow_type)
    expected = pc.if_else(column.is_valid(), pc.is_in(column, value_set=pa.array(values, arrow_type)), None)
    lookup = IntegerSet.of(set(values.tolist()))
    assert lookup is not None
    assert lookup.contains(column).equals(expected)
    assert lookup.contains(column.slice(3)).equals(expected.slice(3))  # with an offset
    assert IntegerSet.of(set(range(0, 10**9, 10**5))) is None  # too sparse: pyarrow's is_in then


def test_a_concurrent_append_conflicts_with_a_long_list_only_where_a_row_matches(catalog: mor.Catalog) -> None:
    catalog.create_table("db.c", schema=SCHEMA).set_properties(**{"mor.dml.replan.num-retries": "0"})
    catalog.load_table("db.c").append(_rows(0, 5000))
    first, second = catalog.load_table("db.c"), catalog.load_table("db.c")
    evens = list(range(0, 20_000, 2))
    first.append(pa.concat_tables([_rows(6001, 1), _rows(6003, 1)]))  # odd ids around 6002
    second.delete(In("id", evens))  # its validation reads the new file: no row matches
    assert _ids(catalog.load_table("db.c"), None) == [*range(1, 5000, 2), 6001, 6003]
    first, second = catalog.load_table("db.c"), catalog.load_table("db.c")
    first.append(_rows(7000, 1))  # id 7000: even
    with pytest.raises(mor.CommitConflictError):
        second.delete(_text("id", [1, *evens]))  # deletes id 1, and would have deleted 7000


# -- mor.isin: the same In, built in one pass ---------------------------------------------


@pytest.mark.parametrize(
    "values",
    [
        list(range(0, 3000, 3)),
        np.arange(5, 5000, 7, dtype=np.int64),
        pa.array([10, 20, 30, 20], pa.int32()),
        ["a", "b", "it's", ""],
        [0.5, 1.5, -2.25],
        [True, False],  # not a plain int: pyiceberg's constructor decides
        [1, "mixed"],
    ],
)
def test_isin_is_pyiceberg_in(values) -> None:
    plain = values.tolist() if isinstance(values, np.ndarray) else values.to_pylist() if isinstance(values, pa.Array) else values
    assert mor.isin("c", values) == In("c", plain)


def test_isin_of_few_values_simplifies_as_pyiceberg_does() -> None:
    assert mor.isin("c", []) == In("c", [])
    assert mor.isin("c", [7, 7]) == In("c", [7])


def test_isin_refuses_nulls_and_non_collections() -> None:
    with pytest.raises(mor.InvalidFilterError, match="null"):
        mor.isin("c", [1, None])
    with pytest.raises(mor.InvalidFilterError, match="single value"):
        mor.isin("c", "abc")
    with pytest.raises(mor.InvalidFilterError, match="column name"):
        mor.isin("", [1])


def test_isin_selects_what_in_selects(catalog: mor.Catalog) -> None:
    table = catalog.create_table("db.isin", schema=pa.schema([("id", pa.int64()), ("name", pa.string())]))
    table.append(pa.table({"id": pa.array(range(20_000), pa.int64()), "name": [f"n{i}" for i in range(20_000)]}))
    ids = np.random.default_rng(3).choice(40_000, 5_000, replace=False)
    expected = sorted(int(i) for i in ids if i < 20_000)
    assert sorted(table.scan(filter=mor.isin("id", ids)).to_arrow()["id"].to_pylist()) == expected
    assert sorted(table.scan(filter=mor.isin("name", [f"n{i}" for i in ids])).to_arrow()["id"].to_pylist()) == expected
    table.delete(mor.isin("id", ids))
    assert table.scan().count() == 20_000 - len(expected)
