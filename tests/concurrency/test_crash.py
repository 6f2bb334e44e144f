"""Crash safety (issue 8): a writer killed with SIGKILL at any step of a commit, or at a random
moment, leaves the table readable at the old or the new state with every acknowledged commit
present; `remove_orphan_files` then removes what the dead writer left, and nothing else.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from one_op import NEW_ROWS, run
from test_concurrent_writers import Op, check_history, rows_at
from writer import SCHEMA, initial_rows

import mor
from mor.catalog.steps import POINTS
from mor.io.fileio import to_local_path

HERE = Path(__file__).parent
FAULTS = HERE.parent / "faults"  # its sitecustomize kills a writer at step $MOR_FAULT_POINT of a commit
ENV = "MOR_FAULT_POINT"
KINDS = ["append", "delete", "delete-copy-on-write", "update", "upsert", "delete_rows"]


def _env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(FAULTS), str(HERE), *sys.path]), **extra}


def _new_table(warehouse: Path) -> mor.Table:
    table = mor.load_catalog(warehouse, create=True).create_table("db.t", schema=SCHEMA)
    table.append(initial_rows())
    return table


def _rows(table: mor.Table) -> list[tuple]:
    return sorted((r["key"], r["n"], r["tag"]) for r in table.scan().to_arrow().to_pylist())


def _files(location: str) -> set[str]:
    root = to_local_path(location)
    return {os.path.join(d, n) for d, _, names in os.walk(root) for n in names}


def _remove_all_orphans(table: mor.Table) -> list[str]:
    # Every unreferenced file counts, however young: the writer that made it is dead.
    return table.remove_orphan_files(older_than=dt.datetime.now(dt.UTC) + dt.timedelta(seconds=5))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("point", POINTS)
def test_a_writer_killed_at_each_step_of_a_commit(tmp_path: Path, point: str, kind: str) -> None:
    table = _new_table(tmp_path / "crash")
    old_rows, old_files, old_location = _rows(table), _files(table.location), table.metadata_location
    expected = _new_table(tmp_path / "model")
    run(expected, kind)

    proc = subprocess.run(
        [sys.executable, str(HERE / "one_op.py"), str(tmp_path / "crash"), kind],
        env=_env(**{ENV: point}), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]

    table = mor.load_catalog(tmp_path / "crash", create=True).load_table("db.t")
    if point == "committed":  # the swap happened: the new state, though the writer never heard
        assert table.metadata_location != old_location
        assert _rows(table) == _rows(expected)
    else:
        assert table.metadata_location == old_location
        assert _rows(table) == old_rows
    rows = _rows(table)
    _remove_all_orphans(table)
    assert _rows(mor.load_catalog(tmp_path / "crash", create=True).load_table("db.t")) == rows  # nothing live was removed
    if point != "committed":
        assert _files(table.location) == old_files, "the dead writer's files are not all gone"
    table.append(initial_rows().slice(0, 1))  # the table takes new commits


def _table_with_deletes(warehouse: Path) -> mor.Table:
    table = _new_table(warehouse)
    for keys in ("1, 2", "3", "key >= 400 and key < 410"):
        table.delete(keys if "key" in keys else f"key in ({keys})")
    table.delete_rows(NEW_ROWS.select(["key"]).slice(1, 1))
    return table


MAINTENANCE = [(kind, point) for kind in ("compact", "rewrite_position_deletes") for point in POINTS] + [
    ("expire", "expire-committed"),
    ("expire", "expire-deleting"),
]


@pytest.mark.parametrize("kind, point", MAINTENANCE)
def test_maintenance_killed_at_each_step(tmp_path: Path, kind: str, point: str) -> None:
    """Maintenance changes no row: killed anywhere, the table reads the same rows, every
    snapshot still there reads as before, and remove_orphan_files cleans up what is left."""
    table = _table_with_deletes(tmp_path)
    rows, old_location = _rows(table), table.metadata_location
    history = {s.snapshot_id: _rows_at(table, s.snapshot_id) for s in table.snapshots()}

    proc = subprocess.run(
        [sys.executable, str(HERE / "one_op.py"), str(tmp_path), kind],
        env=_env(**{ENV: point}), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]

    table = mor.load_catalog(tmp_path).load_table("db.t")
    committed = point in ("committed", "expire-committed", "expire-deleting")
    assert (table.metadata_location != old_location) == committed
    assert _rows(table) == rows
    for snapshot in table.snapshots():
        assert _rows_at(table, snapshot.snapshot_id) == history.get(snapshot.snapshot_id, rows)
    if kind == "expire":
        assert len(table.snapshots()) == 1
    _remove_all_orphans(table)
    table = mor.load_catalog(tmp_path).load_table("db.t")
    assert _rows(table) == rows
    for snapshot in table.snapshots():
        assert _rows_at(table, snapshot.snapshot_id) == history.get(snapshot.snapshot_id, rows)
    table.append(initial_rows().slice(0, 1))  # the table takes new commits


def _rows_at(table: mor.Table, snapshot_id: int) -> list[tuple]:
    return sorted((r["key"], r["n"], r["tag"]) for r in table.scan(snapshot_id=snapshot_id).to_arrow().to_pylist())


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_writer_killed_at_a_random_moment(tmp_path: Path, seed: int) -> None:
    table = _new_table(tmp_path)
    proc = subprocess.Popen(
        [sys.executable, str(HERE / "writer.py"), str(tmp_path), "0", "200", str(seed), "contended"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(),
    )  # fmt: skip
    # Wait for an event, not a delay: the first finished operation (however loaded the machine
    # is), then kill at a random moment of the operations that follow.
    seen = []
    for line in proc.stdout:  # type: ignore[union-attr]
        seen.append(line)
        if _phase(line) == "end":
            break
    time.sleep(random.Random(seed).uniform(0.0, 1.5))
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    # Read the rest through the same buffered reader the loop used: lines it already buffered
    # (a "start" right after the first "end") would be lost to communicate(), which reads the pipe.
    with proc.stdout, proc.stderr:  # type: ignore[union-attr]
        rest, err = proc.stdout.read(), proc.stderr.read()  # type: ignore[union-attr]
    started, ended = {}, []
    for line in "".join(seen + [rest]).splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:  # a line cut by the kill
            continue
        phase = record.pop("phase")
        op = Op(name=record.pop("op"), **record)
        if phase == "start":
            started[op.name] = op
        else:
            ended.append(op)
            started.pop(op.name)
    assert ended, f"the writer finished no operation: {err[-2000:]}"
    in_flight = next(iter(started.values()), None)
    table = mor.load_catalog(tmp_path).load_table("db.t")
    check_history(table, ended, serializable=True, in_flight=in_flight)
    rows = rows_at(table, table.current_snapshot().snapshot_id)  # type: ignore[union-attr]
    _remove_all_orphans(table)
    assert rows_at(table, table.current_snapshot().snapshot_id) == rows  # type: ignore[union-attr]


def _phase(line: str) -> str | None:
    try:
        return json.loads(line).get("phase")
    except json.JSONDecodeError:
        return None


# -- expire_snapshots killed after its commit: what it would have deleted is orphaned, then gone --


@pytest.mark.parametrize("point", ["expire-committed", "expire-deleting"])
def test_expire_killed_after_its_commit_leaves_only_orphans(tmp_path: Path, point: str) -> None:
    """The commit landed and the process died before (or while) deleting: the current snapshot
    reads the same rows, and `remove_orphan_files` removes the files the expiry would have
    deleted (those still there), leaving every file the metadata reaches. Except: a file the kept
    copy-on-write commit lists as DELETED is read by no snapshot, so expiry deletes it, but it
    is still named, so it is no orphan: it stays until that manifest goes."""
    from mor.maintenance.orphans import reachable_files

    table = _table_with_deletes(tmp_path)
    table.delete("key in (5, 6)", mode="copy-on-write")  # a data file only older snapshots read
    rows = _rows(table)
    would = table.expire_snapshots(older_than=dt.timedelta(0), retain_last=1, allow_short_retention=True, dry_run=True)
    assert would.deleted_data_files and would.deleted_manifest_lists

    proc = subprocess.run(
        [sys.executable, str(HERE / "one_op.py"), str(tmp_path), "expire"],
        env=_env(**{ENV: point}), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]

    table = mor.load_catalog(tmp_path).load_table("db.t")
    assert len(table.snapshots()) == 1 and _rows(table) == rows
    left = set(would.deleted_paths) & _files(table.location)
    assert left if point == "expire-committed" else len(left) == len(would.deleted_paths) - 1
    named = reachable_files(table.io, table.metadata, table.metadata_location)
    read = {f for t in table.scan().plan_files() for f in (t.data_file.file_path, *(d.file_path for d in t.delete_files))}
    assert not left & named & {to_local_path(f) for f in read}
    removed = _remove_all_orphans(table)
    assert set(removed) == left - named
    table = mor.load_catalog(tmp_path).load_table("db.t")
    named, on_disk = reachable_files(table.io, table.metadata, table.metadata_location), _files(table.location)
    assert on_disk <= named and named - on_disk <= set(would.deleted_paths)  # named only as DELETED: see above
    assert _rows(table) == rows
    assert table.remove_orphan_files(older_than=dt.datetime.now(dt.UTC) + dt.timedelta(seconds=5)) == []
