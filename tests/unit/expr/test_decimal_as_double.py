"""A decimal meeting a double is the nearest double to it, as in Spark (Java's
BigDecimal.doubleValue): Arrow's own cast scales by a power of ten in floating point and turned
0.1 at scale 7 into 0.09999999999999999, so `p = q` missed equal values."""

from __future__ import annotations

from decimal import Decimal

import pyarrow as pa
import pytest

import mor

DECIMALS = ["0.1000000", "0.4000000", "0.8000000", "1234.5678901", None]
SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("p", pa.decimal128(20, 7)),
        pa.field("q", pa.float64()),
        pa.field("v", pa.float64()),
    ]
)


@pytest.fixture
def table(catalog: mor.Catalog) -> mor.Table:
    table = catalog.create_table("db.decimals", schema=SCHEMA)
    p = [None if d is None else Decimal(d) for d in DECIMALS]
    q = [None if d is None else float(d) for d in DECIMALS]
    table.append(pa.table({"id": range(len(p)), "p": p, "q": q, "v": [None] * len(p)}, schema=SCHEMA))
    return table


@pytest.mark.parametrize("where", ["p = q", "q = p", "cast(p as double) = q", "p * 1.0 = q", "p + q = q * 2", "p / 1.0 = q"])
def test_equal_values_compare_equal(table: mor.Table, where: str) -> None:
    assert sorted(table.scan(filter=where).to_arrow()["id"].to_pylist()) == [0, 1, 2, 3]


@pytest.mark.parametrize(("where", "ids"), [("p = 1e-1", [0]), ("p in (4e-1, 8e-1)", [1, 2]), ("p > 8e-1", [3]), ("p <= 4E-1", [0, 1])])
def test_a_double_literal_compares_with_a_decimal_as_spark_compares_them(table: mor.Table, where: str, ids: list[int]) -> None:
    """`1e-1` is a double (Spark's literal rule); the decimal 0.1 meets it as the double 0.1."""
    assert sorted(table.scan(filter=where).to_arrow()["id"].to_pylist()) == ids


def test_a_decimal_stored_in_a_double_column_is_the_nearest_double(table: mor.Table) -> None:
    table.update({"v": "p"}, where="true")
    assert table.scan().to_arrow().sort_by("id")["v"].to_pylist() == [0.1, 0.4, 0.8, 1234.5678901, None]


def test_a_double_without_a_decimal_is_null_as_a_decimal(catalog: mor.Catalog) -> None:
    """NaN and the infinities have no decimal: Spark's cast gives NULL (ANSI mode too), so an
    UPDATE stores NULL and a filter sees NULL, where mor raised before."""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("q", pa.float64()), pa.field("d", pa.decimal128(10, 2))])
    table = catalog.create_table("db.nans", schema=schema)
    q = [1.5, float("nan"), float("inf"), float("-inf"), None]
    table.append(pa.table({"id": range(5), "q": q, "d": [None] * 5}, schema=schema))
    assert sorted(table.scan(filter="cast(q as decimal(10,2)) is null").to_arrow()["id"].to_pylist()) == [1, 2, 3, 4]
    table.update({"d": "q"}, where="true")
    assert table.scan().to_arrow().sort_by("id")["d"].to_pylist() == [Decimal("1.50"), None, None, None, None]
