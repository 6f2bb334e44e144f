"""Command line: `python -m mor quickstart` (the main job) and small table inspection verbs."""

from __future__ import annotations

import argparse
import datetime as dt
import os
import sys

import pyarrow as pa
import pyarrow.compute as pc

import mor


def quickstart(warehouse: str) -> None:
    """Create a table, append twice, DELETE both ways, UPDATE, UPSERT and delete by key; show
    rows and history."""
    catalog = mor.load_catalog(warehouse)
    if catalog.table_exists("demo.events"):
        catalog.drop_table("demo.events")
    schema = pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False),
            pa.field("category", pa.string()),
            pa.field("ts", pa.timestamp("us", tz="UTC")),
            pa.field("amount", pa.float64()),
        ]
    )
    table = catalog.create_table("demo.events", schema=schema, partition_by=["category"])
    start = dt.datetime(2026, 11, 1, tzinfo=dt.timezone.utc)

    def rows(ids: range) -> pa.Table:
        return pa.table(
            {
                "id": list(ids),
                "category": [("books", "games", "music")[i % 3] for i in ids],
                "ts": [start + dt.timedelta(minutes=17 * i) for i in ids],
                "amount": [round(i * 1.25, 2) for i in ids],
            },
            schema=schema,
        )

    table.append(rows(range(0, 1000)))
    table.append(rows(range(1000, 2000)))
    print(f"table demo.events at {table.location}")
    print(f"after 2 appends: {table.scan().count()} rows")
    table.delete("id < 20 and amount > 5")  # merge-on-read: one position delete file per data file hit
    table.delete("id in (21, 23, 1500)")  # merge-on-read again: the deletes stack
    table.delete("category = 'music' and id >= 1900", mode="copy-on-write")  # baseline: rewrites the file
    table.update({"amount": pc.field("amount") * 2}, where="id in (2, 3)")  # position deletes + new rows
    table.upsert(rows(range(24, 27)).set_column(3, "amount", pa.array([-1.0] * 3)), on=["id"])
    table.delete_rows(pa.table({"id": pa.array([25], pa.int64())}))  # equality delete: reads no data
    current = table.scan(filter="id < 30").to_arrow().sort_by("id")
    print(f"\nrows with id < 30 now (of {table.scan().count()}):")
    print(_format(current))
    print("\nsnapshot history:")
    for s in table.snapshots():
        summary = s.summary
        print(
            f"  {s.snapshot_id:>20}  seq={s.sequence_number}  {s.operation:<9}"
            f" +data={summary.get('added-data-files', '0')} -data={summary.get('deleted-data-files', '0')}"
            f" +deletes={summary.get('added-delete-files', '0')} rows={table.scan(snapshot_id=s.snapshot_id).count()}"
        )
    print(f"\nmetadata: {table.metadata_location}")
    print(f"catalog: {warehouse}/catalog.db (pyiceberg's SqlCatalog opens it as catalog 'default')")


def _format(t: pa.Table) -> str:
    columns = t.column_names
    lines = ["  ".join(f"{c:>26}" for c in columns)]
    for row in t.to_pylist():
        lines.append("  ".join(f"{str(row[c]):>26}" for c in columns))
    return "\n".join(lines)


def _open_table(warehouse: str, identifier: str) -> mor.Table:
    """For reading only: a missing warehouse is an error, never created."""
    try:
        catalog = mor.load_catalog(warehouse, create=False)
    except mor.InvalidArgumentError as e:
        raise mor.NoSuchTableError(f"table {identifier} does not exist: {e}") from e
    return catalog.load_table(identifier)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mor", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    q = sub.add_parser("quickstart", help="create a demo table, change rows every way, print rows and history")
    q.add_argument("--warehouse", default="warehouse")
    s = sub.add_parser("scan", help="print a table's rows")
    s.add_argument("table")
    s.add_argument("--warehouse", default="warehouse")
    s.add_argument("--filter", default=None)
    s.add_argument("--snapshot-id", type=int, default=None)
    r = sub.add_parser("rewrite-deletes", help="merge each data file's position delete files into one")
    r.add_argument("table")
    r.add_argument("--warehouse", default="warehouse")
    args = parser.parse_args(argv)
    try:
        if args.command == "quickstart":
            quickstart(args.warehouse)
        elif args.command == "scan":
            table = _open_table(args.warehouse, args.table)
            print(_format(table.scan(filter=args.filter, snapshot_id=args.snapshot_id).to_arrow()))
        elif args.command == "rewrite-deletes":
            result = _open_table(args.warehouse, args.table).rewrite_position_deletes()
            print(
                f"removed {result.removed_delete_files} position delete files ({result.removed_delete_bytes} bytes,"
                f" {result.dangling_delete_files} applied to no data file), added {result.added_delete_files}"
                f" ({result.added_delete_bytes} bytes); snapshot {result.snapshot_id or 'none: nothing to do'}"
            )
    except mor.MorError as e:
        print(f"mor: {type(e).__name__}: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader went away (`mor scan ... | head`): not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
        return 0
    return 0
