"""Undo and refs: `rollback`, `set-current`, `cherrypick`, `publish`, `refs`, `branch` and `tag`
(mor/api/snapshot_management.py). Each change is one commit; each prints the table's refs after
it (or, for undo, the snapshot now current)."""

from __future__ import annotations

import argparse
import datetime as dt
from typing import TYPE_CHECKING, Any

from mor.cli.options import non_negative, open_table, table_args
from mor.cli.output import Grid, print_grids, print_json, short_time

if TYPE_CHECKING:
    from mor.api.table import Table
    from mor.format.metadata import Snapshot


def add_parsers(sub: argparse._SubParsersAction) -> None:
    r = sub.add_parser("rollback", help="make an earlier snapshot of the current branch current again")
    table_args(r)
    to = r.add_mutually_exclusive_group(required=True)
    to.add_argument("--snapshot", type=int, help="an ancestor of the current snapshot")
    to.add_argument("--time", type=dt.datetime.fromisoformat, help="an ISO time: the newest ancestor committed before it")
    r.set_defaults(run=rollback)
    s = sub.add_parser("set-current", help="make any snapshot of the table current (also one a rollback left)")
    table_args(s)
    s.add_argument("snapshot", type=int)
    s.set_defaults(run=lambda args: _print_current(args, open_table(args).set_current_snapshot(args.snapshot)))
    c = sub.add_parser("cherrypick", help="apply a snapshot's append (or fast-forward to it) on the current snapshot")
    table_args(c)
    c.add_argument("snapshot", type=int)
    c.set_defaults(run=lambda args: _print_current(args, open_table(args).cherrypick(args.snapshot)))
    p = sub.add_parser("publish", help="publish the write staged with a wap.id (write-audit-publish)")
    table_args(p)
    p.add_argument("wap_id")
    p.set_defaults(run=lambda args: _print_current(args, open_table(args).publish(args.wap_id)))
    refs = sub.add_parser("refs", help="the table's branches and tags")
    table_args(refs)
    refs.set_defaults(run=lambda args: print_refs(args, open_table(args)))
    _branch_parsers(sub.add_parser("branch", help="create, replace, fast-forward, rename or remove a branch"))
    _tag_parsers(sub.add_parser("tag", help="create, replace or remove a tag"))


def _branch_parsers(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    create = _ref_parser(actions, "create", "a branch at --snapshot (default: the current one)")
    create.add_argument("--snapshot", type=int, default=None)
    create.add_argument("--min-snapshots-to-keep", type=int, default=None)
    create.add_argument("--max-snapshot-age-ms", type=non_negative, default=None)
    create.add_argument("--max-ref-age-ms", type=non_negative, default=None)
    create.set_defaults(run=lambda args: _change(args, lambda t: t.create_branch(
        args.name, args.snapshot, min_snapshots_to_keep=args.min_snapshots_to_keep,
        max_snapshot_age_ms=args.max_snapshot_age_ms, max_ref_age_ms=args.max_ref_age_ms,
    )))  # fmt: skip
    replace = _ref_parser(actions, "replace", "point the branch at any snapshot")
    replace.add_argument("--snapshot", type=int, required=True)
    replace.set_defaults(run=lambda args: _change(args, lambda t: t.replace_branch(args.name, args.snapshot)))
    forward = _ref_parser(actions, "fast-forward", "move the branch ahead to a ref or snapshot that descends from it")
    forward.add_argument("--to", required=True, help="a branch, a tag or a snapshot id")
    forward.set_defaults(run=lambda args: _change(args, lambda t: t.fast_forward(args.name, _ref_or_id(args.to))))
    rename = _ref_parser(actions, "rename", "give the branch another name")
    rename.add_argument("new_name")
    rename.set_defaults(run=lambda args: _change(args, lambda t: t.rename_branch(args.name, args.new_name)))
    remove = _ref_parser(actions, "remove", "remove the branch (its snapshots go at the next expiry)")
    remove.set_defaults(run=lambda args: _change(args, lambda t: t.remove_branch(args.name)))


def _tag_parsers(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    create = _ref_parser(actions, "create", "a tag at --snapshot (default: the current one)")
    create.add_argument("--snapshot", type=int, default=None)
    create.add_argument("--max-ref-age-ms", type=non_negative, default=None)
    create.set_defaults(
        run=lambda args: _change(args, lambda t: t.create_tag(args.name, args.snapshot, max_ref_age_ms=args.max_ref_age_ms))
    )
    replace = _ref_parser(actions, "replace", "point the tag at another snapshot")
    replace.add_argument("--snapshot", type=int, required=True)
    replace.set_defaults(run=lambda args: _change(args, lambda t: t.replace_tag(args.name, args.snapshot)))
    remove = _ref_parser(actions, "remove", "remove the tag")
    remove.set_defaults(run=lambda args: _change(args, lambda t: t.remove_tag(args.name)))


def _ref_parser(actions: argparse._SubParsersAction, name: str, help: str) -> argparse.ArgumentParser:
    parser = actions.add_parser(name, help=help)
    table_args(parser)
    parser.add_argument("name", help="the branch or tag")
    return parser


def _ref_or_id(text: str) -> str | int:
    return int(text) if text.lstrip("-").isdigit() else text


def rollback(args: argparse.Namespace) -> None:
    table = open_table(args)
    snapshot = table.rollback_to(args.snapshot) if args.snapshot is not None else table.rollback_to_time(args.time)
    _print_current(args, snapshot)


def _change(args: argparse.Namespace, change: Any) -> None:
    table = open_table(args)
    change(table)
    print_refs(args, table)


def _print_current(args: argparse.Namespace, snapshot: Snapshot) -> None:
    if args.json:
        print_json({"current_snapshot_id": snapshot.snapshot_id, "operation": snapshot.operation, "summary": dict(snapshot.summary)})
        return
    print(f"current snapshot: {snapshot.snapshot_id} ({snapshot.operation}, {short_time(snapshot.timestamp_ms)})")


def print_refs(args: argparse.Namespace, table: Table) -> None:
    refs = table.refs()
    if args.json:
        print_json({"table": table.identifier, "refs": refs})
        return
    grid = Grid(["name", "type", "snapshot", "retention"], title=f"refs of {table.identifier}")
    for name, ref in refs.items():
        retention = ", ".join(f"{k}={v}" for k, v in ref.items() if k not in ("snapshot-id", "type"))
        grid.rows.append([name, str(ref.get("type", "branch")), str(ref.get("snapshot-id")), retention])
    print_grids(grid)
