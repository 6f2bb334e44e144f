"""Command line: `python -m mor quickstart` (the main job), table inspection (`scan`, `changes`), and maintenance
(`compact`, `rewrite-deletes`, `expire`, `remove-orphans`, `maintain`), and `serve`: the
catalog over the Iceberg REST protocol."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import sys
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

import mor
from mor.api.catalog import DEFAULT_WAREHOUSE
from mor.maintenance.compact import CompactionResult
from mor.maintenance.expire import ExpireResult
from mor.maintenance.orphans import OrphanResult


def quickstart(warehouse: str, uri: str | None = None, properties: dict[str, str] | None = None) -> None:
    """Create a table, append twice, DELETE both ways, UPDATE, UPSERT and delete by key; show
    rows and history. `uri` and `properties` as `mor.load_catalog` takes them (S3: both).
    It never touches a table it did not create: when `demo.events` exists (a run before, or
    the user's own), it makes `demo.events_2` (or the next free name) and says so."""
    catalog = mor.load_catalog(warehouse, uri=uri, properties=properties)
    schema = pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False),
            pa.field("category", pa.string()),
            pa.field("ts", pa.timestamp("us", tz="UTC")),
            pa.field("amount", pa.float64()),
        ]
    )
    table = _create_demo_table(catalog, schema)
    name = table.identifier
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
    print(f"table {name} at {table.location}")
    print(f"after 2 appends: {table.scan().count()} rows")
    table.delete("id < 20 and amount > 5")  # merge-on-read: one position delete file per data file hit
    table.delete("id in (21, 23, 1500)")  # merge-on-read again: the deletes stack
    table.delete("category = 'music' and id >= 1900", mode="copy-on-write")  # baseline: rewrites the file
    table.update({"amount": pc.field("amount") * 2}, where="id in (2, 3)")  # position deletes + new rows
    table.upsert(rows(range(24, 27)).set_column(3, "amount", pa.array([-1.0] * 3)), on=["id"])
    table.delete_rows(pa.table({"id": pa.array([25], pa.int64())}))  # equality delete: reads no data
    print(
        "delete by key: an equality delete file. pyiceberg 0.12, and polars and daft (which plan"
        " their scans with it), cannot read this snapshot or any later one until compact() applies"
        " it; with the table property mor.write.equality-deletes.enabled=false, delete_rows and"
        " equality UPSERT write position deletes instead, which they read"
    )
    current = table.scan(filter="id < 30").to_arrow().sort_by("id")
    print(f"\nrows with id < 30 now (of {table.scan().count()}):")
    print(_format(current))
    print("\nsnapshot history (pyiceberg: what pyiceberg 0.12 reads of it, tried now; polars and daft read the same snapshots):")
    pyiceberg_table = _pyiceberg_static_table(table.metadata_location, properties or {})
    for s in table.snapshots():
        summary = s.summary
        rows = table.scan(snapshot_id=s.snapshot_id).count()
        print(
            f"  {s.snapshot_id:>20}  seq={s.sequence_number}  {s.operation:<9}"
            f" +data={summary.get('added-data-files', '0')} -data={summary.get('deleted-data-files', '0')}"
            f" +deletes={summary.get('added-delete-files', '0')} rows={rows}"
            f"  pyiceberg: {_pyiceberg_reads(pyiceberg_table, s.snapshot_id, rows)}"
        )
    print(f"\nmetadata: {table.metadata_location}")
    print(f"catalog: {uri or f'{warehouse}/catalog.db'} (pyiceberg's SqlCatalog opens it as catalog 'default')")


def _create_demo_table(catalog: mor.Catalog, schema: pa.Schema) -> mor.Table:
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
            print(f"demo.events exists already and is left as it is: this run uses a new table, {name}")
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


def _format(t: pa.Table) -> str:
    return "\n".join([_header(t.schema), *_lines(t)])


def _header(schema: pa.Schema) -> str:
    return "  ".join(f"{c:>26}" for c in schema.names)


