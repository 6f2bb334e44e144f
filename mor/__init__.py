"""mor: merge-on-read row-level deletes for Apache Iceberg v2 tables."""

from mor.api.catalog import Catalog, load_catalog
from mor.api.predicates import isin
from mor.api.scan import Scan
from mor.api.table import StaticTable, Table
from mor.errors import (
    CatalogUnavailableError,
    CommitConflictError,
    CommitStateUnknownError,
    CorruptMetadataError,
    DuplicateKeyError,
    InvalidArgumentError,
    InvalidFilterError,
    MaintenanceRefusedError,
    MorError,
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NoSuchNamespaceError,
    NoSuchSnapshotError,
    NoSuchTableError,
    NotAuthorizedError,
    PartitionEvolutionError,
    RetentionTooShortError,
    SchemaEvolutionError,
    SchemaMismatchError,
    SharedTableError,
    StorageError,
    StreamingChangeError,
    TableAlreadyExistsError,
    TableReplacedError,
    UnsupportedFeatureError,
)
from mor.format.content_file import DataFile, DeleteFile
from mor.format.spec import FileContent
from mor.planning.task import FileScanTask

__all__ = [
    "isin",
    "Catalog",
    "CatalogUnavailableError",
    "CommitConflictError",
    "CommitStateUnknownError",
    "CorruptMetadataError",
    "DataFile",
    "DeleteFile",
    "DuplicateKeyError",
    "InvalidArgumentError",
    "FileContent",
    "FileScanTask",
    "InvalidFilterError",
    "MaintenanceRefusedError",
    "MorError",
    "NamespaceAlreadyExistsError",
    "NamespaceNotEmptyError",
    "NoSuchNamespaceError",
    "NoSuchSnapshotError",
    "NoSuchTableError",
    "NotAuthorizedError",
    "PartitionEvolutionError",
    "RetentionTooShortError",
    "Scan",
    "SchemaEvolutionError",
    "SchemaMismatchError",
    "SharedTableError",
    "StorageError",
    "StaticTable",
    "StreamingChangeError",
    "Table",
    "TableAlreadyExistsError",
    "TableReplacedError",
    "UnsupportedFeatureError",
    "load_catalog",
]
