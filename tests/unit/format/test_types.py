"""Every Iceberg v2 primitive type end to end, and nested struct/list/map columns.

For each type: append and read back exactly (extremes, nulls, NaN, -0.0, infinities, dates and
timestamps before 1970); column metrics; partitioning by every transform the spec allows on
it (the partition values checked against pyiceberg's pure-Python transforms); DELETE (both
modes), UPDATE, UPSERT (both strategies) and delete_rows with keys of the type, against a
list-of-rows model; predicates on the column, whose file pruning may keep extra files but never
drops one with a matching row. Expected values come from Python and pyiceberg, never from mor.
"""

from __future__ import annotations

import datetime as dt
import struct
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.conversions import from_bytes
from pyiceberg.expressions import (
    BooleanExpression,
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNull,
    LessThan,
    LessThanOrEqual,
    NotEqualTo,
    NotIn,
    NotNull,
)
from pyiceberg.schema import Schema
from pyiceberg.transforms import parse_transform
from pyiceberg.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IntegerType,
    LongType,
    NestedField,
    PrimitiveType,
    StringType,
    TimestampType,
    TimestamptzType,
    TimeType,
    UUIDType,
)
from pyiceberg.utils.datetime import date_to_days, datetime_to_micros, time_to_micros
from pyiceberg.utils.decimal import unscaled_to_decimal
from unit_helpers import live_raw_entries, local

import mor
from mor.errors import InvalidArgumentError, SchemaMismatchError
from mor.format.arrow_types import to_arrow_schema

UTC = dt.UTC
NAN = float("nan")
INF = float("inf")


@dataclass(frozen=True)
class Case:
    id: str
    type: PrimitiveType
    values: tuple[Any, ...]  # distinct non-null values, as Arrow's to_pylist gives them back
    transforms: tuple[str, ...] = ("identity", "bucket[4]")

    @property
    def is_float(self) -> bool:
        return isinstance(self.type, (FloatType, DoubleType))


def _decimal_case(precision: int, scale: int) -> Case:
    largest = 10**precision - 1  # the largest unscaled value of the precision
    unscaled = (largest, -largest, 0, -1, largest // 2)
    values = tuple(unscaled_to_decimal(u, scale) for u in unscaled)
    return Case(f"decimal({precision},{scale})", DecimalType(precision, scale), values, ("identity", "bucket[4]", "truncate[10]"))


_UUIDS = (0, 2**128 - 1, 2**127, 2**127 - 1, 0x1234_5678_9ABC_DEF0_0FED_CBA9_8765_4321)
_TIMESTAMPS = (
    dt.datetime(1, 1, 1),
    dt.datetime(1969, 12, 31, 23, 59, 59, 999999),
    dt.datetime(1970, 1, 1),
    dt.datetime(2024, 2, 29, 12, 30, 15, 1),
    dt.datetime(9999, 12, 31, 23, 59, 59, 999999),
)
_TIME_TRANSFORMS = ("identity", "bucket[4]", "year", "month", "day", "hour")

CASES = [
    Case("boolean", BooleanType(), (False, True), ("identity",)),
    Case("int", IntegerType(), (-(2**31), 2**31 - 1, 0, -1, 7), ("identity", "bucket[4]", "truncate[10]")),
    Case("long", LongType(), (-(2**63), 2**63 - 1, 0, -1, 7), ("identity", "bucket[4]", "truncate[10]")),
    Case("float", FloatType(), (NAN, -0.0, INF, -INF, 1.5, -3.4028234663852886e38, 1.401298464324817e-45), ("identity",)),
    Case("double", DoubleType(), (NAN, -0.0, INF, -INF, 5e-324, -1.7976931348623157e308, 2.5), ("identity",)),
    *[_decimal_case(p, s) for p, s in [(1, 0), (9, 2), (10, 0), (18, 6), (19, 2), (28, 10), (29, 0), (38, 10), (38, 38)]],
    Case("string", StringType(), ("", "a", "é€😀", "z" * 40, "\U0010ffff" * 20), ("identity", "bucket[4]", "truncate[2]")),
    Case("uuid", UUIDType(), tuple(uuid.UUID(int=i).bytes for i in _UUIDS)),
    Case("fixed[1]", FixedType(1), (b"\x00", b"\xff", b"a")),
    Case("fixed[20]", FixedType(20), (b"\x00" * 20, b"\xff" * 20, b"a" * 20, b"a" * 19 + b"b")),
    Case("binary", BinaryType(), (b"", b"\x00", b"\xff" * 40, b"abc"), ("identity", "bucket[4]", "truncate[2]")),
    Case(
        "date",
        DateType(),
        (dt.date(1, 1, 1), dt.date(1969, 12, 31), dt.date(1970, 1, 1), dt.date(2024, 2, 29), dt.date(9999, 12, 31)),
        ("identity", "bucket[4]", "year", "month", "day"),
    ),  # fmt: skip
    Case("time", TimeType(), (dt.time(0, 0), dt.time(23, 59, 59, 999999), dt.time(12, 30, 1, 5))),
    Case("timestamp", TimestampType(), _TIMESTAMPS, _TIME_TRANSFORMS),
    Case("timestamptz", TimestamptzType(), tuple(t.replace(tzinfo=UTC) for t in _TIMESTAMPS), _TIME_TRANSFORMS),
]
CASE_PARAMS = [pytest.param(c, id=c.id) for c in CASES]
# The spec's equality columns (not float/double); three decimals stand for the nine here.
KEY_CASE_PARAMS = [
    pytest.param(c, id=c.id)
    for c in CASES
    if not c.is_float
    and c.id not in {"decimal(10,0)", "decimal(18,6)", "decimal(19,2)", "decimal(28,10)", "decimal(29,0)", "decimal(38,38)"}
]
PARTITION_PARAMS = [pytest.param(c, t, id=f"{c.id}-{t}") for c in CASES for t in c.transforms]


# -- rows, the model, and Iceberg's internal form of values --------------------------------------

Row = dict[str, Any]


def schema_of(case: Case) -> Schema:
    return Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "c", case.type),
        NestedField(3, "p", StringType()),
    )


