"""Values as SQL text (mor.expr.values): a `str` value of UPDATE and MERGE is SQL over the old
row (and the source row), stored as Spark's ANSI store assignment stores it; every other Python
value and `mor.lit(...)` is a literal; a bare word naming no column is refused with the quotes
suggested; a refused value leaves the table as it was."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import mor

UTC = dt.UTC
SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("qty", pa.int32()),
        pa.field("name", pa.string()),
        pa.field("price", pa.decimal128(5, 2)),
        pa.field("ratio", pa.float64()),
        pa.field("flag", pa.bool_()),
        pa.field("day", pa.date32()),
        pa.field("created_at", pa.timestamp("us")),
        pa.field("seen", pa.timestamp("us", tz="UTC")),
        pa.field("raw", pa.binary()),
    ]
)
START = dt.datetime(2025, 1, 1, 8, 30)


@pytest.fixture
def table(catalog: mor.Catalog) -> mor.Table:
    t = catalog.create_table("db.values", schema=SCHEMA)
    t.append(
        pa.table(
            {
                "id": [1, 2, 3],
                "qty": [5, None, -7],
                "name": ["ann", None, "Bob"],
                "price": [Decimal("1.50"), None, Decimal("2.25")],
                "ratio": [2.75, None, -2.75],
                "flag": [True, None, False],
                "day": [dt.date(2025, 1, 1)] * 3,
                "created_at": [START] * 3,
                "seen": [START.replace(tzinfo=UTC)] * 3,
                "raw": [b"a", None, b"c"],
            },
            schema=SCHEMA,
        )
    )
    return t


def rows(t: mor.Table, *columns: str) -> list[dict[str, Any]]:
    return t.refresh().scan(columns=["id", *columns]).to_arrow().sort_by("id").to_pylist()


def column(t: mor.Table, name: str) -> list[Any]:
    return [r[name] for r in rows(t, name)]


def test_text_is_sql_over_the_old_row(table: mor.Table) -> None:
    table.update({"qty": "qty + 1"}, where="true")
    assert column(table, "qty") == [6, None, -6]  # null + 1 is null
    table.update({"name": "upper(name)", "qty": "coalesce(qty, 0) * 2", "ratio": "ratio / 2"}, where="true")
    assert rows(table, "name", "qty", "ratio") == [
        {"id": 1, "name": "ANN", "qty": 12, "ratio": 1.375},
        {"id": 2, "name": None, "qty": 0, "ratio": None},
        {"id": 3, "name": "BOB", "qty": -12, "ratio": -1.375},
    ]
    # every value reads the old row, not the one being written
    table.update({"qty": "qty + 100", "ratio": "qty"}, where="id = 1")
    assert rows(table, "qty", "ratio")[0] == {"id": 1, "qty": 112, "ratio": 12.0}


def test_quoted_text_null_casts_and_dates(table: mor.Table) -> None:
    table.update(
        {
            "name": "'it''s closed'",
            "flag": "null",
            "created_at": "'2025-01-15 12:00'",
            "seen": "'2025-01-15 12:00'",  # no zone: UTC
            "day": "'2025-02-03'",
        },
        where="id = 1",
    )
    assert rows(table, "name", "flag", "created_at", "seen", "day")[0] == {
        "id": 1, "name": "it's closed", "flag": None, "created_at": dt.datetime(2025, 1, 15, 12),
        "seen": dt.datetime(2025, 1, 15, 12, tzinfo=UTC), "day": dt.date(2025, 2, 3),
    }  # fmt: skip
    table.update(
        {"day": "created_at", "seen": "'2025-01-15 12:00:00+02:00'", "created_at": "date '2025-03-01' + interval 1 day", "name": "qty"},
        where="id = 3",
    )
    assert rows(table, "day", "seen", "created_at", "name")[2] == {
        "id": 3, "day": dt.date(2025, 1, 1), "seen": dt.datetime(2025, 1, 15, 10, tzinfo=UTC),
        "created_at": dt.datetime(2025, 3, 2), "name": "-7",
    }  # fmt: skip
    table.update({"qty": "cast(ratio as int)", "name": "cast(price as string)", "ratio": "extract(year from day)"}, where="true")
    assert rows(table, "qty", "name", "ratio") == [
        {"id": 1, "qty": 2, "name": "1.50", "ratio": 2025.0},
        {"id": 2, "qty": None, "name": None, "ratio": 2025.0},
        {"id": 3, "qty": -2, "name": "2.25", "ratio": 2025.0},  # toward zero, as Spark
    ]


def test_numbers_store_as_spark_stores_them(table: mor.Table) -> None:
    table.update({"price": "price * 1.1", "qty": "ratio"}, where="true")
    # decimal places half away from zero, whole numbers toward zero
    assert rows(table, "price", "qty") == [
        {"id": 1, "price": Decimal("1.65"), "qty": 2},
        {"id": 2, "price": None, "qty": None},
        {"id": 3, "price": Decimal("2.48"), "qty": -2},
    ]
    table.update({"price": "0.005", "ratio": "1"}, where="id = 1")
    assert rows(table, "price", "ratio")[0] == {"id": 1, "price": Decimal("0.01"), "ratio": 1.0}


def test_other_python_values_and_lit_are_literals(table: mor.Table) -> None:
    table.update(
        {"name": mor.lit("qty + 1"), "created_at": dt.datetime(2030, 1, 1), "raw": b"qty", "price": Decimal("9.99")}, where="id = 1"
    )
    table.update({"name": mor.lit("null"), "qty": mor.lit(None), "flag": False, "day": dt.date(2030, 1, 2)}, where="id = 2")
    table.update({"qty": pc.field("qty") - 1, "ratio": 0.5, "name": mor.lit(mor.lit("closed"))}, where="id = 3")
    assert rows(table, "name", "created_at", "raw", "price", "qty", "flag", "day", "ratio") == [
        {"id": 1, "name": "qty + 1", "created_at": dt.datetime(2030, 1, 1), "raw": b"qty", "price": Decimal("9.99"),
         "qty": 5, "flag": True, "day": dt.date(2025, 1, 1), "ratio": 2.75},
        {"id": 2, "name": "null", "created_at": START, "raw": None, "price": None, "qty": None, "flag": False,
         "day": dt.date(2030, 1, 2), "ratio": None},
        {"id": 3, "name": "closed", "created_at": START, "raw": b"c", "price": Decimal("2.25"), "qty": -8, "flag": False,
         "day": dt.date(2025, 1, 1), "ratio": 0.5},
    ]  # fmt: skip


def test_a_column_of_another_type_than_text_computes_only_from_its_own_kind(table: mor.Table) -> None:
    table.update({"raw": "raw"}, where="true")  # a column into one of its type: any type
    with pytest.raises(mor.SchemaMismatchError, match=r"'raw' is binary: SQL text sets it only to null or a column"):
        table.update({"raw": "'abc'"}, where="true")
    table.update({"raw": "null"}, where="id = 1")
    assert column(table, "raw") == [None, None, b"c"]


@pytest.mark.parametrize(
    "values, error, fragments",
    [
        ({"name": "closed"}, mor.SchemaMismatchError, ["'closed' names no column", "\"'closed'\"", "mor.lit('closed')"]),
        ({"qty": "qty + 1", "name": "Closed"}, mor.SchemaMismatchError, ["'Closed' names no column"]),
        ({"name": "upper(nme)"}, mor.SchemaMismatchError, ["names column 'nme'", "qty"]),
        ({"qty": "'5'"}, mor.SchemaMismatchError, ["cast('5' as int)"]),
        ({"qty": "99999999999"}, mor.SchemaMismatchError, ["out of range", "int32"]),
        ({"price": "1000"}, mor.SchemaMismatchError, ["decimal128(5, 2)"]),
        ({"day": "'next tuesday'"}, mor.SchemaMismatchError, ["not a date"]),
        ({"flag": "1"}, mor.SchemaMismatchError, ["cast(1 as boolean)"]),
        ({"day": "qty"}, mor.SchemaMismatchError, ["does not convert to date"]),
        ({"flag": "ratio"}, mor.SchemaMismatchError, ["float does not convert to boolean"]),
        ({"qty": "qty +"}, mor.InvalidArgumentError, ["cannot parse the value of 'qty'", "^", "value syntax"]),
        ({"qty": "qty > 1"}, mor.SchemaMismatchError, ["a condition is true or false", "case when qty > 1 then 1 else 0 end"]),
        ({"qty": "case when qty > 1 then 1 end + 1"}, mor.InvalidArgumentError, ["a CASE is a whole value", "^"]),
        ({"qty": "1 + case when qty > 1 then 1 end"}, mor.InvalidArgumentError, ["a CASE is a whole value", "^"]),
        ({"name": "case when qty > 1 then closed end"}, mor.SchemaMismatchError, ["'closed' names no column", "\"'closed'\""]),
        ({"name": "case when qty then 'a' end"}, mor.SchemaMismatchError, ["only a boolean column is a condition"]),
        ({"name": "case when qty > 1 'a' end"}, mor.InvalidArgumentError, ["expected 'then'", "^"]),
        ({"name": "case when nope > 1 then 'a' end"}, mor.SchemaMismatchError, ["'nope'"]),
        ({"qty": "case when qty > 1 then 'a' else 2 end"}, mor.SchemaMismatchError, ["'qty'"]),
        ({"qty": "coalesce(null, null)"}, mor.SchemaMismatchError, ["of null alone has no type"]),
        ({"id": "null"}, mor.SchemaMismatchError, ["required columns to null: ['id']"]),
        # on the rows: ANSI overflow, named by the column and the first row it fails in
        ({"qty": "qty * 1000000000"}, mor.SchemaMismatchError, ["column 'qty'", "5000000000", "in the row id=1,"]),
        ({"qty": "case when id = 3 then qty * 1000000000 else qty end"}, mor.SchemaMismatchError, ["column 'qty'", "in the row id=3,"]),
        ({"price": "price * 1000"}, mor.SchemaMismatchError, ["column 'price'", "in the row id="]),
    ],
)
def test_values_that_do_not_fit_are_refused_and_change_nothing(
    table: mor.Table, values: dict[str, Any], error: type[Exception], fragments: list[str]
) -> None:
    before = table.metadata_location
    with pytest.raises(error) as info:
        table.update(values, where="true")
    for fragment in fragments:
        assert fragment in str(info.value), (fragment, str(info.value))
    assert table.refresh().metadata_location == before


def test_merge_values_name_the_source_and_the_target(table: mor.Table) -> None:
    source = pa.table({"id": [1, 3, 9], "qty": [10, 20, 30], "label": ["x", None, "z"], "at": ["2026-01-01", "2026-01-02", "2026-01-03"]})
    table.merge(
        source,
        on=["id"],
        when_matched_update={"qty": "source.qty + target.qty", "name": "coalesce(source.label, name)", "created_at": "source.at"},
        when_not_matched_insert={
            "id": "source.id", "qty": "source.qty * 2", "name": "upper(source.label)", "flag": "true", "day": "'2026-05-01'",
        },
    )  # fmt: skip
    assert rows(table, "qty", "name", "created_at", "flag", "day") == [
        {"id": 1, "qty": 15, "name": "x", "created_at": dt.datetime(2026, 1, 1), "flag": True, "day": dt.date(2025, 1, 1)},
        {"id": 2, "qty": None, "name": None, "created_at": START, "flag": None, "day": dt.date(2025, 1, 1)},
        {"id": 3, "qty": 13, "name": "Bob", "created_at": dt.datetime(2026, 1, 2), "flag": False, "day": dt.date(2025, 1, 1)},
        {"id": 9, "qty": 60, "name": "Z", "created_at": None, "flag": True, "day": dt.date(2026, 5, 1)},
    ]
    clauses = mor.MergeClauses().when_matched_update({"name": "'again'"}, condition=pc.field("source.qty") > 15)
    table.merge(source, on=["id"], clauses=clauses)
    assert column(table, "name") == ["x", None, "again", "again"]  # 9 now matches


@pytest.mark.parametrize(
    "clauses, fragments",
    [
        ({"when_matched_update": {"name": "label"}}, ["the source's column is source.label"]),
        ({"when_not_matched_insert": {"id": "source.id", "qty": "qty"}}, ["the source's column is source.qty"]),
        ({"when_not_matched_insert": {"id": "source.id", "name": "ratio"}}, ["an insert sees only the source's columns"]),
        ({"when_matched_update": {"name": "source.nope"}}, ["names column 'source.nope'"]),
        ({"when_not_matched_insert": {"id": "null"}}, ["required column 'id' null"]),
    ],
)
def test_merge_values_that_name_no_column_are_refused(table: mor.Table, clauses: dict[str, Any], fragments: list[str]) -> None:
    before = table.metadata_location
    with pytest.raises(mor.SchemaMismatchError) as info:
        table.merge(pa.table({"id": [1, 9], "qty": [1, 2], "label": ["a", "b"]}), on=["id"], **clauses)
    for fragment in fragments:
        assert fragment in str(info.value), (fragment, str(info.value))
    assert table.refresh().metadata_location == before


def test_a_table_column_named_target_or_source_keeps_its_name(catalog: mor.Catalog, tmp_path: Path) -> None:
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("target", pa.int64()), ("n", pa.int64())])
    t = catalog.create_table("db.named", schema=schema)
    t.append(pa.table({"id": [1], "target": [5], "n": [1]}, schema=schema))
    t.merge(pa.table({"id": [1], "n": [7]}), on=["id"], when_matched_update={"n": "source.n + target"})
    assert rows(t, "n") == [{"id": 1, "n": 12}]


def test_lit_is_exported_and_keeps_its_value() -> None:
    assert mor.lit("x") == mor.lit(mor.lit("x")) and mor.lit("x").value == "x"
    assert "lit" in mor.__all__


def test_case_and_conditions_as_values(table: mor.Table) -> None:
    table.update(
        {
            "name": "case when qty > 0 then upper(name) when qty is null then 'none' else name || '' end".replace(" || ''", ""),
            "flag": "qty < 0 or name like 'a%'",
            "price": "case id when 1 then price * 2 when 2 then 9.99 end",
            "day": "case when flag then day else null end",
        },
        where="true",
    )
    assert rows(table, "name", "flag", "price", "day") == [
        {"id": 1, "name": "ANN", "flag": True, "price": Decimal("3.00"), "day": dt.date(2025, 1, 1)},
        {"id": 2, "name": "none", "flag": None, "price": Decimal("9.99"), "day": None},  # null or null: null
        {"id": 3, "name": "Bob", "flag": True, "price": None, "day": None},  # no branch, no else: null
    ]
    source = pa.table({"id": [1, 3, 4], "qty": pa.array([1, 50, 8], pa.int32()), "op": ["keep", "bump", "new"]})
    table.merge(
        source, on=["id"],
        when_matched_update={"qty": "case when source.op = 'bump' and source.qty > target.qty then source.qty else qty end",
                             "flag": "source.qty > qty"},
        when_not_matched_insert={"id": "source.id", "name": "case source.op when 'new' then 'fresh' end"},
    )  # fmt: skip
    assert rows(table, "qty", "name", "flag") == [
        {"id": 1, "qty": 5, "name": "ANN", "flag": False},
        {"id": 2, "qty": None, "name": "none", "flag": None},
        {"id": 3, "qty": 50, "name": "Bob", "flag": True},
        {"id": 4, "qty": None, "name": "fresh", "flag": None},
    ]


def test_a_boolean_column_alone_is_a_condition(table: mor.Table) -> None:
    table.update({"flag": "not flag or qty is null"}, where="true")  # as a value too
    assert column(table, "flag") == [False, True, True]
    table.update({"flag": "not (qty > 0)"}, where="true")
    assert column(table, "flag") == [False, None, True]
    table.update({"flag": "qty > 0"}, where="true")
    assert [r["id"] for r in table.scan(filter="flag").to_arrow().to_pylist()] == [1]
    assert [r["id"] for r in table.scan(filter="not flag or id = 2").to_arrow().to_pylist()] == [2, 3]
    with pytest.raises(mor.InvalidFilterError, match="only a boolean column is a condition"):
        table.scan(filter="qty and flag").count()


def test_decimal_arithmetic_past_38_digits_keeps_the_whole_digits_as_spark_does(catalog: mor.Catalog) -> None:
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("amount", pa.decimal128(38, 2))])
    table = catalog.create_table("db.wide", schema=schema)
    big = Decimal("9" * 36 + ".99")
    table.append(pa.table({"id": [1, 2, 3], "amount": [Decimal("123456.79"), Decimal("0.05"), big]}, schema=schema))
    # decimal(38,2) * decimal(2,1) is decimal(41,3) exactly: Spark's decimal(38,3), then stored at 2 places half up.
    table.update({"amount": "amount * 1.1"}, where="id < 3")
    assert column(table, "amount") == [Decimal("135802.47"), Decimal("0.06"), big]  # 135802.469 -> .47, 0.055 -> .06
    table.update({"amount": "amount * amount"}, where="id = 2")  # (38,2)*(38,2): decimal(38,4)
    assert column(table, "amount")[1] == Decimal("0.00")  # 0.0036 -> 0.00
    before = table.metadata_location
    with pytest.raises(mor.SchemaMismatchError, match="does not fit"):  # an overflow is an error, never NULL or wrapped
        table.update({"amount": "amount * 10"}, where="id = 3")
    assert table.refresh().metadata_location == before
    table.delete("id = 3")
    assert table.scan(filter="amount * 1.1 > 100").count() == 1  # filters compute as values do


def test_a_coalesce_operand_is_computed_only_where_those_before_it_are_null(catalog: mor.Catalog) -> None:
    rows = pa.table({"id": [1, 2, 3, 4], "x": pa.array([5, None, 7, None], pa.int64()), "y": pa.array([0, 4, 0, 0], pa.int64())})
    table = catalog.create_table("db.coalesced", schema=rows.schema)
    table.append(rows)
    # 100 / y and 1 / (y - y) divide by zero, but only on rows an operand before them has answered.
    table.update({"x": "coalesce(x, 100 / y, 1 / (y - y))"}, where="id < 4")
    assert column(table, "x") == [5, 25, 7, None]
    assert sorted(table.scan(filter="id < 4 and coalesce(x, 10 / y) > 6").to_arrow()["id"].to_pylist()) == [2, 3]
    before = table.metadata_location
    with pytest.raises(mor.InvalidFilterError, match="divide by zero"):  # row 4: no operand before it answers
        table.delete("coalesce(x, 10 / y) > 6")
    assert table.refresh().metadata_location == before


def test_an_operators_second_operand_is_computed_only_where_its_first_is_set(catalog: mor.Catalog) -> None:
    rows = pa.table(
        {"id": [1, 2, 3], "x": pa.array([0, 4, None], pa.int64()), "y": pa.array([0, 5, 0], pa.int64()), "raw": ["7", "x", "x"]}
    ).append_column("n", pa.array([None] * 3, pa.float64()))
    table = catalog.create_table("db.operands", schema=rows.schema)
    table.append(rows)
    # 100 / y divides by zero on rows 1 and 3, where the left operand is NULL: Spark never computes it.
    table.update({"n": "nullif(x, 0) + 100 / y"}, where="true")
    assert column(table, "n") == [None, 24.0, None]
    # A divisor first: 10 / y is not computed where the divisor nullif(x, 0) is NULL.
    assert table.scan(filter="(10 / y) / nullif(x, 0) > 0").to_arrow()["id"].to_pylist() == [2]
    # A comparison: cast('x' as int) is not computed where the left side is NULL ...
    assert table.scan(filter="nullif(x, 4) > cast(raw as int)").count() == 0
    before = table.metadata_location
    with pytest.raises(mor.InvalidFilterError):  # ... but is where it is set (row 2)
        table.delete("x > cast(raw as int)")
    assert table.refresh().metadata_location == before


def test_a_case_branch_is_computed_only_for_the_rows_that_take_it(catalog: mor.Catalog) -> None:
    rows = pa.table({"id": [1, 2, 3, 4], "raw": ["12", "x", "7", None], "n": pa.array([None] * 4, pa.int64()), "big": [1, 2**62, 3, 4]})
    table = catalog.create_table("db.guarded", schema=rows.schema)
    table.append(rows)
    # cast('x' as int) and 2^62 * 100 would fail: no row that computes them takes their branch.
    table.update({"n": "case when raw like '1%' then cast(raw as int) when raw = '7' then cast(raw as int) * 2 else -1 end"}, where="true")
    assert column(table, "n") == [12, -1, 14, -1]
    table.update({"n": "case when big < 1000 then big * 100 else n end"}, where="true")
    assert column(table, "n") == [100, -1, 300, 400]
    before = table.metadata_location
    with pytest.raises(mor.SchemaMismatchError, match="'x'"):  # a row that takes the branch still fails
        table.update({"n": "case when id > 0 then cast(raw as int) end"}, where="true")
    assert table.refresh().metadata_location == before
