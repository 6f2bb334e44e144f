"""Looking around: `mor tables`, `describe`, `history`, `snapshots`, `files`. Each verb builds
one JSON-able document from the table's metadata (no data file is read), then prints it as
JSON or as tables."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from mor.cli.options import catalog_args, json_arg, open_catalog, open_table, table_args
from mor.cli.output import Grid, fields_grid, human_time, json_line, print_grids, print_json, rich_console, short_time, text
from mor.errors import InvalidArgumentError, NoSuchSnapshotError

if TYPE_CHECKING:
    from pyiceberg.schema import Schema

    from mor.api.table import Table
    from mor.format.content_file import ContentFile
    from mor.format.metadata import Snapshot, TableMetadata

# Content kinds as `files` and `describe` name them (a deletion vector is a position delete in a Puffin file).
DATA, POSITION, EQUALITY, DELETION_VECTOR = "data", "position", "equality", "deletion-vector"
DELETE_KINDS = (POSITION, EQUALITY, DELETION_VECTOR)

# What a snapshot changed, from its summary, in the order it is said: (key, sign, what).
CHANGE_COUNTS = (
    ("added-records", "+", "rows"),
    ("deleted-records", "-", "rows"),
    ("added-position-deletes", "+", "position deletes"),
    ("added-equality-deletes", "+", "equality deletes"),
    ("added-data-files", "+", "data files"),
    ("deleted-data-files", "-", "data files"),
    ("added-delete-files", "+", "delete files"),
    ("removed-delete-files", "-", "delete files"),
)
# Columns a terminal never folds (ids are copied whole); parent and changes fold to fit.
WHOLE = ("time", "snapshot", "operation", "live rows", "records")


def change_text(summary: dict[str, str]) -> str:
    """`+1000 rows, +3 data files`: the counts of a snapshot summary that are not zero."""
    return ", ".join(f"{sign}{summary[key]} {what}" for key, sign, what in CHANGE_COUNTS if summary.get(key, "0") != "0")


def add_parsers(sub: argparse._SubParsersAction) -> None:
    t = sub.add_parser("tables", help="list the tables of a namespace, or of every namespace")
    t.add_argument("namespace", nargs="?", default=None)
    catalog_args(t)
    json_arg(t)
    t.set_defaults(run=list_tables)
    d = sub.add_parser("describe", help="schema, partition spec, sort order, properties, sizes and deletes of a table")
    table_args(d)
    d.set_defaults(run=describe)
    h = sub.add_parser("history", help="the snapshot log: which snapshot was current when")
    table_args(h)
    h.set_defaults(run=history)
    s = sub.add_parser("snapshots", help="the snapshots the table keeps, with their summaries")
    table_args(s)
    s.set_defaults(run=snapshots)
    f = sub.add_parser("files", help="the data and delete files of the current snapshot (or of --snapshot)")
    table_args(f)
    f.add_argument("--snapshot", type=int, default=None, metavar="ID", help="a snapshot id (default: the current snapshot)")
    f.set_defaults(run=files)
    i = sub.add_parser("inspect", help="a metadata table, with Iceberg Java's columns: snapshots, files, entries, partitions, ...")
    table_args(i)
    i.add_argument(
        "metadata_table",
        metavar="TABLE",
        help="snapshots, history, refs, metadata_log_entries, manifests, entries, "
        "files, data_files, delete_files, partitions, position_deletes, or all_ of manifests, entries and the files",
    )
    i.add_argument("--snapshot", type=int, default=None, metavar="ID", help="of this snapshot (the tables that take one)")
    i.set_defaults(run=inspect_table)


def inspect_table(args: argparse.Namespace) -> None:
    """JSON lines with --json, else a grid of the scalar columns (nested ones as JSON text)."""
    from mor.api.inspect import METADATA_TABLES, SNAPSHOT_TABLES  # imported on first use: `mor --help` reads no manifests

    if args.metadata_table not in METADATA_TABLES:
        raise InvalidArgumentError(f"no metadata table {args.metadata_table!r}; there are {', '.join(sorted(METADATA_TABLES))}")
    if args.snapshot is not None and args.metadata_table not in SNAPSHOT_TABLES:
        raise InvalidArgumentError(f"--snapshot goes with {', '.join(sorted(SNAPSHOT_TABLES))}, not {args.metadata_table}")
    table = open_table(args)
    read = getattr(table.inspect, args.metadata_table)
    rows = (read() if args.snapshot is None else read(args.snapshot)).to_pylist()
    if args.json:
        for row in rows:
            print(json_line(row))
        return
    columns = list(rows[0]) if rows else []
    cells = [[text(r[c]) if not isinstance(r[c], (dict, list)) else json_line({"v": r[c]})[5:-1] for c in columns] for r in rows]
    print_grids(Grid(columns, cells, title=f"{args.metadata_table} of {table.identifier}"))


# -- tables --------------------------------------------------------------------------------
def list_tables(args: argparse.Namespace) -> None:
    catalog = open_catalog(args)
    namespaces = [args.namespace] if args.namespace else catalog.list_namespaces()
    names = [name for namespace in namespaces for name in catalog.list_tables(namespace)]
    if args.json:
        print_json({"namespace": args.namespace, "tables": names})
    elif rich_console() is not None:
        print_grids(Grid(["table"], [[n] for n in names]))
    else:  # one name a line, for `xargs` and `while read`
        for name in names:
            print(name)


# -- describe ------------------------------------------------------------------------------
def describe(args: argparse.Namespace) -> None:
    document = describe_table(open_table(args))
    if args.json:
        print_json(document)
        return
    print_grids(*describe_grids(document))


def describe_table(table: Table) -> dict[str, Any]:
    metadata = table.metadata
    schema = metadata.schema()
    snapshot = metadata.current_snapshot()
    return {
        "table": table.identifier,
        "location": table.location,
        "metadata_location": table.metadata_location,
        "format_version": metadata.format_version,
        "table_uuid": metadata.table_uuid,
        "schema": {"schema_id": schema.schema_id, "columns": list(_columns(schema.fields))},
        "partition_spec": _spec(metadata, schema),
        "sort_order": _sort_order(metadata, schema),
        "properties": dict(sorted(metadata.properties.items())),
        "current_snapshot": None if snapshot is None else snapshot_document(snapshot),
        **_sizes(table, snapshot),
    }


def _columns(fields: Any, parent: str = "") -> Iterator[dict[str, Any]]:
    """Every column, struct fields as `parent.child` after their struct."""
    from pyiceberg.types import StructType

    for f in fields:
        name = f"{parent}{f.name}"
        nested = isinstance(f.field_type, StructType)
        yield {"id": f.field_id, "name": name, "type": "struct" if nested else str(f.field_type), "required": f.required, "doc": f.doc}
        if nested:
            yield from _columns(f.field_type.fields, f"{name}.")


def _spec(metadata: TableMetadata, schema: Schema) -> dict[str, Any]:
    spec = metadata.spec()
    fields = [
        {"field_id": f.field_id, "name": f.name, "transform": str(f.transform), "source": _column_name(schema, f.source_id)}
        for f in spec.fields
    ]
    return {"spec_id": spec.spec_id, "fields": fields}


def _sort_order(metadata: TableMetadata, schema: Schema) -> dict[str, Any]:
    order = metadata.sort_order
    fields = [
        {"source": _column_name(schema, f.source_id), "transform": str(f.transform), "direction": str(f.direction),
         "null_order": str(f.null_order)}
        for f in order.fields
    ]  # fmt: skip
    return {"order_id": order.order_id, "fields": fields}


def _column_name(schema: Schema, field_id: int) -> str:
    return schema.find_column_name(field_id) or f"(dropped column {field_id})"


def _sizes(table: Table, snapshot: Snapshot | None) -> dict[str, Any]:
    """Files, rows and bytes of live data files, and of delete files by kind with the share
    of rows they delete (for equality deletes: key rows, which may match any number of rows)."""
    data: dict[str, float] = {"files": 0, "rows": 0, "bytes": 0}
    deletes = {kind: {"files": 0, "rows": 0, "bytes": 0, "ratio": 0.0} for kind in DELETE_KINDS}
    for file in live_files(table, snapshot):
        kind = content_kind(file)
        counts = data if kind == DATA else deletes[kind]
        counts["files"] += 1
        counts["rows"] += file.record_count
        counts["bytes"] += file.file_size_in_bytes
    for counts in deletes.values():
        counts["ratio"] = round(counts["rows"] / data["rows"], 6) if data["rows"] else 0.0
    return {"data_files": data, "delete_files": deletes}


def describe_grids(document: dict[str, Any]) -> list[Grid]:
    snapshot = document["current_snapshot"]
    overview = fields_grid(f"table {document['table']}", [
        ("location", document["location"]),
        ("metadata", document["metadata_location"]),
        ("format version", document["format_version"]),
        ("current snapshot", "none" if snapshot is None else f"{snapshot['snapshot_id']} ({snapshot['operation']}, {snapshot['time']})"),
    ])  # fmt: skip
    columns = Grid(
        ["id", "name", "type", "required", "doc"],
        [[*list(c.values())[:4], c["doc"] or ""] for c in document["schema"]["columns"]],
        "schema",
    )
    spec = document["partition_spec"]
    partition = Grid(
        ["field id", "name", "transform", "source"], [list(f.values()) for f in spec["fields"]], f"partition spec {spec['spec_id']}"
    )
    order = document["sort_order"]
    sort = Grid(
        ["source", "transform", "direction", "null order"], [list(f.values()) for f in order["fields"]], f"sort order {order['order_id']}"
    )
    properties = Grid(["property", "value"], [list(p) for p in document["properties"].items()], "properties")
    data = document["data_files"]
    sizes = Grid(["files", "kind", "count", "rows", "bytes", "share of data rows"], title="sizes")
    sizes.rows.append(["data", DATA, data["files"], data["rows"], data["bytes"], ""])
    for kind, counts in document["delete_files"].items():
        sizes.rows.append(["deletes", kind, counts["files"], counts["rows"], counts["bytes"], f"{counts['ratio']:.2%}"])
    return [overview, columns, partition, sort, properties, sizes]


# -- history and snapshots -----------------------------------------------------------------
def history(args: argparse.Namespace) -> None:
    table = open_table(args)
    by_id = {s.snapshot_id: s for s in table.snapshots()}
    entries: list[dict[str, Any]] = []
    for entry in table.history():
        snapshot = by_id.get(entry.snapshot_id)  # None: expired since
        entries.append({
            "time": human_time(entry.made_current_at_ms),
            "timestamp_ms": entry.made_current_at_ms,
            "snapshot_id": entry.snapshot_id,
            "parent_snapshot_id": entry.parent_snapshot_id,
            "is_current_ancestor": entry.is_current_ancestor,
            "operation": None if snapshot is None else snapshot.operation,
            "summary": None if snapshot is None else dict(snapshot.summary),
            "live_rows": None if snapshot is None else live_rows(table, snapshot.snapshot_id),
        })  # fmt: skip
    if args.json:
        print_json({"table": table.identifier, "history": entries})
        return
    columns = ["time", "snapshot", "parent", "operation", "changes", "live rows", "records"]
    grid = Grid(columns, title=f"history of {table.identifier}", whole=WHOLE)
    for e in entries:
        summary = e["summary"] or {}
        live = "" if e["live_rows"] is None else e["live_rows"]
        grid.rows.append([short_time(e["timestamp_ms"]), e["snapshot_id"], e["parent_snapshot_id"] or "", e["operation"] or "(expired)",
                          change_text(summary), live, summary.get("total-records", "")])  # fmt: skip
    print_grids(grid)


def live_rows(table: Table, snapshot_id: int) -> int:
    """The rows a scan of the snapshot returns: its data files' records less what its delete
    files delete (Iceberg's `total-records` counts deleted rows too)."""
    return table.scan(snapshot_id=snapshot_id).count()


def snapshots(args: argparse.Namespace) -> None:
    table = open_table(args)
    current = table.metadata.current_snapshot_id
    documents = [{**snapshot_document(s), "live_rows": live_rows(table, s.snapshot_id)} for s in table.snapshots()]
    if args.json:
        print_json({"table": table.identifier, "current_snapshot_id": current, "snapshots": documents})
        return
    grid = Grid(
        ["snapshot", "parent", "seq", "time", "operation", "changes", "live rows", "records", "current"],
        title=f"snapshots of {table.identifier}",
        whole=WHOLE,
    )
    for s in documents:
        is_current = "*" if s["snapshot_id"] == current else ""
        summary = s["summary"]
        when = short_time(s["timestamp_ms"])
        grid.rows.append(
            [s["snapshot_id"], s["parent_snapshot_id"] or "", s["sequence_number"], when, s["operation"],
             change_text(summary), s["live_rows"], summary.get("total-records", ""), is_current]
        )  # fmt: skip
    print_grids(grid)


def snapshot_document(snapshot: Snapshot) -> dict[str, Any]:
    return {
        "snapshot_id": snapshot.snapshot_id,
        "parent_snapshot_id": snapshot.parent_snapshot_id,
        "sequence_number": snapshot.sequence_number,
        "time": human_time(snapshot.timestamp_ms),
        "timestamp_ms": snapshot.timestamp_ms,
        "operation": snapshot.operation,
        "schema_id": snapshot.schema_id,
        "manifest_list": snapshot.manifest_list,
        "summary": dict(snapshot.summary),
    }


# -- files ---------------------------------------------------------------------------------
def files(args: argparse.Namespace) -> None:
    table = open_table(args)
    snapshot = _snapshot(table, args.snapshot)
    schema = table.metadata.schema()
    documents = [_file_document(table.metadata, schema, f) for f in live_files(table, snapshot)]
    if args.json:
        snapshot_id = None if snapshot is None else snapshot.snapshot_id
        print_json({"table": table.identifier, "snapshot_id": snapshot_id, "files": documents})
        return
    grid = Grid(["content", "path", "rows", "bytes", "partition"], title=f"files of {table.identifier}" + (
        f" at snapshot {snapshot.snapshot_id}" if snapshot is not None else " (no snapshot)"))  # fmt: skip
    for f in documents:
        partition = ", ".join(f"{k}={v}" for k, v in f["partition"].items())
        grid.rows.append([f["content"], f["file_path"], f["record_count"], f["file_size_in_bytes"], partition])
    print_grids(grid)


def _snapshot(table: Table, snapshot_id: int | None) -> Snapshot | None:
    if snapshot_id is None:
        return table.current_snapshot()
    try:
        return table.metadata.snapshot_by_id(snapshot_id)
    except KeyError:
        raise NoSuchSnapshotError(f"{table.identifier} has no snapshot {snapshot_id}") from None


def live_files(table: Table, snapshot: Snapshot | None) -> list[ContentFile]:
    """The data files, then the delete files, that `snapshot` reads (none for an empty table)."""
    from mor.format.spec import ManifestContent
    from mor.planning.planner import live_entries

    if snapshot is None:
        return []
    return [
        entry.file
        for content in (ManifestContent.DATA, ManifestContent.DELETES)
        for entry in live_entries(table.io, table.metadata, snapshot, content)
    ]


def content_kind(file: ContentFile) -> str:
    from mor.format.spec import FileContent

    if file.content == FileContent.DATA:
        return DATA
    if file.content == FileContent.EQUALITY_DELETES:
        return EQUALITY
    return DELETION_VECTOR if file.is_deletion_vector else POSITION


def _file_document(metadata: TableMetadata, schema: Schema, file: ContentFile) -> dict[str, Any]:
    document: dict[str, Any] = {
        "content": content_kind(file),
        "file_path": file.file_path,
        "file_format": file.file_format,
        "record_count": file.record_count,
        "file_size_in_bytes": file.file_size_in_bytes,
        "spec_id": file.spec_id,
        "partition": _partition(metadata, schema, file),
        "data_sequence_number": file.data_sequence_number,
    }
    if file.equality_ids:
        document["equality_columns"] = [_column_name(schema, i) for i in file.equality_ids]
    if file.referenced_data_file:
        document["referenced_data_file"] = file.referenced_data_file
    return document


def _partition(metadata: TableMetadata, schema: Schema, file: ContentFile) -> dict[str, str | None]:
    """Partition values as people read them (`day(ts)`: 2025-06-05, not a day number)."""
    spec = metadata.specs().get(file.spec_id)
    if spec is None:
        return {}
    return {f.name: _human_value(schema, f, value) for f, value in zip(spec.fields, file.partition)}


def _human_value(schema: Schema, partition_field: Any, value: Any) -> str | None:
    if value is None:
        return None
    try:
        source = schema.find_field(partition_field.source_id)
    except ValueError:  # the source column was dropped: the stored value is all there is
        return str(value)
    return partition_field.transform.to_human_string(source.field_type, value)
