"""Eight writer processes on one table through `mor serve` (issue 24): six run mor's random
DML through its REST client, two append through pyiceberg's RestCatalog. Every commit is
requirements + updates that the server checks and applies on the table as it is.

The history is replayed against the model of test_concurrent_writers.py: every acknowledged
commit is in the history and each snapshot is one of them; every snapshot reads as the model
says; a mor operation conflicted exactly where the isolation level says (re-planning off), and
none committed over a conflict.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from servers.rest import running_rest_server
from test_concurrent_writers import check_history, finished_ops
from writer import SCHEMA, WORKERS, initial_rows

import mor

HERE = Path(__file__).parent
PYICEBERG_WORKERS = 2
TOKEN = "concurrency-token"


@pytest.mark.parametrize("mode,level", [("disjoint", "serializable"), ("contended", "serializable")])
def test_eight_writers_through_the_rest_server(tmp_path: Path, mode: str, level: str) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN)
    operations = 12
    with running_rest_server(tmp_path / "warehouse", token_file=token_file) as server:
        catalog = mor.load_catalog(uri=server.url, token=TOKEN)
        table = catalog.create_table("db.t", schema=SCHEMA)
        levels = {f"write.{kind}.isolation-level": level for kind in ("delete", "update", "merge")}
        table.set_properties(**levels, **{"mor.dml.replan.num-retries": "0"})
        table.append(initial_rows())
        env = {**os.environ, "MOR_REST_TOKEN": TOKEN, "PYTHONPATH": os.pathsep.join([str(HERE), *sys.path])}
        mor_workers = WORKERS - PYICEBERG_WORKERS
        procs = [
            subprocess.Popen([sys.executable, str(HERE / "writer.py"), server.url, str(w), str(operations), "7", mode],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
            for w in range(mor_workers)
        ] + [
            subprocess.Popen([sys.executable, str(HERE / "pyiceberg_writer.py"), server.url, str(w), str(operations)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
            for w in range(mor_workers, WORKERS)
        ]  # fmt: skip
        ops = finished_ops(procs, timeout=1800)
        assert len(ops) == WORKERS * operations
        table = catalog.load_table("db.t")
        results = Counter(op.result for op in ops)
        if mode == "disjoint":
            assert results["conflict"] == 0, [op.error for op in ops if op.result == "conflict"]
        else:
            assert results["conflict"] > 0 and results["ok"] > 0, results  # the workload does contend
        check_history(table, ops, serializable=level == "serializable")
        # The server's own catalog, opened directly, holds the same history.
        direct = mor.load_catalog(tmp_path / "warehouse", create=True).load_table("db.t")
        assert direct.metadata_location == table.metadata_location
