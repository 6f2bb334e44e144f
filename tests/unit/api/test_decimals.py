"""Decimals fit by value on every write path (issue 43 item 2), as Spark's ANSI store assignment
puts them: a decimal of any precision or scale, an integer or a double goes into a decimal
column when every value, rounded HALF_UP (ties away from zero) to the column's scale, has at
most precision - scale digits before the point; otherwise a SchemaMismatchError names the
column and the first value, and the table stays as it was. `append(schema_mode="merge")`
widens the column's precision instead."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from unit_helpers import TableState

import mor
from mor.errors import SchemaMismatchError

pd = pytest.importorskip("pandas")
pl = pytest.importorskip("polars")


def rows_of(table: mor.Table) -> list[dict[str, Any]]:
    """The table's rows as dicts, by id (or by their first column)."""
    rows = table.scan().to_arrow().to_pylist()
    return sorted(rows, key=lambda r: r[next(iter(r))])


SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("amount", pa.decimal128(10, 2))])


def amounts(table: mor.Table) -> dict[int, Any]:
    return {r["id"]: r["amount"] for r in rows_of(table)}


@pytest.fixture
def table(catalog: mor.Catalog) -> mor.Table:
    t = catalog.create_table("db.d", schema=SCHEMA)
    t.append(pa.table({"id": [1, 2], "amount": [Decimal("1.50"), Decimal("99.99")]}, schema=SCHEMA))
    return t


def polars_rows(ids: list[int], values: list[str]) -> Any:
    return pl.DataFrame({"id": ids, "amount": [Decimal(v) for v in values]}, schema={"id": pl.Int64, "amount": pl.Decimal(38, 2)})


# -- precision narrowed when every value fits ------------------------------------------------


def test_a_polars_decimal_38_upserts_into_decimal_10_when_every_value_fits(table: mor.Table) -> None:
    source = polars_rows([2, 3], ["12345678.90", "-0.01"])
    assert source.to_arrow().schema.field("amount").type == pa.decimal128(38, 2)
    table.upsert(source, on=["id"])
    assert amounts(table) == {1: Decimal("1.50"), 2: Decimal("12345678.90"), 3: Decimal("-0.01")}
    assert table.arrow_schema().field("amount").type == pa.decimal128(10, 2)


def test_a_polars_decimal_38_fits_append_overwrite_and_merge(table: mor.Table) -> None:
    table.append(polars_rows([3], ["3.00"]))
    table.overwrite(polars_rows([1], ["4.00"]), where="id = 1")
    table.merge(polars_rows([2, 5], ["2.22", "5.55"]), on=["id"], when_matched_update="*", when_not_matched_insert="*")
    assert amounts(table) == {1: Decimal("4.00"), 2: Decimal("2.22"), 3: Decimal("3.00"), 5: Decimal("5.55")}


def test_a_value_too_large_is_refused_naming_column_and_value_and_the_table_is_unchanged(table: mor.Table) -> None:
    before = TableState(table)
    with pytest.raises(SchemaMismatchError, match=r"column 'amount': value 123456789\.00 does not fit the table's decimal\(10, 2\)"):
        table.upsert(polars_rows([2, 3], ["1.00", "123456789.00"]), on=["id"])
    before.assert_unchanged()


# -- scale: rounded HALF_UP, as Spark's changePrecision(ROUND_HALF_UP) -----------------------


def test_more_decimal_places_round_half_up_away_from_zero(table: mor.Table) -> None:
    source = pa.table(
        {"id": [3, 4, 5, 6], "amount": [Decimal("0.625"), Decimal("-0.625"), Decimal("2.344"), Decimal("-2.345")]},
        schema=pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("amount", pa.decimal128(4, 3))]),
    )
    table.append(source)
    got = amounts(table)
    assert [got[i] for i in (3, 4, 5, 6)] == [Decimal("0.63"), Decimal("-0.63"), Decimal("2.34"), Decimal("-2.35")]


def test_a_value_that_rounds_past_the_precision_is_refused(catalog: mor.Catalog) -> None:
    table = catalog.create_table("db.small", schema=pa.schema([("amount", pa.decimal128(5, 2))]))
    with pytest.raises(SchemaMismatchError, match=r"value 999\.995 does not fit the table's decimal\(5, 2\)"):
        table.append(pa.table({"amount": pa.array([Decimal("999.995")], pa.decimal128(6, 3))}))
    table.append(pa.table({"amount": pa.array([Decimal("999.994")], pa.decimal128(6, 3))}))
    assert rows_of(table) == [{"amount": Decimal("999.99")}]


def test_integers_fit_a_decimal_column_by_value(table: mor.Table) -> None:
    table.append(pa.table({"id": [3], "amount": pa.array([12], pa.int32())}))
    assert amounts(table)[3] == Decimal("12.00")
    with pytest.raises(SchemaMismatchError, match=r"value 123456789 does not fit"):
        table.append(pa.table({"id": [4], "amount": [123456789]}))


