"""Namespaces and table names as the REST protocol spells them, turned into mor's.

mor names a namespace by one string, its levels joined by "." (`"a.b"`), and a table by
"<namespace>.<name>"; the protocol by a list of levels (`["a", "b"]`, joined in a URL path by the
unit separator 0x1F, `a%1Fb`) and a name. So a "." inside a level or a table name is escaped in
mor's spelling, as `%2E` (and "%" as `%25`): the level "a.b" is the namespace "a%2Eb" to mor, in
the catalog database and in the table's folder, never the two levels "a" and "b". Other names
are spelled the same both ways (what pyiceberg's SQL catalog reads from the same database). New
names are further held to `check_new_name`: no empty level, no path separator or control
character, short enough for a folder name; a name looked up that could never have been created
is simply not found (404).

Path segments arrive still percent-encoded (app.py routes on the raw path), so a name holding
an encoded "/" is one segment and is decoded here, once.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

from mor.api.catalog_names import check_new_name
from mor.server.errors import BadRequestError

SEPARATOR = "\x1f"  # the spec's default namespace separator, `%1F` in a URL


def escaped(name: str) -> str:
    """A protocol level or table name in mor's spelling ("." and "%" escaped)."""
    return name.replace("%", "%25").replace(".", "%2E")


def unescaped(name: str) -> str:
    """A mor level or table name in the protocol's spelling (`escaped` undone; a "%" that
    starts no escape of ours stays)."""
    out, i = [], 0
    while i < len(name):
        three = name[i : i + 3]
        if three in ("%2E", "%25"):
            out.append("." if three == "%2E" else "%")
            i += 3
        else:
            out.append(name[i])
            i += 1
    return "".join(out)


def namespace_from_path(segment: str) -> str:
    """A `{namespace}` path segment (percent-encoded, levels joined by %1F) as a mor namespace:
    any levels, for a lookup (creating checks them, `check_new_names`)."""
    return ".".join(escaped(level) for level in _decoded(segment).split(SEPARATOR))


def table_from_path(segment: str) -> str:
    return escaped(_decoded(segment))


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
        if SEPARATOR in level:
            raise BadRequestError(f"namespace level {level!r} contains the separator 0x1F")
    return ".".join(escaped(level) for level in levels)


def namespace_levels(namespace: str) -> list[str]:
    return [unescaped(level) for level in namespace.split(".")]


def check_new_names(namespace: str, name: str | None = None) -> None:
    """Names about to be created (mor's spelling): InvalidArgumentError (400) for one that
    cannot be a folder name."""
    check_new_name("namespace", namespace)
    if name is not None:
        check_new_name("table", name)


def identifier_from_json(value: Any, what: str) -> tuple[str, str]:
    """A body's `TableIdentifier` (`{"namespace": [...], "name": "..."}`) as (namespace, name)."""
    if not isinstance(value, dict):
        raise BadRequestError(f"{what} is a table identifier {{namespace, name}}, got {value!r}")
    name = value.get("name")
    if not isinstance(name, str) or not name:
        raise BadRequestError(f"{what} has no table name")
    return namespace_from_levels(value.get("namespace")), escaped(name)


def identifier_to_json(namespace: str, name: str) -> dict[str, Any]:
    return {"namespace": namespace_levels(namespace), "name": unescaped(name)}
