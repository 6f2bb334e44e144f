"""Writing deletion vectors (v3): Puffin files of `deletion-vector-v1` blobs.

A v3 table keeps at most one vector per data file. A writer that deletes more rows of a file
merges them with every delete already applying to it (the previous vector, or the v2 position
delete files of an upgraded table) into one new vector, and the commit removes what the new
vector replaces (`replaced_by_vector`).
"""

from __future__ import annotations

import functools
import importlib.metadata
import uuid
from collections.abc import Iterable, Sequence

import numpy as np

from mor.format import deletion_vector
from mor.format.content_file import DataFile, DeleteFile, referenced_path
from mor.format.puffin import puffin_bytes
from mor.format.spec import PUFFIN, FileContent
from mor.io.fileio import FileIO


def write_deletion_vectors(io: FileIO, table_location: str, vectors: Sequence[tuple[DataFile, np.ndarray]]) -> list[DeleteFile]:
    """One Puffin file holding a vector for each (data file, sorted distinct positions); the
    manifest entries that point at each blob."""
    if not vectors:
        return []
    data, placed = puffin_bytes(
        [deletion_vector.blob(positions, data_file.file_path) for data_file, positions in vectors],
        {"created-by": _created_by()},
    )
    location = f"{table_location.rstrip('/')}/data/{uuid.uuid4()}-deletes.puffin"
    io.make_parent_dirs(location)
    io.write_bytes_exclusive(location, data)
    return [
        DeleteFile(
            content=FileContent.POSITION_DELETES,
            file_path=location,
            file_format=PUFFIN,
            spec_id=data_file.spec_id,
            partition=data_file.partition,
            record_count=len(positions),
            file_size_in_bytes=len(data),
            referenced_data_file=data_file.file_path,
            content_offset=blob.offset,
            content_size_in_bytes=blob.length,
        )
        for (data_file, positions), blob in zip(vectors, placed)
    ]


@functools.cache
def _created_by() -> str:
    try:
        return f"mor {importlib.metadata.version('mor')}"
    except importlib.metadata.PackageNotFoundError:
        return "mor"


def replaced_by_vector(data_file: DataFile, applying: Iterable[DeleteFile]) -> tuple[DeleteFile, ...]:
    """The deletes a new vector for `data_file` takes the place of: its previous vector and the
    position delete files that name only this file. A position delete file shared with other
    data files stays (the vector wins for this file, the others still need it)."""
    return tuple(
        f
        for f in applying
        if f.content == FileContent.POSITION_DELETES and (f.is_deletion_vector or referenced_path(f) == data_file.file_path)
    )
