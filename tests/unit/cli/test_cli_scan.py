"""`mor scan`: streams rows in every format, stops reading at --limit, refuses bad input
in one line. Rows are checked against the table's own scan."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq
import pytest
from unit_helpers import SCHEMA, make_rows

import mor
from mor.cli import main
from mor.cli.rows import python_rows
from mor.read.task_reader import TaskReader

FILES = 5
ROWS_PER_FILE = 100


@pytest.fixture
def table(warehouse: Path) -> mor.Table:
    """Five data files of 100 rows (one per append), some rows deleted by position and by key."""
    table = mor.load_catalog(warehouse).create_table("db.t", schema=SCHEMA)
    for n in range(FILES):
        table.append(make_rows(range(n * ROWS_PER_FILE, (n + 1) * ROWS_PER_FILE)))
    table.delete("id in (0, 1, 150)")
    table.delete_rows(pa.table({"id": pa.array([2, 250], pa.int64())}))
    return table


@pytest.fixture
def files_read(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The data files the scan reader opened, in order."""
    opened: list[str] = []
    read = TaskReader.read

    def counting_read(self: TaskReader, task, *args, **kwargs):  # type: ignore[no-untyped-def]
        opened.append(task.data_file.file_path)
        return read(self, task, *args, **kwargs)

    monkeypatch.setattr(TaskReader, "read", counting_read)
    return opened


