"""mor: merge-on-read row-level deletes for Apache Iceberg tables (format v2 and v3).

    import mor
    catalog = mor.load_catalog("warehouse")
    table = catalog.load_table("db.events")
    table.delete("id in (1, 2, 3)")

The names below load on first use, so importing any part of mor (a Spark worker importing the
reader, a CLI command) does not pay for the catalog database layer or the writers it never uses.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mor.errors import (
    AccessDeniedError,
    AlreadyExistsError,
    CatalogUnavailableError,
    CommitConflictError,
    CommitError,
    CommitStateUnknownError,
    ConstraintViolationError,
    CorruptMetadataError,
    DuplicateKeyError,
    ExpiredHistoryError,
    ForbiddenError,
    InvalidArgumentError,
    InvalidFilterError,
    MaintenanceRefusedError,
    MetadataFileNotFoundError,
    MorError,
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NoSuchNamespaceError,
    NoSuchRefError,
    NoSuchSnapshotError,
    NoSuchTableError,
    NoSuchViewError,
    NotAuthorizedError,
    NotFoundError,
    PartitionEvolutionError,
    RefAlreadyExistsError,
    RetentionTooShortError,
    RowsOutsideWhereError,
    SchemaEvolutionError,
    SchemaMismatchError,
    SharedTableError,
    StorageError,
    StreamingChangeError,
    TableAlreadyExistsError,
    TableReplacedError,
    UnsupportedFeatureError,
    ValidationError,
    ViewAlreadyExistsError,
)
from mor.lazy_names import load_lazily

# name -> module that defines it, imported when the name is first used
_LAZY = {
    "Catalog": "mor.api.catalog",
    "SqlCatalog": "mor.api.sql_catalog",
    "RestCatalog": "mor.api.rest_catalog",
    "load_catalog": "mor.api.catalog_types",
    "isin": "mor.expr.isin",
    "lit": "mor.expr.values",
    "MergeClauses": "mor.dml.merge_clauses",
    "Scan": "mor.api.scan",
    "StaticTable": "mor.api.table",
    "Table": "mor.api.table",
    "DataFile": "mor.format.content_file",
    "DeleteFile": "mor.format.content_file",
    "FileContent": "mor.format.spec",
    "FileScanTask": "mor.planning.task",
    "ProgressEvent": "mor.progress",
}

if TYPE_CHECKING:
    from mor.api.catalog import Catalog
    from mor.api.catalog_types import load_catalog
    from mor.api.rest_catalog import RestCatalog
    from mor.api.scan import Scan
    from mor.api.sql_catalog import SqlCatalog
    from mor.api.table import StaticTable, Table
    from mor.dml.merge_clauses import MergeClauses
    from mor.expr.isin import isin
    from mor.expr.values import lit
    from mor.format.content_file import DataFile, DeleteFile
    from mor.format.spec import FileContent
    from mor.planning.task import FileScanTask
    from mor.progress import ProgressEvent


def __getattr__(name: str) -> Any:
    if name == "__version__":  # the installed distribution's, so pyproject.toml stays the one place
        from importlib.metadata import version

        return version("mor")
    return load_lazily(__name__, globals(), _LAZY, name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "__version__",
    "ProgressEvent",
    "isin",
    "lit",
    "MergeClauses",
    "Catalog",
    "AccessDeniedError",
    "AlreadyExistsError",
    "CatalogUnavailableError",
    "CommitError",
    "RestCatalog",
    "SqlCatalog",
    "CommitConflictError",
    "CommitStateUnknownError",
    "ConstraintViolationError",
    "CorruptMetadataError",
    "DataFile",
    "DeleteFile",
    "DuplicateKeyError",
    "ExpiredHistoryError",
    "InvalidArgumentError",
    "FileContent",
    "FileScanTask",
    "InvalidFilterError",
    "MaintenanceRefusedError",
    "MetadataFileNotFoundError",
    "MorError",
    "NamespaceAlreadyExistsError",
    "NamespaceNotEmptyError",
    "NoSuchNamespaceError",
    "NoSuchRefError",
    "NoSuchSnapshotError",
    "NoSuchTableError",
    "NoSuchViewError",
    "NotAuthorizedError",
    "NotFoundError",
    "ForbiddenError",
    "PartitionEvolutionError",
    "RefAlreadyExistsError",
    "RetentionTooShortError",
    "RowsOutsideWhereError",
    "Scan",
    "SchemaEvolutionError",
    "SchemaMismatchError",
    "SharedTableError",
    "StorageError",
    "StaticTable",
    "StreamingChangeError",
    "Table",
    "TableAlreadyExistsError",
    "ViewAlreadyExistsError",
    "TableReplacedError",
    "UnsupportedFeatureError",
    "ValidationError",
    "load_catalog",
]
