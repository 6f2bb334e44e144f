"""Store assignment: the values of a Spark column written into a table column of another type,
as Iceberg-Spark's `writeTo(...).append()` takes them under Spark's ANSI store assignment, where
the conversion never changes a value:

- a Spark TIMESTAMP (an instant; what `spark.createDataFrame` makes of pandas and Arrow data)
  into an Iceberg `timestamp` (no zone) column becomes its wall-clock time in the session time
  zone (`spark.sql.session.timeZone`), and a TIMESTAMP_NTZ into a `timestamptz` column is read
  as a wall-clock time in that zone; Spark hands Python its timestamps in Arrow with the session
  zone attached, so the batch itself says which zone applies;
- any number into any number column, as the local API stores it (mor/write/safe_casts.py):
  an integer into a double, a double into an int (toward zero), a decimal rounded HALF_UP to
  the column's scale; a value the column cannot hold fails when it is written, naming it;
- a nullable column into a required one: the values are checked when written (`conform`), and a
  null is a SchemaMismatchError naming the column.

Anything else that `check_fits` refuses (string into int, double into float, ...) stays
refused, before any file is written. Only top-level columns convert (a timestamp inside a struct must
already have the table's zone-ness).

UPDATE and MERGE values take one more, as Delta's `update`/`merge` do (Spark's INSERT store
assignment refuses it): a string (`set={"ts": "'2030-01-01 00:00:00'"}`) into a `date`,
`timestamp` or `timestamptz` column is parsed as Spark's CAST parses it (a `timestamptz` in the
session time zone); a string that is no such value is a SchemaMismatchError naming the column
(`parses_text`, applied in mor/spark/sql_dml.py).
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
from pyiceberg.schema import Schema
from pyiceberg.types import DateType, IcebergType, TimestampType, TimestamptzType

from mor.format.arrow_types import to_arrow_schema
from mor.write.arrow_schema import check_fits
from mor.write.safe_casts import narrows

# Where `mor.spark.register` leaves the session time zone for the Python workers Spark starts.
SESSION_ZONE_ENV = "MOR_SESSION_TIME_ZONE"


def parses_text(target: IcebergType) -> bool:
    """Does a string value of UPDATE or MERGE parse into a column of type `target` (see the
    module docstring)?"""
    return isinstance(target, (DateType, TimestampType, TimestamptzType))


def assigned_type(source: pa.DataType, target: pa.DataType) -> pa.DataType:
    """The type a column of type `source` has once converted for a table column of type
    `target`: `target` where store assignment converts, else `source` (left to check_fits)."""
    if _zone_changes(source, target):
        return target
    if narrows(source, target):
        return target  # every value is converted, or refused by name, when written (`conform`)
    return source


def check_assignable(source: pa.Schema, schema: Schema, nullable_into_required: bool = True) -> None:
    """SchemaMismatchError unless columns of Arrow schema `source` (named as the table's) store
    into the table (see the module docstring)."""
    target = to_arrow_schema(schema)
    fields = []
    for f in source:
        i = target.get_field_index(f.name)
        fields.append(pa.field(f.name, assigned_type(f.type, target.field(i).type) if i >= 0 else f.type, f.nullable))
    check_fits(pa.schema(fields), schema, nullable_into_required=nullable_into_required)


def needs_zone(source: pa.Schema, schema: Schema) -> list[str]:
    """Columns of `source` that go from TIMESTAMP_NTZ into a `timestamptz` column: converting
    them needs the session time zone, which an Arrow batch without a zone does not carry."""
    target = to_arrow_schema(schema)
    names = []
    for f in source:
        i = target.get_field_index(f.name)
        if i >= 0 and pa.types.is_timestamp(f.type) and f.type.tz is None and target.field(i).type.tz is not None:
            names.append(f.name)
    return names


def assign(rows: pa.Table, schema: Schema, session_zone: str | None) -> pa.Table:
    """`rows` (named as the table's columns) with their store-assignment conversions done; the
    caller conforms the result (which checks required columns for nulls). `session_zone`: for
    wall-clock values going into `timestamptz` columns (see `needs_zone`)."""
    target = to_arrow_schema(schema)
    for i, name in enumerate(rows.column_names):
        j = target.get_field_index(name)
        if j < 0:
            continue
        source_type, target_type = rows.schema.field(i).type, target.field(j).type
        if not _zone_changes(source_type, target_type):
            continue  # numbers are converted by `conform`, which names a value that does not fit
        converted = _convert(rows.column(i), target_type, session_zone)
        rows = rows.set_column(i, rows.schema.field(i).with_type(target_type), converted)
    return rows


def _zone_changes(source: pa.DataType, target: pa.DataType) -> bool:
    return pa.types.is_timestamp(source) and pa.types.is_timestamp(target) and (source.tz is None) != (target.tz is None)


def _convert(column: pa.ChunkedArray, target: pa.DataType, session_zone: str | None) -> pa.ChunkedArray:
    if column.type.tz is not None:  # an instant -> its wall clock in the batch's zone
        return pc.local_timestamp(column).cast(target)
    if session_zone is None:  # a wall clock in the session zone -> the instant
        raise AssertionError("needs_zone names these columns: the caller must give the session zone")
    # Spark resolves a wall clock that a zone's clock change makes ambiguous or skip to the earlier instant too.
    local = pc.assume_timezone(column, session_zone, ambiguous="earliest", nonexistent="earliest")
    return local.cast(target)
