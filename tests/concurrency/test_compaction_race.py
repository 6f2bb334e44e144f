"""A compaction racing with a merge-on-read DELETE on the same files loses no delete, in both
orders, with a real second process on one table (SQLite catalog).

Each race is made deterministic by stopping the process in the child (compaction_race_worker.py)
at the step that matters until this test has committed the other side:
- the compaction wrote its files but has not committed; a DELETE of rows in files it rewrites
  commits: the compaction must conflict and re-plan (or, with re-planning off, fail and leave
  nothing of its own behind), never commit files that bring the deleted rows back;
- the DELETE planned and wrote its position deletes against files that a compaction then
  replaces: the DELETE must re-plan on the new files (or fail), never commit deletes that
  point at files no longer in the table, nor lose a row it deleted.
Then free-running variants: a child deleting random rows (merge-on-read; or mixed with
equality deletes and appends) while this process compacts in a loop, with short commit backoff.

Afterwards every snapshot is read against a model (the rows appended minus every acknowledged
delete; a compaction changes no row), by mor and by pyiceberg, and no file is left that no
metadata references.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import queue
import random
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest
from compaction_race_worker import SCHEMA, payload, rows
from pyiceberg.expressions import And, EqualTo, In
from pyiceberg.table import StaticTable

import mor
from mor.io.fileio import to_local_path
from mor.maintenance import compact as compact_module
from mor.planning.delete_index import referenced_path

HERE = Path(__file__).parent
WORKER = HERE / "compaction_race_worker.py"
REPLAN = "mor.dml.replan.num-retries"
APPEND, DELETE, REPLACE = "append", "delete", "replace"


# -- the second process ------------------------------------------------------------------------
class Child:
    """A worker process; its stdout records are read by a thread so a wait can time out."""

    def __init__(self, log_dir: Path, *args: str):
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), *sys.path])}
        self.stderr_path = log_dir / f"worker-{time.monotonic_ns()}.err"
        with self.stderr_path.open("w") as stderr:
            self.proc = subprocess.Popen(
                [sys.executable, str(WORKER), *args], env=env, text=True,
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr,
            )  # fmt: skip
        self.records: list[dict] = []
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._ended = False  # the reader thread's last item (None) was taken
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        with self.proc.stdout:
            for line in self.proc.stdout:
                self._lines.put(line)
        self._lines.put(None)

    def next(self, event: str, timeout: float = 60) -> dict:
        """The next record of `event` (records before it are kept)."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self._lines.get(timeout=max(deadline - time.monotonic(), 0.01))
            except queue.Empty:
                raise AssertionError(f"no {event!r} record from the worker in {timeout} s: {self.stderr()}") from None
            if line is None:
                self._ended = True
                raise AssertionError(f"the worker ended before {event!r} (exit {self.proc.wait()}): {self.stderr()}")
            record = json.loads(line)
            self.records.append(record)
            if record["event"] == event:
                return record

    def release(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()

    def finish(self, timeout: float = 60) -> list[dict]:
        """Every record, once the worker has exited cleanly."""
        assert self.proc.wait(timeout=timeout) == 0, self.stderr()
        self._close_stdin()
        while (line := self._lines.get(timeout=timeout)) is not None:
            self.records.append(json.loads(line))
        self._ended = True
        return self.records

    def running(self) -> bool:
        return self.proc.poll() is None

    def stderr(self) -> str:
        return self.stderr_path.read_text()[-3000:]

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._close_stdin()
        while not self._ended:  # until the reader thread has closed stdout
            self._ended = self._lines.get(timeout=60) is None

    def _close_stdin(self) -> None:
        assert self.proc.stdin is not None
        if not self.proc.stdin.closed:
            self.proc.stdin.close()


@pytest.fixture
def spawn(tmp_path: Path) -> Iterator:
    started: list[Child] = []

    def start(*args: str) -> Child:
        started.append(Child(tmp_path, *args))
        return started[-1]

    yield start
    for child in started:  # a failed test must not leave a worker waiting
        child.kill()


# -- the model -----------------------------------------------------------------------------------
class Model:
    """What each acknowledged commit did; the rows expected at every snapshot follow from it."""

    def __init__(self) -> None:
        self.effects: dict[int, tuple[str, frozenset[int]]] = {}

    def appended(self, snapshot_id: int, keys: range | list[int]) -> None:
        self.effects[snapshot_id] = (APPEND, frozenset(keys))

    def deleted(self, snapshot_id: int, keys: list[int]) -> None:
        self.effects[snapshot_id] = (DELETE, frozenset(keys))

    def compacted(self, snapshot_id: int) -> None:
        self.effects[snapshot_id] = (REPLACE, frozenset())

    def states(self, table: mor.Table) -> dict[int, set[int]]:
        """The keys each snapshot of the table's history must hold, oldest first."""
        ancestors = [s for s in table.metadata.ancestors(table.metadata.current_snapshot_id)][::-1]
        assert {s.snapshot_id for s in ancestors} == set(self.effects), "the history is not the acknowledged commits"
        keys: set[int] = set()
        out = {}
        for s in ancestors:
            kind, changed = self.effects[s.snapshot_id]
            assert (s.operation == REPLACE) == (kind == REPLACE), f"snapshot {s.snapshot_id} is a {s.operation}, acknowledged as {kind}"
            keys = keys | changed if kind == APPEND else keys - changed
            out[s.snapshot_id] = keys
        return out


def assert_rows(rows: pa.Table, expected: set[int], who: str) -> None:
    keys = rows["key"].to_pylist()
    twice = [k for k, n in Counter(keys).items() if n > 1]
    assert not twice, f"{who}: rows read twice: {twice[:10]}"
    assert set(keys) == expected, f"{who}: lost {sorted(expected - set(keys))[:10]}, resurrected {sorted(set(keys) - expected)[:10]}"
    for r in rows.to_pylist():
        assert (r["part"], r["payload"]) == (r["key"] % 4, payload(r["key"])), f"{who}: row {r} changed"


def check_table(warehouse: Path, model: Model, pyiceberg_every: bool = True) -> dict[int, set[int]]:
    """Every snapshot reads as the model says, in mor and in pyiceberg (every snapshot, or the
    current one and those of compactions); nothing on disk is unreferenced."""
    table = mor.load_catalog(warehouse).load_table("db.t")
    states = model.states(table)
    static = StaticTable.from_metadata(table.metadata_location)
    for snapshot_id, expected in states.items():
        assert_rows(table.scan(snapshot_id=snapshot_id).to_arrow(), expected, f"mor at {snapshot_id}")
        chosen = pyiceberg_every or model.effects[snapshot_id][0] == REPLACE or snapshot_id == table.metadata.current_snapshot_id
        if chosen and not has_equality_deletes(table, snapshot_id):  # pyiceberg 0.12 cannot read those
            assert_rows(static.scan(snapshot_id=snapshot_id).to_arrow(), expected, f"pyiceberg at {snapshot_id}")
    assert_rows(table.scan().to_arrow(), states[table.metadata.current_snapshot_id], "mor, current")
    assert orphans(table) == set()
    return states


def has_equality_deletes(table: mor.Table, snapshot_id: int) -> bool:
    return any(t.equality_deletes for t in table.scan(snapshot_id=snapshot_id).plan_files())


def orphans(table: mor.Table) -> set[str]:
    future = dt.datetime.now(dt.UTC) + dt.timedelta(hours=1)  # however young
    return set(table.remove_orphan_files(older_than=future, dry_run=True))


def files_on_disk(table: mor.Table) -> set[str]:
    root = to_local_path(table.location)
    return {os.path.join(d, n) for d, _, names in os.walk(root) for n in names}


def written_by(table: mor.Table, snapshot_id: int) -> set[str]:
    """The files the commit of the current snapshot wrote, as pyiceberg reads its metadata: the
    metadata file, manifest list, the manifests it wrote and the content files it added."""
    static = StaticTable.from_metadata(table.metadata_location)
    snapshot = static.current_snapshot()
    assert snapshot is not None and snapshot.snapshot_id == snapshot_id
    out = {table.metadata_location, snapshot.manifest_list}
    for manifest in snapshot.manifests(static.io):
        if manifest.added_snapshot_id != snapshot_id:
            continue
        out.add(manifest.manifest_path)
        out |= {e.data_file.file_path for e in manifest.fetch_manifest_entry(static.io) if e.snapshot_id == snapshot_id}
    return {to_local_path(p) for p in out}


# -- the table -----------------------------------------------------------------------------------
FILES, ROWS_PER_FILE = 4, 200
PRE_DELETES = [[3, 203, 403], [17, 617]]  # every file carries deletes before the race


def new_table(warehouse: Path, partition_by: list[str] | None = None, retries: str | None = None) -> tuple[mor.Table, Model]:
    table = mor.load_catalog(warehouse).create_table("db.t", schema=SCHEMA, partition_by=partition_by)
    if retries is not None:
        table.set_properties(**{REPLAN: retries})
    model = Model()
    for i in range(FILES):
        keys = range(i * ROWS_PER_FILE, (i + 1) * ROWS_PER_FILE)
        model.appended(table.append(rows(keys)).snapshot_id, keys)
    for keys in PRE_DELETES:
        model.deleted(delete(table, keys), keys)
    return table, model


def delete(table: mor.Table, keys: list[int]) -> int:
    snapshot = table.delete(In("key", keys), mode="merge-on-read")
    assert snapshot is not None
    return snapshot.snapshot_id


def data_files(table: mor.Table) -> dict[str, int]:
    """Live data files and their data sequence numbers."""
    return {t.data_file.file_path: t.data_file.data_sequence_number for t in table.scan().plan_files()}


def file_of(table: mor.Table, key: int) -> str:
    tasks = table.scan(filter=And(EqualTo("key", key), EqualTo("part", key % 4))).plan_files()
    assert len(tasks) == 1
    return tasks[0].data_file.file_path


def live_delete_files(table: mor.Table) -> set[str]:
    return {d.file_path for t in table.scan().plan_files() for d in t.delete_files}


def conflict_snapshots(records: list[dict]) -> list[int | None]:
    return [r["snapshot"] for r in records if r["event"] == "conflict"]


# -- order 1: the DELETE commits while the compaction is about to ---------------------------------
TARGET = [5, 205, 406, 799]  # one row in every file


@pytest.mark.parametrize("retries", [None, "0"], ids=["replan", "no-replan"])
def test_a_delete_committed_before_the_compaction_commits_is_kept(tmp_path: Path, spawn, retries: str | None) -> None:
    table, model = new_table(tmp_path, retries=retries)
    before = files_on_disk(table)
    child = spawn("compact", str(tmp_path), "--block")
    blocked = child.next("blocked")
    assert blocked["read"] == table.current_snapshot().snapshot_id
    assert {file_of(table, k) for k in TARGET} <= set(blocked["rewritten"])
    assert blocked["added"] and all(os.path.exists(to_local_path(p)) for p in blocked["added"])  # written, not committed

    deleted = delete(table, TARGET)  # this process, while the compaction waits
    model.deleted(deleted, TARGET)
    delete_files = live_delete_files(table)
    child.release()
    records = child.finish()
    end = records[-1]
    if end["result"] == "ok":
        model.compacted(end["snapshot"])
    check_table(tmp_path, model)  # whatever happened, no delete is lost, no row comes back

    assert conflict_snapshots(records)[:1] == [deleted], records  # its first commit saw the delete
    assert not any(os.path.exists(to_local_path(p)) for p in blocked["added"]), "the discarded attempt's files are left"
    table.refresh()
    if retries is None:  # re-planned on the table with the delete, and committed
        assert (end["result"], end["plans"], end["conflicts"]) == ("ok", 2, 1), end
        assert live_delete_files(table) == set()  # the delete was applied, then its file dropped
        deleted_sequence_number = next(s.sequence_number for s in table.snapshots() if s.snapshot_id == deleted)
        assert set(data_files(table).values()) == {deleted_sequence_number}  # the snapshot it re-read
        assert end["compaction"]["written_rows"] == FILES * ROWS_PER_FILE - len(TARGET) - sum(map(len, PRE_DELETES))
    else:  # re-planning off: it fails cleanly, the delete stays, nothing of its own is left
        assert (end["result"], end["plans"], end["conflicts"]) == ("conflict", 1, 1), end
        assert table.current_snapshot().snapshot_id == deleted
        assert live_delete_files(table) == delete_files
        assert files_on_disk(table) - before == written_by(table, deleted)


# -- order 2: the DELETE planned before the compaction, commits after it ------------------------
@pytest.mark.parametrize("retries", [None, "0"], ids=["replan", "no-replan"])
def test_a_delete_planned_before_a_compaction_commits_after_it(tmp_path: Path, spawn, retries: str | None) -> None:
    table, model = new_table(tmp_path, retries=retries)
    child = spawn("delete", str(tmp_path), ",".join(map(str, TARGET)), "--block")
    blocked = child.next("blocked")
    assert blocked["read"] == table.current_snapshot().snapshot_id
    old_files = {file_of(table, k) for k in TARGET}
    assert set(blocked["touched"]) == old_files
    assert blocked["delete_files"] and all(os.path.exists(to_local_path(p)) for p in blocked["delete_files"])

    result = table.compact()  # this process, while the DELETE waits
    assert result.snapshot_id is not None and result.rewritten_data_files == FILES
    model.compacted(result.snapshot_id)
    assert not old_files & set(data_files(table))
    child.release()
    records = child.finish()
    end = records[-1]
    if end["result"] == "ok":
        model.deleted(end["snapshot"], TARGET)
    check_table(tmp_path, model)  # whatever happened, what it deleted is gone, nothing came back

    assert conflict_snapshots(records)[:1] == [result.snapshot_id], records
    assert not any(os.path.exists(to_local_path(p)) for p in blocked["delete_files"]), "the discarded attempt's files are left"
    table.refresh()
    if retries is None:  # re-planned against the compacted files
        assert (end["result"], end["plans"], end["conflicts"]) == ("ok", 2, 1), end
        new_deletes = {referenced_path(d) for t in table.scan().plan_files() for d in t.delete_files}
        assert new_deletes and new_deletes <= set(data_files(table))
    else:
        assert (end["result"], end["plans"], end["conflicts"]) == ("conflict", 1, 1), end
        assert table.current_snapshot().snapshot_id == result.snapshot_id


def test_a_delete_in_a_partition_compaction_leaves_alone_does_not_make_it_replan(tmp_path: Path, spawn) -> None:
    table, model = new_table(tmp_path, partition_by=["part"])
    model.deleted(delete(table, [0, 4, 400]), [0, 4, 400])  # PRE_DELETES hit parts 3 and 1
    untouched = [2, 6, 402, 798]  # part 2: no deletes, and too few small files to compact alone
    child = spawn("compact", str(tmp_path), "--block")
    blocked = child.next("blocked")
    assert not {file_of(table, k) for k in untouched} & set(blocked["rewritten"])

    before = live_delete_files(table)
    deleted = delete(table, untouched)
    model.deleted(deleted, untouched)
    added_deletes = live_delete_files(table) - before
    child.release()
    end = child.finish()[-1]

    assert (end["result"], end["plans"], end["conflicts"]) == ("ok", 1, 0), end  # its commit retried, not re-planned
    model.compacted(end["snapshot"])
    table.refresh()
    assert added_deletes and live_delete_files(table) == added_deletes  # the new delete stays; the others left
    check_table(tmp_path, model)


# -- free-running: random changes in a child, compaction in a loop here -------------------------
@pytest.mark.parametrize("kinds", ["d", "dea"], ids=["position-deletes", "with-equality-deletes-and-appends"])
def test_random_deletes_racing_repeated_compactions_lose_nothing(
    tmp_path: Path, spawn, monkeypatch: pytest.MonkeyPatch, kinds: str
) -> None:
    table, model = new_table(tmp_path, partition_by=["part"])
    # Lost compare-and-swap races back off 100 ms at first by default; shorter, the two sides
    # interleave more often in the few seconds this runs.
    table.set_properties(**{"commit.retry.min-wait-ms": "5", "commit.retry.max-wait-ms": "100"})
    plans = count_plans(monkeypatch)
    rng = random.Random(7)
    remaining = sorted(set(range(FILES * ROWS_PER_FILE)) - {k for keys in PRE_DELETES for k in keys})
    rng.shuffle(remaining)  # each key is deleted by one operation at most: an unacknowledged one leaves it
    new_keys = iter(range(10_000, 20_000))
    compactions: Counter[str] = Counter()
    changes: Counter[str] = Counter()
    for round in range(3):
        operations = []
        for _ in range(15):
            kind = rng.choice(kinds)
            count = rng.randint(1, 4)
            keys = [next(new_keys) for _ in range(count)] if kind == "a" else [remaining.pop() for _ in range(count)]
            operations.append(f"{kind}:{','.join(map(str, keys))}")
        child = spawn("stress", str(tmp_path), str(round), ";".join(operations))
        child.next("started")
        while True:
            running = child.running()
            plans.clear()
            try:
                result = table.compact()
            except mor.CommitConflictError:
                compactions["conflict"] += 1
            else:
                compactions["ok" if result.snapshot_id else "none"] += 1
                if result.snapshot_id:
                    model.compacted(result.snapshot_id)
            compactions["replanned"] += len(plans) > 1
            if not running:  # one more after the child's last change
                break
            time.sleep(rng.uniform(0, 0.02))
        for r in child.finish():
            if r["event"] != "end":
                continue
            changes[f"{r['kind']}-{r['result']}"] += 1
            changes[f"{r['kind']}-replanned"] += r["plans"] > 1
            if r["result"] == "ok" and r["kind"] == "a":
                model.appended(r["snapshot"], r["keys"])
            elif r["result"] == "ok":
                model.deleted(r["snapshot"], r["keys"])
            assert r["result"] != "none", r
    table.refresh()
    assert live_delete_files(table) == set()  # the last compaction ran alone: every delete applied and dropped
    states = check_table(tmp_path, model, pyiceberg_every=False)
    print(f"compactions {dict(compactions)}, changes {dict(changes)}, snapshots {len(states)}")
    assert compactions["ok"] >= 3 and changes["d-ok"] > 0
    replans = compactions["replanned"] + sum(n for name, n in changes.items() if name.endswith("replanned"))
    assert replans > 0, "the two processes never raced: nothing here tested a conflict"


def count_plans(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the compaction plans written in this process (more than one: re-planned)."""
    calls: list[int] = []
    write = compact_module.write_compaction

    def counted(*args, **kwargs):
        calls.append(1)
        return write(*args, **kwargs)

    monkeypatch.setattr(compact_module, "write_compaction", counted)
    return calls
