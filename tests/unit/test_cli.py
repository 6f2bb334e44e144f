"""The quickstart (the project's main job) runs end to end and reports what it did."""

from __future__ import annotations

from pathlib import Path

import pytest

import mor
from mor.cli import main


def test_quickstart_builds_the_demo_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["quickstart", "--warehouse", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    table = mor.load_catalog(tmp_path).load_table("demo.events")
    operations = [s.operation for s in table.snapshots()]
    assert operations == ["append", "append", "delete", "delete", "overwrite", "overwrite", "overwrite", "delete"]
    assert f"of {table.scan().count()})" in out
    assert table.scan().count() == 1948


def test_quickstart_twice_replaces_the_demo_table(tmp_path: Path) -> None:
    assert main(["quickstart", "--warehouse", str(tmp_path)]) == 0
    assert main(["quickstart", "--warehouse", str(tmp_path)]) == 0
    assert len(mor.load_catalog(tmp_path).load_table("demo.events").snapshots()) == 8


def test_scan_of_a_missing_table_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scan", "db.nope", "--warehouse", str(tmp_path)]) == 2
    assert "NoSuchTableError" in capsys.readouterr().err


def test_rewrite_deletes_merges_and_reports(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["quickstart", "--warehouse", str(tmp_path)]) == 0
    table = mor.load_catalog(tmp_path).load_table("demo.events")
    rows = table.scan().count()
    capsys.readouterr()
    assert main(["rewrite-deletes", "demo.events", "--warehouse", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("removed ") and "added " in out
    table.refresh()
    assert table.scan().count() == rows
    assert all(len(t.position_deletes) <= 1 for t in table.scan().plan_files())
    assert main(["rewrite-deletes", "demo.nope", "--warehouse", str(tmp_path)]) == 2