def table_of(catalog: mor.Catalog, case: Case, partition_by: list[str] | None = None, name: str = "t", **props: str) -> mor.Table:
    return catalog.create_table(f"db.{name}", schema=schema_of(case), partition_by=partition_by, properties=props or None)


def base_rows(case: Case) -> list[Row]:
    """A row per value, then a null."""
    return [{"id": i, "c": v, "p": f"p{i}"} for i, v in enumerate((*case.values, None))]


def arrow_rows(case: Case, rows: list[Row]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=to_arrow_schema(schema_of(case)))


def canonical(value: Any) -> Any:
    """Exact identity of a value: -0.0 is not 0.0, and NaN is NaN."""
    if isinstance(value, float):
        return ("float", "nan" if value != value else struct.pack(">d", value))
    return value


def canonical_rows(rows: list[Row]) -> list[tuple[Any, ...]]:
    return sorted(tuple(canonical(r[k]) for k in ("id", "c", "p")) for r in rows)


def assert_table_is(table: mor.Table, model: list[Row], how: str = "") -> None:
    assert canonical_rows(table.scan().to_arrow().to_pylist()) == canonical_rows(model), how


def internal(value: Any) -> Any:
    """Iceberg's internal form (what `from_bytes` gives): days, microseconds, bytes."""
    if isinstance(value, dt.datetime):
        return datetime_to_micros(value)
    if isinstance(value, dt.date):
        return date_to_days(value)
    if isinstance(value, dt.time):
        return time_to_micros(value)
    if isinstance(value, uuid.UUID):
        return value.bytes
    return value


def literal_value(case: Case, value: Any) -> Any:
    """`value` as a filter literal (pyiceberg's `literal` takes a UUID, not its bytes)."""
    return uuid.UUID(bytes=value) if isinstance(case.type, UUIDType) else value


def is_nan(value: Any) -> bool:
    return isinstance(value, float) and value != value


def ordered(values: list[Any]) -> list[Any]:
    """Non-null, non-NaN values in Iceberg's order (bytes compare unsigned, as Python's do)."""
    return sorted(internal(v) for v in values if v is not None and not is_nan(v))


# -- append and read back, with metrics -------------------------------------------------------------


@pytest.mark.parametrize("case", CASE_PARAMS)
def test_append_reads_back_exactly_with_metrics(catalog: mor.Catalog, case: Case) -> None:
    table = table_of(catalog, case)
    rows = base_rows(case)
    table.append(arrow_rows(case, rows))
    assert_table_is(table, rows)
    assert table.scan().to_arrow().schema.field("c").type == to_arrow_schema(schema_of(case)).field("c").type

    [entry] = live_raw_entries(table)  # read straight from Avro, not through mor
    values = [r["c"] for r in rows]
    counts = {
        name: {kv["key"]: kv["value"] for kv in entry.data_file[name] or []}
        for name in ("value_counts", "null_value_counts", "nan_value_counts")
    }
    assert counts["value_counts"][2] == len(values)
    assert counts["null_value_counts"][2] == 1
    if case.is_float:
        assert counts["nan_value_counts"][2] == sum(map(is_nan, values))
    else:
        assert 2 not in counts["nan_value_counts"]
    lower, upper = entry.bounds("lower_bounds").get(2), entry.bounds("upper_bounds").get(2)
    expected = ordered(values)
    truncated = isinstance(case.type, (StringType, BinaryType, FixedType)) and any(len(v) > 16 for v in case.values)
    assert lower is not None
    if truncated:  # truncate(16): still bounds, and at most 16 characters / bytes
        low = from_bytes(case.type, lower)
        assert len(low) <= 16 and low <= expected[0]
        assert upper is None or (len(from_bytes(case.type, upper)) <= 16 and from_bytes(case.type, upper) >= expected[-1])
    else:
        assert from_bytes(case.type, lower) == expected[0]
        assert from_bytes(case.type, upper) == expected[-1]


