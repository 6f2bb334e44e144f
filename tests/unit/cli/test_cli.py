"""The quickstart (the project's main job) runs end to end and reports what it did."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import mor
from mor.cli import main
from mor.io.fileio import to_local_path


def test_quickstart_builds_the_demo_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["quickstart", "--warehouse", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    table = mor.load_catalog(tmp_path).load_table("demo.events")
    operations = [s.operation for s in table.snapshots()]
    assert operations == ["append", "append", "delete", "delete", "overwrite", "overwrite", "overwrite", "delete"]
    assert f"of {table.scan().count()})" in out
    assert table.scan().count() == 1948


def test_quickstart_twice_makes_a_second_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["quickstart", "--warehouse", str(tmp_path)]) == 0
    first = mor.load_catalog(tmp_path).load_table("demo.events").metadata_location
    capsys.readouterr()
    assert main(["quickstart", "--warehouse", str(tmp_path)]) == 0
    assert "demo.events exists already and is left as it is: this run uses a new table, demo.events_2" in capsys.readouterr().out
    catalog = mor.load_catalog(tmp_path)
    assert catalog.load_table("demo.events").metadata_location == first  # never touched (tests/unit/catalog/test_paths_safety.py)
    assert len(catalog.load_table("demo.events_2").snapshots()) == 8


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


def test_compact_dry_run_then_compact(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["quickstart", "--warehouse", str(tmp_path)]) == 0
    table = mor.load_catalog(tmp_path).load_table("demo.events")
    rows, before = table.scan().count(), table.metadata_location
    capsys.readouterr()
    assert main(["compact", "demo.events", "--warehouse", str(tmp_path), "--dry-run"]) == 0
    said = capsys.readouterr().out
    assert said.startswith("dry run, nothing changed: would rewrite ") and "would remove" in said
    assert "snapshot" not in said and " into " not in said  # nothing was written, so no output files to count
    assert table.refresh().metadata_location == before
    assert main(["compact", "demo.events", "--warehouse", str(tmp_path), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["rewritten_data_files"] > 0 and result["snapshot_id"] == table.refresh().current_snapshot().snapshot_id
    assert table.scan().count() == rows
    assert all(not t.delete_files for t in table.scan().plan_files())
    assert main(["compact", "demo.events", "--warehouse", str(tmp_path), "--min-delete-ratio", "2"]) == 2
    assert "InvalidArgumentError" in capsys.readouterr().err
    # a refusal names the flag that overrides it, not the Python argument
    assert main(["expire", "demo.events", "--warehouse", str(tmp_path), "--older-than", "1s"]) == 2
    said = capsys.readouterr().err
    assert "RetentionTooShortError" in said and "--allow-short-retention" in said and "allow_short_retention=" not in said


def sorted_rows(table: pa.Table) -> list[dict]:
    return sorted(table.to_pylist(), key=lambda r: r["id"])


def test_compact_sorts_or_z_orders_as_the_table_verb_does(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["quickstart", "--warehouse", str(tmp_path)]) == 0
    table = mor.load_catalog(tmp_path).load_table("demo.events")
    rows = sorted_rows(table.scan().to_arrow())
    assert main(["compact", "demo.events", "--warehouse", str(tmp_path), "--min-input-files", "1", "--sort-by", "id desc"]) == 0
    for task in table.refresh().scan().plan_files():  # each file's rows in the order asked for
        ids = pq.read_table(to_local_path(task.data_file.file_path), columns=["id"]).column("id").to_pylist()
        assert ids == sorted(ids, reverse=True)
    assert sorted_rows(table.scan().to_arrow()) == rows
    args = ["compact", "demo.events", "--warehouse", str(tmp_path), "--min-input-files", "1"]
    capsys.readouterr()
    assert main([*args, "--zorder-by", "id,ts", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["rewritten_data_files"] > 0  # Z-order rewrites every file in scope
    assert sorted_rows(table.refresh().scan().to_arrow()) == rows
    with pytest.raises(SystemExit):  # argparse: one order at a time
        main([*args, "--sort-by", "id", "--zorder-by", "id,ts"])


def test_remove_orphans_lists_then_removes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["quickstart", "--warehouse", str(tmp_path)]) == 0
    table = mor.load_catalog(tmp_path).load_table("demo.events")
    stray = Path(to_local_path(table.location)) / "data" / "stray.parquet"
    stray.write_bytes(b"left by a crashed writer")
    capsys.readouterr()
    assert main(["remove-orphans", "demo.events", "--warehouse", str(tmp_path), "--older-than", "3d"]) == 0
    assert "removed 0 orphan files" in capsys.readouterr().out  # too young
    assert main(["remove-orphans", "demo.events", "--warehouse", str(tmp_path), "--older-than", "0s", "--dry-run"]) == 0
    assert str(stray) in capsys.readouterr().out and stray.exists()
    assert main(["remove-orphans", "demo.events", "--warehouse", str(tmp_path), "--older-than", "0s"]) == 0
    assert "removed 1 orphan files (24 bytes)" in capsys.readouterr().out and not stray.exists()
    with pytest.raises(SystemExit) as bad_age:  # argparse's usage error
        main(["remove-orphans", "demo.events", "--warehouse", str(tmp_path), "--older-than", "soon"])
    assert bad_age.value.code == 2 and "neither an age" in capsys.readouterr().err


def test_expire_refuses_a_short_retention_without_the_override(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["quickstart", "--warehouse", str(tmp_path)]) == 0
    table = mor.load_catalog(tmp_path).load_table("demo.events")
    rows = table.scan().count()
    capsys.readouterr()
    assert main(["expire", "demo.events", "--warehouse", str(tmp_path), "--older-than", "0s", "--retain-last", "2"]) == 2
    assert "RetentionTooShortError" in capsys.readouterr().err
    assert len(table.refresh().snapshots()) == 8
    args = ["expire", "demo.events", "--warehouse", str(tmp_path), "--older-than", "0s", "--retain-last", "2", "--allow-short-retention"]
    assert main([*args, "--dry-run"]) == 0
    assert "expired 6 snapshots" in capsys.readouterr().out and len(table.refresh().snapshots()) == 8
    assert main(args) == 0
    assert "expired 6 snapshots" in capsys.readouterr().out
    assert len(table.refresh().snapshots()) == 2 and table.scan().count() == rows


def test_maintain_follows_the_table_properties(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["quickstart", "--warehouse", str(tmp_path)]) == 0
    table = mor.load_catalog(tmp_path).load_table("demo.events")
    rows = table.scan().count()
    table.set_properties(**{"mor.maintain.compact.min-delete-files": "1", "mor.maintain.remove-orphans.enabled": "false"})
    capsys.readouterr()
    assert main(["maintain", "demo.events", "--warehouse", str(tmp_path), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["compaction"]["rewritten_data_files"] > 0 and result["orphans"] is None
    assert result["expiry"]["expired_snapshot_ids"] == []  # every snapshot is younger than 5 days
    assert table.refresh().scan().count() == rows
    assert all(not t.delete_files for t in table.scan().plan_files())
