"""A writer process of another engine, pyiceberg, on the REST concurrency test's table: blind
appends through pyiceberg's RestCatalog, logged as writer.py logs mor's operations.

    python pyiceberg_writer.py <rest url> <worker> <operations>

pyiceberg's commit asserts that main is where it read it; a 409 (another writer was first) is
retried here on the refreshed table, as an appender may. Its `read` is the snapshot its commit
went on top of (what the requirement held it to).
"""

from __future__ import annotations

import os
import sys

import pyarrow as pa
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import CommitFailedException
from writer import SCHEMA, log


def run(url: str, worker: int, operations: int) -> None:
    token = os.environ["MOR_REST_TOKEN"]
    catalog = RestCatalog("py", uri=url, token=token, **{"oauth2-server-uri": f"{url}/v1/oauth/tokens"})
    for i in range(operations):
        name = f"w{worker}.{i}"
        key = 10_000 + worker * 1000 + i  # fresh keys nobody else uses
        rows = pa.table({"key": [key], "n": [i], "tag": [f"{name}-{key}"]}, schema=SCHEMA)
        lost = 0
        while True:
            table = catalog.load_table("db.t")
            try:
                table.append(rows)
                break
            except CommitFailedException:
                lost += 1
                if lost > 200:
                    raise
        snapshot = table.current_snapshot()
        assert snapshot is not None
        log({"op": name, "kind": "append", "keys": [key], "read": snapshot.parent_snapshot_id, "phase": "end",
             "result": "ok", "snapshot": snapshot.snapshot_id})  # fmt: skip


if __name__ == "__main__":
    run(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
