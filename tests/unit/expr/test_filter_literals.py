"""Date, time and number literals as SQL users type them give DuckDB's rows for the same
predicate on the same Arrow data (DuckDB's session zone set to UTC: a time without zone
compared with a timestamptz column is UTC in both)."""

from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal

import pyarrow as pa
import pytest

import mor
from mor.expr.filters import parse_filter
from tests import duckdb_rows

UTC = dt.UTC
_TIMES = [
    dt.datetime(2025, 6, 4, 23, 59, 59, 999999),
    dt.datetime(2025, 6, 5),
    dt.datetime(2025, 6, 5, 8),
    dt.datetime(2025, 6, 5, 10),
    dt.datetime(2025, 6, 5, 10, 0, 0, 123456),
    dt.datetime(2025, 6, 5, 10, 0, 0, 500000),
    dt.datetime(2025, 6, 6, 0, 0, 0, 1),
    None,
]
ROWS = pa.table(
    {
        "id": pa.array(range(len(_TIMES)), pa.int64()),
        "d": pa.array([t.date() if t else None for t in _TIMES], pa.date32()),
        "ts": pa.array(_TIMES, pa.timestamp("us")),
        "tz": pa.array([t.replace(tzinfo=UTC) if t else None for t in _TIMES], pa.timestamp("us", tz="UTC")),
        "fare": pa.array(
            [Decimal(v) if v else None for v in ["149.49", "149.50", "149.51", "1.23", "-1.23", "0.00", "99999999.99", None]],
            pa.decimal128(10, 2),
        ),  # fmt: skip
        "i": pa.array([1, 2, -1, 0, 3, None, 2**31 - 1, -(2**31)], pa.int32()),
    }
)
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), *(f for f in ROWS.schema if f.name != "id")])

TEMPORAL_VALUES = [
    "'2025-06-05'",
    "'2025-06-05 10:00'",
    "'2025-06-05 10:00:00'",
    "'2025-06-05T10:00:00'",
    "'2025-06-05 10:00:00.5'",
    "'2025-06-05T10:00:00.123456'",
    "'2025-06-05 10:00:00.1234567'",
    "'2025-06-05T10:00:00+00:00'",
    "'2025-06-05 10:00:00Z'",
    "date '2025-06-05'",
    "date '2025-06-06'",
    "timestamp '2025-06-05'",
    "timestamp '2025-06-05 10:00'",
    "timestamp '2025-06-05 10:00:00.123456'",
    "timestamp '2025-06-04 23:59:59.999999'",
]
ZONED_VALUES = ["'2025-06-05 12:00:00+02:00'", "'2025-06-05T03:00:00-07:00'", "'2025-06-05 10:00:00.5+00:30'"]
OPERATORS = ["=", "!=", "<", "<=", ">", ">="]
# Forms DuckDB does not read (a zone after minutes without seconds), and what they mean.
DUCKDB_SPELLING = {"'2025-06-05T10:00Z'": "'2025-06-05T10:00:00Z'", "'2025-06-05 12:00+02:00'": "'2025-06-05 12:00:00+02:00'"}


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> mor.Table:
    catalog = mor.load_catalog(tmp_path_factory.mktemp("literals") / "warehouse", create=True)
    table = catalog.create_table("db.t", schema=SCHEMA)
    table.append(ROWS.slice(0, 4).cast(SCHEMA))  # two files: metrics pruning takes part
    table.append(ROWS.slice(4).cast(SCHEMA))
    return table


def duckdb_ids(where: str, rows: pa.Table = ROWS) -> list[int]:
    return duckdb_rows.duckdb_ids(rows, where)


def mor_ids(table: mor.Table, where: str) -> list[int]:
    return sorted(table.scan(filter=where).to_arrow().column("id").to_pylist())


def _temporal_cases() -> list[str]:
    cases = [f"{column} {op} {value}" for column in ("d", "ts", "tz") for op in OPERATORS for value in TEMPORAL_VALUES]
    cases += [f"{column} {op} {value}" for column in ("d", "tz") for op in ("=", "<", ">=") for value in ZONED_VALUES]
    cases += [f"{column} between '2025-06-05' and '2025-06-05 10:00'" for column in ("d", "ts", "tz")]
    cases += [f"{column} not between date '2025-06-05' and timestamp '2025-06-05 10:00'" for column in ("d", "ts", "tz")]
    cases += [f"{column} in ('2025-06-05', '2025-06-05 10:00:00')" for column in ("d", "ts", "tz")]
    cases += [f"{column} not in ('2025-06-05 08:00', timestamp '2025-06-05 10:00')" for column in ("ts", "tz")]
    cases += [f"not ({column} = timestamp '2025-06-05 10:00')" for column in ("d", "ts", "tz")]
    cases += ["timestamp '2025-06-05 10:00' > d", "'2025-06-05' <= tz"]
    return cases


@pytest.mark.parametrize("where", _temporal_cases())
def test_date_and_time_literals_give_duckdbs_rows(table: mor.Table, where: str) -> None:
    assert mor_ids(table, where) == duckdb_ids(where)


@pytest.mark.parametrize(("where", "duckdb_where"), [(f"tz = {k}", f"tz = {v}") for k, v in DUCKDB_SPELLING.items()])
def test_a_zone_after_minutes_reads_as_with_seconds(table: mor.Table, where: str, duckdb_where: str) -> None:
    assert mor_ids(table, where) == duckdb_ids(duckdb_where) != []


