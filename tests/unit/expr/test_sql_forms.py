"""The SQL forms of filter text (issue 43, item 4): LIKE with `%` and `_` anywhere and its
escapes, `cast(x as type)` and `x::type`, `extract(part from t)`, `current_date`,
`current_timestamp` and intervals, `in` over terms. What they parse to (a value folds to a
typed value that prunes; a column's form is a residual), the rows they select judged by DuckDB
(where Spark SQL and DuckDB differ, DuckDB is given Spark's meaning in its own words), and
every refusal saying what is accepted, and where."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyarrow as pa
import pytest
from pyiceberg.expressions import And, EqualTo, GreaterThan, GreaterThanOrEqual, NotStartsWith, StartsWith

import mor
import mor.expr.temporal
from mor.expr.arrow_rows import to_arrow_filter
from mor.expr.filters import bind_filter, parse_filter, pruning_filter
from mor.expr.literals import DateText, TimestampText, TimestamptzText
from mor.expr.residual import Residual
from mor.format.arrow_types import from_arrow_schema
from tests import duckdb_rows

UTC = dt.UTC
NOW = dt.datetime(2025, 6, 10, 12, 30, 15, 250000, tzinfo=UTC)
ROWS = pa.table(
    {
        "id": pa.array(range(8), pa.int64()),
        "s": ["cust_1x", "cust11", "a\nb", None, "50%", "x_5", "a\\b", ""],
        "n": ["12", " 7 ", "-3", None, "0", "5", "+4", "100"],
        "i": pa.array([1, -2, None, 300, 0, 7, 12, -128], pa.int32()),
        "f": [2.7, -2.7, 0.5, None, 1e3, 2.25, -0.5, 2.5],
        "dec": pa.array(
            [Decimal(v) if v else None for v in ["2.75", "-2.75", None, "1.05", "0", "9.99", "-0.05", "2.25"]], pa.decimal128(5, 2)
        ),  # fmt: skip
        "d": pa.array(
            [
                dt.date(2025, 1, 5),
                dt.date(2025, 1, 6),
                dt.date(2024, 12, 31),
                None,
                dt.date(2025, 3, 31),
                dt.date(2025, 2, 28),
                dt.date(2025, 6, 3),
                dt.date(2025, 6, 10),
            ]
        ),  # fmt: skip
        "ts": pa.array(
            [
                dt.datetime(2025, 1, 5, 10, 0, 5, 500000),
                dt.datetime(2025, 1, 6),
                None,
                dt.datetime(2024, 2, 29, 23, 59, 59),
                dt.datetime(2025, 6, 1, 1, 2, 3),
                dt.datetime(2025, 1, 1),
                dt.datetime(2025, 6, 10, 11, 45),
                dt.datetime(2025, 6, 10, 12, 0),
            ],
            pa.timestamp("us"),
        ),  # fmt: skip
        "tz": pa.array(
            [dt.datetime(2025, 6, 10, 11, 0, tzinfo=UTC), None, dt.datetime(2025, 6, 10, 11, 31, tzinfo=UTC)] * 2
            + [dt.datetime(2025, 1, 1, 0, 0, 0, 123000, tzinfo=UTC)] * 2,
            pa.timestamp("us", tz="UTC"),
        ),  # fmt: skip
        "sd": ["2025-01-05", " 2025-01-06 ", "2025-01-05 10:00:00", None, "2024-02-29T01:00", "2025-12-31", "2025-01-05", "2025-01-06"],
    }
)
ARROW_SCHEMA = ROWS.schema.set(0, pa.field("id", pa.int64(), nullable=False))
SCHEMA = from_arrow_schema(ARROW_SCHEMA)


@pytest.fixture(autouse=True)
def clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mor.expr.temporal, "now", lambda: NOW)


def _rows(text: str) -> list[int]:
    expression = to_arrow_filter(bind_filter(SCHEMA, parse_filter(text)), SCHEMA)
    return sorted(ROWS.filter(expression).column("id").to_pylist())


def _duckdb(where: str) -> list[int]:
    return duckdb_rows.duckdb_ids(ROWS, where)


# (mor's text, DuckDB's words for the same rows where they differ)
CASES = [
    ("s like 'cust_1%'", None),
    ("s like '%5'", None),
    ("s like '%'", None),
    ("s like '_'", None),
    ("s like ''", None),
    ("s like 'a_b'", None),  # `_` matches a newline
    ("s like 'a%b'", None),
    ("s not like 'a%b'", None),
    ("not s like '%\\_%'", "not s like '%\\_%' escape '\\'"),
    ("s like '%\\%'", "s like '%\\%' escape '\\'"),
    ("s like 'a\\\\\\\\b'", "s = 'a\\b'"),  # Spark reads the text 'a\\\\b' as a\\b: a LIKE pattern of one backslash
    ("s like 'x!_%' escape '!'", "s like 'x!_%' escape '!'"),
    ("upper(s) like 'CUST_1_'", None),
    ("lower(s) not like '%1%'", None),
    ("cast(n as int) > 5", "cast(trim(n) as int) > 5"),
    ("n::bigint = 7", "cast(trim(n) as bigint) = 7"),
    ("cast(f as int) = 2", "cast(trunc(f) as int) = 2"),
    ("cast(f as int) < 0", "cast(trunc(f) as int) < 0"),
    ("cast(dec as int) = -2", "cast(trunc(dec) as int) = -2"),
    ("cast(dec as decimal(3,1)) = -2.8", "round(dec, 1) = -2.8"),
    ("cast(dec as decimal(4,1)) = 2.3", "round(dec, 1) = 2.3"),
    ("cast(f as decimal(6,1)) >= 2.3", "round(f, 1) >= 2.3"),
    ("cast(i as double) / 4 > 1", None),
    ("cast(i as float) = 7", None),
    ("cast(i as smallint) = 300", None),
    ("cast(i as string) like '1%'", None),
    ("i::string = '-2'", None),
    ("cast(dec as string) = '-0.05'", None),
    ("cast(ts as date) = '2025-01-06'", None),
    ("cast(ts as date) = date '2025-06-10'", None),
    ("cast(d as timestamp) = timestamp '2025-01-05 00:00'", None),
    ("cast(tz as timestamp) > timestamp '2025-06-10 11:30'", "cast(tz as timestamp) > timestamp '2025-06-10 11:30'"),
    ("cast(ts as timestamptz) < '2025-01-02'", "cast(ts as timestamptz) < '2025-01-02'"),
    ("cast(ts as string) = '2025-01-05 10:00:05.5'", "id = 0"),
    ("cast(ts as string) = '2025-01-06 00:00:00'", None),
    ("cast(tz as string) like '%.123'", "id in (6, 7)"),
    ("cast(d as string) like '2025-01-%'", None),
    ("cast(sd as date) = '2025-01-05'", "cast(trim(sd)[1:10] as date) = '2025-01-05'"),
    ("cast(sd as timestamp) >= '2025-01-05 09:00'", "cast(trim(sd) as timestamp) >= '2025-01-05 09:00'"),
    ("cast(sd as timestamptz) >= '2025-01-05 09:00'", "cast(trim(sd) as timestamp) >= '2025-01-05 09:00'"),
    ("cast(cast(i as string) as int) = i", "i is not null"),
    ("extract(year from d) = 2025", None),
    ("extract(month from ts) = 1", None),
    ("extract(day from tz) = 10", None),
    ("extract(dow from d) = 1", "dayofweek(d) + 1 = 1"),
    ("extract(dayofweek_iso from d) = 7", "isodow(d) = 7"),
    ("extract(doy from ts) = 60", None),
    ("extract(quarter from d) = 1", None),
    ("extract(week from d) = 2", None),
    ("extract(hour from ts) = 10", None),
    ("extract(hour from d) = 0", "d is not null"),
    ("extract(minute from ts) = 59", None),
    ("extract(second from ts) = 5.5", "microsecond(ts) = 5500000"),
    ("extract(second from ts) >= 3", "microsecond(ts) >= 3000000"),
    ("second(ts) = 5", None),
    ("dayofweek(d) = 2", "dayofweek(d) + 1 = 2"),
    ("dayofyear(d) > 100", None),
    ("weekofyear(ts) = 1", None),
    ("d >= current_date - interval 7 days", "d >= date '2025-06-03'"),
    ("d = current_date", "d = date '2025-06-10'"),
    ("d > current_date - 7", "d > date '2025-06-03'"),
    ("ts > current_timestamp - interval '1' hour", "ts > timestamp '2025-06-10 11:30:15.25'"),
    ("tz > now() - interval 1 hour", "tz > timestamptz '2025-06-10 11:30:15.25+00'"),
    ("tz >= current_timestamp() - interval '1 hour 30 minutes'", "tz >= timestamptz '2025-06-10 11:00:15.25+00'"),
    (
        "ts between current_date - interval 1 day and current_date + interval 12 hours",
        "ts between timestamp '2025-06-09' and timestamp '2025-06-10 12:00'",
    ),
    ("d = date '2025-01-31' + interval 1 month", "d = date '2025-02-28'"),
    ("d < date '2025-06-10' - interval 2 months 1 week", "d < date '2025-04-03'"),
    ("ts >= cast('2025-01-01' as date)", None),
    ("ts >= '2025-06-01'::timestamp", None),
    ("i < cast('5' as int)", None),
    ("i > cast(2.9 as int)", "i > 2"),
    ("f = cast('2.25' as double)", None),
    ("dec = cast(2.745 as decimal(5,2))", "dec = 2.75"),
    ("s = cast(5 as string) or n = 12::string", "s = '5' or n = '12'"),
    ("coalesce(s, n) = '-3' or coalesce(i, 0, 1) = 0", None),
    ("coalesce(d, current_date) = '2025-06-10'", "coalesce(d, date '2025-06-10') = '2025-06-10'"),
    ("lower(s) in ('cust11', 'x_5')", None),
    ("i + 1 in (2, 8)", None),
    ("i not in (1, abs(i))", "i not in (1, abs(i))"),
    ("id in (1, length(s))", None),
    ("cast(n as int) not in (12, -3)", "cast(trim(n) as int) not in (12, -3)"),
    ("d in (date '2025-01-05', cast('2025-01-06' as date), current_date)", "d in ('2025-01-05', '2025-01-06', '2025-06-10')"),
]


@pytest.mark.parametrize(("text", "sql"), CASES, ids=[c[0] for c in CASES])
def test_rows_are_duckdbs(text: str, sql: str | None) -> None:
    assert _rows(text) == _duckdb(sql or text)


@pytest.mark.parametrize(("text", "sql"), CASES[::4], ids=[c[0] for c in CASES[::4]])
def test_a_scan_and_a_delete_agree(tmp_path: object, text: str, sql: str | None) -> None:
    table = mor.load_catalog(f"{tmp_path}/warehouse", create=True).create_table("db.t", schema=ARROW_SCHEMA)
    for start in range(0, ROWS.num_rows, 3):
        table.append(ROWS.slice(start, 3).cast(ARROW_SCHEMA))
    expected = _duckdb(sql or text)
    assert sorted(table.scan(filter=text).to_arrow().column("id").to_pylist()) == expected
    table.delete(text)
    assert sorted(table.scan().to_arrow().column("id").to_pylist()) == sorted(set(range(ROWS.num_rows)) - set(expected))


# -- what the text becomes -------------------------------------------------------------------


def test_a_prefix_pattern_stays_a_prefix_test_and_equality_stays_equality() -> None:
    assert parse_filter("s like 'ab%'") == StartsWith("s", "ab")
    assert parse_filter("s like 'ab%%'") == StartsWith("s", "ab")
    assert parse_filter("s like 'a\\_b\\%%'") == StartsWith("s", "a_b%")
    assert parse_filter("s like 'a!%' escape '!'") == EqualTo("s", "a%")
    assert parse_filter("s not like 'ab%'") == NotStartsWith("s", "ab")


def test_other_patterns_are_residuals_that_still_prune_by_their_literal_start() -> None:
    expr = parse_filter("s like 'cust_1%'")
    assert isinstance(expr, And) and expr.left == StartsWith("s", "cust") and isinstance(expr.right, Residual)
    assert pruning_filter(SCHEMA, expr) == pruning_filter(SCHEMA, StartsWith("s", "cust"))
    assert isinstance(parse_filter("s like '%5'"), Residual)
    assert isinstance(parse_filter("lower(s) like 'a_c'"), Residual)


def test_casts_of_values_fold_to_typed_values_that_prune() -> None:
    assert parse_filter("ts >= cast('2025-01-01' as date)") == GreaterThanOrEqual("ts", DateText("2025-01-01"))
    assert parse_filter("ts >= '2025-01-01 10:00'::timestamp") == GreaterThanOrEqual("ts", TimestampText("2025-01-01 10:00"))
    assert parse_filter("i = cast(' 5 ' as int)") == EqualTo("i", 5)
    assert parse_filter("i = cast(-2.7 as int)") == EqualTo("i", -2)  # toward zero, as Spark
    assert parse_filter("dec = cast(1.25 as decimal(3,1))") == EqualTo("dec", Decimal("1.3"))  # half away from zero
    assert parse_filter("dec = cast(-1.25 as decimal(3,1))") == EqualTo("dec", Decimal("-1.3"))
    assert parse_filter("s = cast(true as string)") == EqualTo("s", "true")
    assert parse_filter("d = cast(timestamp '2025-06-05 23:00' as date)") == EqualTo("d", DateText("2025-06-05"))
    assert isinstance(parse_filter("cast(i as string) = '1'"), Residual)


def test_the_clock_is_read_once_when_parsed_in_utc() -> None:
    tz_text, ts_text = TimestamptzText, TimestampText
    assert parse_filter("d >= current_date - interval 7 days") == GreaterThanOrEqual("d", DateText("2025-06-03"))
    assert parse_filter("tz > current_timestamp - interval '1' hour") == GreaterThan("tz", tz_text("2025-06-10 11:30:15.250000+00:00"))
    assert parse_filter("ts > now() - interval 90 minutes") == GreaterThan("ts", tz_text("2025-06-10 11:00:15.250000+00:00"))
    assert parse_filter("ts > current_date + interval 2 hours") == GreaterThan("ts", ts_text("2025-06-10 02:00:00.000000"))
    assert parse_filter("d > current_date - interval 1 year") == GreaterThan("d", DateText("2024-06-10"))
    assert parse_filter("d > date '2024-02-29' + interval 1 year") == GreaterThan("d", DateText("2025-02-28"))
    assert parse_filter("d > current_date - interval 1 day - interval 1 week") == GreaterThan("d", DateText("2025-06-02"))
    assert parse_filter("d > current_date + interval -2 days") == GreaterThan("d", DateText("2025-06-08"))
    assert parse_filter("ts > current_timestamp - interval 1.5 seconds") == GreaterThan("ts", tz_text("2025-06-10 12:30:13.750000+00:00"))


def test_a_cast_null_and_like_null_select_nothing() -> None:
    assert _rows("cast(n as int) is null") == [3]
    assert _rows("not (cast(n as int) > 0)") == [2, 4]
    assert _rows("not (s like '%')") == []
    assert _rows("s not like 'zz%'") == [0, 1, 2, 4, 5, 6, 7]


def test_a_column_value_that_does_not_convert_is_an_error_not_a_silent_null(tmp_path: object) -> None:
    table = mor.load_catalog(f"{tmp_path}/warehouse", create=True).create_table("db.t", schema=ARROW_SCHEMA)
    table.append(ROWS.cast(ARROW_SCHEMA))
    failing = [("cast(s as int) = 1", "Failed to parse"), ("cast(i as tinyint) = 1", "300"), ("cast(f as decimal(2,1)) > 0", "1000")]
    for text, problem in failing:
        with pytest.raises(mor.InvalidFilterError, match=problem):
            table.scan(filter=text).to_arrow()
        with pytest.raises(mor.InvalidFilterError):
            table.delete(text)
    assert table.scan().count() == ROWS.num_rows


# -- refusals say what is accepted, and where --------------------------------------------------


@pytest.mark.parametrize(
    ("text", "accepted", "at"),
    [
        ("cast(i as int5) = 1", "cast to one of boolean, tinyint, smallint, int, bigint, float, double, decimal(p,s)", "5)"),
        ("i::uuid = 1", "unknown type 'uuid': cast to one of", "i::"),
        ("cast(i int) = 1", "'as' in 'cast(x as type)'", "t)"),
        ("cast(i as decimal(40, 2)) = 1", "precision 1 to 38", "i as"),
        ("cast('abc' as int) = i", "'abc' is not a whole number", "'abc'"),
        ("cast(300 as tinyint) = i", "out of range for tinyint (-128 to 127)", "300"),
        ("cast('x' as boolean)", "true: 1, t, true, y, yes", "'x'"),
        ("cast('nan' as double) = f", "use 'col is nan'", "'nan'"),
        ("cast(1 as date) = d", "a cast to date takes string, date, timestamp, timestamptz", "1 as"),
        ("cast('2025-13-01' as date) = d", "month must be in 1..12", "'2025"),
        ("extract(fortnight from d) = 1", "year, quarter, month, week, day, dayofweek (dow)", "d)"),
        ("extract(year d) = 1", "'from' in 'extract(part from t)'", "r d)"),
        ("frob(i) = 1", "cast(x as type), extract(part from t), current_date, current_timestamp, now()", "frob"),
        ("d > current_date - interval 7 dayz", "write one of year, month, week, day, hour, minute, second", None),
        ("d > interval 1 day", "an interval is no value to compare", None),
        ("d + interval 1 month > current_date", "months or years added to a column", None),
        ("d > date '2025-01-01' + interval 1 hour - interval 1 month x", "expected an operator, 'and', 'or'", "x"),
        ("s like 'a\\\\'", "ends with its escape character", "'a"),
        ("s like 'a\\\\b'", "it may precede only '%', '_' or itself", "'a"),
        ("s like 'a' escape ''", "one character", "''"),
        ("i like '%1'", "need text", None),
        ("cast(d as boolean)", "a cast to bool", None),
        ("try_cast(s as int) = 1", "try_cast() is not supported", None),
        ("i in (select 1)", "IN over a subquery is not supported", None),
        ("i = 1; drop table t", "expected one expression", None),
    ],
)
def test_refusals_list_what_is_accepted_and_point_at_the_place(text: str, accepted: str, at: str | None) -> None:
    with pytest.raises(mor.InvalidFilterError) as e:
        bind_filter(SCHEMA, parse_filter(text))
    message = str(e.value)
    assert accepted in message
    if at is not None:  # a parse error: the offset, and a caret under it
        offset = text.rindex(at) if at in ("x", "d)", "r d)") else text.index(at)
        assert f"offset {offset}" in message, message
        caret = message.splitlines()[2].index("^") - 2
        assert caret == offset if offset <= 40 else caret == 43, message  # a long text is shown from 40 before, after '...'


def test_folded_values_and_like_prefixes_prune_files(tmp_path: object) -> None:
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("s", pa.string()), ("d", pa.date32())])
    table = mor.load_catalog(f"{tmp_path}/warehouse", create=True).create_table("db.t", schema=schema)
    for i, (prefix, day) in enumerate([("cust", dt.date(2025, 6, 9)), ("shop", dt.date(2025, 5, 1)), ("cust", dt.date(2024, 1, 1))]):
        table.append(pa.table({"id": [2 * i, 2 * i + 1], "s": [f"{prefix}_1a", f"{prefix}_2b"], "d": [day, day]}, schema=schema))

    def files_and_ids(text: str) -> tuple[int, list[int]]:
        return len(table.scan(filter=text).plan_files()), sorted(table.scan(filter=text).to_arrow().column("id").to_pylist())

    assert files_and_ids("s like 'cust_1%'") == (2, [0, 4])
    assert files_and_ids("s like 'shop%'") == (1, [2, 3])
    assert files_and_ids("d >= current_date - interval 7 days") == (1, [0, 1])
    assert files_and_ids("d >= cast('2025-05-01' as date) and s not like '%b'") == (2, [0, 2])
    assert files_and_ids("d < '2025-01-01'::date - interval 1 month") == (1, [4, 5])
