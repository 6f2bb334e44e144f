"""Changing rows: `mor delete db.t --where ...` and `mor update db.t --set col=value --where ...`.

A VALUE is SQL text over the old row, as `Table.update` reads a `str` (mor.expr.values):
`n=n + 1`, `name=upper(name)`, `name='a b'` (text is quoted; a bare word names a column, and
one that names none is refused), `v=null`. One exception keeps the shell simple: a VALUE written
whole as an unquoted number, date, time or true/false is that literal, read as a value of the
column's type (`n=5`, `price=149.5`, `day=2025-06-05`, `ts=2025-06-05 10:00`, `flag=false`),
where SQL would want `'2025-06-05'`; it must fit exactly (no rounding). Columns of types SQL
text does not compute (uuid, binary, time) take the VALUE as a literal, as written. A value that
does not fit is refused before anything is written."""

from __future__ import annotations

import argparse
import datetime as dt
import re
import uuid
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from mor.cli.inspection import change_text
from mor.cli.options import open_table, table_args
from mor.cli.output import print_json
from mor.errors import InvalidArgumentError
from mor.expr.values import covers

if TYPE_CHECKING:
    from mor.api.table import Table
    from mor.format.metadata import Snapshot

MODES = ("merge-on-read", "copy-on-write")


def add_parsers(sub: argparse._SubParsersAction) -> None:
    d = sub.add_parser("delete", help="delete the rows matching --where (merge-on-read unless the table says otherwise)")
    table_args(d)
    d.add_argument("--where", required=True, help="the rows to delete, e.g. \"id < 100\" ('true': every row)")
    d.add_argument("--mode", choices=MODES, default=None, help="default: the table's write.delete.mode")
    d.set_defaults(run=delete)
    u = sub.add_parser("update", help="set columns to values in the rows matching --where")
    table_args(u)
    u.add_argument("--set", dest="assignments", action="append", required=True, metavar="COLUMN=VALUE",
                   help="repeat for more columns; VALUE is SQL text over the old row (n=n + 1, name=upper(name), "
                        "name='a b', v=null), or an unquoted number, date, time or true/false read as the column's "
                        "type (n=5, day=2025-06-05, ts=2025-06-05 10:00)")  # fmt: skip
    u.add_argument("--where", required=True, help="the rows to update ('true': every row)")
    u.add_argument("--mode", choices=MODES, default=None, help="default: the table's write.update.mode")
    u.set_defaults(run=update)


def delete(args: argparse.Namespace) -> None:
    table = open_table(args)
    report(table, table.delete(args.where, mode=args.mode), args.json)


def update(args: argparse.Namespace) -> None:
    table = open_table(args)
    values = assignments(table.arrow_schema(), args.assignments)
    report(table, table.update(values, where=args.where, mode=args.mode), args.json)


def report(table: Table, snapshot: Snapshot | None, as_json: bool) -> None:
    if as_json:
        document: dict[str, Any] = {"table": table.identifier, "snapshot_id": None, "operation": None, "summary": {}}
        if snapshot is not None:
            document.update(snapshot_id=snapshot.snapshot_id, operation=snapshot.operation, summary=dict(snapshot.summary))
        print_json(document)
    elif snapshot is None:
        print("no rows matched")
    else:
        counts = change_text(snapshot.summary)
        print(f"snapshot {snapshot.snapshot_id} ({snapshot.operation}{': ' + counts if counts else ''})")


