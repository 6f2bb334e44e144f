"""Command line: look around (`tables`, `describe`, `history`, `snapshots`, `files`, `scan`,
`changes`, `refs`), change rows (`delete`, `update`), undo (`rollback`, `set-current`, `cherrypick`,
`publish`), name versions (`branch`, `tag`), try it (`quickstart`), keep tables healthy
(`compact`, `rewrite-deletes`, `expire`, `remove-orphans`, `maintain`) and `serve` the catalog
over the Iceberg REST protocol. `--json` on every verb prints machine-readable output."""

from __future__ import annotations

import argparse
import os
import sys

from mor.cli import dml, inspection, maintenance, quickstart, refs, rows
from mor.cli.options import resolve_catalog_settings
from mor.errors import MorError

# One module per group of verbs; each adds its parsers, with `run` the function to call.
VERB_MODULES = (quickstart, inspection, rows, dml, refs, maintenance)


def build_parser() -> argparse.ArgumentParser:
    from importlib.metadata import version

    parser = argparse.ArgumentParser(prog="mor", description=__doc__)
    parser.add_argument("--version", action="version", version=f"mor {version('mor')}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="VERB")
    for module in VERB_MODULES:
        module.add_parsers(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from mor.api.catalog_types import DEFAULT_WAREHOUSE  # after parsing: `mor --help` loads no catalog code

    resolve_catalog_settings(args, DEFAULT_WAREHOUSE)
    try:
        args.run(args)
    except MorError as e:
        # The message's own lines kept: a filter error's caret points under the filter's line.
        print(f"mor: {type(e).__name__}: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader went away (`mor scan ... | head`): not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
        return 0
    except KeyboardInterrupt:
        return 130
    return 0
