"""Avro values made into Arrow arrays from buffers (mor/io/avro_arrow.py, so that reading a
small manifest does not import pandas through `pa.array`): for random records of every type a
manifest can hold (nullable, nested records, arrays of key-value records, logical types, named
types used twice), the arrays give back what fastavro decoded."""

from __future__ import annotations

import datetime as dt
import decimal
import io
import math
from typing import Any

import fastavro
from examples import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from mor.io import avro_columns
from mor.io.avro_columns import read_avro_columns

BOUND = {"type": "record", "name": "k1_v2", "fields": [{"name": "key", "type": "int"}, {"name": "value", "type": "bytes"}]}
DECIMAL = {"type": "fixed", "name": "d16", "size": 16, "logicalType": "decimal", "precision": 20, "scale": 3}
SCHEMA = {
    "type": "record",
    "name": "entry",
    "fields": [
        {"name": "status", "type": "int"},
        {"name": "flag", "type": ["null", "boolean"]},
        {"name": "count", "type": ["null", "long"]},
        {"name": "ratio", "type": ["null", "float"]},
        {"name": "share", "type": ["null", "double"]},
        {"name": "text", "type": ["null", "string"]},
        {"name": "blob", "type": ["null", "bytes"]},
        {"name": "lower", "type": ["null", {"type": "array", "items": BOUND}]},
        {"name": "upper", "type": ["null", {"type": "array", "items": "k1_v2"}]},  # the named type again
        {"name": "offsets", "type": ["null", {"type": "array", "items": "long"}]},
        {
            "name": "partition",
            "type": {
                "type": "record",
                "name": "r102",
                "fields": [
                    {"name": "day", "type": ["null", {"type": "int", "logicalType": "date"}]},
                    {"name": "at", "type": ["null", {"type": "long", "logicalType": "timestamp-micros"}]},
                    {"name": "local", "type": ["null", {"type": "long", "logicalType": "local-timestamp-micros"}]},
                    {"name": "clock", "type": ["null", {"type": "long", "logicalType": "time-micros"}]},
                    {"name": "price", "type": ["null", DECIMAL]},
                    {"name": "id", "type": ["null", {"type": "fixed", "name": "uuid_fixed", "size": 16}]},
                ],
            },
        },
    ],
}

maybe = st.none().__or__
INT32, INT64 = st.integers(-(2**31), 2**31 - 1), st.integers(-(2**63), 2**63 - 1)
PARTITION = st.fixed_dictionaries(
    {
        "day": maybe(st.dates(dt.date(1, 1, 1), dt.date(9999, 12, 31))),
        "at": maybe(st.datetimes(dt.datetime(1, 1, 2), dt.datetime(9999, 12, 30)).map(lambda d: d.replace(tzinfo=dt.UTC))),
        "local": maybe(st.datetimes(dt.datetime(1, 1, 2), dt.datetime(9999, 12, 30))),
        "clock": maybe(st.times()),
        "price": maybe(st.decimals(-(10**17) + 1, 10**17 - 1, places=3, allow_nan=False, allow_infinity=False)),
        "id": maybe(st.binary(min_size=16, max_size=16)),
    }
)
RECORD = st.fixed_dictionaries(
    {
        "status": INT32,
        "flag": maybe(st.booleans()),
        "count": maybe(INT64),
        "ratio": maybe(st.floats(width=32, allow_nan=False)),
        "share": maybe(st.floats(allow_nan=False)),
        "text": maybe(st.text()),
        "blob": maybe(st.binary()),
        "lower": maybe(st.lists(st.fixed_dictionaries({"key": INT32, "value": st.binary()}), max_size=3)),
        "upper": maybe(st.lists(st.fixed_dictionaries({"key": INT32, "value": st.binary()}), max_size=3)),
        "offsets": maybe(st.lists(INT64, max_size=3)),
        "partition": PARTITION,
    }
)
PATHS = tuple(f["name"] for f in SCHEMA["fields"]) + tuple(f"partition.{f['name']}" for f in SCHEMA["fields"][-1]["type"]["fields"])  # type: ignore[index]


@settings(max_examples=examples(60), deadline=None)
@given(st.lists(RECORD, min_size=1, max_size=20))
def test_arrays_built_from_buffers_give_back_what_fastavro_decoded(records: list[dict[str, Any]]) -> None:
    out = io.BytesIO()
    fastavro.writer(out, fastavro.parse_schema(SCHEMA), records)
    data = out.getvalue()
    assert len(data) < avro_columns.COMPILED_FROM  # the fastavro path
    decoded = list(fastavro.reader(io.BytesIO(data)))
    columns, count = read_avro_columns(data, PATHS)
    assert count == len(records)
    for path in PATHS:
        outer, _, inner = path.partition(".")
        expected = [r[outer][inner] if inner else r[outer] for r in decoded]
        assert same(columns[path].to_pylist(), expected), path


def same(got: Any, expected: Any) -> bool:
    if isinstance(expected, float) and isinstance(got, float):
        return got == expected or (math.isnan(got) and math.isnan(expected))
    if isinstance(expected, list):
        return isinstance(got, list) and len(got) == len(expected) and all(same(g, e) for g, e in zip(got, expected))
    if isinstance(expected, dict):
        return isinstance(got, dict) and got.keys() == expected.keys() and all(same(got[k], expected[k]) for k in expected)
    if isinstance(expected, decimal.Decimal):
        return isinstance(got, decimal.Decimal) and got == expected
    return type(got) is type(expected) and got == expected
