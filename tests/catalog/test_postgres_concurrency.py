"""Eight writer processes (multiprocessing, spawn) committing to one table through PostgreSQL,
with the table's files on local disk or in S3 (moto's server, tests/servers/s3.py).

tests/concurrency's writers and history check, on the PostgreSQL catalog. On disjoint rows every
operation touches only its worker's rows (appends, deletes, updates, upserts, delete_rows): no
commit may conflict. On contended rows (a small shared key pool, no re-planning) commits
conflict, and each conflict must be one serializable isolation calls for. Either way every
acknowledged commit is in the table's history (and nothing else is), and replaying the history
against a model gives the rows of the table: every acknowledged append's rows are present,
every acknowledged delete's rows gone.
"""

from __future__ import annotations

import json
import multiprocessing
from collections import Counter
from collections.abc import Iterator
from multiprocessing.pool import Pool
from pathlib import Path

import pytest
from pg_writer import run_writer
from test_concurrent_writers import Op, check_history
from writer import SCHEMA, WORKERS, initial_rows

import mor
from tests.servers.s3 import s3_server  # noqa: F401  (the session fixture)

pytestmark = pytest.mark.postgres
OPERATIONS = {"local": 12, "s3": 6}  # per process; on S3 each commit costs the in-process moto server more


@pytest.fixture(scope="module")
def writers() -> Iterator[Pool]:
    """Eight writer processes for the module's tests: each test's eight writers run at once in
    them, and the processes start (import mor, pyarrow, SQLAlchemy: about 2 s of CPU each) once."""
    with multiprocessing.get_context("spawn").Pool(WORKERS) as pool:
        yield pool


def run_eight(pool: Pool, pg_uri: str, warehouse: str, mode: str, properties: dict[str, str] | None) -> tuple[mor.Table, list[Op]]:
    operations = OPERATIONS["s3" if properties else "local"]
    catalog = mor.load_catalog(warehouse, uri=pg_uri, properties=properties)
    table = catalog.create_table("db.t", schema=SCHEMA)
    table.set_properties(**{"mor.dml.replan.num-retries": "0"})
    table.append(initial_rows())
    results = [pool.apply_async(run_writer, (pg_uri, warehouse, w, operations, 7, mode, properties)) for w in range(WORKERS)]
    logs = [r.get(timeout=600) for r in results]
    ops = []
    for lines in logs:
        for line in lines:
            record = json.loads(line)
            if record.pop("phase") == "end":
                ops.append(Op(name=record.pop("op"), **record))
    assert len(ops) == WORKERS * operations
    table = mor.load_catalog(warehouse, uri=pg_uri, properties=properties).load_table("db.t")
    catalog.store.dispose()
    return table, ops


@pytest.fixture(params=["local", "s3"])
def storage(request, tmp_path: Path) -> tuple[str, dict[str, str] | None]:
    if request.param == "local":
        (tmp_path / "warehouse").mkdir()
        return str(tmp_path / "warehouse"), None
    s3 = request.getfixturevalue("s3_server")
    return s3.fresh_prefix(), s3.properties


def test_eight_processes_on_disjoint_rows_lose_no_acknowledged_commit(writers: Pool, pg_uri: str, storage) -> None:
    table, ops = run_eight(writers, pg_uri, storage[0], "disjoint", storage[1])
    assert [op for op in ops if op.result == "conflict"] == []
    kinds = {op.kind for op in ops if op.result == "ok"}
    assert {"append", "delete"} <= kinds, kinds
    check_history(table, ops, serializable=True)
    if storage[1]:
        assert all(t.data_file.file_path.startswith("s3://") for t in table.scan().plan_files())


def test_eight_processes_on_shared_rows_conflict_as_serializable_isolation_says(writers: Pool, pg_uri: str, storage) -> None:
    table, ops = run_eight(writers, pg_uri, storage[0], "contended", storage[1])
    results = Counter(op.result for op in ops)
    assert results["conflict"] > 0 and results["ok"] > 0, results  # the workload does contend
    check_history(table, ops, serializable=True)