@pytest.mark.parametrize("case", CASE_PARAMS)
def test_metrics_of_many_row_groups_are_those_of_one(catalog: mor.Catalog, case: Case) -> None:
    """A stream written as row groups of 2 rows (bounds merged, NaN counted batch by batch)
    has the metrics of the same rows written as one row group."""
    whole = table_of(catalog, case, name="whole")
    streamed = table_of(catalog, case, name="streamed", **{"write.parquet.row-group-limit": "2"})
    data = arrow_rows(case, base_rows(case))
    whole.append(data)
    streamed.append(pa.RecordBatchReader.from_batches(data.schema, data.to_batches(max_chunksize=2)))
    [a], [b] = whole.scan().plan_files(), streamed.scan().plan_files()
    assert pq.ParquetFile(local(b.data_file.file_path)).metadata.num_row_groups > 1
    for name in ("value_counts", "null_value_counts", "nan_value_counts", "lower_bounds", "upper_bounds"):
        assert getattr(a.data_file, name) == getattr(b.data_file, name), name


# -- partitioning ------------------------------------------------------------------------------------


def _avro_internal(value: Any) -> Any:
    """A partition value as fastavro decodes it (dates, times, datetimes, UUIDs), internal."""
    if isinstance(value, dt.datetime) and value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return internal(value)


def _partition_values(case: Case, transform: str) -> tuple[Any, ...]:
    if isinstance(case.type, DecimalType) and transform.startswith("truncate"):
        # truncate rounds negative values down, maybe past the precision (see the test below)
        fn = parse_transform(transform).transform(case.type)
        return tuple(v for v in case.values if len(fn(v).as_tuple().digits) <= case.type.precision)
    return case.values


