"""`mor quickstart`: a demo table changed every way mor changes rows, with what it did."""

from __future__ import annotations

import argparse
import datetime as dt
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

import mor
from mor.cli.options import catalog_args, json_arg
from mor.cli.output import plain_lines, print_json, text


def add_parsers(sub: argparse._SubParsersAction) -> None:
    q = sub.add_parser("quickstart", help="create a demo table, change rows every way, print rows and history")
    catalog_args(q)
    json_arg(q)
    q.set_defaults(run=lambda args: quickstart(args.warehouse, args.uri, args.property, args.json))


def quickstart(warehouse: str, uri: str | None = None, properties: dict[str, str] | None = None, as_json: bool = False) -> None:
    """Create a table, append twice, DELETE both ways, UPDATE, UPSERT and delete by key; show
    rows and history (`as_json`: one JSON document at the end instead). `uri` and `properties`
    as `mor.load_catalog` takes them (S3: both). It never touches a table it did not create:
    when `demo.events` exists (a run before, or the user's own), it makes `demo.events_2` (or
    the next free name) and says so."""
    say: Callable[..., None] = _quiet if as_json else print
    catalog = mor.load_catalog(warehouse, uri=uri, create=True, properties=properties)
    schema = pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False),
            pa.field("category", pa.string()),
            pa.field("ts", pa.timestamp("us", tz="UTC")),
            pa.field("amount", pa.float64()),
        ]
    )
    table = _create_demo_table(catalog, schema, say)
    name = table.identifier
    start = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)

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
    say(f"table {name} at {table.location}")
    say(f"after 2 appends: {table.scan().count()} rows")
    table.delete("id < 20 and amount > 5")  # merge-on-read: one position delete file per data file hit
    table.delete("id in (21, 23, 1500)")  # merge-on-read again: the deletes stack
    table.delete("category = 'music' and id >= 1900", mode="copy-on-write")  # baseline: rewrites the file
    table.update({"amount": pc.field("amount") * 2}, where="id in (2, 3)")  # position deletes + new rows
    table.upsert(rows(range(24, 27)).set_column(3, "amount", pa.array([-1.0] * 3)), on=["id"])
    table.delete_rows(pa.table({"id": pa.array([25], pa.int64())}))  # equality delete: reads no data
    say(
        "delete by key: an equality delete file. pyiceberg 0.12, and polars and daft (which plan"
        " their scans with it), cannot read this snapshot or any later one until compact() applies"
        " it; with the table property mor.write.equality-deletes.enabled=false, delete_rows and"
        " equality UPSERT write position deletes instead, which they read"
    )
    current = table.scan(filter="id < 30").to_arrow().sort_by("id")
    say(f"\nrows with id < 30 now (of {table.scan().count()}):")
    say("\n".join(plain_lines(current.column_names, [[text(v) for v in row.values()] for row in current.to_pylist()])))
    say("\nsnapshot history (pyiceberg: what pyiceberg 0.12 reads of it, tried now; polars and daft read the same snapshots):")
    pyiceberg_table = _pyiceberg_static_table(table.metadata_location, properties or {})
    history = []
    for s in table.snapshots():
        summary = s.summary
        row_count = table.scan(snapshot_id=s.snapshot_id).count()
        pyiceberg_reads = _pyiceberg_reads(pyiceberg_table, s.snapshot_id, row_count)
        history.append({"snapshot_id": s.snapshot_id, "sequence_number": s.sequence_number, "operation": s.operation,
                        "rows": row_count, "pyiceberg": pyiceberg_reads, "summary": dict(summary)})  # fmt: skip
        say(
            f"  {s.snapshot_id:>20}  seq={s.sequence_number}  {s.operation:<9}"
            f" +data={summary.get('added-data-files', '0')} -data={summary.get('deleted-data-files', '0')}"
            f" +deletes={summary.get('added-delete-files', '0')} rows={row_count}"
            f"  pyiceberg: {pyiceberg_reads}"
        )
    catalog_location = uri or f"{warehouse}/catalog.db"
    say(f"\nmetadata: {table.metadata_location}")
    say(f"catalog: {catalog_location} (pyiceberg's SqlCatalog opens it as catalog 'default')")
    if as_json:
        print_json({"table": name, "location": table.location, "metadata_location": table.metadata_location,
                    "catalog": str(catalog_location), "rows": table.scan().count(), "snapshots": history})  # fmt: skip


def _quiet(*args: Any, **kwargs: Any) -> None:
    """`print` when the quickstart answers in JSON: the prose is left out."""


def _create_demo_table(catalog: mor.Catalog, schema: pa.Schema, say: Callable[..., None]) -> mor.Table:
    """A new table `demo.events`, or `demo.events_2`, `_3`, ... if that name is taken: an
    existing table, perhaps the user's, is never dropped or changed."""
    for n in range(1, 1000):
        name = "demo.events" if n == 1 else f"demo.events_{n}"
        if catalog.table_exists(name):
            continue
        try:
            table = catalog.create_table(name, schema=schema, partition_by=["category"])
        except mor.TableAlreadyExistsError:
            continue  # created meanwhile by another run: leave it, take the next name
        if n > 1:
            say(f"demo.events exists already and is left as it is: this run uses a new table, {name}")
        return table
    raise mor.TableAlreadyExistsError("demo.events and demo.events_2 ... demo.events_999 all exist: give another --warehouse")


def _pyiceberg_static_table(metadata_location: str, properties: dict[str, str]) -> Any:
    from pyiceberg.table import StaticTable

    return StaticTable.from_metadata(metadata_location, properties=properties)


def _pyiceberg_reads(pyiceberg_table: Any, snapshot_id: int, rows: int) -> str:
    """What pyiceberg makes of a snapshot: "same row count", or its refusal of equality deletes.
    Any other outcome is reported as it is."""
    try:
        got = pyiceberg_table.scan(snapshot_id=snapshot_id).to_arrow().num_rows
    except ValueError as e:
        if "equality deletes" not in str(e):
            raise
        return "cannot read (equality deletes)"
    return "same row count" if got == rows else f"{got} rows, not {rows}"
