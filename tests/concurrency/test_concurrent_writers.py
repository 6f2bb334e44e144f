"""Eight real writer processes on one table through the SQLite catalog (issue 8).

Afterwards the table's history is replayed against a model, snapshot by snapshot:
- every acknowledged commit is in the history, and every snapshot is one acknowledged commit;
- each snapshot reads exactly as the model says, the model applying each operation to the rows
  it read (its read snapshot), which under serializable isolation must also be the rows it
  would read at its commit;
- conflicts happened exactly where the isolation level says: a failed operation names a
  commit that truly conflicts with it, and no commit between a successful operation's read and
  its own commit conflicts with it. Re-planning is off (`mor.dml.replan.num-retries=0`), so
  every true conflict surfaces.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from writer import INITIAL_KEYS, SCHEMA, WORKERS, initial_rows

import mor

WRITER = Path(__file__).with_name("writer.py")
BLIND = {"append", "upsert-equality", "delete_rows"}  # read nothing, so nothing can conflict with them
Row = tuple[int, int]  # (key, n), by tag


@dataclass
class Op:
    name: str
    kind: str
    keys: list[int]
    read: int | None
    result: str = ""
    snapshot: int | None = None
    conflict: int | None = None
    error: str = ""
    # Filled by the replay:
    matched: set[str] = field(default_factory=set)  # tags of the rows it read (its keys) at its read snapshot
    removed: set[str] = field(default_factory=set)
    added_keys: set[int] = field(default_factory=set)

    @property
    def index(self) -> int:
        return int(self.name.split(".")[1])


def run_writers(warehouse: Path, operations: int, mode: str, properties: dict[str, str], seed: int = 1) -> tuple[mor.Table, list[Op]]:
    table = mor.load_catalog(warehouse).create_table("db.t", schema=SCHEMA)
    table.set_properties(**properties)
    table.append(initial_rows())
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(WRITER.parent), *sys.path])}
    procs = [
        subprocess.Popen(
            [sys.executable, str(WRITER), str(warehouse), str(w), str(operations), str(seed), mode],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )  # fmt: skip
        for w in range(WORKERS)
    ]
    ops = finished_ops(procs)
    assert len(ops) == WORKERS * operations
    return mor.load_catalog(warehouse).load_table("db.t"), ops


def finished_ops(procs: list[subprocess.Popen[str]], timeout: float = 900) -> list[Op]:
    """The operations the writer processes logged as ended, once all of them exited cleanly."""
    ops = []
    for p in procs:
        out, err = p.communicate(timeout=timeout)
        assert p.returncode == 0, err[-3000:]
        for line in out.splitlines():
            record = json.loads(line)
            if record.pop("phase") == "end":
                ops.append(Op(name=record.pop("op"), **record))
    return ops


def rows_at(table: mor.Table, snapshot_id: int) -> dict[str, Row]:
    rows = table.scan(snapshot_id=snapshot_id).to_arrow().to_pylist()
    tags = Counter(r["tag"] for r in rows)
    assert max(tags.values(), default=1) == 1, f"a row version appears twice at {snapshot_id}: {tags.most_common(1)}"
    return {r["tag"]: (r["key"], r["n"]) for r in rows}


def conflicts(other: Op, op: Op, serializable: bool) -> bool:
    """Does the committed `other` invalidate `op`, which read before it?"""
    if op.kind in BLIND:
        return False
    if other.removed & op.matched:  # both changed one row version
        return True
    return serializable and bool(other.added_keys & set(op.keys))  # rows op's predicate would match


def apply(op: Op, state: dict[str, Row], read_state: dict[str, Row], serializable: bool) -> dict[str, Row]:
    """`op`'s effect on `state`, computed from the rows it read at `read_state`."""
    keys = set(op.keys)
    op.matched = {t for t, (k, _) in read_state.items() if k in keys}
    if op.kind not in BLIND:
        current = {t for t, (k, _) in state.items() if k in keys}
        assert op.matched <= set(state), f"{op.name} committed over rows removed since it read"
        if serializable:
            assert current == op.matched, f"{op.name} committed although rows matching it were added since it read"
    new = dict(state)
    if op.kind in ("delete", "update", "upsert"):
        op.removed = set(op.matched)
    elif op.kind in ("upsert-equality", "delete_rows"):  # equality deletes: every older row with the key
        op.removed = {t for t, (k, _) in state.items() if k in keys}
    for t in op.removed:
        del new[t]
    if op.kind == "update":
        for t in op.matched:
            new[f"{t}/{op.name}"] = (state[t][0], state[t][1] + 1)
    elif op.kind in ("append", "upsert", "upsert-equality"):
        for k in op.keys:
            new[f"{op.name}-{k}"] = (k, op.index)
    op.added_keys = {k for t, (k, _) in new.items() if t not in state}
    return new


