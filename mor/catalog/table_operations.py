"""What a catalog offers the writers of one table: read its current metadata, and commit a
change (requirements + updates, mor/format/updates.py) to it. The SQL catalog's operations
(mor/catalog/sql_operations.py) and the REST client's (mor/catalog/rest.py) implement it; snapshot
producers and metadata commits (mor/commit) use nothing else.

A lost race or a failed requirement is `CommitFailedError` (retryable: nothing became visible,
mor/commit/retry.py); an unknown outcome is `CommitStateUnknownError`."""

from __future__ import annotations

from typing import Protocol

from mor.errors import TableReplacedError
from mor.format.metadata import TableMetadata
from mor.format.requirements import CommitFailedError
from mor.format.updates import TableCommit

__all__ = ["CommitFailedError", "TableOperations", "check_same_table", "refresh_same_table"]


class TableOperations(Protocol):
    def refresh(self) -> tuple[TableMetadata, str]: ...
    def commit(self, base: TableMetadata, base_location: str, change: TableCommit) -> tuple[TableMetadata, str]: ...


def check_same_table(started_from: TableMetadata, current: TableMetadata, current_location: str) -> None:
    """Iceberg's `assert-table-uuid`: TableReplacedError when the catalog's table is not the one
    an operation started from (dropped, and another created under the name). A lost swap is
    retried on refreshed metadata, and without this check the retry would commit into the other
    table, putting our columns under its field ids."""
    if current.table_uuid != started_from.table_uuid:
        raise TableReplacedError(
            f"the table was replaced: the catalog now points at {current_location}, table-uuid {current.table_uuid}, "
            f"not table-uuid {started_from.table_uuid} this operation started from (dropped and created again?); "
            "nothing was committed: load the table again"
        )


def refresh_same_table(ops: TableOperations, started_from: TableMetadata) -> tuple[TableMetadata, str]:
    """`ops.refresh()`, refused (TableReplacedError) when it finds another table."""
    current, location = ops.refresh()
    check_same_table(started_from, current, location)
    return current, location
