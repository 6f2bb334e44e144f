"""The one exception tree of mor.

    MorError
    ├── NoSuchTableError          the table (or namespace) is not in the catalog
    │   ├── TableReplacedError    the name now holds another table (another table-uuid) than
    │   │                         the one a handle or commit started from: dropped and created
    │   │                         again. Not a CommitConflictError, so nothing re-plans into it
    │   └── MetadataFileNotFoundError  no table metadata file at the location given (a mistyped
    │                             path) or that the catalog points at; also a StorageError
    ├── NoSuchNamespaceError
    ├── NoSuchSnapshotError       time travel to a snapshot id or time the table does not have
    │   ├── NoSuchRefError        a branch or tag the table does not have
    │   └── ExpiredHistoryError   a change feed asked to start where the table's history was
    │                             expired; names the oldest snapshot it can start from
    ├── TableAlreadyExistsError
    │   └── SharedTableError      register_table of a metadata file or location another table of
    │                             the catalog already has (allow_shared=True registers it anyway)
    ├── NamespaceAlreadyExistsError
    ├── NamespaceNotEmptyError
    ├── InvalidFilterError        bad predicate text, or a column the schema does not have
    ├── InvalidArgumentError      an argument that makes no sense (also a ValueError)
    │   ├── DuplicateKeyError     UPSERT/MERGE source rows that repeat a key
    │   ├── RowsOutsideWhereError  overwrite(data, where=...) data holding rows `where` does not
    │   │                         select (a rerun would keep them twice)
    │   ├── RefAlreadyExistsError  creating (or renaming to) a branch or tag name the table has
    │   ├── RetentionTooShortError  expiring or vacuuming closer to now than the table allows
    │   ├── InvalidMetadataError  a commit would write table metadata Iceberg's metadata builder
    │   │                         refuses (a field id used twice, a ref to no snapshot, ...)
    │   ├── PartitionEvolutionError  a partition spec change the table cannot take (a field added
    │   │                         twice, removing one it lacks, a duplicate name, a bad transform)
    │   └── SchemaEvolutionError  a schema change the table cannot take (unknown column, duplicate
    │                             name, narrowing type change, dropping a partition source, ...)
    ├── SchemaMismatchError       appended or updated data does not fit the table schema
    ├── ConstraintViolationError  a row breaks a CHECK constraint of the table (names it and the row)
    ├── CommitConflictError       a concurrent commit made ours invalid (after retrying what is retryable)
    ├── CommitStateUnknownError   the catalog may or may not hold our commit: never clean up after it
    ├── CorruptMetadataError      metadata, manifest or delete file that breaks the spec
    │                             (also: a file the table references that is missing or unreadable)
    ├── StorageError              the file system or catalog database refused a read or write
    │   │                         (permission denied, path too long, ...); also an OSError
    │   └── CatalogUnavailableError  the catalog database server is unreachable, refused the
    │                             connection or did not answer in time; names host:port/db.
    │                             Raised by a commit only when it certainly did not happen
    ├── MaintenanceRefusedError   maintenance that deletes files cannot tell the table's own files
    │                             apart: its location is shared with, holds or lies in another
    │                             table's, or its metadata spells files another way than the listing
    ├── NotAuthorizedError        a REST catalog refused the credentials (401: missing, wrong, expired)
    ├── ForbiddenError            a REST catalog accepted the credentials but refused the operation
    │                             (403): its permissions or policy (a location outside its warehouse)
    ├── StreamingChangeError      a stream of appends met a snapshot it cannot emit (delete, overwrite)
    │                             or lost its place in the history (rollback, expired snapshots)
    └── UnsupportedFeatureError   a valid Iceberg feature we do not implement yet

Every error leaves the table as it was: files written before a failed commit are never made
visible, and nothing is ever deleted after a commit whose outcome is unknown.
"""


class MorError(Exception):
    """Root of every error mor raises on purpose."""


class NoSuchTableError(MorError):
    pass


class TableReplacedError(NoSuchTableError):
    """The catalog's table under this name has another `table-uuid` than the metadata an
    operation started from (Iceberg's `assert-table-uuid` failed): the table was dropped and
    another created or registered under its name. Nothing was committed; load the table again."""


class NoSuchNamespaceError(MorError):
    pass


class NoSuchViewError(MorError):
    pass


class NoSuchSnapshotError(MorError):
    pass


class NoSuchRefError(NoSuchSnapshotError):
    """The table has no branch or tag of that name."""


