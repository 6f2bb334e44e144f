"""DuckDB as the judge of which rows a predicate selects (SQL semantics, UTC session)."""

from __future__ import annotations

import threading

import duckdb
import pyarrow as pa

# One in-memory database a thread, each Arrow table copied into it once: a new database costs
# more (about 13 ms) than the queries the tests ask of it, and they ask hundreds, mostly of the
# same few tables. The tables are kept referenced here, so an id is never reused for another;
# a test of many generated tables starts the cache over every KEPT of them.
_local = threading.local()
KEPT = 16


def duckdb_ids(rows: pa.Table, where: str) -> list[int]:
    """The sorted `id`s of the rows of `rows` where DuckDB says `where` holds."""
    con, name = _table(rows)
    # The predicate as a value, the rows where it is TRUE picked here: DuckDB 1.5's optimizer
    # rewrites some WHERE clauses wrongly (`b = 1 or b is distinct from 1` drops a null `b`
    # that the same expression as a value keeps).
    found = con.execute(f"SELECT id, ({where}) IS TRUE FROM {name}").fetchall()
    return sorted(r[0] for r in found if r[1])


def _table(rows: pa.Table) -> tuple[duckdb.DuckDBPyConnection, str]:
    if not hasattr(_local, "con"):
        _local.con = duckdb.connect()
        _local.con.execute("SET TimeZone='UTC'")
        _local.tables = {}
        _local.made = 0
    con: duckdb.DuckDBPyConnection = _local.con
    known = _local.tables.get(id(rows))
    if known is not None and known[0] is rows:
        return con, known[1]
    if len(_local.tables) >= KEPT:
        for _, old in _local.tables.values():
            con.execute(f"DROP TABLE {old}")
        _local.tables.clear()
    _local.made += 1
    name = f"rows_{_local.made}"
    con.register("arrow_rows", rows)
    # A table of DuckDB's own: a filter on a scan of the Arrow table is pushed into Arrow's
    # kernels, which lack some of SQL's comparisons (IS DISTINCT FROM) and order NaN otherwise.
    con.execute(f"CREATE TABLE {name} AS SELECT * FROM arrow_rows")
    con.unregister("arrow_rows")
    _local.tables[id(rows)] = (rows, name)
    return con, name
