"""`mor tables`, `describe`, `history`, `snapshots` and `files`: plain text and `--json`,
checked against the table's own API on a table with position and equality deletes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest
from unit_helpers import SCHEMA, make_rows

import mor
from mor.cli import main
from mor.format.spec import FileContent


@pytest.fixture
def table(warehouse: Path) -> mor.Table:
    """db.t, partitioned by category: two appends, a position delete, an equality delete."""
    catalog = mor.load_catalog(warehouse)
    table = catalog.create_table("db.t", schema=SCHEMA, partition_by=["category"])
    table.append(make_rows(range(0, 30)))
    table.append(make_rows(range(30, 60)))
    table.delete("id < 3 or id = 45")  # position deletes
    table.delete_rows(pa.table({"id": pa.array([10, 50], pa.int64())}))  # equality deletes
    return table


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(list(argv)) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    return captured.out


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    return json.loads(run(capsys, *argv, "--json"))


def fails(capsys: pytest.CaptureFixture[str], error: str, *argv: str) -> str:
    """The verb exits 2 with one line naming `error` on stderr, no traceback."""
    assert main(list(argv)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"mor: {error}: ") and "Traceback" not in err, err
    return err


def api_files(table: mor.Table) -> dict[str, set[str]]:
    """Paths of the current snapshot's files by kind, as the scan planner sees them."""
    tasks = table.scan().plan_files()
    return {
        "data": {t.data_file.file_path for t in tasks},
        "position": {d.file_path for t in tasks for d in t.position_deletes},
        "equality": {d.file_path for t in tasks for d in t.equality_deletes},
    }


def test_tables_lists_every_namespace_or_one(table: mor.Table, warehouse: Path, capsys: pytest.CaptureFixture[str]) -> None:
    catalog = mor.load_catalog(warehouse)
    catalog.create_table("db.u", schema=SCHEMA)
    catalog.create_table("other.v", schema=SCHEMA)
    w = ["--warehouse", str(warehouse)]
    assert sorted(run(capsys, "tables", *w).split()) == sorted(catalog.list_tables("db") + catalog.list_tables("other"))
    assert run(capsys, "tables", "db", *w).split() == catalog.list_tables("db")
    assert sorted(catalog.list_tables("db")) == ["db.t", "db.u"]
    assert run_json(capsys, "tables", "other", *w) == {"namespace": "other", "tables": ["other.v"]}
    assert sorted(run_json(capsys, "tables", *w)["tables"]) == ["db.t", "db.u", "other.v"]
    fails(capsys, "NoSuchNamespaceError", "tables", "nope", *w)


def test_describe_sizes_agree_with_the_table(table: mor.Table, warehouse: Path, capsys: pytest.CaptureFixture[str]) -> None:
    document = run_json(capsys, "describe", "db.t", "--warehouse", str(warehouse))
    files = api_files(table)
    assert document["table"] == "db.t" and document["metadata_location"] == table.metadata_location
    assert document["current_snapshot"]["snapshot_id"] == table.current_snapshot().snapshot_id
    assert [c["name"] for c in document["schema"]["columns"]] == [f.name for f in table.schema().fields]
    assert document["schema"]["columns"][0] == {"id": 1, "name": "id", "type": "long", "required": True, "doc": None}
    assert document["partition_spec"]["fields"] == [{"field_id": 1000, "name": "category", "transform": "identity", "source": "category"}]
    assert document["properties"] == table.properties
    data, deletes = document["data_files"], document["delete_files"]
    assert data["files"] == len(files["data"]) and data["rows"] == 60
    assert deletes["position"]["files"] == len(files["position"]) and deletes["position"]["rows"] == 4
    assert deletes["equality"] == {"files": 1, "rows": 2, "bytes": deletes["equality"]["bytes"], "ratio": round(2 / 60, 6)}
    assert deletes["deletion-vector"]["files"] == 0
    # every deleted position and every key held one row: the sizes account for what a scan reads
    assert data["rows"] - deletes["position"]["rows"] - deletes["equality"]["rows"] == table.scan().count() == 54
    out = run(capsys, "describe", "db.t", "--warehouse", str(warehouse))
    assert "partition spec 0" in out and "1000      category  identity   category" in out
    sizes = out.split("\nsizes\n")[1].splitlines()
    assert sizes[1].split() == ["data", "data", str(data["files"]), "60", str(data["bytes"])]
    assert sizes[2].split()[:4] == ["deletes", "position", str(deletes["position"]["files"]), "4"]
    assert sizes[3].split()[-1] == "3.33%"


def test_describe_counts_deletion_vectors(warehouse: Path, capsys: pytest.CaptureFixture[str]) -> None:
    table = mor.load_catalog(warehouse).create_table("db.v3", schema=SCHEMA, format_version=3)
    table.append(make_rows(range(10)))
    table.delete("id in (1, 2)")
    document = run_json(capsys, "describe", "db.v3", "--warehouse", str(warehouse))
    assert document["format_version"] == 3
    assert document["delete_files"]["deletion-vector"]["files"] == 1 and document["delete_files"]["deletion-vector"]["rows"] == 2
    assert document["delete_files"]["position"]["files"] == 0
    listed = run_json(capsys, "files", "db.v3", "--warehouse", str(warehouse))["files"]
    assert [f["content"] for f in listed] == ["data", "deletion-vector"]
    assert listed[1]["referenced_data_file"] == listed[0]["file_path"]