# -- values --------------------------------------------------------------------------------
def assignments(schema: pa.Schema, texts: list[str]) -> dict[str, Any]:
    """`["n=5", "name='x'", "m=m + 1"]` -> {"n": <n's type scalar 5>, "name": "'x'", "m": "m + 1"}:
    literals as scalars, SQL text as text (see the module docstring); InvalidArgumentError for an
    unknown or repeated column, a literal its type cannot hold, or a bare word naming no column."""
    import pyarrow.compute as pc

    values: dict[str, Any] = {}
    for item in texts:
        column, sep, value = item.partition("=")
        column = column.strip()
        if not sep or not column:
            raise InvalidArgumentError(f"--set takes COLUMN=VALUE, got {item!r}")
        target = _field_type(schema, column)
        if target is None:
            raise InvalidArgumentError(f"--set {item!r}: the table has no column {column!r}; it has {schema.names}")
        if column in values:
            raise InvalidArgumentError(f"--set sets {column!r} twice")
        text = value.strip()
        if _LITERAL.fullmatch(text) or not covers(target):
            scalar = literal(value, target, column)
            # null as None: the API then refuses it for a required column, by name
            values[column] = pc.scalar(scalar) if scalar.is_valid else None
        elif _WORD.fullmatch(text) and text.lower() not in _VALUE_WORDS and schema.get_field_index(text) < 0:
            raise InvalidArgumentError(
                f"--set {item!r}: VALUE is SQL text, and {text!r} names no column; for the text quote it: --set \"{column}='{text}'\""
            )
        else:
            values[column] = text  # SQL text: Table.update reads it
    return values


def _field_type(schema: pa.Schema, column: str) -> pa.DataType | None:
    """The type of a column, or of a field inside a struct column (`addr.city`); None if none."""
    if schema.get_field_index(column) >= 0:
        return schema.field(column).type
    fields: pa.Schema | pa.StructType = schema
    found: pa.DataType | None = None
    for part in column.split("."):
        index = fields.get_field_index(part)
        if index < 0:
            return None
        found = fields.field(index).type
        if not pa.types.is_struct(found):
            fields = pa.struct([])
            continue
        fields = found
    return found


# An unquoted number, date or time, or true/false: a literal of the column's type.
_LITERAL = re.compile(
    r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?|true|false"
    r"|\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?)?(Z|[+-]\d{2}(:?\d{2})?)?",
    re.IGNORECASE,
)
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_VALUE_WORDS = ("null", "current_date", "current_timestamp")


def literal(text: str, target: pa.DataType, column: str) -> pa.Scalar:
    """`text` as a value of `target`: SQL's `null` (unquoted) is null; quotes around a value
    are taken off; zone-less times in a column with a zone mean UTC."""
    text = text.strip()
    if text.lower() == "null":
        return pa.scalar(None, type=target)
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        text = text[1:-1]
    try:
        return _parse(text, target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, ValueError, OverflowError) as e:
        raise InvalidArgumentError(f"--set {column}={text!r}: not a value of the column's type {target} ({_first_line(e)})") from None


def _parse(text: str, target: pa.DataType) -> pa.Scalar:
    if pa.types.is_timestamp(target) and target.tz is not None:
        return _zoned_timestamp(text, target)
    if pa.types.is_time(target):
        return pa.scalar(dt.time.fromisoformat(text), type=target)
    if pa.types.is_fixed_size_binary(target) and target.byte_width == 16 and len(text) >= 32:
        return pa.scalar(uuid.UUID(text).bytes, type=target)  # a uuid column, written as people write uuids
    if pa.types.is_fixed_size_binary(target) or pa.types.is_binary(target) or pa.types.is_large_binary(target):
        return pa.scalar(text.encode("utf-8"), type=target)
    if pa.types.is_nested(target):
        raise ValueError("nested columns take no literal on the command line")
    return pa.scalar(text).cast(target)  # Arrow's parsing: numbers, decimals (no rounding), dates, booleans


def _zoned_timestamp(text: str, target: pa.TimestampType) -> pa.Scalar:
    """With an offset (`+02:00`, `Z`) as written; without one, UTC."""
    value = dt.datetime.fromisoformat(text)
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.UTC)
    return pa.scalar(value, type=target)


def _first_line(error: Exception) -> str:
    message = str(error).strip()
    return message.splitlines()[0] if message else type(error).__name__
