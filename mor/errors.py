"""The one exception tree of mor: under MorError, eight families that say what a caller can do
(catch a family, or the error itself); each error names what happened.

    MorError
    ├── NotFoundError             what the call names is not there
    │   ├── NoSuchTableError      the table is not in the catalog
    │   │   ├── TableReplacedError  the name now holds another table (another table-uuid) than
    │   │   │                     the one a handle or commit started from: dropped and created
    │   │   │                     again. Not a CommitConflictError, so nothing re-plans into it
    │   │   └── MetadataFileNotFoundError  no table metadata file at the location given (a
    │   │                         mistyped path) or that the catalog points at; also a StorageError
    │   ├── NoSuchNamespaceError
    │   ├── NoSuchViewError
    │   └── NoSuchSnapshotError   time travel to a snapshot id or time the table does not have
    │       ├── NoSuchRefError    a branch or tag the table does not have
    │       └── ExpiredHistoryError  a change feed asked to start where the table's history was
    │                             expired; names the oldest snapshot it can start from
    ├── AlreadyExistsError        the name is taken
    │   ├── TableAlreadyExistsError
    │   │   └── SharedTableError  register_table of a metadata file or location another table of
    │   │                         the catalog already has (allow_shared=True registers it anyway)
    │   ├── NamespaceAlreadyExistsError
    │   ├── ViewAlreadyExistsError  a view, or a table, already has that name
    │   └── RefAlreadyExistsError  a branch or tag name the table has (also an InvalidArgumentError)
    ├── ValidationError           the call was checked and refused as given; nothing changed
    │   ├── InvalidFilterError    bad predicate text, or a column the schema does not have
    │   ├── InvalidArgumentError  an argument that makes no sense (also a ValueError)
    │   │   ├── DuplicateKeyError  UPSERT/MERGE source rows that repeat a key
    │   │   ├── RowsOutsideWhereError  overwrite(data, where=...) data holding rows `where` does
    │   │   │                     not select (a rerun would keep them twice)
    │   │   ├── RefAlreadyExistsError  (above)
    │   │   ├── RetentionTooShortError  expiring or vacuuming closer to now than the table allows
    │   │   ├── InvalidMetadataError  a commit would write table metadata Iceberg's metadata
    │   │   │                     builder refuses (a field id used twice, a ref to no snapshot, ...)
    │   │   ├── PartitionEvolutionError  a partition spec change the table cannot take (a field
    │   │   │                     added twice, removing one it lacks, a duplicate name, a bad transform)
    │   │   └── SchemaEvolutionError  a schema change the table cannot take (unknown column,
    │   │                         duplicate name, narrowing type change, dropping a partition source)
    │   ├── SchemaMismatchError   appended or updated data does not fit the table schema
    │   ├── ConstraintViolationError  a row breaks a CHECK constraint of the table (names it and the row)
    │   ├── NamespaceNotEmptyError  dropping a namespace that still holds tables or views
    │   ├── MaintenanceRefusedError  maintenance that deletes files cannot tell the table's own
    │   │                         files apart: its location is shared with, holds or lies in another
    │   │                         table's, or its metadata spells files another way than the listing
    │   ├── StreamingChangeError  a stream of appends met a snapshot it cannot emit (delete,
    │   │                         overwrite) or lost its place in the history (rollback, expiry)
    │   └── SparkSetupError       (mor/spark/errors.py) the Spark session cannot run mor
    ├── CommitError               a commit did not land, or may have
    │   ├── CommitConflictError   a concurrent commit made ours invalid (after retrying what is retryable)
    │   ├── CommitStateUnknownError  the catalog may or may not hold our commit: never clean up after it
    │   └── (internal, never reaching a caller: CommitFailedError, retried; AlreadyCommitted,
    │                             an idempotent write's earlier commit found)
    ├── CorruptMetadataError      metadata, manifest or delete file that breaks the spec
    │                             (also: a file the table references that is missing or unreadable)
    ├── StorageError              the file system or catalog database refused a read or write
    │   │                         (permission denied, path too long, ...); also an OSError
    │   └── CatalogUnavailableError  the catalog database server is unreachable, refused the
    │                             connection or did not answer in time; names host:port/db.
    │                             Raised by a commit only when it certainly did not happen
    ├── AccessDeniedError         a REST catalog refused
    │   ├── NotAuthorizedError    the credentials (401: missing, wrong, expired)
    │   └── ForbiddenError        the operation (403): its permissions or policy (a location
    │                             outside its warehouse)
    └── UnsupportedFeatureError   a valid Iceberg feature we do not implement yet

The families are DESIGN.md's errors grouped by what to do: NotFound and AlreadyExists (look at
the catalog), Validation (fix the call), Commit (retry the whole operation, or not after
CommitStateUnknownError), CorruptMetadata, Storage, AccessDenied, UnsupportedFeature.

Every error leaves the table as it was: files written before a failed commit are never made
visible, and nothing is ever deleted after a commit whose outcome is unknown.
"""


