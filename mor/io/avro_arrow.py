"""Python values of an Avro schema made into Arrow arrays from buffers.

`pa.array` imports pandas on its first call (to ask whether the values are a pandas object):
half a second of start-up for `mor scan` on a small table, whose manifests fastavro decodes.
The Avro schema already says every type, so the arrays are built from numpy buffers instead,
typed as polars types the same fields in large files (ints 32 or 64 bits, logical types as
Arrow's date, time, timestamp and decimal types, fixed as binary). `Unsupported` for what a
manifest never holds (Avro maps, unions of two types): the caller converts those otherwise.
"""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Callable, Sequence
from typing import Any
from uuid import UUID

import numpy as np
import pyarrow as pa


class Unsupported(TypeError):
    """An Avro type this module does not build."""


def arrow_array(values: Sequence[Any], schema: Any, named: dict[str, Any] | None = None) -> pa.Array:
    """`values` (fastavro's datums of the Avro `schema`, None where null) as one Arrow array.
    `named`: the named types seen so far (a schema names a type once, then uses its name)."""
    named = {} if named is None else named
    schema = _resolve(schema, named)
    if isinstance(schema, list):
        branches = [s for s in schema if s != "null"]
        if len(branches) != 1:
            raise Unsupported(f"union {schema}")
        return arrow_array(values, branches[0], named)
    kind = schema if isinstance(schema, str) else schema["type"]
    logical = None if isinstance(schema, str) else schema.get("logicalType")
    if kind in ("record", "fixed"):
        register_names(schema, named)
    if kind == "record":
        names = [f["name"] for f in schema["fields"]]
        children = [arrow_array([None if v is None else v[f["name"]] for v in values], f["type"], named) for f in schema["fields"]]
        struct = pa.struct([pa.field(name, child.type) for name, child in zip(names, children)])
        return pa.Array.from_buffers(struct, len(values), [_validity(values)], children=children)
    if kind == "array":
        items = [item for v in values if v is not None for item in v]
        child = arrow_array(items, schema["items"], named)
        offsets = _offsets([0 if v is None else len(v) for v in values])
        return pa.Array.from_buffers(pa.list_(child.type), len(values), [_validity(values), offsets], children=[child])
    if logical == "decimal" and kind in ("bytes", "fixed"):
        return _decimals(values, schema["precision"], schema.get("scale", 0))
    if kind in ("string", "bytes", "fixed"):
        return _binary(values, pa.string() if kind == "string" else pa.binary())
    fixed_width = _FIXED_WIDTH.get((kind, logical)) or _FIXED_WIDTH.get((kind, None))
    if fixed_width is None:
        raise Unsupported(f"Avro type {kind}")
    arrow_type, dtype, to_number = fixed_width
    numbers: np.ndarray[Any, Any] = np.array([0 if v is None else to_number(v) for v in values], dtype)
    if arrow_type == pa.bool_():
        numbers = np.packbits(numbers, bitorder="little")
    return pa.Array.from_buffers(arrow_type, len(values), [_validity(values), pa.py_buffer(numbers)])


def named_types(schema: Any, named: dict[str, Any] | None = None) -> dict[str, Any]:
    """Every named type (record, fixed, enum) defined in `schema`, by its name and full name: a
    schema defines a type once, then uses its name (maybe before the path being read meets
    the definition)."""
    named = {} if named is None else named
    if isinstance(schema, list):
        for branch in schema:
            named_types(branch, named)
    elif isinstance(schema, dict):
        if schema.get("type") in ("record", "fixed", "enum") and "name" in schema:
            register_names(schema, named)
        for part in (schema.get("type"), schema.get("items"), schema.get("values")):
            if isinstance(part, (dict, list)):
                named_types(part, named)
        for f in schema.get("fields", ()):
            named_types(f["type"], named)
    return named


def register_names(schema: dict[str, Any], named: dict[str, Any]) -> None:
    name = schema["name"]
    named[name] = named[name.rpartition(".")[2]] = schema
    if schema.get("namespace"):
        named[f"{schema['namespace']}.{name}"] = schema


def _resolve(schema: Any, named: dict[str, Any]) -> Any:
    if isinstance(schema, str) and schema in named:
        return named[schema]
    if isinstance(schema, dict) and isinstance(schema.get("type"), (dict, list)):
        return schema["type"]  # {"type": {...}}: a type wrapped once more
    return schema


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_EPOCH_DATE = dt.date(1970, 1, 1)


def _micros(value: dt.datetime) -> int:
    delta = (value if value.tzinfo else value.replace(tzinfo=dt.UTC)) - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _time_micros(value: dt.time) -> int:
    return ((value.hour * 60 + value.minute) * 60 + value.second) * 1_000_000 + value.microsecond


def _same(value: Any) -> Any:
    return value


_FIXED_WIDTH: dict[tuple[str, str | None], tuple[pa.DataType, type, Callable[[Any], Any]]] = {
    ("boolean", None): (pa.bool_(), np.uint8, bool),
    ("int", None): (pa.int32(), np.int32, _same),
    ("long", None): (pa.int64(), np.int64, _same),
    ("float", None): (pa.float32(), np.float32, _same),
    ("double", None): (pa.float64(), np.float64, _same),
    ("int", "date"): (pa.date32(), np.int32, lambda d: (d - _EPOCH_DATE).days),
    ("int", "time-millis"): (pa.time64("us"), np.int64, _time_micros),
    ("long", "time-micros"): (pa.time64("us"), np.int64, _time_micros),
    ("long", "timestamp-micros"): (pa.timestamp("us", tz="UTC"), np.int64, _micros),
    ("long", "timestamp-millis"): (pa.timestamp("us", tz="UTC"), np.int64, _micros),
    ("long", "local-timestamp-micros"): (pa.timestamp("us"), np.int64, _micros),
    ("long", "local-timestamp-millis"): (pa.timestamp("us"), np.int64, _micros),
}


def _validity(values: Sequence[Any]) -> pa.Buffer | None:
    present = np.fromiter((v is not None for v in values), np.bool_, len(values))
    return None if present.all() else pa.py_buffer(np.packbits(present, bitorder="little"))


def _offsets(lengths: list[int]) -> pa.Buffer:
    offsets = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if offsets[-1] >= 2**31:
        raise Unsupported("a column of more than 2 GiB")
    return pa.py_buffer(offsets.astype(np.int32))


def _binary(values: Sequence[Any], arrow_type: pa.DataType) -> pa.Array:
    encoded = [b"" if v is None else _as_bytes(v) for v in values]
    data = b"".join(encoded)
    return pa.Array.from_buffers(arrow_type, len(values), [_validity(values), _offsets([len(b) for b in encoded]), pa.py_buffer(data)])


def _as_bytes(value: Any) -> bytes:
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, UUID):  # fastavro's string-uuid
        return str(value).encode()
    return bytes(value)


def _decimals(values: Sequence[Any], precision: int, scale: int) -> pa.Array:
    data = b"".join(_unscaled(v, scale).to_bytes(16, "little", signed=True) for v in values)
    return pa.Array.from_buffers(pa.decimal128(precision, scale), len(values), [_validity(values), pa.py_buffer(data)])


def _unscaled(value: decimal.Decimal | None, scale: int) -> int:
    if value is None:
        return 0
    return int(value.scaleb(scale, decimal.Context(prec=80)))
