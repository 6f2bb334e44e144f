"""Upkeep: `compact`, `rewrite-deletes`, `expire`, `remove-orphans`, `maintain`; and `serve`,
the catalog over the Iceberg REST protocol."""

from __future__ import annotations

import argparse
import datetime as dt
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol, TypeVar

from mor.cli.options import age_or_time, catalog_args, open_table, table_args
from mor.cli.output import print_json
from mor.errors import InvalidArgumentError, RetentionTooShortError, UnsupportedFeatureError

if TYPE_CHECKING:
    from mor.maintenance.compact import CompactionResult
    from mor.maintenance.expire import ExpireResult
    from mor.maintenance.orphans import OrphanResult

_R = TypeVar("_R")


class _Result(Protocol):
    def to_dict(self) -> dict[str, object]: ...


def add_parsers(sub: argparse._SubParsersAction) -> None:
    r = sub.add_parser("rewrite-deletes", help="merge each data file's position delete files into one")
    table_args(r)
    r.set_defaults(run=rewrite_deletes)
    c = sub.add_parser("compact", help="rewrite data files that carry deletes (and small files) with the deletes applied")
    _changing_table_args(c)
    c.add_argument("--where", default=None, help="only files that may hold rows matching this filter")
    c.add_argument("--target-file-size", type=int, default=None, help="bytes (default: write.target-file-size-bytes)")
    c.add_argument("--min-delete-ratio", type=float, default=0.0)
    c.add_argument("--min-delete-files", type=int, default=None)
    c.add_argument("--min-input-files", type=int, default=5)
    order = c.add_mutually_exclusive_group()
    order.add_argument(
        "--sort-by", default=None, help="rewrite every file in scope sorted by these comma-separated columns ('col desc': descending)"
    )
    order.add_argument("--zorder-by", default=None, help="rewrite every file in scope in Z-order of 2 to 4 comma-separated columns")
    c.set_defaults(run=compact)
    e = sub.add_parser("expire", help="remove old snapshots and the files only they read")
    _changing_table_args(e)
    e.add_argument("--older-than", type=age_or_time, default=None, help="an age (7d, 36h, 90m) or an ISO time")
    e.add_argument("--retain-last", type=int, default=None)
    e.add_argument("--allow-short-retention", action="store_true", help="expire closer to now than the table's retention")
    e.set_defaults(run=expire)
    o = sub.add_parser("remove-orphans", help="delete files under the table that no metadata references")
    _changing_table_args(o)
    o.add_argument("--older-than", type=age_or_time, default=None, help="an age (3d, 36h) or an ISO time; default 3d")
    o.set_defaults(run=remove_orphans)
    m = sub.add_parser("maintain", help="compact, expire and remove orphans as the table's properties say")
    _changing_table_args(m)
    m.set_defaults(run=maintain)
    v = sub.add_parser("serve", help="serve the catalog to Iceberg clients over the REST catalog protocol (mor[server])")
    catalog_args(v, rest_client=False)
    v.add_argument("--host", default="127.0.0.1", help="without --token-file only a loopback address")
    v.add_argument("--port", type=int, default=8181, help="0: a free port (the URL printed says which)")
    v.add_argument(
        "--token-file",
        default=None,
        help="one TOKEN or CLIENT_ID:SECRET a line, every request must carry one; a line may add read-only "
        "and namespaces=NS[,NS...] (docs/rest.md)",
    )
    v.add_argument("--prefix", default=None, help="also serve the catalog under /v1/PREFIX/ and tell clients so")
    v.set_defaults(run=serve)


def _changing_table_args(parser: argparse.ArgumentParser) -> None:
    table_args(parser)
    parser.add_argument("--dry-run", action="store_true", help="say what would change; change nothing")


def _print(args: argparse.Namespace, result: _Result, summary: str) -> None:
    if args.json:
        print_json(result.to_dict())
    else:
        print(("dry run, nothing changed: " if getattr(args, "dry_run", False) else "") + summary)


def rewrite_deletes(args: argparse.Namespace) -> None:
    r = open_table(args).rewrite_position_deletes()
    _print(args, r, (
        f"removed {r.removed_delete_files} position delete files ({r.removed_delete_bytes} bytes,"
        f" {r.dangling_delete_files} applied to no data file), added {r.added_delete_files}"
        f" ({r.added_delete_bytes} bytes); snapshot {r.snapshot_id or 'none: nothing to do'}"
    ))  # fmt: skip


