"""Namespaces and table names as the REST protocol spells them, turned into mor's.

mor names a namespace by one string, its levels joined by "." (`"a.b"`); the protocol by a
list of levels (`["a", "b"]`), joined in a URL path by the unit separator 0x1F (`a%1Fb`). A
level with a "." in it has no mor spelling, so it is refused rather than read as two levels;
a table name with a "." likewise (`mor.load_catalog(...).load_table("a.b.c")` reads "c" as the
name). New names are further held to `check_new_name`: no empty level, no path separator or
control character, short enough for a folder name.

Path segments arrive still percent-encoded (app.py routes on the raw path), so a name holding
an encoded "/" is one segment and is decoded here, once.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

from mor.api.catalog import check_new_name
from mor.server.errors import BadRequestError

SEPARATOR = "\x1f"  # the spec's default namespace separator, `%1F` in a URL


def namespace_from_path(segment: str) -> str:
    """A `{namespace}` path segment (percent-encoded, levels joined by %1F) as a mor namespace."""
    return namespace_from_levels(_decoded(segment).split(SEPARATOR))


def table_from_path(segment: str) -> str:
    name = _decoded(segment)
    check_table_name(name)
    return name


def _decoded(segment: str) -> str:
    try:
        return unquote(segment, errors="strict")
    except UnicodeDecodeError:
        raise BadRequestError(f"path segment {segment!r} is not percent-encoded UTF-8") from None


def namespace_from_levels(levels: Any) -> str:
    """A namespace given as a list of levels (a body's `namespace`) as a mor namespace."""
    if not isinstance(levels, list) or not levels or not all(isinstance(level, str) for level in levels):
        raise BadRequestError(f"a namespace is a non-empty list of strings, got {levels!r}")
    for level in levels:
        if not level.strip():
            raise BadRequestError(f"namespace {levels!r} has an empty level")
        if "." in level:
            raise BadRequestError(f"namespace level {level!r} contains '.': mor joins namespace levels with '.'")
        if SEPARATOR in level:
            raise BadRequestError(f"namespace level {level!r} contains the separator 0x1F")
    return ".".join(levels)


def namespace_levels(namespace: str) -> list[str]:
    return namespace.split(".")


def check_table_name(name: Any) -> None:
    if not isinstance(name, str):
        raise BadRequestError(f"a table name is a string, got {name!r}")
    if "." in name:
        raise BadRequestError(f"table name {name!r} contains '.': mor reads the last '.' as the end of the namespace")


def check_new_names(namespace: str, name: str | None = None) -> None:
    """Names about to be created: InvalidArgumentError (400) for one that cannot be a folder name."""
    check_new_name("namespace", namespace)
    if name is not None:
        check_table_name(name)
        check_new_name("table", name)


def identifier_from_json(value: Any, what: str) -> tuple[str, str]:
    """A body's `TableIdentifier` (`{"namespace": [...], "name": "..."}`) as (namespace, name)."""
    if not isinstance(value, dict):
        raise BadRequestError(f"{what} is a table identifier {{namespace, name}}, got {value!r}")
    name = value.get("name")
    if not isinstance(name, str) or not name:
        raise BadRequestError(f"{what} has no table name")
    check_table_name(name)
    return namespace_from_levels(value.get("namespace")), name


def identifier_to_json(namespace: str, name: str) -> dict[str, Any]:
    return {"namespace": namespace_levels(namespace), "name": name}
