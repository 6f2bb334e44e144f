"""A metadata file's location that also says where its table is.

mor's writers know the table location of the metadata file they point a table at; the SQL
catalog's store records it in the same transaction (mor/catalog/locations.py). The pointer is
handed to the store's `create_table_row`, `swap` and `swap_many` as this string, so their
signatures stay as they are, and a store subclass or wrapper that passes the string on keeps
what it says. (No SQLAlchemy here: the commit layer imports this on every start.)
"""

from __future__ import annotations


class LocatedMetadata(str):
    """A metadata file's location that also says the table location written in it. Given to
    the store's `create_table_row`, `swap` or `swap_many` in place of the plain string, it lets
    the store record the table's location in the same transaction; a store subclass or wrapper
    that passes the string on keeps it."""

    table_location: str

    def __new__(cls, metadata_location: str, table_location: str) -> LocatedMetadata:
        value = super().__new__(cls, metadata_location)
        value.table_location = table_location
        return value