def compact(args: argparse.Namespace) -> None:
    result = open_table(args).compact(
        where=args.where,
        target_file_size=args.target_file_size,
        min_delete_ratio=args.min_delete_ratio,
        min_input_files=args.min_input_files,
        min_delete_files=args.min_delete_files,
        sort_by=_columns(args.sort_by),
        zorder_by=_columns(args.zorder_by),
        dry_run=args.dry_run,
    )
    _print(args, result, compaction_summary(result))


def _columns(text: str | None) -> list[str] | None:
    return None if text is None else [c.strip() for c in text.split(",")]


def expire(args: argparse.Namespace) -> None:
    try:
        result = open_table(args).expire_snapshots(
            older_than=args.older_than, retain_last=args.retain_last, allow_short_retention=args.allow_short_retention, dry_run=args.dry_run
        )
    except RetentionTooShortError as e:  # the API's wording names the argument: here it is a flag
        raise RetentionTooShortError(str(e).replace("allow_short_retention=True", "--allow-short-retention")) from None
    _print(args, result, expiry_summary(result))


def remove_orphans(args: argparse.Namespace) -> None:
    older_than = args.older_than if args.older_than is not None else dt.timedelta(days=3)
    result = open_table(args).remove_orphan_files(older_than=older_than, dry_run=args.dry_run)
    _print(args, result, orphans_summary(result))


def maintain(args: argparse.Namespace) -> None:
    result = open_table(args).maintain(dry_run=args.dry_run)
    parts = [
        _part("compact", result.compaction, compaction_summary),
        _part("expire", result.expiry, expiry_summary),
        _part("remove-orphans", result.orphans, orphans_summary),
    ]
    _print(args, result, "\n".join(parts))


def _part(name: str, r: _R | None, describe: Callable[[_R], str]) -> str:
    return f"{name}: {'off' if r is None else describe(r)}"


def compaction_summary(r: CompactionResult) -> str:
    deletes = (
        f"{r.removed_position_delete_files} position delete files ({r.removed_position_delete_bytes} bytes) and"
        f" {r.removed_equality_delete_files} equality delete files ({r.removed_equality_delete_bytes} bytes)"
    )
    if r.dry_run:  # nothing was written: what a compaction would take in
        taken = f"{r.rewritten_data_files} data files ({r.rewritten_data_bytes} bytes, {r.rewritten_rows} rows)"
        return f"would rewrite {taken}; would remove {deletes}"
    return (
        f"rewrote {r.rewritten_data_files} data files ({r.rewritten_data_bytes} bytes, {r.rewritten_rows} rows)"
        f" into {r.added_data_files} ({r.added_data_bytes} bytes, {r.written_rows} rows); removed {deletes};"
        f" snapshot {r.snapshot_id or 'none: nothing to do'}"
    )


def expiry_summary(r: ExpireResult) -> str:
    return (
        f"expired {r.expired_snapshots} snapshots; deleted {r.deleted_data_files} data files,"
        f" {r.deleted_position_delete_files} position delete files, {r.deleted_equality_delete_files} equality"
        f" delete files, {r.deleted_manifests} manifests, {r.deleted_manifest_lists} manifest lists,"
        f" {r.deleted_metadata_files} metadata files, {r.deleted_statistics_files} statistics files"
        f" ({r.deleted_bytes} bytes)" + (f"; left {len(r.skipped_paths)} files outside the table or not its own" if r.skipped_paths else "")
    )


def orphans_summary(r: OrphanResult) -> str:
    listed = "".join(f"\n  {p}" for p in r)
    left = f"; left {len(r.skipped_paths)} the table does not own (links, the catalog, other tables' files)" if r.skipped_paths else ""
    return f"{'found' if r.dry_run else 'removed'} {len(r)} orphan files ({r.removed_bytes} bytes){left}{listed}"


def serve(args: argparse.Namespace) -> None:
    import mor

    try:
        from mor.server.run import serve as run_server  # Starlette and uvicorn: only with the mor[server] extra
    except ImportError as e:
        raise UnsupportedFeatureError(f"mor serve needs the server extra: pip install 'mor[server]' ({e})") from e
    from mor.api.sql_catalog import SqlCatalog

    def open_catalog() -> SqlCatalog:  # after every other check: a refusal creates no warehouse
        catalog = mor.load_catalog(args.warehouse, uri=args.uri, create=True, properties=args.property)
        if not isinstance(catalog, SqlCatalog):
            raise InvalidArgumentError(f"mor serve serves a SQL catalog (--uri is a database URL), not {catalog!r}")
        return catalog

    run_server(open_catalog, args.host, args.port, args.token_file, args.prefix, args.property)
