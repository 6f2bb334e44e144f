"""Commits sent by clients: requirements checked and updates applied on the table as it is
NOW, the result written as a new metadata file, and the catalog's pointer moved by
compare-and-swap from the version that was checked.

A client plans its change on the metadata it loaded; other writers may have committed since.
That is what the requirements are for: the server checks them against the current metadata
(a failed one is CommitFailedError, 409: the client refreshes and re-plans) and applies the
updates there, with the same pure function mor's own commits use (mor/format/apply.py). When
another commit lands between our read and our swap, the swap fails and the whole check-and-apply
is redone on the newer state; nothing the client sent is trusted to still hold.

Several tables (`POST /v1/transactions/commit`) commit all or nothing: every requirement of
every table is checked and every update applied first, then `commit_many` (mor/catalog/sql_operations.py,
the path every mor writer commits through) writes every metadata file and swaps all pointers in
one database transaction. A table that changes nothing still takes part in the swap, so its
requirements hold at the moment of the swap too.

A location a commit gives (a create, a `set-location`) must lie inside the warehouse and must not
be another table's folder, hold one or lie in one (400), as `register_table` refuses. The rows
the commit's snapshots add are checked against the NOT NULL and CHECK constraints of the table
it produces (row_checks.py).

A commit carrying `assert-create` on a table that does not exist creates it: the initial
metadata is rebuilt from its updates (uuid, format version, schema, spec, sort order,
location), then all its updates are applied to that, as Iceberg's staged creates expect.

Files: the metadata file of a commit that certainly did not happen (lost swap, a failed
requirement after writing, an unavailable database) is deleted; after CommitStateUnknownError
nothing is deleted, the catalog may point at it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, replace

from pyiceberg.partitioning import PartitionSpec
from pyiceberg.table.sorting import UNSORTED_SORT_ORDER

from mor.catalog import steps
from mor.catalog.metadata_files import read_metadata
from mor.catalog.sql import SqlCatalogStore
from mor.catalog.sql_operations import PlannedCommit, commit_many
from mor.catalog.sqlite_reads import SqliteCatalogReader
from mor.errors import (
    InvalidArgumentError,
    NoSuchNamespaceError,
    NoSuchTableError,
    SharedTableError,
)
from mor.format.apply import apply_updates
from mor.format.commit_validation import validate_change
from mor.format.metadata import TableMetadata, new_table_metadata, with_previous_file
from mor.format.properties import check_properties
from mor.format.requirements import AssertCreate, CommitFailedError, check_requirements
from mor.format.spec import FORMAT_VERSION
from mor.format.updates import (
    AddSchema,
    AddSortOrder,
    AddSpec,
    AssignUuid,
    SetLocation,
    SetProperties,
    TableCommit,
    Update,
    UpgradeFormatVersion,
)
from mor.io.fileio import FileIO
from mor.server.client_files import check_added_files
from mor.server.locations import check_inside
from mor.server.names import check_new_names
from mor.server.row_checks import check_added_rows, check_constraint_columns

MAX_ATTEMPTS = 10  # lost swaps in a row before the client is told to retry (409)


@dataclass(frozen=True)
class TableChange:
    namespace: str
    name: str
    commit: TableCommit


@dataclass(frozen=True)
class Committed:
    """A table after a commit: its metadata location and the metadata JSON there."""

    namespace: str
    name: str
    metadata_location: str
    metadata: dict


@dataclass(frozen=True)
class _Planned:
    change: TableChange
    base_location: str | None  # None: the commit creates the table
    metadata: TableMetadata | None  # None: the commit changes nothing
    base: TableMetadata | None  # the metadata at base_location

    def commit(self) -> PlannedCommit:
        return PlannedCommit(self.change.namespace, self.change.name, self.base_location, self.metadata, self.base)


class Committer:
    def __init__(
        self,
        store: SqlCatalogStore | SqliteCatalogReader,
        io: FileIO,
        warehouse: str,
        default_location: Callable[[str, str], str],
        check_unshared: Callable[[str, str, str | None, str], None] | None = None,
    ):
        self.store = store
        self.io = io
        self.warehouse = warehouse
        self.default_location = default_location
        # (identifier, location, metadata location, verb): SharedTableError when another table
        # of the catalog has that folder, holds it or lies in it (Catalog.check_unshared).
        self.check_unshared = check_unshared

    def commit(self, changes: list[TableChange]) -> list[Committed]:
        """Apply every change, all or none; retried on a lost swap."""
        seen = {(c.namespace, c.name) for c in changes}
        if len(seen) != len(changes):
            raise InvalidArgumentError("a transaction names a table twice: send its changes as one commit")
        checked: set[object] = set()  # what this commit's attempts found good (row_checks.py)
        for _ in range(MAX_ATTEMPTS):
            planned = [self._plan(c, checked) for c in changes]
            if len(planned) == 1 and planned[0].metadata is None:
                assert planned[0].base_location is not None  # a table _plan leaves unchanged exists
                return [self._result(planned[0], planned[0].base_location)]  # nothing to make atomic
            locations = commit_many(self.io, self.store, [p.commit() for p in planned])
            if locations is not None:
                steps.reached("committed")
                return [self._result(p, location) for p, location in zip(planned, locations)]
        raise CommitFailedError(f"the tables kept changing: {MAX_ATTEMPTS} attempts lost their swap; try again")

    def _plan(self, change: TableChange, checked: set[object]) -> _Planned:
        """Check the requirements on the current metadata and apply the updates to it."""
        requirements, updates = change.commit.requirements, change.commit.updates
        try:
            base_location: str | None = self.store.metadata_location(change.namespace, change.name)
        except NoSuchTableError:
            if not any(isinstance(r, AssertCreate) for r in requirements):
                raise
            base_location = None
        base = None if base_location is None else read_metadata(self.io, base_location)
        check_requirements(requirements, base)
        for update in updates:
            if isinstance(update, SetProperties):
                check_properties(update.updates)
        if base is None:
            check_new_names(change.namespace, change.name)
            if not self.store.namespace_exists(change.namespace):
                raise NoSuchNamespaceError(f"namespace {change.namespace!r} does not exist")
            new = apply_updates(self._creation_base(change, updates), updates)
        else:
            new = apply_updates(base, updates)
            if new is base:
                return _Planned(change, base_location, None, base)
            new = with_previous_file(new, base_location, base)
        if base is None or new.location != base.location:
            check_inside(self.warehouse, new.location, "table location")
            if self.check_unshared is not None:
                verb = "create" if base is None else "move"
                try:
                    self.check_unshared(f"{change.namespace}.{change.name}", new.location, None, verb)
                except SharedTableError as e:
                    raise InvalidArgumentError(str(e)) from None  # 400: no retry makes it fit
        validate_change(base, new)  # what Iceberg's metadata builder checks, before any file is read
        check_added_files(self.io, base, new)  # manifest lists inside the table, readable
        check_constraint_columns(base, new)  # no client drops a column a constraint uses
        check_added_rows(self.io, new, updates, checked)  # NOT NULL and CHECK constraints of the rows it adds
        return _Planned(change, base_location, new, base)

    def _creation_base(self, change: TableChange, updates: list[Update]) -> TableMetadata:
        """The table a create commit starts from, rebuilt from its own updates."""

        def first(kind: type) -> Update | None:
            return next((u for u in updates if isinstance(u, kind)), None)

        schema = first(AddSchema)
        if not isinstance(schema, AddSchema):
            raise InvalidArgumentError("a commit that creates a table needs an add-schema update")
        spec, order = first(AddSpec), first(AddSortOrder)
        version, uuid = first(UpgradeFormatVersion), first(AssignUuid)
        locations = [u.location for u in updates if isinstance(u, SetLocation)]
        format_version = version.format_version if isinstance(version, UpgradeFormatVersion) else FORMAT_VERSION
        metadata = new_table_metadata(
            schema.schema,
            spec.spec if isinstance(spec, AddSpec) else PartitionSpec(spec_id=0),
            order.sort_order if isinstance(order, AddSortOrder) else UNSORTED_SORT_ORDER,
            locations[-1].rstrip("/") if locations else self.default_location(change.namespace, change.name),
            {},  # the client's own set-properties follow (Iceberg Java's create from updates adds none)
            format_version,
        )
        return replace(metadata, table_uuid=uuid.uuid) if isinstance(uuid, AssignUuid) else metadata

    def _result(self, p: _Planned, location: str) -> Committed:
        if p.metadata is not None:
            return Committed(p.change.namespace, p.change.name, location, p.metadata.to_dict())
        return Committed(p.change.namespace, p.change.name, location, json.loads(self.io.read_bytes(location)))