def check_history(table: mor.Table, ops: list[Op], serializable: bool, in_flight: Op | None = None) -> None:
    """`in_flight`: an operation whose writer died before it heard how its commit went; its
    commit may be the last snapshot."""
    ancestors = [s.snapshot_id for s in table.metadata.ancestors(table.metadata.current_snapshot_id)][::-1]
    by_snapshot = {op.snapshot: op for op in ops if op.result == "ok"}
    assert len(by_snapshot) == sum(op.result == "ok" for op in ops)
    if in_flight is not None and ancestors[-1] not in by_snapshot:
        in_flight.result, in_flight.snapshot = "ok", ancestors[-1]
        by_snapshot[ancestors[-1]] = in_flight
    assert set(ancestors[1:]) == set(by_snapshot), "acknowledged commits and the table's history differ"

    first = ancestors[0]
    states = {first: rows_at(table, first)}
    assert len(states[first]) == INITIAL_KEYS
    order = {sid: i for i, sid in enumerate(ancestors)}
    for i, sid in enumerate(ancestors[1:], start=1):
        op = by_snapshot[sid]
        assert op.read is not None and op.read in order and order[op.read] < i
        for between in ancestors[order[op.read] + 1 : i]:
            other = by_snapshot[between]
            assert not conflicts(other, op, serializable), f"{op.name} should have conflicted with {other.name}"
        states[sid] = apply(op, states[ancestors[i - 1]], states[op.read], serializable)
        if i % 25 == 0 or i == len(ancestors) - 1:  # reading every snapshot costs more than it finds
            assert rows_at(table, sid) == states[sid], f"snapshot {sid} ({op.name}) differs from the model"

    for op in ops:
        if op.result != "conflict":
            continue
        assert op.conflict in by_snapshot, f"{op.name} failed without naming a commit: {op.error}"
        other = by_snapshot[op.conflict]
        assert op.read in order and order[op.read] < order[op.conflict]
        if not op.matched:
            op.matched = {t for t, (k, _) in states[op.read].items() if k in set(op.keys)}
        assert conflicts(other, op, serializable), f"{op.name} conflicted with {other.name} for no reason: {op.error}"


def test_eight_writers_on_disjoint_rows_never_conflict(tmp_path: Path) -> None:
    table, ops = run_writers(tmp_path, 25, "disjoint", {"mor.dml.replan.num-retries": "0"})
    assert [op for op in ops if op.result == "conflict"] == []
    check_history(table, ops, serializable=True)


@pytest.mark.parametrize("level", ["serializable", "snapshot"])
def test_eight_writers_on_shared_rows_conflict_exactly_as_the_isolation_level_says(tmp_path: Path, level: str) -> None:
    properties = {f"write.{kind}.isolation-level": level for kind in ("delete", "update", "merge")}
    table, ops = run_writers(tmp_path, 30, "contended", {**properties, "mor.dml.replan.num-retries": "0"})
    results = Counter(op.result for op in ops)
    assert results["conflict"] > 0 and results["ok"] > 0, results  # the workload does contend
    check_history(table, ops, serializable=level == "serializable")


def test_replanning_turns_conflicts_into_commits(tmp_path: Path) -> None:
    # On this hot key pool an operation can lose to 10 others in a row (the default bound), rarely.
    table, ops = run_writers(tmp_path, 20, "contended", {"mor.dml.replan.num-retries": "100"})
    assert [op.error for op in ops if op.result == "conflict"] == []
    # Re-planned operations read a later snapshot than they logged, so only the outcome is
    # checked here: no row version twice (rows_at), every acknowledged commit in the history.
    ancestors = {s.snapshot_id for s in table.metadata.ancestors(table.metadata.current_snapshot_id)}
    assert {op.snapshot for op in ops if op.result == "ok"} <= ancestors
    rows_at(table, table.current_snapshot().snapshot_id)  # type: ignore[union-attr]