def test_zone_less_time_on_a_timestamptz_column_is_utc(table: mor.Table) -> None:
    assert mor_ids(table, "tz = '2025-06-05 10:00'") == mor_ids(table, "tz = '2025-06-05T10:00:00+00:00'") == [3]
    assert mor_ids(table, "tz = '2025-06-05 12:00+02:00'") == [3]
    assert mor_ids(table, "tz = timestamp '2025-06-05 12:00:00+02:00'") == [3]  # Spark's TIMESTAMP: an instant
    assert mor_ids(table, "ts = date '2025-06-05'") == mor_ids(table, "ts = '2025-06-05 00:00'") == [1]


@pytest.mark.parametrize(
    ("where", "message"),
    [
        ("ts = '2025-06-05 12:00:00+02:00'", "without zone"),
        ("d = '2025-13-01'", "month"),
        ("tz > '2025-06-05 25:00'", "time of day"),
        ("ts < 'yesterday'", "not a date or timestamp"),
        ("i = date '2025-06-05'", "cannot be compared"),
    ],
)
def test_bad_date_and_time_literals_are_refused(table: mor.Table, where: str, message: str) -> None:
    with pytest.raises(mor.InvalidFilterError, match=message):
        table.scan(filter=where).to_arrow()


def test_a_typed_literal_with_bad_text_is_refused_where_it_stands() -> None:
    with pytest.raises(mor.InvalidFilterError, match=r"offset 9.*\n.*\n.*\^"):
        parse_filter("d = date '2025-02-30'")


# -- numbers -------------------------------------------------------------------------------------

NUMBER_CASES = [
    "fare > 149.5",
    "fare >= 149.505",
    "fare = 149.5",
    "fare = 150",
    "fare = 1.234",
    "fare != 1.234",
    "not (fare = 1.234)",
    "fare < 1.234",
    "fare <= -1.235",
    "fare > -1.2351",
    "fare < 1e9",
    "fare > 99999999.995",
    "fare >= -1e12",
    "fare in (1.23, 1.234, 150)",
    "fare not in (1.234)",
    "fare not in (1.234, 0)",
    "fare between 1.225 and 149.505",
    "fare not between 0.001 and 149.499",
    "149.5 < fare",
    "i > 1.5",
    "i >= 1.5",
    "i = 2.0",
    "i = 1.5",
    "i != 1.5",
    "i < -0.5",
    "i <= -0.5",
    "i in (1.5, 2)",
    "i not in (1.5, 2)",
    "i not in (0.5)",
    "i > 99999999999999999999",
    "i < 99999999999999999999",
    "i != 99999999999999999999",
    "i >= -99999999999999999999.5",
    "i between 0.5 and 2.5",
    "id < 2.5",
    "id > 1e30",
]


@pytest.mark.parametrize("where", NUMBER_CASES)
def test_numbers_of_any_scale_compare_exactly_as_duckdb_does(table: mor.Table, where: str) -> None:
    assert mor_ids(table, where) == duckdb_ids(where)


@pytest.mark.parametrize("mode", ["merge-on-read", "copy-on-write"])
@pytest.mark.parametrize("where", ["fare > 149.5", "not (fare = 1.234)", "tz < '2025-06-05 10:00'", "d = timestamp '2025-06-05 10:00'"])
def test_delete_with_such_literals_keeps_duckdbs_other_rows(tmp_path: object, where: str, mode: str) -> None:
    catalog = mor.load_catalog(f"{tmp_path}/warehouse", create=True)
    table = catalog.create_table("db.t", schema=SCHEMA)
    table.append(ROWS.cast(SCHEMA))
    table.delete(where, mode=mode)
    assert sorted(table.scan().to_arrow().column("id").to_pylist()) == duckdb_ids(f"NOT ({where}) OR ({where}) IS NULL")


WIDE = pa.table(
    {
        "id": pa.array(range(4), pa.int64()),
        "w": pa.array(
            [
                Decimal("9999999999999999999999999999.9999999999"),
                Decimal("-9999999999999999999999999999.9999999998"),
                Decimal("1.0000000001"),
                None,
            ],
            pa.decimal128(38, 10),
        ),  # fmt: skip
    }
)


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        ("w = 9999999999999999999999999999.9999999999", [0]),
        ("w < -9999999999999999999999999999.99999999985", []),
        ("w <= -9999999999999999999999999999.9999999998", [1]),
        ("w > 1.0000000001", [0]),
        ("w >= 1.00000000005", [0, 2]),
        ("w in (1.0000000001, 1.00000000015)", [2]),
        ("w != 1.00000000015", [0, 1, 2]),
    ],
)
def test_decimals_of_38_digits_compare_exactly(tmp_path: object, where: str, expected: list[int]) -> None:
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), WIDE.schema.field("w")])
    table = mor.load_catalog(f"{tmp_path}/warehouse", create=True).create_table("db.w", schema=schema)
    table.append(WIDE.cast(schema))
    assert mor_ids(table, where) == expected
    if not re.search(r"\.\d{11}\b", where):  # 11 decimals: DuckDB casts w to DECIMAL(38,11) and fails
        assert duckdb_ids(where, WIDE) == expected
    with pytest.raises(mor.InvalidFilterError, match="digits; at most 38"):
        mor_ids(table, "w * 2 > 2.00000000019")  # Arrow's decimal128 holds no product this wide