def _java_arithmetic(case: Case, fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """pyiceberg's pure-Python transform, in Iceberg Java's int/long arithmetic: truncate(10) of
    -2**31 wraps around to 2147483646 there (and in the files it writes)."""
    bits = {IntegerType: 32, LongType: 64}.get(type(case.type))
    if bits is None:
        return fn
    return lambda v: (fn(v) + 2 ** (bits - 1)) % 2**bits - 2 ** (bits - 1)


@pytest.mark.parametrize(("case", "transform"), PARTITION_PARAMS)
def test_partitioned_by_each_transform(catalog: mor.Catalog, case: Case, transform: str) -> None:
    name, _, arg = transform.partition("[")
    term = f"{name}({arg[:-1]}, c)" if arg else f"{name}(c)"
    table = table_of(catalog, case, [term])
    rows = [r for r in base_rows(case) if r["c"] is None or r["c"] in _partition_values(case, transform) or is_nan(r["c"])]
    table.append(arrow_rows(case, rows))
    assert_table_is(table, rows)

    fn = _java_arithmetic(case, parse_transform(transform).transform(case.type))
    entries = live_raw_entries(table)
    seen = []
    for entry in entries:
        [recorded] = entry.data_file["partition"].values()
        in_file = pq.read_table(local(entry.path)).column("c").to_pylist()
        expected = {canonical(None if v is None else fn(internal(v))) for v in in_file}
        assert expected == {canonical(_avro_internal(recorded))}, entry.path
        seen.append(canonical(_avro_internal(recorded)))
    assert len(seen) == len(set(seen)) == len({canonical(None if r["c"] is None else fn(internal(r["c"]))) for r in rows})

    literals = [v for v in _partition_values(case, transform) if not is_nan(v)]
    for value in literals:
        got = table.scan(filter=EqualTo("c", literal_value(case, value))).to_arrow()
        assert sorted(got.column("id").to_pylist()) == [
            r["id"] for r in rows if r["c"] is not None and not is_nan(r["c"]) and r["c"] == value
        ]
    middle = literals[len(literals) // 2]
    for op in ("<", ">="):
        predicate, holds = _OPERATORS[op]
        got = table.scan(filter=predicate("c", literal_value(case, middle))).to_arrow()
        expected = [r["id"] for r in rows if r["c"] is not None and holds(internal(r["c"]), internal(middle))]
        assert sorted(got.column("id").to_pylist()) == sorted(expected), f"c {op} {middle!r}"
    if name == "identity" and not case.is_float:  # one partition per value: the others are pruned
        value = case.values[-1]
        assert len(table.scan(filter=EqualTo("c", literal_value(case, value))).plan_files()) == 1


def test_decimal_truncate_past_the_precision_is_refused(catalog: mor.Catalog) -> None:
    case = _decimal_case(9, 2)
    table = table_of(catalog, case, ["truncate(10, c)"])
    with pytest.raises(SchemaMismatchError, match=r"-10000000\.00.*decimal\(9, 2\)"):
        table.append(arrow_rows(case, [{"id": 1, "c": Decimal("-9999999.99"), "p": None}]))
    assert table.current_snapshot() is None


def test_two_partition_fields_of_one_named_avro_type(catalog: mor.Catalog) -> None:
    """Two uuid (or decimal(9, 2)) partition fields: Avro defines the named type once."""
    schema = Schema(
        NestedField(1, "a", UUIDType()), NestedField(2, "b", UUIDType()),
        NestedField(3, "x", DecimalType(9, 2)), NestedField(4, "y", DecimalType(9, 2)),
    )  # fmt: skip
    table = catalog.create_table("db.t", schema=schema, partition_by=["a", "b", "x", "y"])
    rows = [
        {"a": uuid.UUID(int=i).bytes, "b": uuid.UUID(int=2**128 - 1 - i).bytes, "x": Decimal(f"{i}.25"), "y": Decimal(f"-{i}.50")}
        for i in range(3)
    ]
    table.append(pa.Table.from_pylist(rows, schema=to_arrow_schema(schema)))
    assert sorted(table.scan().to_arrow().to_pylist(), key=lambda r: r["x"]) == rows
    assert {e.data_file["partition"]["y"] for e in live_raw_entries(table)} == {r["y"] for r in rows}


def test_float_identity_partitions_keep_negative_zero_apart(catalog: mor.Catalog) -> None:
    """Readers take an identity column from the partition value: 0.0 must not be filed as -0.0
    (group_by and dict keys hold them equal), while every NaN is one partition."""
    case = CASES[4]
    assert case.id == "double"
    table = table_of(catalog, case, ["c"])
    data = arrow_rows(case, [{"id": i, "c": v, "p": None} for i, v in enumerate([0.0, -0.0, NAN, NAN, 0.0])])
    table.append(pa.RecordBatchReader.from_batches(data.schema, data.to_batches(max_chunksize=1)))  # a row a batch
    files = {}
    for entry in live_raw_entries(table):
        [recorded] = entry.data_file["partition"].values()
        files[canonical(recorded)] = sorted(pq.read_table(local(entry.path)).column("id").to_pylist())
    assert files == {canonical(0.0): [0, 4], canonical(-0.0): [1], canonical(NAN): [2, 3]}


@pytest.mark.parametrize("term", ["l.element", "m.key", "m.value"])
def test_partition_source_inside_a_list_or_map_is_refused(catalog: mor.Catalog, term: str) -> None:
    schema = pa.schema([("l", pa.list_(pa.int32())), ("m", pa.map_(pa.string(), pa.date32()))])
    with pytest.raises(InvalidArgumentError, match="inside a list or a map"):
        catalog.create_table("db.t", schema=schema, partition_by=[term])


def test_partition_source_inside_a_struct_is_allowed(catalog: mor.Catalog) -> None:
    schema = pa.schema([("s", pa.struct([("d", pa.date32())]))])
    table = catalog.create_table("db.t", schema=schema, partition_by=["day(s.d)"])
    assert [f.name for f in table.spec().fields] == ["s.d_day"]  # more in test_nested_partition.py


# -- DELETE, UPDATE, UPSERT and delete_rows by a key of the type --------------------------------------


def _matches(value: Any, key: Any) -> bool:
    """Null-safe key equality, as equality deletes (delete_rows) match."""
    return (value is None and key is None) or (value is not None and key is not None and value == key)


def _joins(value: Any, key: Any) -> bool:
    """SQL's `=`, as upsert keys match: a null matches nothing."""
    return value is not None and key is not None and value == key


@pytest.mark.parametrize("layout", ["unpartitioned", "identity"])
@pytest.mark.parametrize("case", KEY_CASE_PARAMS)
def test_row_level_changes_keyed_by_the_type(catalog: mor.Catalog, case: Case, layout: str) -> None:
    table = table_of(catalog, case, ["c"] if layout == "identity" else None)
    v = [case.values[i % len(case.values)] for i in range(5)]
    model = base_rows(case)
    table.append(arrow_rows(case, model))

    def eq(value: Any) -> BooleanExpression:
        return EqualTo("c", literal_value(case, value))

    table.delete(eq(v[0]))
    model = [r for r in model if not _matches(r["c"], v[0])]
    assert_table_is(table, model, "merge-on-read delete")
    table.delete(eq(v[1]), mode="copy-on-write")
    model = [r for r in model if not _matches(r["c"], v[1])]
    assert_table_is(table, model, "copy-on-write delete")
    table.update({"p": "'updated'"}, where=eq(v[2]))
    model = [{**r, "p": "updated"} if _matches(r["c"], v[2]) else r for r in model]
    assert_table_is(table, model, "update of another column")
    moved = next((r["id"] for r in model if r["c"] is not None and r["c"] == v[3]), -1)
    table.update({"c": pa.scalar(v[0], to_arrow_schema(schema_of(case)).field("c").type)}, where=f"id = {moved}")
    model = [{**r, "c": v[0]} if r["id"] == moved else r for r in model]
    assert_table_is(table, model, "update of the key column (to a value of the type)")

    for strategy, source in (
        ("position", [{"id": 100, "c": v[0], "p": "up"}, {"id": 101, "c": v[1], "p": "in"}]),
        ("equality", [{"id": 102, "c": v[2], "p": "eq"}, {"id": 103, "c": None, "p": "null key"}]),
    ):
        if len({canonical(r["c"]) for r in source}) < len(source):
            continue  # boolean: two values only
        table.upsert(arrow_rows(case, source), on=["c"], strategy=strategy)
        model = [r for r in model if not any(_joins(r["c"], s["c"]) for s in source)] + source
        assert_table_is(table, model, f"upsert ({strategy})")

    keys = [v[4], None]
    table.delete_rows(arrow_rows(case, [{"c": k} for k in keys]).select(["c"]))
    model = [r for r in model if not any(_matches(r["c"], k) for k in keys)]
    assert_table_is(table, model, "delete_rows")


@pytest.mark.parametrize("case", [p for p in CASE_PARAMS if p.values[0].is_float])
def test_row_level_changes_on_a_floating_column(catalog: mor.Catalog, case: Case) -> None:
    """Floats are no equality keys; by predicate they delete and update like any column."""
    table = table_of(catalog, case, ["c"])
    model = base_rows(case)
    table.append(arrow_rows(case, model))
    table.delete(GreaterThan("c", 1.0))  # NaN sorts above every number: it goes too
    model = [r for r in model if r["c"] is None or not (is_nan(r["c"]) or r["c"] > 1.0)]
    assert_table_is(table, model)
    table.update({"c": 0.0}, where="c = 0")  # -0.0 becomes 0.0, and moves to partition 0.0
    table.delete("c < -1", mode="copy-on-write")
    model = [{**r, "c": 0.0} if r["c"] == 0.0 else r for r in model if r["c"] is None or not r["c"] < -1]
    assert any(canonical(r["c"]) == canonical(0.0) for r in model)
    assert_table_is(table, model)


# -- predicates and pruning ---------------------------------------------------------------------


_OPERATORS: dict[str, tuple[Callable[..., BooleanExpression], Callable[[Any, Any], bool]]] = {
    "=": (EqualTo, lambda x, c: x == c),
    "!=": (NotEqualTo, lambda x, c: is_nan(x) or x != c),
    "<": (LessThan, lambda x, c: not is_nan(x) and x < c),
    "<=": (LessThanOrEqual, lambda x, c: not is_nan(x) and x <= c),
    ">": (GreaterThan, lambda x, c: is_nan(x) or x > c),
    ">=": (GreaterThanOrEqual, lambda x, c: is_nan(x) or x >= c),
}


def _file_ids(table: mor.Table, row_filter: Any, id_of_file: dict[str, int]) -> set[int]:
    """Ids of the rows in the files the scan plans (each test file holds one row)."""
    return {id_of_file[t.data_file.file_path] for t in table.scan(filter=row_filter).plan_files()}


@pytest.mark.parametrize("case", CASE_PARAMS)
def test_predicates_prune_files_but_never_a_match(catalog: mor.Catalog, case: Case) -> None:
    """A file per row: a predicate plans every file with a matching row, and `=` only those
    (bounds of one value each), except where bounds are truncated."""
    table = table_of(catalog, case)
    rows = base_rows(case)
    id_of_file = {}
    for row in rows:
        table.append(arrow_rows(case, [row]))
        [added] = [e.path for e in live_raw_entries(table) if e.snapshot_id == table.current_snapshot().snapshot_id]
        id_of_file[added] = row["id"]
    literals = [v for v in case.values if not is_nan(v)][:4]  # the extremes come first
    checks: list[tuple[Any, set[int]]] = []
    for predicate, holds in _OPERATORS.values():
        for value in literals:
            checks.append(
                (
                    predicate("c", literal_value(case, value)),
                    {r["id"] for r in rows if r["c"] is not None and holds(internal(r["c"]), internal(value))},
                )
            )
    pair = [literal_value(case, v) for v in literals[:2]]
    in_set = {internal(v) for v in literals[:2]}
    checks += [
        (In("c", pair), {r["id"] for r in rows if r["c"] is not None and not is_nan(r["c"]) and internal(r["c"]) in in_set}),
        (NotIn("c", pair), {r["id"] for r in rows if r["c"] is not None and (is_nan(r["c"]) or internal(r["c"]) not in in_set)}),
        (IsNull("c"), {r["id"] for r in rows if r["c"] is None}),
        (NotNull("c"), {r["id"] for r in rows if r["c"] is not None}),
    ]
    for row_filter, expected in checks:
        assert set(table.scan(filter=row_filter).to_arrow().column("id").to_pylist()) == expected, row_filter
        planned = _file_ids(table, row_filter, id_of_file)
        assert expected <= planned, f"{row_filter} dropped a file with a match"
        exact_bounds = not isinstance(case.type, (StringType, BinaryType, FixedType)) or all(len(v) <= 16 for v in case.values)
        if isinstance(row_filter, (EqualTo, IsNull)) and exact_bounds:
            assert planned == expected, f"{row_filter} kept files its metrics rule out"


@pytest.mark.parametrize(
    ("column_type", "value", "text"),
    [
        (DecimalType(9, 2), Decimal("-1.50"), "c = -1.50"),
        (DecimalType(38, 10), Decimal("-9999999999999999999999999999.9999999999"), "c < -9999999999999999999999999999.9999999998"),
        (DecimalType(9, 2), Decimal("3.00"), "c in (3, 4)"),
        (UUIDType(), uuid.UUID(int=2**127).bytes, "c = '80000000-0000-0000-0000-000000000000'"),
        (DateType(), dt.date(1969, 12, 31), "c = '1969-12-31'"),
        (DateType(), dt.date(1, 1, 1), "c < '1969-12-31'"),
        (TimeType(), dt.time(23, 59, 59, 999999), "c >= '23:59:59.999999'"),
        (TimeType(), dt.time(0), "c = '00:00:00'"),
        (TimestampType(), dt.datetime(1969, 12, 31, 23, 59, 59, 999999), "c = '1969-12-31T23:59:59.999999'"),
        (TimestamptzType(), dt.datetime(1900, 1, 1, tzinfo=UTC), "c < '1969-12-31T23:00:00-01:00'"),
        (TimestamptzType(), dt.datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC), "c > '9999-12-31T23:59:59+00:00'"),
    ],
)
def test_filter_text_on_each_type(catalog: mor.Catalog, column_type: PrimitiveType, value: Any, text: str) -> None:
    """The text syntax users write: the row with `value` matches, a file of other values is pruned."""
    case = Case("x", column_type, (value,))
    table = table_of(catalog, case)
    other = {DecimalType: Decimal("0.00") if column_type == DecimalType(9, 2) else Decimal("0E-10"), UUIDType: bytes(16),
             DateType: dt.date(2000, 1, 1), TimeType: dt.time(12), TimestampType: dt.datetime(2000, 1, 1),
             TimestamptzType: dt.datetime(2000, 1, 1, tzinfo=UTC)}[type(column_type)]  # fmt: skip
    table.append(arrow_rows(case, [{"id": 1, "c": value, "p": None}]))
    table.append(arrow_rows(case, [{"id": 2, "c": other, "p": None}]))
    assert table.scan(filter=text).to_arrow().column("id").to_pylist() == [1]
    assert len(table.scan(filter=text).plan_files()) == 1
    table.delete(text)
    assert table.scan().to_arrow().column("id").to_pylist() == [2]


def test_infinities_as_literals(catalog: mor.Catalog) -> None:
    case = CASES[4]
    assert case.id == "double"
    table = table_of(catalog, case)
    table.append(arrow_rows(case, base_rows(case)))
    assert table.scan(filter=EqualTo("c", INF)).to_arrow().column("c").to_pylist() == [INF]
    assert sorted(table.scan(filter=LessThanOrEqual("c", -INF)).to_arrow().column("c").to_pylist()) == [-INF]


# -- row groups --------------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASE_PARAMS)
def test_row_group_bounds_decode_to_the_rows(catalog: mor.Catalog, case: Case) -> None:
    """A row per row group: each group's bounds (mor.read.row_groups) are its one value."""
    from mor.read.row_groups import row_group_metrics

    table = table_of(catalog, case, **{"write.parquet.row-group-limit": "1"})
    rows = base_rows(case)
    table.append(arrow_rows(case, rows))
    [task] = table.scan().plan_files()
    meta = pq.ParquetFile(local(task.data_file.file_path)).metadata
    assert meta.num_row_groups == len(rows)
    for i, row in enumerate(rows):
        m = row_group_metrics(meta, i, {"c": 2}, schema_of(case))
        if row["c"] is None or is_nan(row["c"]):
            continue
        lower, upper = from_bytes(case.type, m.lower_bounds[2]), from_bytes(case.type, m.upper_bounds[2])
        assert lower <= internal(row["c"]) <= upper
        if not (isinstance(case.type, (StringType, BinaryType)) and len(row["c"]) > 16):
            assert lower == upper == internal(row["c"])


@pytest.mark.parametrize(
    ("arrow_type", "iceberg_type", "values", "store_decimal_as_integer"),
    [
        (pa.decimal128(9, 2), DecimalType(9, 2), [Decimal("-9999999.99"), Decimal("0.05")], True),
        (pa.decimal128(18, 3), DecimalType(18, 3), [Decimal("-999999999999999.999"), Decimal("1.000")], True),
        (pa.time32("ms"), TimeType(), [dt.time(0, 0, 0, 1000), dt.time(23, 59, 59, 999000)], False),
        (pa.time64("ns"), TimeType(), [dt.time(0, 0, 0, 1), dt.time(23, 59, 59, 999999)], False),
        (pa.timestamp("ms"), TimestampType(), [dt.datetime(1969, 12, 31, 23, 59, 59, 999000), dt.datetime(2000, 1, 1)], False),
    ],
)
def test_row_group_bounds_of_foreign_physical_forms(
    tmp_path: Any, arrow_type: pa.DataType, iceberg_type: PrimitiveType, values: list[Any], store_decimal_as_integer: bool
) -> None:
    """Files other writers make: decimals as INT32/INT64, times in millis or nanos."""
    from mor.read.row_groups import row_group_metrics

    path = str(tmp_path / "f.parquet")
    pq.write_table(pa.table({"c": pa.array(values, arrow_type)}), path, store_decimal_as_integer=store_decimal_as_integer)
    meta = pq.ParquetFile(path).metadata
    m = row_group_metrics(meta, 0, {"c": 1}, Schema(NestedField(1, "c", iceberg_type)))
    expected = ordered(values)
    assert (from_bytes(iceberg_type, m.lower_bounds[1]), from_bytes(iceberg_type, m.upper_bounds[1])) == (expected[0], expected[-1])


def test_decimals_of_fewer_digits_append_to_a_wider_column(catalog: mor.Catalog) -> None:
    """pyarrow infers decimal(3, 2) from Decimal("1.50"): it fits decimal(9, 2). Another
    precision or scale fits by value (rounded HALF_UP to the column's scale, mor/write/decimals.py);
    a value with too many digits before the point is refused."""
    table = table_of(catalog, _decimal_case(9, 2))
    table.append(pa.table({"id": pa.array([1], pa.int64()), "c": [Decimal("1.50")], "p": pa.array([None], pa.string())}))
    assert table.scan().to_arrow().column("c").to_pylist() == [Decimal("1.50")]
    for other in (pa.decimal128(10, 2), pa.decimal128(9, 3), pa.decimal128(9, 1)):
        table.append(
            pa.table({"id": pa.array([2], pa.int64()), "c": pa.array([Decimal("1.5")], other), "p": pa.array([None], pa.string())})
        )
    assert table.scan().to_arrow().column("c").to_pylist() == [Decimal("1.50")] * 4
    with pytest.raises(SchemaMismatchError, match="'c': value 12345678.90"):
        too_many = pa.array([Decimal("12345678.90")], pa.decimal128(10, 2))
        table.append(pa.table({"id": pa.array([3], pa.int64()), "c": too_many, "p": pa.array([None], pa.string())}))


# -- uuid from Arrow ---------------------------------------------------------------------------------


def test_arrow_uuid_columns_make_uuid_tables(catalog: mor.Catalog) -> None:
    """pyarrow's uuid extension type (what pyiceberg hands out) creates, appends and keys."""
    u = [uuid.UUID(int=i * 2**120) for i in range(3)]
    table = catalog.create_table("db.t", schema=pa.schema([("id", pa.int64()), ("u", pa.uuid())]))
    assert isinstance(table.schema().find_field("u").field_type, UUIDType)
    table.append(pa.table({"id": [0, 1, 2, 3], "u": pa.array([x.bytes for x in u] + [None], pa.uuid())}))
    assert table.scan().to_arrow().sort_by("id").column("u").to_pylist() == [x.bytes for x in u] + [None]
    table.delete_rows(pa.table({"u": pa.array([u[0].bytes], pa.uuid())}))
    table.upsert(pa.table({"id": [9], "u": pa.array([u[1].bytes], pa.uuid())}), on=["u"])
    assert sorted(table.scan().to_arrow().to_pylist(), key=lambda r: r["id"]) == [
        {"id": 2, "u": u[2].bytes}, {"id": 3, "u": None}, {"id": 9, "u": u[1].bytes},
    ]  # fmt: skip


# -- nested columns ------------------------------------------------------------------------------

_INNER = pa.struct([("ts", pa.timestamp("us", tz="UTC")), ("b", pa.binary())])
NESTED = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        ("s", pa.struct([("dec", pa.decimal128(38, 10)), ("u", pa.uuid()), ("d", pa.date32()), ("f", pa.float32()), ("inner", _INNER)])),
        ("l", pa.list_(pa.decimal128(9, 2))),
        ("m", pa.map_(pa.string(), pa.binary(4))),
        ("ls", pa.list_(pa.struct([("x", pa.time64("us"))]))),
    ]
)
NESTED_ROWS: list[Row] = [
    {"id": 0, "s": {"dec": Decimal("1.5000000000"), "u": uuid.UUID(int=1).bytes, "d": dt.date(1960, 1, 1), "f": NAN,
                    "inner": {"ts": dt.datetime(1900, 1, 1, tzinfo=UTC), "b": b""}},
     "l": [Decimal("1.00"), None], "m": [("a", b"abcd")], "ls": [{"x": dt.time(0)}, None]},
    {"id": 1, "s": None, "l": None, "m": None, "ls": None},
    {"id": 2, "s": {"dec": None, "u": None, "d": None, "f": -0.0, "inner": None}, "l": [], "m": [], "ls": []},
    {"id": 3, "s": {"dec": Decimal("-9999999999999999999999999999.9999999999"), "u": uuid.UUID(int=2**128 - 1).bytes,
                    "d": dt.date(9999, 12, 31), "f": INF, "inner": {"ts": None, "b": b"\xff" * 20}},
     "l": [Decimal("-9999999.99")], "m": [("z", None)], "ls": [{"x": None}]},
]  # fmt: skip


