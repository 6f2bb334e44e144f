"""Partition values between their internal form (tuples of plain Python values) and Avro/bytes."""

from __future__ import annotations

import datetime as dt
from typing import Any
from uuid import UUID

from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.typedef import Record
from pyiceberg.types import StructType

from mor.format.content_file import PartitionValues

_EPOCH_DATE = dt.date(1970, 1, 1)
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def to_internal(value: Any) -> Any:
    """fastavro decodes logical types into Python objects; planning wants Iceberg's ints."""
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.timezone.utc)
        delta = value - _EPOCH
        return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    if isinstance(value, dt.date):
        return (value - _EPOCH_DATE).days
    if isinstance(value, dt.time):
        return ((value.hour * 60 + value.minute) * 60 + value.second) * 1_000_000 + value.microsecond
    return value


def to_avro_value(value: Any) -> Any:
    if isinstance(value, UUID):
        return value.bytes
    return value


def from_avro_record(record: dict[str, Any] | None, partition_type: StructType) -> PartitionValues:
    record = record or {}
    return tuple(to_internal(record.get(f.name)) for f in partition_type.fields)


def to_avro_record(values: PartitionValues, partition_type: StructType) -> dict[str, Any]:
    return {f.name: to_avro_value(v) for f, v in zip(partition_type.fields, values, strict=True)}


def as_record(values: PartitionValues) -> Record:
    """The struct pyiceberg's expression evaluators accept."""
    return Record(*values)


def partition_path(spec: PartitionSpec, schema: Schema, values: PartitionValues) -> str:
    """Hive-style directory name (`category=a/ts_day=2024-01-02`), for humans only."""
    parts = []
    for pfield, value in zip(spec.fields, values, strict=True):
        source_type = schema.find_field(pfield.source_id).field_type
        text = pfield.transform.to_human_string(source_type, value)
        parts.append(f"{pfield.name}={_escape(text)}")
    return "/".join(parts)


def _escape(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else f"%{ord(c):02X}" for c in text)