class MorError(Exception):
    """Root of every error mor raises on purpose."""


# -- the eight families: what a caller can do about an error ---------------------------------


class NotFoundError(MorError):
    """What the call names is not there: a table, namespace, view, snapshot or ref."""


class AlreadyExistsError(MorError):
    """The name is taken: a table, namespace, view, branch or tag of that name exists."""


class ValidationError(MorError):
    """The call was checked and refused as given, before anything changed: a bad argument,
    filter or value, data that does not fit, a broken constraint, a request the table's state
    does not allow (a namespace not empty, maintenance that cannot prove what it may delete).
    Fix the call; retrying it as it is fails the same way."""


class CommitError(MorError):
    """A commit did not land (a conflict that retrying could not get past), or may have
    (CommitStateUnknownError: never clean up after it)."""


class AccessDeniedError(MorError):
    """A REST catalog refused the credentials (401) or the operation (403)."""


class NoSuchTableError(NotFoundError):
    pass


class TableReplacedError(NoSuchTableError):
    """The catalog's table under this name has another `table-uuid` than the metadata an
    operation started from (Iceberg's `assert-table-uuid` failed): the table was dropped and
    another created or registered under its name. Nothing was committed; load the table again."""


class NoSuchNamespaceError(NotFoundError):
    pass


class NoSuchViewError(NotFoundError):
    pass


class NoSuchSnapshotError(NotFoundError):
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


class TableAlreadyExistsError(AlreadyExistsError):
    pass


class SharedTableError(TableAlreadyExistsError):
    """The metadata file or table location is already another table's in this catalog: two
    names for one set of files, where maintenance of either would delete the other's files."""


class NamespaceAlreadyExistsError(AlreadyExistsError):
    pass


class ViewAlreadyExistsError(AlreadyExistsError):
    """A view, or a table, already has that name (they share one name space)."""


class NamespaceNotEmptyError(ValidationError):
    pass


class InvalidFilterError(ValidationError):
    pass


class InvalidArgumentError(ValidationError, ValueError):
    pass


class DuplicateKeyError(InvalidArgumentError):
    pass


class RowsOutsideWhereError(InvalidArgumentError):
    """`overwrite(data, where=...)` with rows for which `where` is not TRUE: they would survive
    the next overwrite of the same `where`. Nothing was written."""


class RefAlreadyExistsError(AlreadyExistsError, InvalidArgumentError):
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


class SchemaMismatchError(ValidationError):
    pass


class ConstraintViolationError(ValidationError):
    """A row to write breaks a CHECK constraint (mor/dml/constraints.py), or existing rows break
    one being added; the message names the constraint and a row. Nothing was committed."""


class CommitConflictError(CommitError):
    """`snapshot_id` and `operation` name the concurrent commit that conflicted (when one did);
    `files` the files of it that did."""

    def __init__(self, message: str, snapshot_id: int | None = None, operation: str | None = None, files: tuple[str, ...] = ()):
        super().__init__(message)
        self.snapshot_id = snapshot_id
        self.operation = operation
        self.files = tuple(files)

    def __reduce__(self) -> tuple[type, tuple[object, ...]]:  # picklable with its fields (Spark ships errors between processes)
        return (type(self), (self.args[0], self.snapshot_id, self.operation, self.files))


class CommitStateUnknownError(CommitError):
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


class StreamingChangeError(ValidationError):
    pass


class NotAuthorizedError(AccessDeniedError):
    """A REST catalog refused the credentials (HTTP 401: missing, wrong or expired token).
    Nothing was changed."""


class ForbiddenError(AccessDeniedError):
    """A REST catalog accepted the credentials but refused the operation (HTTP 403): the
    client may not do it, by the server's permissions or policy (a table location outside the
    warehouse, say). Nothing was changed; other credentials would not help with a policy."""


class MaintenanceRefusedError(ValidationError):
    """Expiry, orphan removal or a purge refused before deleting anything: it could not prove
    the files it would delete are the table's alone. The message says what to fix."""


class UnsupportedFeatureError(MorError):
    pass