# -- arithmetic: a double result cast back with HALF_UP --------------------------------------


def test_update_times_1_1_on_a_decimal_5_2_column_rounds_half_up(catalog: mor.Catalog) -> None:
    df = pd.DataFrame({"id": [1, 2, 3], "amount": [Decimal("1.50"), Decimal("2.25"), Decimal("-2.25")]})
    table = catalog.create_table("db.u", schema=pa.schema([("id", pa.int64()), ("amount", pa.decimal128(5, 2))]))
    table.append(df)
    table.update({"amount": pc.field("amount") * 1.1}, where="true")
    # 1.5 * 1.1 is the double 1.6500000000000001, 2.25 * 1.1 is 2.4750000000000005
    assert amounts(table) == {1: Decimal("1.65"), 2: Decimal("2.48"), 3: Decimal("-2.48")}
    assert table.arrow_schema().field("amount").type == pa.decimal128(5, 2)


def test_a_double_is_read_as_its_shortest_decimal_then_rounded_half_up(table: mor.Table) -> None:
    table.append(pa.table({"id": [3, 4, 5], "amount": [2.675, -2.675, 1e-30]}))  # 2.675 is 2.67499999... in binary
    got = amounts(table)
    assert [got[i] for i in (3, 4, 5)] == [Decimal("2.68"), Decimal("-2.68"), Decimal("0.00")]


def test_an_update_that_overflows_is_refused_and_the_table_is_unchanged(catalog: mor.Catalog) -> None:
    table = catalog.create_table("db.o", schema=pa.schema([("id", pa.int64()), ("amount", pa.decimal128(5, 2))]))
    table.append(pa.table({"id": [1, 2], "amount": pa.array([Decimal("1.00"), Decimal("999.99")], pa.decimal128(5, 2))}))
    before = TableState(table)
    with pytest.raises(SchemaMismatchError) as e:
        table.update({"amount": pc.field("amount") * 1.1}, where="true")
    assert "column 'amount': value 1099.989" in str(e.value) and "decimal(5, 2)" in str(e.value)
    assert "widen('amount', pa.decimal128(6, 2))" in str(e.value)
    before.assert_unchanged()
    with pytest.raises(SchemaMismatchError, match="value nan does not fit the table's decimal\\(5, 2\\): it is no number"):
        table.update({"amount": pc.field("amount") * float("nan")}, where="id = 1")
    before.assert_unchanged()


# -- widening: schema_mode="merge" -----------------------------------------------------------


def test_a_strict_append_of_larger_values_names_schema_mode_merge_which_widens(catalog: mor.Catalog) -> None:
    sample = pd.DataFrame({"id": [1], "amount": [Decimal("123.45")]})
    table = catalog.create_table("db.w", schema=pa.Schema.from_pandas(sample, preserve_index=False))
    assert table.arrow_schema().field("amount").type == pa.decimal128(5, 2)
    table.append(sample)
    bigger = pd.DataFrame({"id": [2], "amount": [Decimal("12345.67")]})
    before = TableState(table)
    with pytest.raises(SchemaMismatchError, match=r'value 12345\.67 .*schema_mode="merge"\) widens the column to pa\.decimal128\(7, 2\)'):
        table.append(bigger)
    before.assert_unchanged()
    table.append(bigger, schema_mode="merge")
    assert table.arrow_schema().field("amount").type == pa.decimal128(7, 2)
    assert amounts(table) == {1: Decimal("123.45"), 2: Decimal("12345.67")}


def test_merge_widens_a_column_of_another_scale_to_the_data_s_digits_before_the_point(table: mor.Table) -> None:
    data = pa.table({"id": [3], "amount": pa.array([Decimal("1234567890.12345")], pa.decimal128(15, 5))})
    with pytest.raises(SchemaMismatchError, match="widens the column to pa.decimal128\\(12, 2\\)"):
        table.append(data)
    table.append(data, schema_mode="merge")
    assert table.arrow_schema().field("amount").type == pa.decimal128(12, 2)  # 10 digits before the point, the table's scale
    assert amounts(table)[3] == Decimal("1234567890.12")


# -- nested fields ---------------------------------------------------------------------------


def test_a_decimal_in_a_struct_narrows_by_value_but_is_not_rounded(catalog: mor.Catalog) -> None:
    struct = pa.struct([("price", pa.decimal128(10, 2))])
    table = catalog.create_table("db.n", schema=pa.schema([("id", pa.int64()), ("info", struct)]))
    wide = pa.struct([("price", pa.decimal128(38, 3))])
    table.append(pa.table({"id": [1], "info": pa.array([{"price": Decimal("12.340")}], wide)}))
    assert rows_of(table) == [{"id": 1, "info": {"price": Decimal("12.34")}}]
    with pytest.raises(SchemaMismatchError, match="column 'info.price': value 12.345 needs rounding"):
        table.append(pa.table({"id": [2], "info": pa.array([{"price": Decimal("12.345")}], wide)}))