def _lines(t: pa.Table | pa.RecordBatch) -> list[str]:
    return ["  ".join(f"{str(v):>26}" for v in row.values()) for row in t.to_pylist()]


def _changes(args: argparse.Namespace) -> None:
    """`mor changes`: rows streamed to stdout as they are found, or written to --out."""
    split = lambda text: [c.strip() for c in text.split(",") if c.strip()] if text else None  # noqa: E731
    changes = _open_table(args).changes(
        from_snapshot_id=args.from_snapshot_id, to_snapshot_id=args.to_snapshot_id, columns=split(args.columns),
        filter=args.filter, on=split(args.on), net_changes=args.net,
    )  # fmt: skip
    if args.out is None:
        print(_header(changes.output_schema), flush=True)
        for batch in changes.to_batches():
            if batch.num_rows:
                print("\n".join(_lines(batch)), flush=True)
        return
    suffix = os.path.splitext(args.out)[1].lower()
    if suffix not in (".parquet", ".csv"):
        raise mor.InvalidArgumentError(f"--out writes .parquet or .csv files, got {args.out!r}")
    table = changes.to_arrow()
    if suffix == ".parquet":
        pq.write_table(table, args.out)
    else:
        pa_csv.write_csv(table, args.out)
    print(f"{table.num_rows} changes written to {args.out}")


def _open_table(args: argparse.Namespace) -> mor.Table:
    """For reading only: a missing warehouse is an error, never created."""
    identifier = args.table
    try:
        catalog = mor.load_catalog(args.warehouse, uri=args.uri, create=False, properties=args.property)
    except mor.InvalidArgumentError as e:
        raise mor.NoSuchTableError(f"table {identifier} does not exist: {e}") from e
    return catalog.load_table(identifier)


def _catalog_args(parser: argparse.ArgumentParser, rest_client: bool = True) -> None:
    parser.add_argument(
        "--warehouse", default=None,
        help="a folder (default ./warehouse), or s3://bucket/prefix (then give --uri); with a REST catalog, its warehouse name",
    )  # fmt: skip
    parser.add_argument(
        "--uri", default=None,
        help="the catalog database (SQLAlchemy URL; default: warehouse/catalog.db), or an http(s) URL of an Iceberg REST catalog",
    )  # fmt: skip
    if rest_client:
        parser.add_argument("--token", default=None, help="REST catalog: the bearer token (or give --credential)")
        parser.add_argument("--credential", default=None, help="REST catalog: OAuth2 client credentials CLIENT_ID:SECRET")
    parser.add_argument(
        "--property", type=_property, action="append", default=None, metavar="KEY=VALUE",
        help="file access settings, as pyiceberg names them (s3.endpoint=..., s3.access-key-id=..., s3.region=...)",
    )  # fmt: skip


def _property(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"a property is KEY=VALUE, got {text!r}")
    return key.strip(), value


def _table_args(parser: argparse.ArgumentParser, dry_run: bool = True) -> None:
    parser.add_argument("table")
    _catalog_args(parser)
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    if dry_run:
        parser.add_argument("--dry-run", action="store_true", help="say what would change; change nothing")