class ExpiredHistoryError(NoSuchSnapshotError):
    """The change feed cannot start there: the snapshots it would diff against were expired.
    `oldest_snapshot_id` and `oldest_timestamp_ms`: the earliest start the table still has
    (start after that snapshot: `from_snapshot_id=oldest_snapshot_id`)."""

    def __init__(self, message: str, oldest_snapshot_id: int | None = None, oldest_timestamp_ms: int | None = None):
        super().__init__(message)
        self.oldest_snapshot_id = oldest_snapshot_id
        self.oldest_timestamp_ms = oldest_timestamp_ms


class TableAlreadyExistsError(MorError):
    pass


class SharedTableError(TableAlreadyExistsError):
    """The metadata file or table location is already another table's in this catalog: two
    names for one set of files, where maintenance of either would delete the other's files."""


class NamespaceAlreadyExistsError(MorError):
    pass


class ViewAlreadyExistsError(MorError):
    """A view, or a table, already has that name (they share one name space)."""


class NamespaceNotEmptyError(MorError):
    pass


class InvalidFilterError(MorError):
    pass


class InvalidArgumentError(MorError, ValueError):
    pass


class DuplicateKeyError(InvalidArgumentError):
    pass


class RowsOutsideWhereError(InvalidArgumentError):
    """`overwrite(data, where=...)` with rows for which `where` is not TRUE: they would survive
    the next overwrite of the same `where`. Nothing was written."""


class RefAlreadyExistsError(InvalidArgumentError):
    """The table already has a branch or tag of that name."""


class RetentionTooShortError(InvalidArgumentError):
    """A retention shorter than the table's configured minimum, without the explicit override."""


class InvalidMetadataError(InvalidArgumentError):
    """A commit would make table metadata that Iceberg's metadata builder refuses; nothing was
    written. `java_type`: the exception Iceberg Java throws for it (the REST server's answer)."""

    def __init__(self, message: str, java_type: str = "ValidationException"):
        super().__init__(message)
        self.java_type = java_type

    def __reduce__(self) -> tuple[type, tuple[object, ...]]:
        return (type(self), (self.args[0], self.java_type))


class PartitionEvolutionError(InvalidArgumentError):
    """A partition spec change that is invalid on this table; nothing was changed."""


class SchemaEvolutionError(InvalidArgumentError):
    """A schema change that is invalid on this table; nothing was changed."""


class SchemaMismatchError(MorError):
    pass


class ConstraintViolationError(MorError):
    """A row to write breaks a CHECK constraint (mor/dml/constraints.py), or existing rows break
    one being added; the message names the constraint and a row. Nothing was committed."""


class CommitConflictError(MorError):
    """`snapshot_id` and `operation` name the concurrent commit that conflicted (when one did);
    `files` the files of it that did."""

    def __init__(self, message: str, snapshot_id: int | None = None, operation: str | None = None, files: tuple[str, ...] = ()):
        super().__init__(message)
        self.snapshot_id = snapshot_id
        self.operation = operation
        self.files = tuple(files)

    def __reduce__(self) -> tuple[type, tuple[object, ...]]:  # picklable with its fields (Spark ships errors between processes)
        return (type(self), (self.args[0], self.snapshot_id, self.operation, self.files))


class CommitStateUnknownError(MorError):
    pass


class CorruptMetadataError(MorError):
    pass


class StorageError(MorError, OSError):
    """The message names the file (or catalog database) and what the system said."""


class CatalogUnavailableError(StorageError):
    """The catalog database (a server such as PostgreSQL) could not be used: unreachable,
    connection refused or dropped, authentication failed, or a timeout (also a commit refused by a
    locked SQLite file). The message names the server as host:port/database (never a password).
    From a commit it means the commit certainly did not happen; an unknown outcome is
    `CommitStateUnknownError`."""


class MetadataFileNotFoundError(NoSuchTableError, StorageError):
    """No table metadata file at a location: named by the user (`StaticTable.from_metadata`,
    `register_table`) or by the catalog (its file was deleted outside mor). Missing, not
    damaged: CorruptMetadataError is for a file that exists but breaks the spec."""


class StreamingChangeError(MorError):
    pass


class NotAuthorizedError(MorError):
    """A REST catalog refused the credentials (HTTP 401: missing, wrong or expired token).
    Nothing was changed."""


class ForbiddenError(MorError):
    """A REST catalog accepted the credentials but refused the operation (HTTP 403): the
    client may not do it, by the server's permissions or policy (a table location outside the
    warehouse, say). Nothing was changed; other credentials would not help with a policy."""


class MaintenanceRefusedError(MorError):
    """Expiry, orphan removal or a purge refused before deleting anything: it could not prove
    the files it would delete are the table's alone. The message says what to fix."""


class UnsupportedFeatureError(MorError):
    pass