def scan(capsys: pytest.CaptureFixture[str], warehouse: Path, *argv: str) -> str:
    assert main(["scan", "db.t", "--warehouse", str(warehouse), *argv]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    return captured.out


def test_limit_stops_after_the_first_file(
    table: mor.Table, warehouse: Path, files_read: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    out = scan(capsys, warehouse, "--limit", "10")
    assert len(table.scan().plan_files()) == FILES
    assert len(files_read) == 1  # the first file holds 10 rows: no other file is opened
    lines = out.splitlines()
    assert lines[0].split() == SCHEMA.names
    expected = table.scan().to_arrow().slice(0, 10)
    assert [int(line.split()[0]) for line in lines[1:]] == expected.column("id").to_pylist()
    files_read.clear()
    assert scan(capsys, warehouse, "--limit", "0").split() == SCHEMA.names  # the header alone
    assert files_read == []
    scan(capsys, warehouse, "--limit", "150", "--format", "json")
    assert len(files_read) == 2
    files_read.clear()
    lines = scan(capsys, warehouse).splitlines()
    assert len(files_read) == FILES and len(lines) == 1 + table.scan().count() == 1 + 495


def test_each_format_gives_the_tables_rows(table: mor.Table, warehouse: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    expected = table.scan(filter="id >= 240", columns=["id", "name", "value"]).to_arrow()
    args = ["--filter", "id >= 240", "--columns", "id,name,value"]
    as_csv = pa_csv.read_csv(io.BytesIO(scan(capsys, warehouse, *args, "--format", "csv").encode()))
    assert as_csv.to_pylist() == expected.to_pylist()
    lines = scan(capsys, warehouse, *args, "--format", "json").splitlines()
    assert [json.loads(line) for line in lines] == expected.to_pylist()
    assert scan(capsys, warehouse, *args, "--json").splitlines() == lines
    out = tmp_path / "rows.parquet"
    assert scan(capsys, warehouse, *args, "--format", "parquet", "--out", str(out)) == f"{expected.num_rows} rows written to {out}\n"
    assert pq.read_table(out).to_pylist() == expected.to_pylist()
    text = scan(capsys, warehouse, *args).splitlines()
    assert text[0].split() == ["id", "name", "value"]
    assert [line.split() for line in text[1:]] == [[str(r["id"]), r["name"], str(r["value"])] for r in expected.to_pylist()]
    out = tmp_path / "rows.jsonl"
    assert json.loads(scan(capsys, warehouse, *args, "--json", "--out", str(out))) == {"rows_written": expected.num_rows, "out": str(out)}
    assert out.read_text().splitlines() == lines


def test_filter_and_limit_together(table: mor.Table, warehouse: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = scan(capsys, warehouse, "--filter", "id >= 245 and id < 400", "--limit", "7", "--json").splitlines()
    expected = table.scan(filter="id >= 245 and id < 400").to_arrow().slice(0, 7).column("id").to_pylist()
    assert [json.loads(line)["id"] for line in lines] == expected
    assert 250 not in expected and len(expected) == 7  # deleted by key


def test_a_time_travel_scan(table: mor.Table, warehouse: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first = table.snapshots()[0].snapshot_id
    lines = scan(capsys, warehouse, "--snapshot-id", str(first), "--json", "--columns", "id").splitlines()
    assert [json.loads(line)["id"] for line in lines] == list(range(ROWS_PER_FILE))


def test_empty_results_still_have_a_header(table: mor.Table, warehouse: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert scan(capsys, warehouse, "--filter", "id < 0", "--columns", "name,id") == "name  id\n"
    assert scan(capsys, warehouse, "--filter", "id < 0", "--columns", "name,id", "--format", "csv") == '"name","id"\n'
    assert scan(capsys, warehouse, "--filter", "id < 0", "--json") == ""
    out = tmp_path / "none.parquet"
    scan(capsys, warehouse, "--filter", "id < 0", "--format", "parquet", "--out", str(out))
    assert pq.read_table(out).num_rows == 0 and pq.read_table(out).column_names == SCHEMA.names


@pytest.mark.parametrize(
    "argv, error",
    [
        (["--columns", "id,nope"], "InvalidFilterError"),
        (["--filter", "nope = 1"], "InvalidFilterError"),
        (["--filter", "id <"], "InvalidFilterError"),
        (["--columns", " , "], "InvalidArgumentError"),
        (["--format", "parquet"], "InvalidArgumentError"),  # a file format: needs --out
        (["--format", "csv", "--json"], "InvalidArgumentError"),
        (["--snapshot-id", "5"], "NoSuchSnapshotError"),
        (["--format", "csv", "--out", "/nonexistent-folder/x.csv"], "StorageError"),
    ],
)
def test_bad_input_is_a_typed_error_and_exits_2(
    table: mor.Table, warehouse: Path, capsys: pytest.CaptureFixture[str], argv: list[str], error: str
) -> None:
    assert main(["scan", "db.t", "--warehouse", str(warehouse), *argv]) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith(f"mor: {error}: ") and "Traceback" not in captured.err
    assert captured.out == ""


def test_a_filter_error_keeps_its_caret_under_the_place(table: mor.Table, warehouse: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scan", "db.t", "--warehouse", str(warehouse), "--filter", "id = = 1"]) == 2
    lines = capsys.readouterr().err.splitlines()
    shown = next(i for i, line in enumerate(lines) if line.strip() == "id = = 1")
    assert lines[shown + 1].index("^") == lines[shown].index("= 1")  # under the second '='


def test_an_unknown_column_is_named_with_the_likeliest_one_meant(
    table: mor.Table, warehouse: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["scan", "db.t", "--warehouse", str(warehouse), "--filter", "idd = 1"]) == 2
    err = capsys.readouterr().err
    assert "column 'idd', which the table does not have" in err and "did you mean 'id'?" in err
    assert "Reference(" not in err and "EqualTo" not in err


def test_usage_errors(table: mor.Table, warehouse: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["--limit", "-1"], ["--limit", "ten"], ["--format", "xml"]):
        with pytest.raises(SystemExit) as exit_info:
            main(["scan", "db.t", "--warehouse", str(warehouse), *argv])
        assert exit_info.value.code == 2
        assert "Traceback" not in capsys.readouterr().err


def test_csv_refuses_nested_columns_by_name(warehouse: Path, capsys: pytest.CaptureFixture[str]) -> None:
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("tags", pa.list_(pa.string()))])
    table = mor.load_catalog(warehouse).create_table("db.nested", schema=schema)
    table.append(pa.table({"id": [1], "tags": [["x", "y"]]}, schema=schema))
    assert main(["scan", "db.nested", "--warehouse", str(warehouse), "--format", "csv"]) == 2
    assert "tags" in capsys.readouterr().err
    assert main(["scan", "db.nested", "--warehouse", str(warehouse), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"id": 1, "tags": ["x", "y"]}


def test_changes_as_json_lines(table: mor.Table, warehouse: Path, capsys: pytest.CaptureFixture[str]) -> None:
    last = table.snapshots()[-2].snapshot_id
    assert main(["changes", "db.t", "--warehouse", str(warehouse), "--from", str(last), "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    expected = table.changes(from_snapshot_id=last).to_arrow().to_pylist()
    assert sorted(r["id"] for r in rows) == sorted(r["id"] for r in expected) == [2, 250]
    assert {r["_change_type"] for r in rows} == {"DELETE"}


def test_rows_are_the_values_pyarrow_gives() -> None:
    """Times with a zone are turned into Python without pyarrow's pandas import, into the same
    values with the same zones (nanoseconds and nested values still by pyarrow)."""
    micros = [0, 1_700_000_000_123_456, None, -86_400_000_001]
    seconds = [None if v is None else v // 1_000_000 for v in micros]
    batch = pa.record_batch(
        {
            "utc": pa.array(micros, pa.timestamp("us", tz="UTC")),
            "offset": pa.array(micros, pa.timestamp("us", tz="+05:30")),
            "paris": pa.array([None if v is None else v // 1000 for v in micros], pa.timestamp("ms", tz="Europe/Paris")),
            "new_york": pa.array(seconds, pa.timestamp("s", tz="America/New_York")),
            "naive": pa.array(micros, pa.timestamp("us")),
            "nanos": pa.array([None if v is None else v * 1000 for v in micros], pa.timestamp("ns", tz="UTC")),
            "nested": pa.array([{"t": v} for v in micros], pa.struct([("t", pa.timestamp("us", tz="UTC"))])),
            "id": pa.array(range(4), pa.int64()),
        }
    )
    assert repr(python_rows(batch)) == repr(batch.to_pylist())
    assert repr(python_rows(batch.select(["id", "naive"]))) == repr(batch.select(["id", "naive"]).to_pylist())


@pytest.mark.subprocess
def test_a_scan_imports_no_pandas_and_nothing_that_writes(warehouse: Path) -> None:
    """Start-up is most of `mor scan --limit 10` (issue 26): a scan of a table with position
    deletes and a time with a zone, printed in each text format, imports no DML, writer, commit
    or maintenance module, nor pandas (pyarrow imports it for some conversions, half a second),
    SQLAlchemy (the catalog's pointer is read with sqlite3) or pyiceberg.table. (A filtered scan
    imports pandas: pyarrow.dataset, which evaluates the filter on the rows, makes a scalar
    when it is imported.)"""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("ts", pa.timestamp("us", tz="UTC"))])
    table = mor.load_catalog(warehouse).create_table("db.z", schema=schema)
    table.append(pa.table({"id": pa.array(range(100), pa.int64()), "ts": pa.array(range(100), pa.timestamp("us", tz="UTC"))}))
    table.delete("id in (1, 50)")
    heavy = ("pandas", "mor.dml.delete", "mor.dml.row_changes", "mor.commit.snapshot_producer", "mor.maintenance.compact",
             "mor.write.rolling", "sqlalchemy", "pyiceberg.table")  # fmt: skip
    scan = ["scan", "db.z", "--warehouse", str(warehouse), "--limit", "10"]
    code = (
        "import contextlib, io, sys\n"
        "from mor.cli import main\n"
        f"main({scan!r})\n"
        "for extra in (['--format', 'csv'], ['--format', 'json']):\n"
        "    with contextlib.redirect_stdout(io.StringIO()):\n"
        f"        assert main({scan!r} + extra) in (0, None)\n"
        f"print(sorted(m for m in sys.modules if m in {heavy!r}))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert lines[0].split() == ["id", "ts"] and lines[1].split() == ["0", "1970-01-01T00:00:00+00:00"] and len(lines) == 12
    assert lines[-1] == "[]"
