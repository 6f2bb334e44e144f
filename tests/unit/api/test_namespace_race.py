"""Processes that create tables in one new namespace at the same moment all succeed: creating
the namespace on the way (create_table, register_table) tolerates another process creating it
first. Real processes on one SQLite catalog, started together by a barrier."""

from __future__ import annotations

import multiprocessing
import traceback
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import mor

pytestmark = pytest.mark.subprocess  # processes racing for one catalog

PROCESSES = 4
ROUNDS = 4  # a new namespace each round: more chances for the race
SCHEMA = pa.schema([pa.field("id", pa.int64())])


def create_tables(warehouse: str, worker: int, barrier: Any, results: Any) -> None:
    catalog = mor.load_catalog(warehouse)
    errors = []
    for r in range(ROUNDS):
        barrier.wait(timeout=120)
        try:
            catalog.create_table(f"ns{r}.t{worker}", schema=SCHEMA)
        except Exception:
            errors.append(traceback.format_exc(limit=3))
        barrier.wait(timeout=120)
        if worker == 0:  # a registered table in a new namespace too
            try:
                source = catalog.load_table(f"ns{r}.t0")
                catalog.register_table(f"reg{r}.t", source.metadata_location, allow_shared=True)  # a second name on purpose
            except Exception:
                errors.append(traceback.format_exc(limit=3))
        elif worker == 1:
            try:
                catalog.create_table(f"reg{r}.other", schema=SCHEMA)
            except Exception:
                errors.append(traceback.format_exc(limit=3))
    results.put((worker, errors))


def test_concurrent_table_creation_in_a_new_namespace(tmp_path: Path) -> None:
    warehouse = str(tmp_path / "w")
    mor.load_catalog(warehouse, create=True)  # the catalog database exists before the race
    ctx = multiprocessing.get_context("spawn")
    barrier, results = ctx.Barrier(PROCESSES), ctx.Queue()
    processes = [ctx.Process(target=create_tables, args=(warehouse, i, barrier, results)) for i in range(PROCESSES)]
    for p in processes:
        p.start()
    outcomes = dict(results.get(timeout=300) for _ in processes)
    for p in processes:
        p.join(timeout=60)
        assert p.exitcode == 0
    assert {w: e for w, e in outcomes.items() if e} == {}
    catalog = mor.load_catalog(warehouse)
    for r in range(ROUNDS):
        assert catalog.list_tables(f"ns{r}") == [f"ns{r}.t{i}" for i in range(PROCESSES)]
        assert catalog.list_tables(f"reg{r}") == [f"reg{r}.other", f"reg{r}.t"]
