"""Arguments every verb shares: where the catalog is, which table, how to print; and the
parsing of small values (ages, column lists) that argparse hands over as text."""

from __future__ import annotations

import argparse
import datetime as dt
import re
from typing import TYPE_CHECKING

from mor.errors import InvalidArgumentError, NoSuchTableError

if TYPE_CHECKING:
    from mor.api.catalog import Catalog
    from mor.api.table import Table


def catalog_args(parser: argparse.ArgumentParser, rest_client: bool = True) -> None:
    parser.add_argument(
        "--warehouse", default=None,
        help=(
            "a folder (default ./warehouse), or s3://, gs:// or abfss:// object storage (then give --uri); "
            "with a REST catalog, its warehouse name"
        ),
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


def json_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON document (scan: JSON lines) instead of text")


def table_args(parser: argparse.ArgumentParser) -> None:
    """The table (namespace.name), the catalog options and --json."""
    parser.add_argument("table", help="namespace.name")
    catalog_args(parser)
    json_arg(parser)


def _property(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"a property is KEY=VALUE, got {text!r}")
    return key.strip(), value


def resolve_catalog_settings(args: argparse.Namespace, default_warehouse: str) -> None:
    """Fold --property, --token and --credential into `args.property`, the catalog properties
    `mor.load_catalog` takes; an unset --warehouse becomes ./warehouse."""
    args.property = dict(args.property) if getattr(args, "property", None) else None
    if getattr(args, "warehouse", "") is None:  # ./warehouse, or no warehouse name for a REST catalog
        args.warehouse = default_warehouse
    rest_settings = {k: getattr(args, k) for k in ("token", "credential") if getattr(args, k, None)}
    if rest_settings:  # REST catalog settings travel with the other catalog properties
        args.property = {**(args.property or {}), **rest_settings}


def open_catalog(args: argparse.Namespace) -> Catalog:
    """For looking and changing rows: a missing warehouse is an error, never created."""
    import mor

    return mor.load_catalog(args.warehouse, uri=args.uri, create=False, properties=args.property)


def open_table(args: argparse.Namespace) -> Table:
    identifier = args.table
    try:
        catalog = open_catalog(args)
    except InvalidArgumentError as e:
        raise NoSuchTableError(f"table {identifier} does not exist: {e}") from e
    return catalog.load_table(identifier)


def column_list(text: str | None) -> list[str] | None:
    """`a, b` -> ["a", "b"]; None (every column) when not given."""
    if text is None:
        return None
    columns = [c.strip() for c in text.split(",") if c.strip()]
    if not columns:
        raise InvalidArgumentError(f"--columns names columns separated by commas, got {text!r}")
    return columns


_AGE = re.compile(r"^(\d+(?:\.\d+)?)([smhd])$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}


def age_or_time(text: str) -> dt.timedelta | dt.datetime:
    match = _AGE.match(text.strip())
    if match:
        return dt.timedelta(**{_UNITS[match.group(2)]: float(match.group(1))})
    try:
        return dt.datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is neither an age (7d, 36h, 90m, 30s) nor an ISO time") from None


def non_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 0, got {text!r}")
    return value
