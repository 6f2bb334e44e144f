"""Sizes of content files as maintenance results report them."""

from __future__ import annotations

from collections.abc import Iterable

from mor.format.content_file import ContentFile


def content_bytes(f: ContentFile) -> int:
    """The bytes a file holds for the table: a deletion vector's is its blob
    (`content_size_in_bytes`), as Iceberg Java counts it, not the size of the Puffin file it
    shares with the vectors of other data files; any other file's is its file size."""
    if f.is_deletion_vector and f.content_size_in_bytes is not None:
        return f.content_size_in_bytes
    return f.file_size_in_bytes


def total_bytes(files: Iterable[ContentFile]) -> int:
    return sum(content_bytes(f) for f in files)
