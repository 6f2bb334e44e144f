"""DuckDB as the judge of which rows a predicate selects (SQL semantics, UTC session)."""

from __future__ import annotations

import duckdb
import pyarrow as pa


def duckdb_ids(rows: pa.Table, where: str) -> list[int]:
    """The sorted `id`s of the rows of `rows` where DuckDB says `where` holds."""
    con = duckdb.connect()
    try:
        con.execute("SET TimeZone='UTC'")
        con.register("arrow_rows", rows)
        # A table of DuckDB's own: a filter on a scan of the Arrow table is pushed into Arrow's
        # kernels, which lack some of SQL's comparisons (IS DISTINCT FROM) and order NaN otherwise.
        con.execute("CREATE TABLE rows AS SELECT * FROM arrow_rows")
        # The predicate as a value, the rows where it is TRUE picked here: DuckDB 1.5's optimizer
        # rewrites some WHERE clauses wrongly (`b = 1 or b is distinct from 1` drops a null `b`
        # that the same expression as a value keeps).
        found = con.execute(f"SELECT id, ({where}) IS TRUE FROM rows").fetchall()
        return sorted(r[0] for r in found if r[1])
    finally:
        con.close()
