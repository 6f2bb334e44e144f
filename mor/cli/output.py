"""Printing: rich tables on a terminal, plain aligned text otherwise (pipes, files, tests),
and JSON that any tool can read. Verbs build plain values (dicts, lists, Grids) first and
choose how to print them here, so text and JSON always say the same thing."""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
import sys
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Grid:
    """Rows under named columns, with an optional title: one table on the screen."""

    columns: list[str]
    rows: list[list[Any]] = field(default_factory=list)
    title: str | None = None
    whole: tuple[str, ...] = ()  # columns a terminal must not fold (ids); the others fold to fit


def stdout_is_terminal() -> bool:
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):  # replaced or closed stdout
        return False


def rich_console() -> Any | None:
    """A rich Console on stdout when a person is watching it; None for plain text (not a
    terminal, or rich missing: it is a dependency, yet the CLI must not need it)."""
    if not stdout_is_terminal():
        return None
    try:
        from rich.console import Console
    except ImportError:
        return None
    return Console(highlight=False)


def print_json(document: Any) -> None:
    print(json.dumps(document, indent=2, default=json_value, ensure_ascii=False))


def json_line(row: dict[str, Any]) -> str:
    return json.dumps(row, default=json_value, ensure_ascii=False)


def json_value(value: Any) -> Any:
    """What json cannot write by itself: times as ISO text, decimals as exact text, bytes
    as base64 (as Spark's JSON writes binary)."""
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, (decimal.Decimal, uuid.UUID)):
        return str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def text(value: Any) -> str:
    """A value as a cell: SQL's null, ISO times, everything else as Python writes it."""
    if value is None:
        return "null"
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).hex()
    return str(value)


def print_grids(*grids: Grid) -> None:
    console = rich_console()
    for i, grid in enumerate(grids):
        if console is not None:
            console.print(_rich_table(grid))
            continue
        if i:
            print()
        if grid.title:
            print(grid.title)
        if grid.rows:
            print("\n".join(plain_lines(grid.columns, [[text(v) for v in row] for row in grid.rows])))
        else:
            print("(none)")


def fields_grid(title: str, pairs: Sequence[tuple[str, Any]]) -> Grid:
    """Name: value pairs as a two-column grid."""
    return Grid(["field", "value"], [[name, value] for name, value in pairs], title)


def plain_lines(columns: Sequence[str], cells: Sequence[Sequence[str]]) -> list[str]:
    """Columns left-aligned to their widest cell, two spaces apart; no trailing blanks."""
    widths = column_widths(columns, cells)
    return ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in [list(columns), *cells]]


def column_widths(columns: Sequence[str], cells: Sequence[Sequence[str]]) -> list[int]:
    return [max([len(c), *(len(row[i]) for row in cells)]) for i, c in enumerate(columns)]


def _rich_table(grid: Grid) -> Any:
    from rich import box
    from rich.table import Table

    table = Table(title=grid.title, title_justify="left", header_style="bold", box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1, 0, 0))
    for name in grid.columns:
        table.add_column(name, overflow="fold", no_wrap=name in grid.whole)
    for row in grid.rows:
        table.add_row(*(text(v) for v in row))
    return table


def short_time(timestamp_ms: int) -> str:
    """To the second, in UTC, without blanks (a column of a table)."""
    try:
        return dt.datetime.fromtimestamp(timestamp_ms // 1000, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    except (OverflowError, OSError, ValueError):
        return f"{timestamp_ms} ms"


def human_time(timestamp_ms: int) -> str:
    """Milliseconds since the epoch as an ISO time in UTC."""
    try:
        return dt.datetime.fromtimestamp(timestamp_ms / 1000, dt.UTC).isoformat(timespec="milliseconds")
    except (OverflowError, OSError, ValueError):
        return f"{timestamp_ms} ms"
