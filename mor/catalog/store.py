"""What a SQL catalog's database offers its writers (`CatalogStore`): the pointer of each table
and view, moved by compare-and-swap. `SqlCatalogStore` (mor/catalog/sql.py, SQLAlchemy) is the
store; `SqliteCatalogReader` (mor/catalog/sqlite_reads.py) stands in for it while only pointers
are read. Table operations, `commit_many` and view commits take either as this."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from mor.errors import NoSuchTableError


@dataclass(frozen=True)
class TableSwap:
    """One table's part of `swap_many`: move it from `expected` to `new` (`expected` None:
    create it; `new` == `expected`: it must still point there)."""

    namespace: str
    name: str
    expected: str | None
    new: str


class CatalogStore(Protocol):
    def metadata_location(self, namespace: str, name: str) -> str: ...
    def create_table_row(self, namespace: str, name: str, metadata_location: str) -> None: ...
    def swap(self, namespace: str, name: str, expected: str, new: str) -> bool: ...
    def swap_many(self, changes: list[TableSwap]) -> bool: ...
    def view_metadata_location(self, namespace: str, name: str) -> str: ...
    def create_view_row(self, namespace: str, name: str, metadata_location: str) -> None: ...


def no_such_table(namespace: str, name: str) -> NoSuchTableError:
    """The error of a lookup that finds no table row, whichever store made it."""
    return NoSuchTableError(f"table {namespace}.{name} does not exist")
