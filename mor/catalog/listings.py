"""Listings a page at a time: the table or view names of a namespace, and the catalog's
namespaces, in the order of their bytes (mor's spelling of names), each page an indexed query
for the names after the last one of the page before. A page costs the same whatever the catalog
holds; walking every page costs what listing everything does.

Namespaces are the distinct `table_namespace` values of `iceberg_tables` and the `namespace`
values of `iceberg_namespace_properties`; each is walked by one index seek per distinct value
(a recursive query: the next value after the last), never by reading every table's row.

Byte order is what the namespace hierarchy needs (a namespace's descendants `a.*` lie between
"a." and "a/"). SQLite compares bytes; a PostgreSQL database whose collation is not "C" is
asked to compare with `COLLATE "C"`, and gets indexes that sort that way.
"""

from __future__ import annotations

import heapq
import logging
from collections.abc import Iterator
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import SQLAlchemyError

log = logging.getLogger("mor.catalog")

FIRST_BATCH = 16  # namespaces per query at first; doubled while a walk goes on
MAX_BATCH = 1000

# (table, column) of the two places a namespace is named.
NAMESPACE_SOURCES = (("iceberg_tables", "table_namespace"), ("iceberg_namespace_properties", "namespace"))
_POSTGRES_INDEXES = (
    "CREATE INDEX IF NOT EXISTS mor_iceberg_tables_bytes "
    'ON iceberg_tables (catalog_name, table_namespace COLLATE "C", table_name COLLATE "C")',
    'CREATE INDEX IF NOT EXISTS mor_namespace_properties_bytes ON iceberg_namespace_properties (catalog_name, namespace COLLATE "C")',
)


def byte_collation(conn: Connection) -> str | None:
    """The collation to compare names by bytes on this database: None when it does already."""
    if conn.dialect.name != "postgresql":
        return None
    collation = conn.execute(text("SELECT datcollate FROM pg_database WHERE datname = current_database()")).scalar()
    return None if collation in ("C", "POSIX") else "C"


def prepare(engine: Engine, collation: str | None) -> None:
    """Indexes for byte-ordered listings where the database's own indexes sort another way
    (pyiceberg's tables get an index more, nothing else). Refused (no privilege): listings are
    still right, only slower."""
    if collation is None:
        return
    try:
        with engine.begin() as conn:
            for statement in _POSTGRES_INDEXES:
                conn.exec_driver_sql(statement)
    except SQLAlchemyError as e:
        log.info("no byte-ordered indexes in %s (%s): listings scan a namespace's rows", engine.url, e)


def walk_namespaces(engine: Engine, catalog_name: str, lo: str, inclusive: bool, hi: str | None, collation: str | None) -> Iterator[str]:
    """The distinct namespaces of `catalog_name` from `lo` (included or not) up to `hi`
    (excluded; None: to the end), in byte order, fetched in growing batches as consumed."""
    walks = [_walk(engine, table, column, catalog_name, lo, inclusive, hi, collation) for table, column in NAMESPACE_SOURCES]
    last: str | None = None
    for name in heapq.merge(*walks):
        if name != last:
            yield name
            last = name


def _walk(
    engine: Engine, table: str, column: str, catalog_name: str, lo: str, inclusive: bool, hi: str | None, collation: str | None
) -> Iterator[str]:
    batch = FIRST_BATCH
    while True:
        params: dict[str, Any] = {"catalog": catalog_name, "lo": lo, "hi": hi, "limit": batch}
        with engine.connect() as conn:
            names = [str(row[0]) for row in conn.execute(text(_walk_sql(table, column, inclusive, hi is not None, collation)), params)]
        yield from names
        if len(names) < batch:
            return
        lo, inclusive, batch = names[-1], False, min(batch * 2, MAX_BATCH)


def _walk_sql(table: str, column: str, inclusive: bool, bounded: bool, collation: str | None) -> str:
    """One index seek per distinct value (SQLite's and PostgreSQL's loose index scan)."""
    value = f'{column} COLLATE "{collation}"' if collation else column
    upper = f" AND {value} < :hi" if bounded else ""
    nxt = f"SELECT {column} FROM {table} WHERE catalog_name = :catalog AND {value} {{after}}{upper} ORDER BY {value} LIMIT 1"
    return (
        f"WITH RECURSIVE walk(name) AS ("
        f"SELECT ({nxt.format(after=('>= :lo' if inclusive else '> :lo'))}) "
        f"UNION ALL SELECT ({nxt.format(after='> walk.name')}) FROM walk WHERE walk.name IS NOT NULL"
        f") SELECT name FROM walk WHERE name IS NOT NULL LIMIT :limit"
    )
