"""One writer process of the concurrency and crash tests: runs random operations on a shared
table and logs each one as a JSON line on stdout (flushed before and after its commit).

    python writer.py <warehouse> <worker> <operations> <seed> <disjoint|contended>

<warehouse> may be the URL of a REST catalog (`mor serve`); its token is in MOR_REST_TOKEN.

Rows are (key, n, tag); a tag names one version of one row, so the tests can tell which rows
an operation read and which it wrote. `disjoint`: every operation touches only this worker's
keys. `contended`: operations pick keys from a small pool that every worker shares.
"""

from __future__ import annotations

import json
import os
import random
import sys

import pyarrow as pa
import pyarrow.compute as pc
from pyiceberg.expressions import In

import mor

SCHEMA = pa.schema([pa.field("key", pa.int64(), nullable=False), ("n", pa.int64()), ("tag", pa.string())])
WORKERS = 8
INITIAL_KEYS = 160  # keys 0..159 exist when the writers start
SHARED_NEW_KEYS = range(1000, 1012)  # contended upserts may insert these concurrently
KINDS = ["append", "delete", "update", "upsert", "upsert-equality", "delete_rows"]


def initial_rows() -> pa.Table:
    keys = list(range(INITIAL_KEYS))
    return pa.table({"key": keys, "n": [0] * len(keys), "tag": [f"init-{k}" for k in keys]}, schema=SCHEMA)


def open_catalog(where: str) -> mor.Catalog:
    if where.startswith(("http://", "https://")):
        return mor.load_catalog(uri=where, token=os.environ.get("MOR_REST_TOKEN"))
    return mor.load_catalog(where)


def log(record: dict) -> None:
    print(json.dumps(record), flush=True)


def pick_keys(rng: random.Random, worker: int, mode: str, count: int) -> list[int]:
    if mode == "disjoint":
        own = [k for k in range(INITIAL_KEYS) if k % WORKERS == worker]
        return rng.sample(own, count)
    pool = list(range(0, 24)) + list(SHARED_NEW_KEYS)
    return rng.sample(pool, count)


def run(warehouse: str, worker: int, operations: int, seed: int, mode: str) -> None:
    rng = random.Random(seed * 1000 + worker)
    table = open_catalog(warehouse).load_table("db.t")
    for i in range(operations):
        name = f"w{worker}.{i}"
        kind = rng.choice(KINDS)
        keys = pick_keys(rng, worker, mode, rng.randint(1, 3))
        if kind == "append":  # fresh keys nobody else uses
            keys = [10_000 + worker * 1000 + i]
        table.refresh()
        read = table.current_snapshot()
        record = {"op": name, "kind": kind, "keys": keys, "read": read.snapshot_id if read else None}
        log({**record, "phase": "start"})
        rows = pa.table({"key": keys, "n": [i] * len(keys), "tag": [f"{name}-{k}" for k in keys]}, schema=SCHEMA)
        try:
            if kind == "append":
                snapshot = table.append(rows)
            elif kind == "delete":
                snapshot = table.delete(In("key", keys))
            elif kind == "update":
                suffix = pa.scalar(f"/{name}")
                snapshot = table.update({"n": pc.add(pc.field("n"), 1), "tag": pc.binary_join_element_wise(pc.field("tag"), suffix, "")},
                                        where=In("key", keys))  # fmt: skip
            elif kind == "upsert":
                snapshot = table.upsert(rows, on=["key"])
            elif kind == "upsert-equality":
                snapshot = table.upsert(rows, on=["key"], strategy="equality")
            else:
                snapshot = table.delete_rows(rows.select(["key"]))
        except mor.CommitConflictError as e:
            log({**record, "phase": "end", "result": "conflict", "conflict": e.snapshot_id, "error": str(e)})
            continue
        if snapshot is None:
            log({**record, "phase": "end", "result": "none"})
        else:
            log({**record, "phase": "end", "result": "ok", "snapshot": snapshot.snapshot_id})


if __name__ == "__main__":
    warehouse, worker, operations, seed, mode = sys.argv[1:6]
    run(warehouse, int(worker), int(operations), int(seed), mode)
