"""What a Table's groups of verbs (definition: mor/api/table_definition.py; maintenance:
mor/api/table_maintenance.py) use of the Table they are mixed into, declared once so that each
group type-checks on its own. Table (mor/api/table.py) provides all of it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyiceberg.schema import Schema

    from mor.api.scan import Scan
    from mor.api.table import Table
    from mor.catalog.table_operations import TableOperations
    from mor.format.metadata import TableMetadata
    from mor.io.fileio import FileIO
    from mor.maintenance.ownership import CatalogView


class TableParts:
    identifier: str
    metadata: TableMetadata
    metadata_location: str
    io: FileIO
    catalog_view: CatalogView | None = None

    if TYPE_CHECKING:

        def schema(self) -> Schema: ...

        def refresh(self) -> Table: ...

        def scan(self, filter: object = None, columns: Sequence[str] | None = None) -> Scan: ...

        def operations(self) -> TableOperations: ...

        def branch(self, name: str) -> Table: ...
