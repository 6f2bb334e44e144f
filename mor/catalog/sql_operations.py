"""The SQL catalog's table operations: read the current metadata, and commit a change
(requirements + updates, mor/format/updates.py) to it; `commit_many` for several tables at once.

The SQL catalog's operations apply the change to the metadata the writer started from, write
the result as a new metadata file (never overwriting one) and ask the catalog to move the
table's pointer from the version we started from to it. A lost race or a failed requirement is
`CommitFailedError` (retryable: nothing became visible); an unknown outcome is
`CommitStateUnknownError`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from mor.catalog import steps
from mor.catalog.listeners import committed
from mor.catalog.located import LocatedMetadata
from mor.catalog.metadata_files import new_metadata_location, point_at_new_file, read_metadata, write_metadata
from mor.catalog.store import CatalogStore, TableSwap
from mor.catalog.table_operations import CommitFailedError
from mor.errors import CommitConflictError, CommitStateUnknownError, MetadataFileNotFoundError, TableAlreadyExistsError
from mor.format.apply import apply_updates
from mor.format.commit_validation import validate_change
from mor.format.metadata import TableMetadata, with_previous_file
from mor.format.requirements import check_requirements
from mor.format.updates import TableCommit
from mor.io.fileio import FileIO


@dataclass(frozen=True)
class PlannedCommit:
    """One table's part of `commit_many`: from `base`, the metadata at `base_location` (both
    None: the table is created) to `metadata` (None: no change; the table must still point at
    `base_location`)."""

    namespace: str
    name: str
    base_location: str | None
    metadata: TableMetadata | None
    base: TableMetadata | None


def commit_many(io: FileIO, store: CatalogStore, planned: list[PlannedCommit]) -> list[str] | None:
    """Write each table's new metadata file, then move every pointer in one database
    transaction, all or none; each table's metadata location after it, or None when a table
    no longer pointed where expected (nothing changed). Every mor writer of a SQL catalog
    commits here (CatalogTableOperations: one table; `mor serve`: a client's commit or
    transaction). The files are deleted when the commit did not happen (a lost race, an
    unreachable database, any error but CommitStateUnknownError, after which they stay: the
    catalog may point at them). Every new metadata is validated first (InvalidMetadataError:
    nothing is written)."""
    for p in planned:
        if p.metadata is not None:
            validate_change(p.base, p.metadata)
    locations = [_location_after(p) for p in planned]
    written: list[str] = []
    try:
        for p, location in zip(planned, locations):
            if p.metadata is not None:
                write_metadata(io, location, p.metadata)
                written.append(location)
    except BaseException:
        _delete_all(io, written)
        raise
    steps.reached("metadata-written")
    # A pointer that says its table's location: the store records it in the swap's transaction.
    swaps = [
        TableSwap(p.namespace, p.name, p.base_location, location if p.metadata is None else LocatedMetadata(location, p.metadata.location))
        for p, location in zip(planned, locations)
    ]
    try:
        swapped = store.swap_many(swaps)
    except CommitStateUnknownError:
        raise  # the catalog may point at our files: keep them
    except BaseException:
        _delete_all(io, written)  # the store says so when it may have committed: this one did not
        raise
    if not swapped:
        _delete_all(io, written)
        return None
    for p in planned:
        if p.metadata is not None:
            committed(p.metadata)
    return locations


def _location_after(p: PlannedCommit) -> str:
    if p.metadata is None:
        assert p.base_location is not None  # no change: the table exists, at `base_location`
        return p.base_location
    return new_metadata_location(p.metadata.location, p.base_location)


def _delete_all(io: FileIO, locations: list[str]) -> None:
    for location in locations:
        io.delete_quietly(location)


def create_in_catalog(
    io: FileIO,
    store: CatalogStore,
    namespace: str,
    name: str,
    metadata: TableMetadata,
    before_row: Callable[[], None] | None = None,
) -> str:
    """Write a new table's first metadata file, run `before_row` (e.g. create the namespace:
    only once the file could be written) and add its catalog row; the file's location. The
    file is removed when the row certainly was not added (the name taken, the database
    unreachable); after CommitStateUnknownError it is kept: the row may point at it. The
    metadata is validated first (InvalidMetadataError: nothing is written)."""
    validate_change(None, metadata)
    location = new_metadata_location(metadata.location, None)

    def add_row() -> None:
        if before_row is not None:
            before_row()
        store.create_table_row(namespace, name, LocatedMetadata(location, metadata.location))  # recorded with the row

    point_at_new_file(io, location, metadata.to_json().encode("utf-8"), add_row)
    return location


@dataclass
class CatalogTableOperations:
    store: CatalogStore
    namespace: str
    name: str
    io: FileIO

    def refresh(self) -> tuple[TableMetadata, str]:
        location = self.store.metadata_location(self.namespace, self.name)
        try:
            return read_metadata(self.io, location), location
        except MetadataFileNotFoundError as e:
            raise MetadataFileNotFoundError(
                f"the catalog's table {self.namespace}.{self.name} points at table metadata file {location}, which does not exist "
                "(deleted outside mor?)"
            ) from e

    def commit(self, base: TableMetadata, base_location: str, change: TableCommit) -> tuple[TableMetadata, str]:
        """Apply `change` to `base` and swap to the result (its metadata-log extended by
        `base`); the metadata as written and its location."""
        check_requirements(change.requirements, base)
        new = with_previous_file(apply_updates(base, change.updates), base_location, base)
        locations = commit_many(self.io, self.store, [PlannedCommit(self.namespace, self.name, base_location, new, base)])
        if locations is None:
            raise CommitFailedError(f"{self.namespace}.{self.name} changed since {base_location}")
        return new, locations[0]


@dataclass
class NewTableOperations:
    """TableOperations for a table that does not exist yet (a Spark write that creates it,
    `create_table_from_files`): its one commit writes the first metadata file, with the
    snapshot, and adds the catalog row, so the table appears with its files or not at all. A
    row added by another writer meanwhile is CommitConflictError (nothing of ours stays)."""

    io: FileIO
    store: CatalogStore
    namespace: str
    name: str
    before_row: Callable[[], None] | None = None  # e.g. create the namespace

    def refresh(self) -> tuple[TableMetadata, str]:
        # commit_changes refreshes only after a lost race, which here cannot be retried.
        raise CommitConflictError(f"table {self.namespace}.{self.name} was created by another writer meanwhile; nothing was added")

    def commit(self, base: TableMetadata, base_location: str, change: TableCommit) -> tuple[TableMetadata, str]:
        new = apply_updates(base, change.updates)
        try:
            return new, create_in_catalog(self.io, self.store, self.namespace, self.name, new, self.before_row)
        except TableAlreadyExistsError as e:  # create_in_catalog removed our file: the row is another writer's
            raise CommitConflictError(f"table {self.namespace}.{self.name} was created by another writer meanwhile") from e
