"""The value conformance table: SQL text that an UPDATE (or a MERGE clause) stores in a column,
over the rows below, and what the column holds after, or the error. mor stores it locally
(tests/unit/expr/test_value_conformance.py); Spark SQL judges every case: an `INSERT INTO` a
table with the column's type `SELECT id, <text> FROM rows`, so Spark's own store assignment
(ANSI) decides the value or refuses it (tests/spark/test_spark_judges_values.py). A quoted date or
time into a date or time column is cast, as the UPDATEs of Delta and Iceberg-Spark cast it."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pyarrow as pa

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("i", pa.int64()),
        pa.field("f", pa.float64()),
        pa.field("s", pa.string()),
        pa.field("d", pa.date32()),
        pa.field("dec", pa.decimal128(10, 2)),
    ]
)
ROWS = pa.table(
    {
        "id": [0, 1, 2, 3, 4],
        "i": [1, -2, None, 100, 7],
        "f": [1.5, -2.5, None, 2.7, 8.9],
        "s": ["a", "B", None, "12", " x "],
        "d": [dt.date(2024, 1, 31), dt.date(2024, 2, 29), None, dt.date(1999, 12, 31), dt.date(2024, 3, 1)],
        "dec": [Decimal("1.25"), Decimal("-0.50"), None, Decimal("99.99"), Decimal("0.01")],
    },
    schema=SCHEMA,
)
SPARK_SCHEMA = "id long, i long, f double, s string, d date, dec decimal(10,2)"
# the target column's type: Arrow's (mor's table) and Spark SQL's name
TYPES: dict[str, tuple[pa.DataType, str]] = {
    "int": (pa.int32(), "int"),
    "long": (pa.int64(), "bigint"),
    "double": (pa.float64(), "double"),
    "dec": (pa.decimal128(5, 2), "decimal(5,2)"),
    "string": (pa.string(), "string"),
    "bool": (pa.bool_(), "boolean"),
    "date": (pa.date32(), "date"),
    "ts": (pa.timestamp("us"), "timestamp_ntz"),
}


@dataclass(frozen=True)
class Case:
    target: str  # a key of TYPES
    text: str  # the value's SQL text
    expected: list[Any] | None  # the column after, row by row; None: refused
    error: str = ""  # for a refusal: a fragment of mor's message
    literal_cast: bool = False  # a quoted date or time: Spark's INSERT refuses it, its UPDATE (Delta's, Iceberg-Spark's) casts it


def _dates(*days: str | None) -> list[dt.date | None]:
    return [dt.date.fromisoformat(d) if d else None for d in days]


def _decimals(*values: str | None) -> list[Decimal | None]:
    return [Decimal(v) if v is not None else None for v in values]


CASES = [
    Case("long", "i + 1", [2, -1, None, 101, 8]),
    Case("double", "i", [1.0, -2.0, None, 100.0, 7.0]),  # a whole number into a double
    Case("int", "f", [1, -2, None, 2, 8]),  # a double into an int: toward zero
    Case("dec", "dec * 1.005", _decimals("1.26", "-0.50", None, "100.49", "0.01")),  # rounded half up into (5,2)
    Case("dec", "dec / 3", _decimals("0.42", "-0.17", None, "33.33", "0.00")),
    Case("bool", "dec / 3 * 3 = dec", [False, False, None, True, False]),  # decimal division: 1.25 / 3 is 0.416667
    Case("dec", "dec / 8 * 10", _decimals("1.56", "-0.63", None, "124.99", "0.01")),
    Case("long", "coalesce(i, 0) * 2", [2, -4, 0, 200, 14]),
    Case("long", "case when i > 5 then 1 when i < 0 then -1 else 0 end", [0, -1, 0, 1, 1]),
    Case("long", "greatest(i, 0)", [1, 0, 0, 100, 7]),
    Case("long", "if(i > 5, 1, 0)", [0, 0, 0, 1, 1]),  # a NULL condition takes the else
    # a branch's condition, and the right side of `and`, are computed only where they decide: no zero divisor
    Case("bool", "case when i > 50 then false else 100 / (i - 100) < 0 end", [True, True, None, False, True]),
    Case("bool", "i != 100 and 100 / (i - 100) < 0", [True, True, None, False, True]),
    Case("long", "case when i = 100 then 0 when 100 / (i - 100) < -1 then 1 else 2 end", [1, 2, 2, 0, 1]),
    # a nested CASE is computed only for the rows its branch takes: cast('a' as int) is never tried
    Case("int", "case when s in ('a', 'B', ' x ') then 0 else case when i > 1000 then 1 else cast(s as int) end end", [0, 0, None, 12, 0]),
    Case("string", "if(s = 'a', 'yes', s)", ["yes", "B", None, "12", " x "]),
    Case("long", "pmod(i, 3)", [1, 1, None, 1, 1]),
    Case("long", "pmod(i, -3)", [1, -2, None, 1, 1]),  # Spark's (r + n) % n of a negative remainder
    Case("dec", "dec % 0.3", _decimals("0.05", "-0.20", None, "0.09", "0.01")),  # exact, the dividend's sign
    Case("double", "f % 1", [0.5, -0.5, None, 0.7000000000000002, 0.9000000000000004]),  # Java's %: exact fmod
    Case("dec", "pmod(dec, 0.3)", _decimals("0.05", "0.10", None, "0.09", "0.01")),
    Case("dec", "round(cast(dec as decimal(4,2)), 0)", _decimals("1.00", "-1.00", None, "100.00", "0.00")),  # 100 needs a whole digit more
    Case("long", "nullif(i, 1)", [None, -2, None, 100, 7]),
    Case("long", "i % 3", [1, -2, None, 1, 1]),
    Case("double", "round(f, 0)", [2.0, -3.0, None, 3.0, 9.0]),
    Case("long", "floor(f)", [1, -3, None, 2, 8]),
    Case("long", "ceil(f)", [2, -2, None, 3, 9]),
    Case("bool", "i > 0", [True, False, None, True, True]),
    Case("bool", "i in (1, 7, null)", [True, None, None, None, True]),
    Case("bool", "i <=> null", [False, False, True, False, False]),
    Case("string", "s || '-' || i", ["a-1", "B--2", None, "12-100", " x -7"]),
    Case("string", "concat(s, i)", ["a1", "B-2", None, "12100", " x 7"]),
    Case("string", "upper(trim(s))", ["A", "B", None, "12", "X"]),
    Case("string", "substring(s, 2)", ["", "", None, "2", "x "]),
    Case("string", "cast(i as string)", ["1", "-2", None, "100", "7"]),
    Case("string", "f", ["1.5", "-2.5", None, "2.7", "8.9"]),  # a double into text, as Spark writes it
    Case("string", "f * 1e7", ["1.5E7", "-2.5E7", None, "2.7E7", "8.9E7"]),
    Case("string", "i", ["1", "-2", None, "100", "7"]),
    Case("string", "i > 0", ["true", "false", None, "true", "true"]),
    Case("date", "date_add(d, 1)", _dates("2024-02-01", "2024-03-01", None, "2000-01-01", "2024-03-02")),
    Case("date", "d + interval 1 day", _dates("2024-02-01", "2024-03-01", None, "2000-01-01", "2024-03-02")),
    Case("date", "date_sub(d, 31)", _dates("2023-12-31", "2024-01-29", None, "1999-11-30", "2024-01-30")),
    Case("long", "datediff(d, date '2024-01-01')", [30, 59, None, -8767, 60]),
    Case("long", "year(d) * 100 + month(d)", [202401, 202402, None, 199912, 202403]),
    Case("date", "'2024-05-06'", _dates(*["2024-05-06"] * 5), literal_cast=True),  # a quoted date into a date column
    Case("ts", "'2024-05-06 07:08:09'", [dt.datetime(2024, 5, 6, 7, 8, 9)] * 5, literal_cast=True),
    Case(
        "ts",
        "cast(d as timestamp_ntz) + interval 1 hour",
        [dt.datetime(2024, 1, 31, 1), dt.datetime(2024, 2, 29, 1), None, dt.datetime(1999, 12, 31, 1), dt.datetime(2024, 3, 1, 1)],
    ),  # fmt: skip
    # refused, and the table left as it was
    Case("int", "i * 100000000", None, "column 'v'"),  # 10,000,000,000 overflows an int (ANSI)
    Case("long", "i / 0", None, "divide by zero"),
    Case("int", "s", None, "is not stored in a column of type"),  # text into a number: Spark's store assignment refuses it
]
