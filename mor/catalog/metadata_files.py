"""A table's metadata files: read one, write a new one (never over another), the version a
file's name carries, and the order a commit keeps (write the file, then point the catalog at
it; remove the file when the catalog certainly does not point at it)."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from typing import TypeVar

from mor.errors import CommitStateUnknownError, CorruptMetadataError, MetadataFileNotFoundError, UnsupportedFeatureError
from mor.format.metadata import TableMetadata
from mor.io.fileio import FileIO, unreadable

_VERSION = re.compile(r"(?:^|/)(?:v)?(\d+)(?:-[^/]*)?\.metadata\.json$")
_T = TypeVar("_T")


def read_metadata(io: FileIO, location: str) -> TableMetadata:
    """The metadata file at `location`; MetadataFileNotFoundError when there is none,
    CorruptMetadataError naming it when it is not table metadata."""
    try:
        text = io.read_bytes(location)
    except FileNotFoundError as e:
        raise MetadataFileNotFoundError(f"no table metadata file at {location}") from e
    except OSError as e:
        raise unreadable("table metadata file", location, e) from e
    try:
        return TableMetadata.from_json(text)
    except (CorruptMetadataError, UnsupportedFeatureError) as e:
        raise type(e)(f"table metadata file {location}: {e}") from e


def is_versioned_metadata_file(location: str) -> bool:
    """Named like the metadata files writers number (`00003-<uuid>.metadata.json`, `v3.metadata.json`)."""
    return _VERSION.search(location) is not None


def metadata_version(location: str | None) -> int:
    if location is None:
        return -1
    match = _VERSION.search(location)
    return int(match.group(1)) if match else 0


def new_metadata_location(table_location: str, previous_location: str | None) -> str:
    version = metadata_version(previous_location) + 1
    return f"{table_location.rstrip('/')}/metadata/{version:05d}-{uuid.uuid4()}.metadata.json"


def write_metadata(io: FileIO, location: str, metadata: TableMetadata) -> None:
    io.write_bytes_exclusive(location, metadata.to_json().encode("utf-8"))


def point_at_new_file(io: FileIO, location: str, data: bytes, point: Callable[[], _T]) -> _T:
    """Write the new metadata file `location`, then `point` the catalog at it (a row added, a
    pointer swapped). The file is removed when the catalog certainly does not point at it (any
    error but CommitStateUnknownError); after CommitStateUnknownError it is kept."""
    io.write_bytes_exclusive(location, data)
    try:
        return point()
    except CommitStateUnknownError:
        raise
    except BaseException:
        io.delete_quietly(location)
        raise
