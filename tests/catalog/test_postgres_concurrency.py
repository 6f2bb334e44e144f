"""Eight writer processes (multiprocessing, spawn) committing to one table through PostgreSQL.

tests/concurrency's writers and history check, on the PostgreSQL catalog: every operation
touches only its worker's rows (appends, deletes, updates, upserts, delete_rows). No commit may
conflict, every acknowledged commit is in the table's history (and nothing else is), and
replaying the history against a model gives the rows of the table: every acknowledged append's
rows are present, every acknowledged delete's rows gone.
"""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

import pytest
from pg_writer import run_writer
from test_concurrent_writers import Op, check_history
from writer import SCHEMA, WORKERS, initial_rows

import mor

pytestmark = pytest.mark.postgres
OPERATIONS = 12


def test_eight_processes_on_disjoint_rows_lose_no_acknowledged_commit(tmp_path: Path, pg_uri: str) -> None:
    warehouse = tmp_path / "warehouse"
    catalog = mor.load_catalog(warehouse, uri=pg_uri)
    table = catalog.create_table("db.t", schema=SCHEMA)
    table.set_properties(**{"mor.dml.replan.num-retries": "0"})
    table.append(initial_rows())
    context = multiprocessing.get_context("spawn")
    with context.Pool(WORKERS) as pool:
        results = [
            pool.apply_async(run_writer, (pg_uri, str(warehouse), w, OPERATIONS, 7, "disjoint")) for w in range(WORKERS)
        ]
        logs = [r.get(timeout=600) for r in results]
    ops = []
    for lines in logs:
        for line in lines:
            record = json.loads(line)
            if record.pop("phase") == "end":
                ops.append(Op(name=record.pop("op"), **record))
    assert len(ops) == WORKERS * OPERATIONS
    assert [op for op in ops if op.result == "conflict"] == []
    kinds = {op.kind for op in ops if op.result == "ok"}
    assert {"append", "delete"} <= kinds, kinds
    table = mor.load_catalog(warehouse, uri=pg_uri).load_table("db.t")
    check_history(table, ops, serializable=True)
    catalog.store.dispose()
