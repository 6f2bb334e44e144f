"""DuckDB as the judge of which rows a predicate selects (SQL semantics, UTC session)."""

from __future__ import annotations

import duckdb
import pyarrow as pa


def duckdb_ids(rows: pa.Table, where: str) -> list[int]:
    """The sorted `id`s of the rows of `rows` where DuckDB says `where` holds."""
    con = duckdb.connect()
    try:
        con.execute("SET TimeZone='UTC'")
        con.register("rows", rows)
        return sorted(r[0] for r in con.execute(f"SELECT id FROM rows WHERE {where}").fetchall())
    finally:
        con.close()
