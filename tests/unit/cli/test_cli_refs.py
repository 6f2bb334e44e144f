"""`mor rollback`, `set-current`, `cherrypick`, `refs`, `branch` and `tag` make the API's change,
print the result (text or --json), and refuse bad input with a typed one-line error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from unit_helpers import SCHEMA, make_rows, scan_ids

import mor
from mor.cli import main


@pytest.fixture
def table(warehouse: Path) -> mor.Table:
    table = mor.load_catalog(warehouse).create_table("db.t", schema=SCHEMA)
    table.append(make_rows(range(0, 10)))
    table.append(make_rows(range(10, 20)))
    return table


def run(warehouse: Path, capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main([*argv, "--warehouse", str(warehouse)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_rollback_set_current_and_cherrypick(table: mor.Table, warehouse: Path, capsys: pytest.CaptureFixture[str]) -> None:
    s1, s2 = (s.snapshot_id for s in table.snapshots())
    code, out, _ = run(warehouse, capsys, "rollback", "db.t", "--snapshot", str(s1))
    assert code == 0 and f"current snapshot: {s1}" in out
    assert scan_ids(table.refresh()) == list(range(10))
    code, out, _ = run(warehouse, capsys, "set-current", "db.t", str(s2), "--json")
    assert code == 0 and json.loads(out)["current_snapshot_id"] == s2
    code, _, err = run(warehouse, capsys, "rollback", "db.t", "--snapshot", "42")
    assert code != 0 and "NoSuchSnapshotError" in err and "\n" not in err.strip()
    run(warehouse, capsys, "rollback", "db.t", "--snapshot", str(s1))
    table.refresh().append(make_rows([30]))
    code, out, _ = run(warehouse, capsys, "cherrypick", "db.t", str(s2), "--json")
    assert code == 0 and json.loads(out)["summary"]["source-snapshot-id"] == str(s2)
    assert scan_ids(table.refresh()) == [*range(20), 30]


def test_branches_and_tags(table: mor.Table, warehouse: Path, capsys: pytest.CaptureFixture[str]) -> None:
    s1, s2 = (s.snapshot_id for s in table.snapshots())
    assert run(warehouse, capsys, "tag", "create", "db.t", "v1", "--snapshot", str(s1))[0] == 0
    code, out, _ = run(warehouse, capsys, "branch", "create", "db.t", "dev", "--min-snapshots-to-keep", "2")
    assert code == 0 and "dev" in out and "min-snapshots-to-keep=2" in out
    assert run(warehouse, capsys, "branch", "replace", "db.t", "dev", "--snapshot", str(s1))[0] == 0
    assert run(warehouse, capsys, "branch", "fast-forward", "db.t", "dev", "--to", "main")[0] == 0
    assert run(warehouse, capsys, "branch", "rename", "db.t", "dev", "dev2")[0] == 0
    code, out, _ = run(warehouse, capsys, "refs", "db.t", "--json")
    refs = json.loads(out)["refs"]
    assert {k: (v["type"], v["snapshot-id"]) for k, v in refs.items()} == {
        "main": ("branch", s2),
        "dev2": ("branch", s2),
        "v1": ("tag", s1),
    }
    code, _, err = run(warehouse, capsys, "tag", "create", "db.t", "v1")
    assert code != 0 and "RefAlreadyExistsError" in err
    assert run(warehouse, capsys, "tag", "remove", "db.t", "v1")[0] == 0
    assert run(warehouse, capsys, "branch", "remove", "db.t", "dev2")[0] == 0
    assert set(table.refresh().refs()) == {"main"}
