"""The names and places of catalog entries: identifiers (`namespace.name`) checked as a new
entry's or read as an existing one's, namespace properties, and a new table's location."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from mor.errors import InvalidArgumentError, NoSuchTableError
from mor.io.fileio import is_object_store, to_local_path, to_uri

# The catalog's name columns are VARCHAR(255), and file names stop at 255 bytes: a table's
# folder is its name, a namespace's folder its name and ".db".
MAX_NAME_LENGTH = {"table": 255, "namespace": 252}
_NOT_IN_NAMES = re.compile(r"[/\\\x00-\x1f\x7f]")  # path separators and control characters


def split_identifier(identifier: str) -> tuple[str, str]:
    """`"db.events"` -> `("db", "events")`; a namespace may have levels (`"a.b.events"`).
    InvalidArgumentError for anything else."""
    if not isinstance(identifier, str):
        raise InvalidArgumentError(f"a table name is a string 'namespace.table', got {type(identifier).__name__} {identifier!r}")
    parts = identifier.split(".")
    if len(parts) < 2 or not all(p.strip() for p in parts):
        raise InvalidArgumentError(f"table names are 'namespace.table' with no empty part, got {identifier!r}")
    return ".".join(parts[:-1]), parts[-1]


def new_namespace_properties(namespace: str, properties: object) -> dict[str, str]:
    """The properties a new namespace is created with, checked (and its name)."""
    check_new_name("namespace", namespace)
    if properties is None:
        return {}
    if not isinstance(properties, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in properties.items()):
        raise InvalidArgumentError(f"namespace properties are a dict of strings, got {properties!r}")
    return dict(properties)


def check_new_name(kind: str, name: str) -> None:
    """A name we are about to create a namespace or table under (it becomes a folder name):
    InvalidArgumentError unless it is a non-blank string without empty levels, path
    separators or control characters, short enough for a folder name."""
    if not isinstance(name, str):
        raise InvalidArgumentError(f"a {kind} name is a string, got {type(name).__name__} {name!r}")
    if not name.strip() or not all(p.strip() for p in name.split(".")):
        raise InvalidArgumentError(f"{kind} name {name!r} is empty or has an empty level")
    bad = _NOT_IN_NAMES.search(name)
    if bad:
        raise InvalidArgumentError(f"{kind} name {name!r} contains {bad.group()!r}: no '/', '\\' or control characters")
    if len(name.encode()) > MAX_NAME_LENGTH[kind]:
        raise InvalidArgumentError(f"{kind} name {name[:20]!r}... is {len(name.encode())} bytes long; at most {MAX_NAME_LENGTH[kind]}")


def new_identifier(identifier: str) -> tuple[str, str]:
    namespace, name = split_identifier(identifier)
    check_new_name("namespace", namespace)
    check_new_name("table", name)
    return namespace, name


def existing_identifier(identifier: str) -> tuple[str, str]:
    """For a lookup: a string that is not 'namespace.table' names no table."""
    try:
        return split_identifier(identifier)
    except InvalidArgumentError as e:
        if not isinstance(identifier, str):
            raise
        raise NoSuchTableError(f"no table {identifier!r}: {e}") from None


def table_location_of(location: str) -> str:
    """A location as given when it is a URI; a local path made absolute (`file:///...`), so
    the table does not depend on the directory it was created from."""
    if not isinstance(location, str) or not location.strip():
        raise InvalidArgumentError(f"location is a folder path or URI, got {location!r}")
    if is_object_store(location):
        return location.rstrip("/")
    if location.startswith("file:") or "://" in location:
        # UnsupportedFeatureError for another scheme, before any file is written.
        if not os.path.isabs(to_local_path(location)):
            raise InvalidArgumentError(f"a file: location is absolute (file:///path), got {location!r}")
        return location
    return to_uri(location)
