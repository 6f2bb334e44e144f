"""Metadata another engine writes: a whole new metadata file swapped in through the catalog,
without mor's commit path (so tests can put anything Iceberg allows into a table)."""

from __future__ import annotations

from typing import Any

from mor.catalog.metadata_files import new_metadata_location, write_metadata
from mor.format.metadata import TableMetadata, with_previous_file


def commit_as_another_engine(table: Any, new: TableMetadata) -> tuple[TableMetadata, str]:
    """Swap `table` (a mor Table of a SQL catalog) to `new`; the handle follows."""
    ops = table._ops
    new = with_previous_file(new, table.metadata_location, table.metadata)
    location = new_metadata_location(new.location, table.metadata_location)
    write_metadata(ops.io, location, new)
    assert ops.store.swap(ops.namespace, ops.name, table.metadata_location, location), "the table moved meanwhile"
    table.metadata, table.metadata_location = new, location
    return new, location
