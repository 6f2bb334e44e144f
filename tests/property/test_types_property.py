"""Random values of every primitive type: append, read back exactly, bounds that bound, and a
key lookup (`=` filter, then delete_rows) that finds exactly the rows holding the key.

Decimals take a random precision (1..38) and scale; temporal values span years 1..9999; floats
include NaN, infinities and -0.0. The model is the generated Python values.
"""

from __future__ import annotations

import datetime as dt
import struct
import tempfile
import uuid
from typing import Any

import pyarrow as pa
from examples import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyiceberg.conversions import from_bytes
from pyiceberg.expressions import EqualTo
from pyiceberg.schema import Schema
from pyiceberg.types import (
    BinaryType,
    DateType,
    DecimalType,
    FloatType,
    IcebergType,
    LongType,
    NestedField,
    TimestampType,
    TimestamptzType,
    TimeType,
    UUIDType,
)
from pyiceberg.utils.datetime import date_to_days, datetime_to_micros, time_to_micros
from pyiceberg.utils.decimal import unscaled_to_decimal

import mor
from mor.format.arrow_types import to_arrow_schema

UTC = dt.UTC


@st.composite
def decimal_columns(draw: st.DrawFn) -> tuple[DecimalType, st.SearchStrategy[Any]]:
    precision = draw(st.integers(1, 38))
    scale = draw(st.integers(0, precision))
    largest = 10**precision - 1
    values = st.integers(-largest, largest).map(lambda u: unscaled_to_decimal(u, scale)) | st.sampled_from(
        [unscaled_to_decimal(largest, scale), unscaled_to_decimal(-largest, scale)]
    )
    return DecimalType(precision, scale), values


def _columns(decimal_type: DecimalType, decimals: st.SearchStrategy[Any]) -> dict[str, tuple[IcebergType, st.SearchStrategy[Any]]]:
    stamps = st.datetimes(dt.datetime(1, 1, 1), dt.datetime(9999, 12, 31, 23, 59, 59, 999999))
    return {
        "dec": (decimal_type, decimals),
        "f": (FloatType(), st.floats(width=32) | st.sampled_from([-0.0, float("nan")])),
        "u": (UUIDType(), st.uuids().map(lambda u: u.bytes)),
        "bin": (BinaryType(), st.binary(max_size=24)),
        "d": (DateType(), st.dates()),
        "t": (TimeType(), st.times()),
        "ts": (TimestampType(), stamps),
        "tz": (TimestamptzType(), stamps.map(lambda s: s.replace(tzinfo=UTC))),
    }


@st.composite
def tables(draw: st.DrawFn) -> tuple[Schema, list[dict[str, Any]]]:
    columns = _columns(*draw(decimal_columns()))
    schema = Schema(NestedField(1, "id", LongType(), required=True),
                    *[NestedField(i + 2, name, t) for i, (name, (t, _)) in enumerate(columns.items())])  # fmt: skip
    n = draw(st.integers(1, 12))
    rows = [{"id": i, **{name: draw(st.none() | values) for name, (_, values) in columns.items()}} for i in range(n)]
    return schema, rows


def _canonical(value: Any) -> Any:
    if isinstance(value, float):
        return "nan" if value != value else struct.pack(">d", value)
    return value


def _internal(value: Any) -> Any:
    if isinstance(value, dt.datetime):
        return datetime_to_micros(value)
    if isinstance(value, dt.date):
        return date_to_days(value)
    if isinstance(value, dt.time):
        return time_to_micros(value)
    return value


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=tables(), pick=st.integers(0, 100))
def test_values_round_trip_and_bound_and_key_lookups_find_them(data: tuple[Schema, list[dict[str, Any]]], pick: int) -> None:
    schema, rows = data
    with tempfile.TemporaryDirectory() as warehouse:
        table = mor.load_catalog(warehouse).create_table("db.t", schema=schema)
        table.append(pa.Table.from_pylist(rows, schema=to_arrow_schema(schema)))
        got = sorted(table.scan().to_arrow().to_pylist(), key=lambda r: r["id"])
        assert [[_canonical(v) for v in r.values()] for r in got] == [[_canonical(v) for v in r.values()] for r in rows]

        [task] = table.scan().plan_files()
        for field in schema.fields[1:]:
            values = [_internal(r[field.name]) for r in rows if r[field.name] is not None and r[field.name] == r[field.name]]
            lower, upper = task.data_file.lower_bounds.get(field.field_id), task.data_file.upper_bounds.get(field.field_id)
            if values and lower is not None:
                assert from_bytes(field.field_type, lower) <= min(values), field.name
            if values and upper is not None:
                assert from_bytes(field.field_type, upper) >= max(values), field.name
            if values and not isinstance(field.field_type, (BinaryType, FloatType)):
                assert lower is not None and upper is not None, field.name  # only truncation or NaN drop a bound

        row = rows[pick % len(rows)]
        for name in ("dec", "u", "d", "t", "ts", "tz", "bin"):
            key = row[name]
            if key is None:
                continue
            literal = uuid.UUID(bytes=key) if name == "u" else key
            expected = sorted(r["id"] for r in rows if r[name] == key)
            assert sorted(table.scan(filter=EqualTo(name, literal)).to_arrow().column("id").to_pylist()) == expected, name
        key = row["dec"]
        table.delete_rows(pa.Table.from_pylist([{"dec": key}], schema=to_arrow_schema(Schema(schema.find_field("dec")))))
        remaining = sorted(table.scan().to_arrow().column("id").to_pylist())
        assert remaining == sorted(r["id"] for r in rows if not (r["dec"] == key or (r["dec"] is None and key is None)))