def _nested_rows(table: mor.Table, rows: list[Row]) -> pa.Table:
    """Rows in the table's Arrow schema (pyarrow builds no uuid extension values inside a struct)."""
    return pa.Table.from_pylist(rows, schema=table.arrow_schema())


def _leaf(row: Row, path: str) -> Any:
    value: Any = row
    for name in path.split("."):
        value = None if value is None else value[name]
    return value


def _nested_canonical(table: mor.Table, rows: list[Row]) -> list[str]:
    """Rows as Arrow gives them back (time zones), by repr: NaN equals NaN, -0.0 is not 0.0."""
    return sorted(repr(sorted(r.items())) for r in _nested_rows(table, rows).to_pylist())


def test_nested_columns_round_trip_with_metrics_of_struct_leaves(catalog: mor.Catalog) -> None:
    """Iceberg Java keeps metrics for primitives reached through structs only; a list or map
    element gets a column size and no counts or bounds (one row holds many of them)."""
    table = catalog.create_table("db.n", schema=NESTED)
    schema = table.schema()
    assert isinstance(schema.find_field("s.u").field_type, UUIDType)
    table.append(_nested_rows(table, NESTED_ROWS))
    assert _nested_canonical(table, table.scan().to_arrow().to_pylist()) == _nested_canonical(table, NESTED_ROWS)

    [entry] = live_raw_entries(table)
    maps = {name: {kv["key"]: kv["value"] for kv in entry.data_file[name] or []}
            for name in ("column_sizes", "value_counts", "null_value_counts", "nan_value_counts",
                         "lower_bounds", "upper_bounds")}  # fmt: skip
    for path in ("s.dec", "s.u", "s.d", "s.f", "s.inner.ts", "s.inner.b"):
        field = schema.find_field(path)
        values = [_leaf(r, path) for r in NESTED_ROWS]
        assert maps["value_counts"][field.field_id] == len(values), path
        assert maps["null_value_counts"][field.field_id] == values.count(None), path
        expected = ordered(values)
        lower = from_bytes(field.field_type, maps["lower_bounds"][field.field_id])
        if path == "s.inner.b":  # 20 x ff: truncated to 16 bytes, no upper bound can round it up
            assert lower == expected[0] and field.field_id not in maps["upper_bounds"]
        else:
            assert (lower, from_bytes(field.field_type, maps["upper_bounds"][field.field_id])) == (expected[0], expected[-1]), path
    assert maps["nan_value_counts"] == {schema.find_field("s.f").field_id: 1}
    repeated = [schema.find_field(p).field_id for p in ("l.element", "m.key", "m.value", "ls.element.x")]
    for fid in repeated:
        assert fid in maps["column_sizes"]
        assert all(fid not in maps[name] for name in ("value_counts", "null_value_counts", "lower_bounds", "upper_bounds"))