_AGE = re.compile(r"^(\d+(?:\.\d+)?)([smhd])$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}


def _age_or_time(text: str) -> dt.timedelta | dt.datetime:
    match = _AGE.match(text.strip())
    if match:
        return dt.timedelta(**{_UNITS[match.group(2)]: float(match.group(1))})
    try:
        return dt.datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is neither an age (7d, 36h, 90m, 30s) nor an ISO time") from None


def _run_maintenance(args: argparse.Namespace) -> None:
    table = _open_table(args)
    dry_run = getattr(args, "dry_run", False)
    if args.command == "rewrite-deletes":
        result = table.rewrite_position_deletes()
        summary = (
            f"removed {result.removed_delete_files} position delete files ({result.removed_delete_bytes} bytes,"
            f" {result.dangling_delete_files} applied to no data file), added {result.added_delete_files}"
            f" ({result.added_delete_bytes} bytes); snapshot {result.snapshot_id or 'none: nothing to do'}"
        )
    elif args.command == "compact":
        result = table.compact(
            where=args.where,
            target_file_size=args.target_file_size,
            min_delete_ratio=args.min_delete_ratio,
            min_input_files=args.min_input_files,
            min_delete_files=args.min_delete_files,
            dry_run=dry_run,
        )
        summary = _compaction_summary(result)
    elif args.command == "expire":
        result = table.expire_snapshots(
            older_than=args.older_than, retain_last=args.retain_last, allow_short_retention=args.allow_short_retention, dry_run=dry_run
        )
        summary = _expiry_summary(result)
    elif args.command == "remove-orphans":
        older_than = args.older_than if args.older_than is not None else dt.timedelta(days=3)
        result = table.remove_orphan_files(older_than=older_than, dry_run=dry_run)
        summary = _orphans_summary(result)
    else:
        result = table.maintain(dry_run=dry_run)
        parts = [
            f"{name}: {'off' if r is None else describe(r)}"
            for name, r, describe in (
                ("compact", result.compaction, _compaction_summary),
                ("expire", result.expiry, _expiry_summary),
                ("remove-orphans", result.orphans, _orphans_summary),
            )
        ]
        summary = "\n".join(parts)
    if args.json:
        print(json.dumps(result.to_dict(), indent=2, default=str))
    else:
        print(("dry run, nothing changed: " if dry_run else "") + summary)


def _compaction_summary(r: CompactionResult) -> str:
    return (
        f"rewrote {r.rewritten_data_files} data files ({r.rewritten_data_bytes} bytes, {r.rewritten_rows} rows)"
        f" into {r.added_data_files} ({r.added_data_bytes} bytes, {r.written_rows} rows); removed"
        f" {r.removed_position_delete_files} position delete files ({r.removed_position_delete_bytes} bytes) and"
        f" {r.removed_equality_delete_files} equality delete files ({r.removed_equality_delete_bytes} bytes);"
        f" snapshot {r.snapshot_id or 'none'}"
    )


def _expiry_summary(r: ExpireResult) -> str:
    return (
        f"expired {r.expired_snapshots} snapshots; deleted {r.deleted_data_files} data files,"
        f" {r.deleted_position_delete_files} position delete files, {r.deleted_equality_delete_files} equality"
        f" delete files, {r.deleted_manifests} manifests, {r.deleted_manifest_lists} manifest lists,"
        f" {r.deleted_metadata_files} metadata files, {r.deleted_statistics_files} statistics files"
        f" ({r.deleted_bytes} bytes)"
        + (f"; left {len(r.skipped_paths)} files outside the table or not its own" if r.skipped_paths else "")
    )


def _orphans_summary(r: OrphanResult) -> str:
    listed = "".join(f"\n  {p}" for p in r)
    left = f"; left {len(r.skipped_paths)} the table does not own (links, the catalog, other tables' files)" if r.skipped_paths else ""
    return f"{'found' if r.dry_run else 'removed'} {len(r)} orphan files ({r.removed_bytes} bytes){left}{listed}"


def _serve(args: argparse.Namespace) -> None:
    try:
        from mor.server.run import serve  # Starlette and uvicorn: only with the mor[server] extra
    except ImportError as e:
        raise mor.UnsupportedFeatureError(f"mor serve needs the server extra: pip install 'mor[server]' ({e})") from e
    catalog = mor.load_catalog(args.warehouse, uri=args.uri, properties=args.property)
    serve(catalog, args.host, args.port, args.token_file, args.prefix)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mor", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    q = sub.add_parser("quickstart", help="create a demo table, change rows every way, print rows and history")
    _catalog_args(q)
    s = sub.add_parser("scan", help="print a table's rows")
    s.add_argument("table")
    _catalog_args(s)
    s.add_argument("--filter", default=None)
    s.add_argument("--snapshot-id", type=int, default=None)
    ch = sub.add_parser("changes", help="print (or write) the rows each snapshot inserted, deleted and updated")
    ch.add_argument("table")
    _catalog_args(ch)
    ch.add_argument("--from", dest="from_snapshot_id", type=int, default=None, help="changes after this snapshot (default: from the empty table)")
    ch.add_argument("--to", dest="to_snapshot_id", type=int, default=None, help="up to and including this snapshot (default: the current one)")
    ch.add_argument("--on", default=None, help="comma-separated key columns that pair a delete and an insert into an update")
    ch.add_argument("--columns", default=None, help="comma-separated columns (default: all)")
    ch.add_argument("--filter", default=None)
    ch.add_argument("--net", action="store_true", help="net changes across the range")
    ch.add_argument("--out", default=None, help="write to this file instead of printing: .parquet or .csv")
    r = sub.add_parser("rewrite-deletes", help="merge each data file's position delete files into one")
    _table_args(r, dry_run=False)
    c = sub.add_parser("compact", help="rewrite data files that carry deletes (and small files) with the deletes applied")
    _table_args(c)
    c.add_argument("--where", default=None, help="only files that may hold rows matching this filter")
    c.add_argument("--target-file-size", type=int, default=None, help="bytes (default: write.target-file-size-bytes)")
    c.add_argument("--min-delete-ratio", type=float, default=0.0)
    c.add_argument("--min-delete-files", type=int, default=None)
    c.add_argument("--min-input-files", type=int, default=5)
    e = sub.add_parser("expire", help="remove old snapshots and the files only they read")
    _table_args(e)
    e.add_argument("--older-than", type=_age_or_time, default=None, help="an age (7d, 36h, 90m) or an ISO time")
    e.add_argument("--retain-last", type=int, default=None)
    e.add_argument("--allow-short-retention", action="store_true", help="expire closer to now than the table's retention")
    o = sub.add_parser("remove-orphans", help="delete files under the table that no metadata references")
    _table_args(o)
    o.add_argument("--older-than", type=_age_or_time, default=None, help="an age (3d, 36h) or an ISO time; default 3d")
    m = sub.add_parser("maintain", help="compact, expire and remove orphans as the table's properties say")
    _table_args(m)
    v = sub.add_parser("serve", help="serve the catalog to Iceberg clients over the REST catalog protocol (mor[server])")
    _catalog_args(v, rest_client=False)
    v.add_argument("--host", default="127.0.0.1", help="without --token-file only a loopback address")
    v.add_argument("--port", type=int, default=8181, help="0: a free port (the URL printed says which)")
    v.add_argument("--token-file", default=None, help="bearer tokens (and CLIENT_ID:SECRET lines) every request must carry one of")
    v.add_argument("--prefix", default=None, help="also serve the catalog under /v1/PREFIX/ and tell clients so")
    args = parser.parse_args(argv)
    args.property = dict(args.property) if args.property else None
    if getattr(args, "warehouse", "") is None:  # ./warehouse, or no warehouse name for a REST catalog
        args.warehouse = DEFAULT_WAREHOUSE
    rest_settings = {k: v for k, v in (("token", getattr(args, "token", None)), ("credential", getattr(args, "credential", None))) if v}
    if rest_settings:  # REST catalog settings travel with the other catalog properties
        args.property = {**(args.property or {}), **rest_settings}
    try:
        if args.command == "quickstart":
            quickstart(args.warehouse, args.uri, args.property)
        elif args.command == "serve":
            _serve(args)
        elif args.command == "changes":
            _changes(args)
        elif args.command == "scan":
            table = _open_table(args)
            print(_format(table.scan(filter=args.filter, snapshot_id=args.snapshot_id).to_arrow()))
        else:
            _run_maintenance(args)
    except mor.MorError as e:
        print(f"mor: {type(e).__name__}: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader went away (`mor scan ... | head`): not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
        return 0
    return 0
