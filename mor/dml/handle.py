"""What the row-level engine reads and changes of a table: `TableHandle`, which mor.api's Table
is (and any object holding the same state), so the engine sits below the API that offers it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from pyiceberg.expressions import BooleanExpression

from mor.expr.filters import bind_filter
from mor.planning.planner import plan_files

if TYPE_CHECKING:
    from pyiceberg.schema import Schema

    from mor.catalog.table_operations import TableOperations
    from mor.format.metadata import TableMetadata
    from mor.io.fileio import FileIO
    from mor.planning.task import FileScanTask


class TableHandle(Protocol):
    """A table as the engine sees it: its state, replaced by every commit made through the engine
    (`metadata`, `metadata_location`), the catalog's operations to commit with, and `refresh`."""

    identifier: str
    metadata: TableMetadata
    metadata_location: str
    io: FileIO

    def schema(self) -> Schema: ...

    def operations(self) -> TableOperations:
        """The catalog's operations on the table; MorError when it is read-only."""
        ...

    def refresh(self) -> object: ...


def live_tasks(table: TableHandle, row_filter: BooleanExpression) -> list[FileScanTask]:
    """The current snapshot's data files that may hold rows matching `row_filter`, each with
    the delete files that apply to it."""
    metadata = table.metadata
    schema = metadata.schema()
    bind_filter(schema, row_filter)  # InvalidFilterError naming the column, before planning
    return plan_files(table.io, metadata, metadata.current_snapshot(), row_filter, True, schema)
