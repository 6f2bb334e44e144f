"""Printing rows: `mor scan` and `mor changes`. Rows stream: each batch is written (and
flushed) as it is read, and `--limit` stops reading once it has its rows, so the first rows
appear at once whatever the table's size."""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import io
import os
import sys
from collections.abc import Iterable, Iterator
from typing import IO, Any, Protocol, cast

import pyarrow as pa

from mor.cli.options import catalog_args, column_list, json_arg, non_negative, open_table, table_args
from mor.cli.output import column_widths, json_line, print_json, rich_console, stdout_is_terminal, text
from mor.errors import InvalidArgumentError, StorageError, UnsupportedFeatureError

FORMATS = ("table", "csv", "json", "parquet")
# Rows formatted at a time: a reader's batch holds up to 131,072 rows, too many to wait for
# before the first line. A rich table on a terminal takes fewer, each page its own table.
PAGE_ROWS = 1000
RICH_PAGE_ROWS = 100


class _Closable(Protocol):
    def close(self) -> object: ...


def add_parsers(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("scan", help="print a table's rows (streamed: the first rows show at once)")
    table_args(s)
    s.add_argument("--columns", default=None, help="comma-separated columns (default: all)")
    s.add_argument("--filter", default=None, help="a row filter, e.g. \"id < 10 and region = 'eu'\"")
    s.add_argument("--limit", type=non_negative, default=None, metavar="N", help="stop after N rows")
    s.add_argument("--snapshot-id", type=int, default=None, help="read this snapshot (time travel)")
    s.add_argument(
        "--as-of", default=None, metavar="TIME", help="the snapshot current at TIME ('2025-01-15', '2025-01-15 12:00[+02]'; UTC)"
    )
    s.add_argument("--format", choices=FORMATS, default=None, help="table (default), csv, json (JSON lines) or parquet (needs --out)")
    s.add_argument("--out", default=None, metavar="FILE", help="write the rows to FILE instead of printing them")
    s.set_defaults(run=scan)
    ch = sub.add_parser("changes", help="print (or write) the rows each snapshot inserted, deleted and updated")
    ch.add_argument("table")
    catalog_args(ch)
    ch.add_argument(
        "--from", dest="from_snapshot_id", type=int, default=None, help="changes after this snapshot (default: from the empty table)"
    )
    ch.add_argument(
        "--to", dest="to_snapshot_id", type=int, default=None, help="up to and including this snapshot (default: the current one)"
    )
    ch.add_argument("--on", default=None, help="comma-separated key columns that pair a delete and an insert into an update")
    ch.add_argument("--columns", default=None, help="comma-separated columns (default: all)")
    ch.add_argument("--filter", default=None)
    ch.add_argument("--net", action="store_true", help="net changes across the range")
    ch.add_argument("--out", default=None, help="write to this file instead of printing: .parquet or .csv")
    json_arg(ch)
    ch.set_defaults(run=changes)


# -- scan ----------------------------------------------------------------------------------
def scan(args: argparse.Namespace) -> None:
    output_format = _scan_format(args)
    table = open_table(args)
    columns = column_list(args.columns)
    # A long scan shows a bar on stderr (when that is a terminal), unless the rows go to the
    # terminal: they are their own progress, and a bar would write over them.
    progress = False if args.out is None and stdout_is_terminal() else None
    rows = table.scan(filter=args.filter, columns=columns, snapshot_id=args.snapshot_id, as_of=args.as_of, progress=progress)
    from mor.format.arrow_types import to_arrow_schema

    schema = to_arrow_schema(rows.projection)  # what the reader emits: the header when no row comes
    if columns is not None and sorted(columns) == sorted(schema.names):  # as typed (the scan keeps the table's order)
        schema = pa.schema([schema.field(c) for c in columns])
    batches = rows.to_batches()
    with contextlib.closing(cast(_Closable, batches)) if hasattr(batches, "close") else contextlib.nullcontext():
        ordered = (b.select(schema.names) for b in first_rows(batches, args.limit))
        written = write_rows(output_format, schema, ordered, args.out)
    if args.out is None:
        return
    if args.json:
        print_json({"rows_written": written, "out": args.out})
    else:
        print(f"{written} rows written to {args.out}")


def _scan_format(args: argparse.Namespace) -> str:
    if args.json and args.format not in (None, "json"):
        raise InvalidArgumentError(f"--json prints JSON lines; it does not go with --format {args.format}")
    output_format = "json" if args.json else args.format or "table"
    if output_format == "parquet" and args.out is None:
        raise InvalidArgumentError("--format parquet writes a file: give --out FILE")
    return output_format


def first_rows(batches: Iterable[pa.RecordBatch], limit: int | None) -> Iterator[pa.RecordBatch]:
    """The batches up to `limit` rows in all; never asks for a batch after the last one it needs."""
    if limit is None:
        yield from batches
        return
    remaining = limit
    if remaining == 0:
        return
    for batch in batches:
        if batch.num_rows >= remaining:
            yield batch.slice(0, remaining)
            return
        remaining -= batch.num_rows
        yield batch


def write_rows(output_format: str, schema: pa.Schema, batches: Iterable[pa.RecordBatch], out: str | None) -> int:
    """Write every batch as it comes, to `out` or stdout; returns the number of rows."""
    if output_format == "parquet":
        assert out is not None
        return _write_parquet(schema, batches, out)
    if output_format == "csv":
        _check_flat(schema, "CSV")
    batches = _pages(batches, PAGE_ROWS)
    with _text_output(out) as stream:
        if output_format == "table" and out is None and (console := rich_console()) is not None:
            return _print_rich_pages(console, schema, batches)
        write = {"table": _write_text, "csv": _write_csv, "json": _write_json_lines}[output_format]
        return write(stream, schema, batches)


@contextlib.contextmanager
def _text_output(out: str | None) -> Iterator[IO[str]]:
    if out is None:
        yield sys.stdout
        return
    try:
        stream = open(out, "w", encoding="utf-8", newline="")
    except OSError as e:
        raise StorageError(f"cannot write {out}: {e.strerror or e}") from None
    with stream:
        yield stream


def _write_text(stream: IO[str], schema: pa.Schema, batches: Iterable[pa.RecordBatch]) -> int:
    """Aligned columns; widths come from the header and the first rows (a wider value later
    pushes its row right rather than holding back the first rows)."""
    written, widths = 0, None
    for batch in batches:
        if not batch.num_rows:
            continue
        cells = [[text(v) for v in row.values()] for row in python_rows(batch)]
        if widths is None:
            widths = column_widths(schema.names, cells)
            cells.insert(0, schema.names)
        stream.write("".join(_aligned(row, widths) + "\n" for row in cells))
        stream.flush()
        written += batch.num_rows
    if widths is None:  # no rows: the header alone
        stream.write("  ".join(schema.names) + "\n")
    return written


def _aligned(cells: list[str], widths: list[int]) -> str:
    return "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()


def _print_rich_pages(console: Any, schema: pa.Schema, batches: Iterable[pa.RecordBatch]) -> int:
    """One rich table per page of rows: the first page shows while the rest is read."""
    from rich.table import Table

    written = 0
    for batch in _pages(batches, RICH_PAGE_ROWS):
        table = Table(show_header=written == 0, header_style="bold", box=None, pad_edge=False)
        for name in schema.names:
            table.add_column(name, overflow="fold")
        for row in python_rows(batch):
            table.add_row(*(text(v) for v in row.values()))
        console.print(table)
        written += batch.num_rows
    if written == 0:
        console.print("  ".join(schema.names), style="bold")
    return written


def python_rows(batch: pa.RecordBatch) -> list[dict[str, Any]]:
    """`batch.to_pylist()`. pyarrow imports pandas (half a second) the first time it turns a
    time with a zone into Python, whatever its unit: such a column (but nanoseconds, which
    pyarrow may turn into pandas Timestamps) is converted without its zone, which is then put
    back as pyarrow puts it."""
    zoned = {
        f.name: pa.lib.string_to_tzinfo(f.type.tz)
        for f in batch.schema
        if pa.types.is_timestamp(f.type) and f.type.tz is not None and f.type.unit != "ns"
    }
    if not zoned:
        return batch.to_pylist()
    columns = [c.cast(pa.timestamp(c.type.unit)) if f.name in zoned else c for f, c in zip(batch.schema, batch.columns)]
    rows = pa.RecordBatch.from_arrays(columns, names=batch.schema.names).to_pylist()
    for row in rows:
        for name, zone in zoned.items():
            if row[name] is not None:
                row[name] = row[name].replace(tzinfo=dt.UTC).astimezone(zone)
    return rows


def _pages(batches: Iterable[pa.RecordBatch], rows: int) -> Iterator[pa.RecordBatch]:
    for batch in batches:
        for start in range(0, batch.num_rows, rows):
            yield batch.slice(start, rows)


def _write_csv(stream: IO[str], schema: pa.Schema, batches: Iterable[pa.RecordBatch]) -> int:
    no_rows = pa.table([pa.chunked_array([], f.type) for f in schema], schema=schema)  # not schema.empty_table(): it imports pandas
    stream.write(_csv_text(no_rows, header=True))
    written = 0
    for batch in batches:
        stream.write(_csv_text(batch, header=False))
        stream.flush()
        written += batch.num_rows
    return written


def _csv_text(rows: pa.Table | pa.RecordBatch, header: bool) -> str:
    import pyarrow.csv as pa_csv

    buffer = io.BytesIO()
    pa_csv.write_csv(rows, buffer, pa_csv.WriteOptions(include_header=header))
    return buffer.getvalue().decode("utf-8")


def _write_json_lines(stream: IO[str], schema: pa.Schema, batches: Iterable[pa.RecordBatch]) -> int:
    written = 0
    for batch in batches:
        stream.write("".join(json_line(row) + "\n" for row in python_rows(batch)))
        stream.flush()
        written += batch.num_rows
    return written


def _write_parquet(schema: pa.Schema, batches: Iterable[pa.RecordBatch], out: str) -> int:
    import pyarrow.parquet as pq

    try:
        writer = pq.ParquetWriter(out, schema)
    except OSError as e:
        raise StorageError(f"cannot write {out}: {e}") from None
    written = 0
    with writer:
        for batch in batches:
            writer.write_batch(batch if batch.schema.equals(schema) else batch.cast(schema))
            written += batch.num_rows
    return written


def _check_flat(schema: pa.Schema, what: str) -> None:
    nested = [f"{f.name} ({f.type})" for f in schema if pa.types.is_nested(f.type)]
    if nested:
        raise UnsupportedFeatureError(f"{what} holds no nested values: leave out {', '.join(nested)} with --columns, or use --format json")


# -- changes -------------------------------------------------------------------------------
def changes(args: argparse.Namespace) -> None:
    """`mor changes`: rows streamed to stdout as they are found, or written to --out."""
    found = open_table(args).changes(
        from_snapshot_id=args.from_snapshot_id, to_snapshot_id=args.to_snapshot_id, columns=column_list(args.columns),
        filter=args.filter, on=column_list(args.on), net_changes=args.net,
    )  # fmt: skip
    if args.out is None:
        write_rows("json" if args.json else "table", found.output_schema, found.to_batches(), None)
        return
    suffix = os.path.splitext(args.out)[1].lower()
    if suffix not in (".parquet", ".csv"):
        raise InvalidArgumentError(f"--out writes .parquet or .csv files, got {args.out!r}")
    written = write_rows(suffix[1:], found.output_schema, found.to_batches(), args.out)
    if args.json:
        print_json({"rows_written": written, "out": args.out})
    else:
        print(f"{written} changes written to {args.out}")
