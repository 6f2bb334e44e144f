"""The second process of the compaction race tests (test_compaction_race.py). Each mode runs
one side of a race on a shared table and logs JSON lines on stdout; `--block` stops it at a
chosen step of its first attempt until the test writes a line on its stdin.

    python compaction_race_worker.py compact <warehouse> [--block]
        compact(); with --block, wait after the new files are written, before the commit
    python compaction_race_worker.py delete <warehouse> <key,key,...> [--block]
        a merge-on-read DELETE of those keys; with --block, wait after it planned and wrote
        its delete files, before the commit
    python compaction_race_worker.py stress <warehouse> <seed> <kind:key,key,...;kind:key,...;...>
        one operation per group of keys, in turn, with short random pauses: kind "d" a
        merge-on-read DELETE, "e" an equality delete (delete_rows), "a" an append of new rows

Records: {"event": "blocked", ...} when waiting; {"event": "conflict", ...} for every commit
attempt that raised CommitConflictError (re-planned or not); {"event": "end", ...} per
operation, with "result" "ok" (and its snapshot), "none" (nothing to do) or "conflict".
"""

from __future__ import annotations

import json
import random
import select
import sys
import time

import pyarrow as pa
from pyiceberg.expressions import In

import mor
import mor.commit.snapshot_producer
import mor.dml.delete
import mor.maintenance.compact
from mor.planning.delete_index import referenced_path

# The functions Table's methods call, by the module they come from (the methods import them
# when called, so a function replaced here is the one they call).
MODULE_OF = {
    "commit_changes": mor.commit.snapshot_producer,
    "delete_where": mor.dml.delete,
    "write_compaction": mor.maintenance.compact,
}

SCHEMA = pa.schema([pa.field("key", pa.int64(), nullable=False), ("part", pa.int32()), ("payload", pa.string())])
RELEASE_TIMEOUT_S = 60  # a test that dies while this waits must not leave it behind for long


def rows(keys: range | list[int], parts: int = 4) -> pa.Table:
    keys = list(keys)
    return pa.table({"key": keys, "part": [k % parts for k in keys], "payload": [payload(k) for k in keys]}, schema=SCHEMA)


def payload(key: int) -> str:
    return f"row-{key}-" + "x" * (key % 7)


def log(record: dict) -> None:
    print(json.dumps(record), flush=True)


def wait_for_release() -> None:
    ready, _, _ = select.select([sys.stdin], [], [], RELEASE_TIMEOUT_S)
    if not ready or not sys.stdin.readline():
        log({"event": "abandoned"})
        sys.exit(3)


def record_conflicts() -> list[int]:
    """Log every commit attempt that conflicts; the list counts them."""
    seen: list[int] = []
    commit = mor.commit.snapshot_producer.commit_changes

    def logged(*args, **kwargs):
        try:
            return commit(*args, **kwargs)
        except mor.CommitConflictError as e:
            seen.append(1)
            log({"event": "conflict", "snapshot": e.snapshot_id, "error": str(e)})
            raise

    mor.commit.snapshot_producer.commit_changes = logged
    return seen


def block_after(name: str, describe) -> list[int]:
    """Stop after the first call of Table's <name> (see MODULE_OF) returns, until released; the list
    counts the calls (one per plan)."""
    calls: list[int] = []
    original = getattr(MODULE_OF[name], name)

    def blocking(*args, **kwargs):
        out = original(*args, **kwargs)
        calls.append(1)
        if len(calls) == 1:
            log({"event": "blocked", **describe(args, out)})
            wait_for_release()
        return out

    setattr(MODULE_OF[name], name, blocking)
    return calls


def count_calls(name: str) -> list[int]:
    calls: list[int] = []
    original = getattr(MODULE_OF[name], name)

    def counted(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    setattr(MODULE_OF[name], name, counted)
    return calls


def compact(table: mor.Table, block: bool) -> None:
    def describe(args, _validator) -> dict:
        metadata, plan = args[1], args[2]
        return {
            "read": metadata.current_snapshot_id,
            "rewritten": [f.file_path for f in plan.rewritten],
            "added": [f.file_path for f in plan.changes.added_data],
        }

    plans = block_after("write_compaction", describe) if block else count_calls("write_compaction")
    conflicts = record_conflicts()
    try:
        result = table.compact()
    except mor.CommitConflictError as e:
        log({"event": "end", "result": "conflict", "plans": len(plans), "conflicts": len(conflicts), "error": str(e)})
        return
    log({"event": "end", "result": "ok" if result.snapshot_id else "none", "snapshot": result.snapshot_id,
         "plans": len(plans), "conflicts": len(conflicts), "compaction": result.to_dict()})  # fmt: skip


def delete(table: mor.Table, keys: list[int], block: bool) -> None:
    def describe(args, found) -> dict:
        changes = found[0] if found is not None else None
        return {
            "read": args[0].metadata.current_snapshot_id,
            "touched": sorted({referenced_path(d) or "" for d in changes.added_deletes}) if changes else [],
            "delete_files": [d.file_path for d in changes.added_deletes] if changes else [],
        }

    plans = block_after("delete_where", describe) if block else count_calls("delete_where")
    conflicts = record_conflicts()
    run_delete(table, keys, plans, conflicts)


def run_delete(table: mor.Table, keys: list[int], plans: list[int], conflicts: list[int], kind: str = "d") -> None:
    before = (len(plans), len(conflicts))
    record = {"event": "end", "kind": kind, "keys": keys}
    try:
        if kind == "d":
            snapshot = table.delete(In("key", keys), mode="merge-on-read")
        elif kind == "e":
            snapshot = table.delete_rows(pa.table({"key": pa.array(keys, pa.int64())}))
        else:
            snapshot = table.append(rows(keys))
    except mor.CommitConflictError as e:
        log({**record, "result": "conflict", "plans": len(plans) - before[0], "conflicts": len(conflicts) - before[1], "error": str(e)})
        return
    log({**record, "result": "ok" if snapshot else "none", "snapshot": snapshot.snapshot_id if snapshot else None,
         "plans": len(plans) - before[0], "conflicts": len(conflicts) - before[1]})  # fmt: skip


def stress(table: mor.Table, seed: int, operations: list[tuple[str, list[int]]]) -> None:
    rng = random.Random(seed)
    plans, conflicts = count_calls("delete_where"), record_conflicts()
    log({"event": "started"})
    for kind, keys in operations:
        run_delete(table, keys, plans, conflicts, kind)
        time.sleep(rng.uniform(0, 0.06))


def parse_keys(text: str) -> list[int]:
    return [int(k) for k in text.split(",") if k]


def main(argv: list[str]) -> None:
    mode, warehouse = argv[0], argv[1]
    table = mor.load_catalog(warehouse).load_table("db.t")
    if mode == "compact":
        compact(table, "--block" in argv)
    elif mode == "delete":
        delete(table, parse_keys(argv[2]), "--block" in argv)
    elif mode == "stress":
        operations = [op.split(":") for op in argv[3].split(";")]
        stress(table, int(argv[2]), [(kind, parse_keys(keys)) for kind, keys in operations])
    else:
        raise ValueError(mode)


if __name__ == "__main__":
    main(sys.argv[1:])
