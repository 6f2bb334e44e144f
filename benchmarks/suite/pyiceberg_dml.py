"""pyiceberg's DELETE or UPSERT on the report's table, in its own process (suite/dml.py): opens
mor's catalog with pyiceberg's SqlCatalog, then times the one call and prints it as JSON.

    python pyiceberg_dml.py <warehouse> delete|upsert <predicate> <source.parquet>
"""

from __future__ import annotations

import json
import sys
import time
import warnings

import pyarrow.parquet as pq
from pyiceberg.catalog.sql import SqlCatalog


def main(warehouse: str, verb: str, predicate: str, source: str) -> None:
    catalog = SqlCatalog("default", uri=f"sqlite:///{warehouse}/catalog.db", warehouse=f"file://{warehouse}")
    table = catalog.load_table("bench.events")
    rows = pq.read_table(source) if verb == "upsert" else None
    warnings.simplefilter("ignore")  # "merge-on-read is not supported, falling back to copy-on-write"
    c0, t0 = time.process_time(), time.perf_counter()
    if verb == "delete":
        table.delete(delete_filter=predicate)
    elif verb == "upsert":
        table.upsert(rows, join_cols=["id"])
    else:
        raise SystemExit(f"pyiceberg has no {verb} here")
    print(json.dumps({"seconds": time.perf_counter() - t0, "cpu_seconds": time.process_time() - c0}))


if __name__ == "__main__":
    main(*sys.argv[1:5])