def test_nested_predicates_prune_and_changes_keep_nested_values(catalog: mor.Catalog) -> None:
    table = catalog.create_table("db.n", schema=NESTED)
    for row in NESTED_ROWS:  # a file per row
        table.append(_nested_rows(table, [row]))
    for text, ids, files in [
        ("s.d = '1960-01-01'", [0], 1),
        ("s.dec < 0", [3], 1),
        ("s.inner.ts < '1970-01-01T00:00:00+00:00'", [0], 1),
        ("s.f > 1", [0, 3], 2),  # NaN sorts above every number
        ("s.f is nan", [0], 1),
        ("s.d is null", [1, 2], 2),
        ("s.u = '00000000-0000-0000-0000-000000000001'", [0], 1),
    ]:
        assert sorted(table.scan(filter=text).to_arrow().column("id").to_pylist()) == ids, text
        assert len(table.scan(filter=text).plan_files()) == files, text

    model = {r["id"]: r for r in NESTED_ROWS}
    table.delete("s.d = '9999-12-31'")
    del model[3]
    table.delete("s.f = 0", mode="copy-on-write")
    del model[2]
    new_list = [Decimal("2.00"), Decimal("-0.01")]
    table.update({"l": pa.scalar(new_list, pa.list_(pa.decimal128(9, 2)))}, where="s.dec = 1.5000000000")
    model[0] = {**model[0], "l": new_list}
    table.upsert(_nested_rows(table, [NESTED_ROWS[3]]), on=["id"], strategy="equality")
    model[3] = NESTED_ROWS[3]
    table.delete_rows(pa.table({"id": pa.array([1], pa.int64())}))
    del model[1]
    assert _nested_canonical(table, table.scan().to_arrow().to_pylist()) == _nested_canonical(table, list(model.values()))