def test_describe_of_an_empty_table(warehouse: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mor.load_catalog(warehouse).create_table("db.empty", schema=SCHEMA)
    document = run_json(capsys, "describe", "db.empty", "--warehouse", str(warehouse))
    assert document["current_snapshot"] is None and document["data_files"] == {"files": 0, "rows": 0, "bytes": 0}
    assert "current snapshot  none" in run(capsys, "describe", "db.empty", "--warehouse", str(warehouse))
    assert run_json(capsys, "files", "db.empty", "--warehouse", str(warehouse)) == {"table": "db.empty", "snapshot_id": None, "files": []}


def test_history_and_snapshots_follow_the_table(table: mor.Table, warehouse: Path, capsys: pytest.CaptureFixture[str]) -> None:
    w = ["--warehouse", str(warehouse)]
    history = run_json(capsys, "history", "db.t", *w)["history"]
    assert [(e["snapshot_id"], e["parent_snapshot_id"], e["timestamp_ms"]) for e in history] == [
        (h.snapshot_id, h.parent_snapshot_id, h.made_current_at_ms) for h in table.history()
    ]
    assert [e["operation"] for e in history] == ["append", "append", "delete", "delete"]
    assert history[0]["summary"]["added-records"] == "30"
    document = run_json(capsys, "snapshots", "db.t", *w)
    assert document["current_snapshot_id"] == table.current_snapshot().snapshot_id
    assert [s["snapshot_id"] for s in document["snapshots"]] == [s.snapshot_id for s in table.snapshots()]
    assert [s["sequence_number"] for s in document["snapshots"]] == [1, 2, 3, 4]
    assert [s["summary"] for s in document["snapshots"]] == [s.summary for s in table.snapshots()]
    lines = run(capsys, "history", "db.t", *w).splitlines()
    assert lines[0] == "history of db.t" and len(lines) == 2 + len(table.history())
    first = lines[2].split()  # no parent: blank; 3 partitions, so 3 files
    assert first[1:] == [str(table.snapshots()[0].snapshot_id), "append", "+30", "rows,", "+3", "data", "files", "30", "30"]
    assert "+2 equality deletes, +1 delete files" in lines[-1]
    # live rows (what a scan returns) beside records (rows in data files, deleted ones too)
    assert lines[1].split()[-3:] == ["live", "rows", "records"]
    assert lines[-1].split()[-2:] == [str(table.scan().count()), table.current_snapshot().summary["total-records"]]
    assert table.scan().count() < int(table.current_snapshot().summary["total-records"])
    assert [e["live_rows"] for e in history] == [table.scan(snapshot_id=e["snapshot_id"]).count() for e in history]
    assert [s["live_rows"] for s in document["snapshots"]] == [e["live_rows"] for e in history]
    lines = run(capsys, "snapshots", "db.t", *w).splitlines()
    current = [line for line in lines if line.endswith("*")]
    assert len(current) == 1 and current[0].startswith(str(table.current_snapshot().snapshot_id))


def test_files_of_the_current_and_an_older_snapshot(table: mor.Table, warehouse: Path, capsys: pytest.CaptureFixture[str]) -> None:
    w = ["--warehouse", str(warehouse)]
    document = run_json(capsys, "files", "db.t", *w)
    assert document["snapshot_id"] == table.current_snapshot().snapshot_id
    by_kind: dict[str, set[str]] = {"data": set(), "position": set(), "equality": set()}
    for f in document["files"]:
        by_kind[f["content"]].add(f["file_path"])
    assert by_kind == api_files(table)
    data = [f for f in document["files"] if f["content"] == "data"]
    assert sum(f["record_count"] for f in data) == 60
    assert {f["partition"]["category"] for f in data} == {"a", "b", "c"}
    assert [f["equality_columns"] for f in document["files"] if f["content"] == "equality"] == [["id"]]
    lines = run(capsys, "files", "db.t", *w).splitlines()
    assert len(lines) == 2 + len(document["files"])
    assert all(line.split()[0] in by_kind and line.split()[1] in by_kind[line.split()[0]] for line in lines[2:])
    first = table.snapshots()[0]
    older = run_json(capsys, "files", "db.t", "--snapshot", str(first.snapshot_id), *w)["files"]
    assert [f["content"] for f in older] == ["data"] * 3 and sum(f["record_count"] for f in older) == 30
    assert {f["file_path"] for f in older} == {t.data_file.file_path for t in table.scan(snapshot_id=first.snapshot_id).plan_files()}
    fails(capsys, "NoSuchSnapshotError", "files", "db.t", "--snapshot", "12345", *w)


def test_unknown_tables_and_warehouses_are_one_line_errors(
    table: mor.Table, warehouse: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for verb in ("describe", "history", "snapshots", "files", "scan", "delete", "update"):
        extra = {"delete": ["--where", "id = 1"], "update": ["--set", "name=x", "--where", "id = 1"]}.get(verb, [])
        fails(capsys, "NoSuchTableError", verb, "db.nope", "--warehouse", str(warehouse), *extra)
        fails(capsys, "NoSuchTableError", verb, "db.t", "--warehouse", str(tmp_path / "missing"), *extra)
    assert not (tmp_path / "missing").exists()
    fails(capsys, "InvalidArgumentError", "tables", "--warehouse", str(tmp_path / "missing"))


def test_a_terminal_gets_rich_tables(
    table: mor.Table, warehouse: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("mor.cli.output.stdout_is_terminal", lambda: True)
    out = run(capsys, "describe", "db.t", "--warehouse", str(warehouse))
    assert "─" in out  # drawn by rich, not padded text
    assert "category" in out and "position" in out
    out = run(capsys, "scan", "db.t", "--warehouse", str(warehouse), "--limit", "3", "--columns", "id,name")
    expected = table.scan(columns=["id", "name"]).to_arrow().slice(0, 3).to_pylist()
    assert [line.split() for line in out.strip().splitlines()] == [["id", "name"], *([str(r["id"]), r["name"]] for r in expected)]


def test_without_rich_a_terminal_gets_plain_text(
    table: mor.Table, warehouse: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("mor.cli.output.stdout_is_terminal", lambda: True)
    monkeypatch.setitem(sys.modules, "rich.console", None)  # import fails as if rich were not installed
    out = run(capsys, "history", "db.t", "--warehouse", str(warehouse))
    assert out.splitlines()[0] == "history of db.t"


@pytest.mark.subprocess
def test_the_installed_entry_point(table: mor.Table, warehouse: Path) -> None:
    """`mor` as the environment installed it (pyproject's [project.scripts]), and `python -m mor`."""
    script = Path(sys.executable).parent / ("mor.exe" if os.name == "nt" else "mor")
    assert script.exists(), f"no mor script next to {sys.executable}: pip install -e . puts it there"
    done = subprocess.run(
        [str(script), "snapshots", "db.t", "--warehouse", str(warehouse), "--json"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["current_snapshot_id"] == table.current_snapshot().snapshot_id
    done = subprocess.run(
        [sys.executable, "-m", "mor", "describe", "db.nope", "--warehouse", str(warehouse)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2 and done.stderr.startswith("mor: NoSuchTableError") and "Traceback" not in done.stderr


@pytest.mark.subprocess
def test_help_loads_no_spark_server_or_catalog_database() -> None:
    code = (
        "import sys\n"
        "from mor.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'pyspark', 'starlette', 'uvicorn', 'sqlalchemy', 'rich'}))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_content_kinds_follow_the_spec() -> None:
    from mor.cli.inspection import content_kind
    from mor.format.content_file import make_content_file

    def kind(content: FileContent, file_format: str = "PARQUET") -> str:
        return content_kind(
            make_content_file(
                content, file_path="f", file_format=file_format, spec_id=0, partition=(), record_count=1, file_size_in_bytes=1
            )
        )

    assert [
        kind(FileContent.DATA), kind(FileContent.POSITION_DELETES), kind(FileContent.EQUALITY_DELETES),
        kind(FileContent.POSITION_DELETES, "PUFFIN"),
    ] == ["data", "position", "equality", "deletion-vector"]  # fmt: skip


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    from importlib.metadata import version

    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0 and capsys.readouterr().out == f"mor {version('mor')}\n"


def test_quickstart_as_one_json_document(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    document = run_json(capsys, "quickstart", "--warehouse", str(tmp_path))  # nothing but the document on stdout
    table = mor.load_catalog(tmp_path).load_table("demo.events")
    assert document["table"] == "demo.events" and document["metadata_location"] == table.metadata_location
    assert document["rows"] == table.scan().count() == 1948
    assert [s["snapshot_id"] for s in document["snapshots"]] == [s.snapshot_id for s in table.snapshots()]
    assert document["snapshots"][-1]["pyiceberg"] == "cannot read (equality deletes)"


def test_inspect_prints_a_metadata_table(table: mor.Table, warehouse: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = run(capsys, "inspect", "db.t", "files", "--warehouse", str(warehouse), "--json").splitlines()
    assert sorted(json.loads(line)["file_path"] for line in lines) == sorted(table.inspect.files()["file_path"].to_pylist())
    first = table.snapshots()[0].snapshot_id
    out = run(capsys, "inspect", "db.t", "partitions", "--snapshot", str(first), "--warehouse", str(warehouse))
    assert "record_count" in out and "last_updated_snapshot_id" in out and str(first) in out
    assert main(["inspect", "db.t", "refs", "--snapshot", str(first), "--warehouse", str(warehouse)]) != 0
    assert main(["inspect", "db.t", "nope", "--warehouse", str(warehouse)]) != 0
    assert "no metadata table 'nope'" in capsys.readouterr().err
