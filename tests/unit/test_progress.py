"""Progress (`progress=`, mor/progress.py) on every long operation: appends count rows and
bytes, DML counts files scanned and written, scans count files read, compaction counts bytes
(tests/unit/maintenance/test_compact.py). A callback gets every event at once; False is silent; a bar
shows only on a terminal (or when asked for), after a delay for work that is often quick."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from unit_helpers import SCHEMA, assert_no_orphans, files_under, live_delete_entries, local, make_rows

import mor
import mor.cli.rows
import mor.progress
from mor.cli import main
from mor.progress import Progress, ProgressEvent, human_bytes

REPO = Path(__file__).resolve().parents[2]


def stage_runs(events: list[ProgressEvent]) -> list[list[ProgressEvent]]:
    """The events split into stages, each from its opening event (nothing done, nothing moved)."""
    runs: list[list[ProgressEvent]] = []
    for e in events:
        if e.done == 0 and not e.bytes:
            runs.append([])
        runs[-1].append(e)
    return runs


def checked_stages(events: list[ProgressEvent], operation: str) -> list[tuple[str, str]]:
    """(stage, unit) of each stage in order, after checking each stage's events: one operation,
    stage, unit and total; `done` and `bytes` never go down; a known total is reached."""
    out = []
    for run in stage_runs(events):
        first, last = run[0], run[-1]
        assert {(e.operation, e.stage, e.unit, e.total) for e in run} == {(operation, first.stage, first.unit, first.total)}
        done = [e.done for e in run]
        assert done == sorted(done), done
        moved = [e.bytes for e in run]
        assert all(b is None for b in moved) or moved == sorted(moved), moved
        if first.total is not None:
            assert last.done == first.total, (first.stage, done, first.total)
        out.append((first.stage, first.unit))
    return out


def last_of(events: list[ProgressEvent], stage: str) -> ProgressEvent:
    return [e for e in events if e.stage == stage][-1]


def added_bytes(snapshot: mor.Snapshot | None) -> int:
    assert snapshot is not None
    return int(snapshot.summary["added-files-size"])


def written_bytes(events: list[ProgressEvent]) -> int:
    """Bytes the stages that write say they wrote (scans read: their bytes are not written)."""
    return sum(run[-1].bytes or 0 for run in stage_runs(events) if run[0].stage.startswith("write"))


def new_table(catalog: mor.Catalog, *appends: range, **properties: str) -> mor.Table:
    table = catalog.create_table("db.t", schema=SCHEMA, properties=properties or None)
    for ids in appends:
        table.append(make_rows(ids))
    return table


# -- append --------------------------------------------------------------------------------
def test_append_reports_the_rows_and_the_bytes_of_the_files_written(catalog: mor.Catalog) -> None:
    table = new_table(catalog)
    events: list[ProgressEvent] = []
    snapshot = table.append(make_rows(range(1000)), progress=events.append)
    assert checked_stages(events, "append") == [("write rows", "rows")]
    last = events[-1]
    assert last.done == last.total == 1000
    sizes = [t.data_file.file_size_in_bytes for t in table.scan().plan_files()]
    assert last.bytes == sum(sizes) == added_bytes(snapshot) and last.bytes > 0


def test_a_streamed_append_counts_rows_as_they_are_written_and_every_rolled_file(catalog: mor.Catalog) -> None:
    table = new_table(catalog, **{"write.target-file-size-bytes": "2000", "write.parquet.row-group-limit": "100"})
    batches = [b for start in range(0, 1000, 100) for b in make_rows(range(start, start + 100)).to_batches()]
    events: list[ProgressEvent] = []
    snapshot = table.append(pa.RecordBatchReader.from_batches(SCHEMA, batches), progress=events.append)
    assert checked_stages(events, "append") == [("write rows", "rows")]
    assert events[0].total is None and events[-1].done == 1000
    assert [e.done for e in events if e.done][:3] == [100, 200, 300]  # batch by batch
    files = table.scan().plan_files()
    assert len(files) > 1  # rolled at the target size
    assert events[-1].bytes == sum(t.data_file.file_size_in_bytes for t in files) == added_bytes(snapshot)


# -- DML -----------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["merge-on-read", "copy-on-write"])
def test_delete_reports_files_scanned_and_written(catalog: mor.Catalog, mode: str) -> None:
    table = new_table(catalog, range(0, 10), range(10, 20), range(20, 30))
    planned = len(table.scan(filter="id in (3, 13)").plan_files())
    events: list[ProgressEvent] = []
    snapshot = table.delete("id in (3, 13)", mode=mode, progress=events.append)
    assert checked_stages(events, "delete") == [("scan files", "files"), ("write files", "files")]
    assert last_of(events, "scan files").total == planned == 2  # the third file's bounds cannot match
    assert last_of(events, "write files").total == 2
    assert written_bytes(events) == added_bytes(snapshot) > 0


def test_a_delete_matching_nothing_scans_and_writes_nothing(catalog: mor.Catalog) -> None:
    table = new_table(catalog, range(0, 10))
    events: list[ProgressEvent] = []
    assert table.delete("name = 'nobody'", progress=events.append) is None
    assert checked_stages(events, "delete") == [("scan files", "files")]


def test_update_reports_files_and_the_rows_written_again(catalog: mor.Catalog) -> None:
    table = new_table(catalog, range(0, 10), range(10, 20))
    events: list[ProgressEvent] = []
    snapshot = table.update({"value": pc.scalar(0.0)}, where="id < 12", progress=events.append)
    stages = checked_stages(events, "update")
    assert stages == [("scan files", "files"), ("write files", "files"), ("write rows", "rows")]
    assert last_of(events, "scan files").total == 2 and last_of(events, "write rows").done == 12
    assert written_bytes(events) == added_bytes(snapshot) > 0


@pytest.mark.parametrize("strategy", ["position", "equality"])
def test_upsert_reports_its_stages(catalog: mor.Catalog, strategy: str) -> None:
    table = new_table(catalog, range(0, 10), range(10, 20))
    events: list[ProgressEvent] = []
    snapshot = table.upsert(make_rows([5, 15, 100]), on=["id"], strategy=strategy, progress=events.append)
    stages = checked_stages(events, "upsert")
    if strategy == "position":
        assert stages == [("scan files", "files"), ("write files", "files"), ("write rows", "rows")]
    else:
        assert stages == [("write rows", "rows")]  # blind: no scan
    assert last_of(events, "write rows").done == 3
    assert written_bytes(events) == added_bytes(snapshot) > 0


def test_merge_reports_its_stages(catalog: mor.Catalog) -> None:
    table = new_table(catalog, range(0, 10), range(10, 20))
    events: list[ProgressEvent] = []
    source = make_rows([5, 100])
    snapshot = table.merge(source, on=["id"], when_matched_update="*", when_not_matched_insert="*", progress=events.append)
    stages = checked_stages(events, "merge")
    assert stages == [("scan files", "files"), ("write files", "files"), ("write rows", "rows")]
    assert last_of(events, "write files").done == 1 and last_of(events, "write rows").done == 2
    assert written_bytes(events) == added_bytes(snapshot) > 0


@pytest.mark.parametrize("equality_deletes", ["true", "false"])
def test_delete_rows_reports_its_stages(catalog: mor.Catalog, equality_deletes: str) -> None:
    table = new_table(catalog, range(0, 10), range(10, 20), **{"mor.write.equality-deletes.enabled": equality_deletes})
    events: list[ProgressEvent] = []
    snapshot = table.delete_rows(pa.table({"id": [3, 4, 14]}), progress=events.append)
    stages = checked_stages(events, "delete_rows")
    if equality_deletes == "true":
        assert stages == [("write equality deletes", "rows")] and events[-1].done == 3
    else:
        assert stages == [("scan files", "files"), ("write files", "files")]
    assert written_bytes(events) == added_bytes(snapshot) > 0


def test_v3_deletion_vectors_count_their_puffin_file(catalog: mor.Catalog) -> None:
    table = catalog.create_table("db.t", schema=SCHEMA, format_version=3)
    table.append(make_rows(range(0, 10)))
    table.append(make_rows(range(10, 20)))
    events: list[ProgressEvent] = []
    snapshot = table.delete("id in (3, 13)", progress=events.append)
    assert checked_stages(events, "delete") == [("scan files", "files"), ("write files", "files")]
    puffin_files = {local(e.path) for e in live_delete_entries(table)}
    assert len(puffin_files) == 1  # both vectors in one file, counted once (the summary counts blobs)
    assert written_bytes(events) == sum(os.path.getsize(p) for p in puffin_files) > added_bytes(snapshot)


def test_a_replanned_delete_starts_its_stages_again(catalog: mor.Catalog) -> None:
    new_table(catalog, range(0, 10))
    first, second = catalog.load_table("db.t"), catalog.load_table("db.t")
    first.append(make_rows(range(10, 20)))
    events: list[ProgressEvent] = []
    second.delete("id >= 5", progress=events.append)  # conflicts with the append: plans again
    stages = checked_stages(events, "delete")
    assert [s for s, _ in stages] == ["scan files", "write files", "scan files", "write files"]
    scans = [run[0].total for run in stage_runs(events) if run[0].stage == "scan files"]
    assert scans == [1, 2]  # the second plan sees the appended file


def test_overwrite_reports_the_rows_written_then_the_scan_and_the_removals(catalog: mor.Catalog) -> None:
    table = new_table(catalog, range(0, 10), range(10, 20))
    events: list[ProgressEvent] = []
    table.overwrite(make_rows(range(5, 10)), where="id >= 5 and id < 15", progress=events.append)
    assert checked_stages(events, "overwrite") == [("write rows", "rows"), ("scan files", "files"), ("write files", "files")]
    assert stage_runs(events)[0][-1].done == 5


# -- scans ---------------------------------------------------------------------------------
SCANS: dict[str, Callable[[mor.Scan], object]] = {
    "to_arrow": lambda s: s.to_arrow(),
    "to_batches": lambda s: list(s.to_batches()),
    "count": lambda s: s.count(),
    "to_pandas": lambda s: s.to_pandas(),
}


@pytest.mark.parametrize("read", SCANS)
def test_a_scan_reports_every_planned_file_read(catalog: mor.Catalog, read: str) -> None:
    table = new_table(catalog, range(0, 10), range(10, 20), range(20, 30))
    table.delete("id = 4")  # count() must read the file a delete applies to (the others it counts from metadata)
    events: list[ProgressEvent] = []
    scan = table.scan(progress=events.append)
    SCANS[read](scan)
    assert checked_stages(events, "scan") == [("read files", "files")]
    tasks = [t for t in scan.plan_files() if t.delete_files or read != "count"]
    assert events[-1].done == events[-1].total == len(tasks) == (1 if read == "count" else 3)
    assert events[-1].bytes == sum(t.data_file.file_size_in_bytes for t in tasks)


def test_a_scan_of_one_file_read_by_row_groups_counts_the_file_once(catalog: mor.Catalog) -> None:
    table = new_table(catalog, **{"write.parquet.row-group-limit": "10"})
    table.append(make_rows(range(100)))  # one file, ten row groups read in parallel
    events: list[ProgressEvent] = []
    assert table.scan(progress=events.append).to_arrow().num_rows == 100
    assert [(e.done, e.total) for e in events] == [(0, 1), (1, 1)]


def test_a_limited_scan_counts_the_files_it_read(catalog: mor.Catalog) -> None:
    table = new_table(catalog, range(0, 10), range(10, 20), range(20, 30))
    events: list[ProgressEvent] = []
    assert table.scan(limit=15, progress=events.append).to_arrow().num_rows == 15
    checked = stage_runs(events)
    assert len(checked) == 1 and checked[0][0].total == 3
    assert [e.done for e in events] == [0, 1]  # the first file read whole, then stopped in the second


def test_a_count_from_metadata_reads_no_file(catalog: mor.Catalog) -> None:
    table = new_table(catalog, range(0, 10))
    events: list[ProgressEvent] = []
    assert table.scan(progress=events.append).count() == 10
    assert events == []


# -- how progress is shown -----------------------------------------------------------------
def test_false_and_no_terminal_print_nothing(catalog: mor.Catalog, capsys: pytest.CaptureFixture[str]) -> None:
    table = new_table(catalog, range(0, 10))
    for progress in (False, None):  # None: stderr is no terminal here
        table.append(make_rows(range(10, 20)), progress=progress)
        table.delete("id = 3", progress=progress)
        table.scan(progress=progress).to_arrow()
        table.compact(min_input_files=1, progress=progress)
    assert capsys.readouterr() == ("", "")


def test_a_callback_gets_nothing_when_progress_is_false() -> None:
    progress = Progress("append", False)
    assert progress.callback is None and not progress.bar
    with progress.stage("write rows", 3, "rows", with_bytes=True) as step:
        step.advance(3, bytes=100)
    assert step.done == 3  # counted, shown nowhere


def test_a_bar_when_asked_for_shows_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    with Progress("scan", True).stage("read files", 3, with_bytes=True) as step:
        for _ in range(3):
            step.advance(1, bytes=1_500_000)
    with Progress("compact", True).stage("rewrite data files", 10_000_000, "bytes") as step:
        step.advance(10_000_000)
    out, err = capsys.readouterr()
    assert out == ""
    assert "scan: read files" in err and "3/3 files, 4.5 MB" in err
    assert "compact: rewrite data files" in err and "10.0 MB/10.0 MB" in err


def test_a_delayed_bar_does_not_show_for_work_done_before_the_delay(capsys: pytest.CaptureFixture[str]) -> None:
    with Progress("scan", True, delay=3600).stage("read files", 3) as step:
        step.advance(3)
    assert capsys.readouterr() == ("", "")


def test_no_bar_and_no_error_without_rich(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "rich.console", None)  # import fails as if rich were not installed
    with Progress("scan", True).stage("read files", 1) as step:
        step.advance()
    assert capsys.readouterr() == ("", "")


def test_quick_work_waits_before_its_bar_maintenance_does_not() -> None:
    assert Progress.delayed("scan").delay > 0
    assert Progress("compact").delay == 0


def test_nested_stages_share_one_display(capsys: pytest.CaptureFixture[str]) -> None:
    outer, inner = Progress("scan", True), Progress("append", True)
    with outer.stage("read files", 2) as read:
        read.advance()
        with inner.stage("write rows", 10, "rows") as write:  # a second live display would fail
            write.advance(10)
        read.advance()
    err = capsys.readouterr().err
    assert "scan: read files" in err and "append: write rows" in err


def test_bytes_read_as_people_read_them() -> None:
    sizes = (0, 999, 1000, 1_234_567, 5 * 10**12)
    assert [human_bytes(n) for n in sizes] == ["0 bytes", "999 bytes", "1.0 kB", "1.2 MB", "5.0 TB"]


def test_events_stay_backward_compatible() -> None:
    event = ProgressEvent("compact", "rewrite data files", 1, 2)
    assert (event.unit, event.bytes) == ("files", None)


# -- the command line ----------------------------------------------------------------------
@pytest.fixture
def terminal_stderr(monkeypatch: pytest.MonkeyPatch) -> None:
    """stderr taken for a terminal, and bars shown at once (not after a delay)."""
    monkeypatch.setattr(mor.progress, "BAR_DELAY_SECONDS", 0.0)
    monkeypatch.setattr(mor.progress, "_stderr_is_terminal", lambda: True)


@pytest.mark.usefixtures("terminal_stderr")
def test_cli_delete_and_update_show_their_bar_on_a_terminal(
    catalog: mor.Catalog, warehouse: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    new_table(catalog, range(0, 10))
    assert main(["delete", "db.t", "--warehouse", str(warehouse), "--where", "id = 3"]) == 0
    assert main(["update", "db.t", "--warehouse", str(warehouse), "--set", "name='x'", "--where", "id = 4"]) == 0
    out, err = capsys.readouterr()
    assert out.count("snapshot ") == 2
    assert "delete: scan files" in err and "update: write rows" in err


@pytest.mark.usefixtures("terminal_stderr")
def test_cli_scan_shows_its_bar_only_when_the_rows_go_elsewhere(
    catalog: mor.Catalog, warehouse: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    new_table(catalog, range(0, 10))
    assert main(["scan", "db.t", "--warehouse", str(warehouse), "--format", "csv"]) == 0  # stdout: a pipe
    out, err = capsys.readouterr()
    assert len(out.splitlines()) == 11 and "scan: read files" in err and "1/1 files" in err
    monkeypatch.setattr(mor.cli.rows, "stdout_is_terminal", lambda: True)  # the rows go to the terminal
    assert main(["scan", "db.t", "--warehouse", str(warehouse), "--format", "csv"]) == 0
    assert capsys.readouterr().err == ""


def test_cli_prints_no_progress_without_a_terminal(catalog: mor.Catalog, warehouse: Path, capsys: pytest.CaptureFixture[str]) -> None:
    new_table(catalog, range(0, 10))
    for argv in (["delete", "--where", "id = 3"], ["update", "--set", "name='x'", "--where", "id = 4"], ["scan"]):
        assert main([argv[0], "db.t", "--warehouse", str(warehouse), *argv[1:]]) == 0
    assert capsys.readouterr().err == ""


# -- bad values ----------------------------------------------------------------------------
VERBS: dict[str, Callable[[mor.Table, Any], object]] = {
    "append": lambda t, p: t.append(make_rows(range(100, 110)), progress=p),
    "delete": lambda t, p: t.delete("id = 3", progress=p),
    "update": lambda t, p: t.update({"value": pc.scalar(0.0)}, where="id = 3", progress=p),
    "upsert": lambda t, p: t.upsert(make_rows([3, 100]), on=["id"], progress=p),
    "merge": lambda t, p: t.merge(make_rows([3]), on=["id"], when_matched_delete=True, progress=p),
    "delete_rows": lambda t, p: t.delete_rows(pa.table({"id": [3]}), progress=p),
    "scan": lambda t, p: t.scan(progress=p).to_arrow(),
    "compact": lambda t, p: t.compact(min_input_files=1, progress=p),
}


@pytest.mark.parametrize("verb", VERBS)
@pytest.mark.parametrize("bad", ["yes", 1, [print]])
def test_a_bad_progress_value_is_refused_and_changes_nothing(catalog: mor.Catalog, verb: str, bad: object) -> None:
    table = new_table(catalog, range(0, 10))
    table.delete("id = 5")
    before, files = table.metadata_location, files_under(table.location)
    with pytest.raises(mor.InvalidArgumentError, match="progress"):
        VERBS[verb](table, bad)
    assert catalog.load_table("db.t").metadata_location == before
    assert files_under(table.location) == files
    assert_no_orphans(table)


@pytest.mark.subprocess
def test_importing_progress_imports_neither_rich_nor_pandas() -> None:
    code = "import sys, mor.progress; print(sorted(m for m in ('rich', 'pandas') if m in sys.modules))"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO, env=env)
    assert out.stdout.strip() == "[]"
