"""Partition values between their internal form (tuples of plain Python values) and Avro/bytes."""

from __future__ import annotations

import datetime as dt
from typing import Any
from uuid import UUID

from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import IdentityTransform
from pyiceberg.typedef import Record
from pyiceberg.types import StructType, TimestampNanoType, TimestamptzNanoType

from mor.format.content_file import PartitionValues

_EPOCH_DATE = dt.date(1970, 1, 1)
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def to_internal(value: Any) -> Any:
    """fastavro decodes logical types into Python objects; planning wants Iceberg's ints."""
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.UTC)
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


def to_avro_record(values: PartitionValues, partition_type: StructType) -> dict[str, Any]:
    return {avro_field_name(f.name): to_avro_value(v) for f, v in zip(partition_type.fields, values, strict=True)}


def avro_field_name(name: str) -> str:
    """The Avro name of partition field `name`. Avro names are `[A-Za-z_][A-Za-z0-9_]*`, and
    Iceberg Java writes (and its Avro library validates) them so: any other character c
    becomes `_x<hex of c>`, a leading digit d `_d`. The default name of a nested source has a
    dot: `s.d` is `s_x2Ed`. Letters and digits are Unicode's, as Java's `Character` sees them."""
    out = []
    for i, c in enumerate(name):
        if c == "_" or c.isalpha() or (i > 0 and c.isdecimal()):
            out.append(c)
        else:
            out.append(f"_{c}" if c.isdecimal() else f"_x{ord(c):X}")
    return "".join(out)


def avro_record_keys(partition_type: StructType, record: dict[str, Any] | None) -> tuple[str, ...]:
    """The keys of the partition fields in the records of one manifest (`record`: one of them):
    their Avro names, or the names themselves in a manifest mor wrote before it wrote Avro
    names (a field named `a-b`)."""
    keys = []
    for f in partition_type.fields:
        key = avro_field_name(f.name)
        keys.append(f.name if record is not None and key not in record and f.name in record else key)
    return tuple(keys)


def as_record(values: PartitionValues) -> Record:
    """The struct pyiceberg's expression evaluators accept."""
    return Record(*values)


def partition_path(spec: PartitionSpec, schema: Schema, values: PartitionValues) -> str:
    """Hive-style directory name (`category=a/ts_day=2024-01-02`), for humans only: readers
    take file paths from manifests. Field names and values are both escaped, as Iceberg Java's
    `PartitionSpec.partitionToPath` escapes them, so a field named `../../x` (or a value with a
    `/`) stays one folder name inside the table's data folder."""
    parts = []
    for pfield, value in zip(spec.fields, values, strict=True):
        source_type = schema.find_field(pfield.source_id).field_type
        if isinstance(source_type, (TimestampNanoType, TimestamptzNanoType)) and isinstance(pfield.transform, IdentityTransform):
            text = _nanos_text(value, isinstance(source_type, TimestamptzNanoType))  # pyiceberg prints the integer
        else:
            text = pfield.transform.to_human_string(source_type, value)
        parts.append(f"{escape_path_part(pfield.name)}={escape_path_part(text)}")
    return "/".join(parts)


def _nanos_text(value: int | None, utc: bool) -> str:
    if value is None:
        return "null"
    seconds, nanos = divmod(value, 1_000_000_000)
    return (dt.datetime(1970, 1, 1) + dt.timedelta(seconds=seconds)).isoformat() + f".{nanos:09d}" + ("+00:00" if utc else "")


def escape_path_part(text: str) -> str:
    """Java's `URLEncoder.encode(text, UTF_8)`: ASCII letters, digits and `.-*_` stay, a space
    is `+`, every other byte of the UTF-8 encoding is `%XX`. No `/` survives; dots do, but a
    folder is `name=value`, never `.` or `..`."""
    out = []
    for byte in text.encode("utf-8", "surrogatepass"):
        c = chr(byte)
        if c.isascii() and (c.isalnum() or c in ".-*_"):
            out.append(c)
        else:
            out.append("+" if c == " " else f"%{byte:02X}")
    return "".join(out)
