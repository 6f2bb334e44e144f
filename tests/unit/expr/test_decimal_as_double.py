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


def test_a_decimal_stored_in_a_double_column_is_the_nearest_double(table: mor.Table) -> None:
    table.update({"v": "p"}, where="true")
    assert table.scan().to_arrow().sort_by("id")["v"].to_pylist() == [0.1, 0.4, 0.8, 1234.5678901, None]
