"""A FIFO, a device or a folder where a table's file should be is refused at once with
CorruptMetadataError naming the file (mor/io/fileio.py `check_regular_file`), as a missing
file is; opening a FIFO would otherwise block the read forever.

The reads run in a child process, so that a read that does block fails this test (the child is
killed at the timeout) instead of hanging the test run; a passing read returns at once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from unit_helpers import SCHEMA, live_data_paths, live_delete_entries, local, make_rows

import mor
from mor.errors import CorruptMetadataError
from mor.io.fileio import FileIO, check_regular_file

TIMEOUT_S = 120  # far beyond a read of this table; reached only by a read that blocks

READ = """
import json, sys
import mor
warehouse, what = sys.argv[1], sys.argv[2]
try:
    table = mor.load_catalog(warehouse, create=False).load_table("db.t")
    if what == "scan":
        table.scan().to_arrow()
    elif what == "count":
        table.scan().count()
    elif what == "delete":
        table.delete("id = 7")
    result = {"error": None}
except mor.MorError as e:
    result = {"error": type(e).__name__, "message": str(e)}
print(json.dumps(result))
"""


def read_in_child(warehouse: Path, what: str) -> dict[str, str | None]:
    try:
        done = subprocess.run([sys.executable, "-c", READ, str(warehouse), what], capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{what} blocked for {TIMEOUT_S} s on a FIFO")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


@pytest.fixture
def table(catalog: mor.Catalog) -> mor.Table:
    t = catalog.create_table("db.t", schema=SCHEMA)
    t.append(make_rows(range(30)))
    t.delete("id = 3")
    return t


def replace_by_fifo(location: str) -> str:
    path = local(location)
    os.remove(path)
    os.mkfifo(path)
    return path


@pytest.mark.subprocess
@pytest.mark.parametrize("what", ["scan", "count", "delete"])
def test_a_data_file_replaced_by_a_fifo_is_refused(warehouse: Path, table: mor.Table, what: str) -> None:
    (data_file,) = live_data_paths(table)
    replace_by_fifo(data_file)
    before = table.metadata_location
    result = read_in_child(warehouse, what)
    assert result["error"] == "CorruptMetadataError"
    assert f"data file {data_file} is unreadable" in str(result["message"])
    assert "FIFO" in str(result["message"])
    assert table.refresh().metadata_location == before


@pytest.mark.subprocess
@pytest.mark.parametrize("kind", ["position delete file", "manifest list", "table metadata file"])
def test_other_files_replaced_by_a_fifo_are_refused(warehouse: Path, table: mor.Table, kind: str) -> None:
    location = {
        "position delete file": lambda: live_delete_entries(table)[0].path,
        "manifest list": lambda: table.current_snapshot().manifest_list,
        "table metadata file": lambda: table.metadata_location,
    }[kind]()
    replace_by_fifo(location)
    result = read_in_child(warehouse, "scan")
    assert result["error"] == "CorruptMetadataError"
    assert f"{kind} {location}" in str(result["message"]) and "FIFO" in str(result["message"])


def test_devices_and_folders_are_not_regular_files(tmp_path: Path) -> None:
    for path, kind in (("/dev/null", "a character device"), (str(tmp_path), "a directory")):
        with pytest.raises(OSError, match=f"not a regular file but {kind}"):
            check_regular_file(path)
    with pytest.raises(FileNotFoundError):
        check_regular_file(str(tmp_path / "nope"))
    (tmp_path / "f").write_bytes(b"x")
    os.symlink(tmp_path / "f", tmp_path / "link")
    assert FileIO().read_bytes(str(tmp_path / "link")) == b"x"  # a link to a regular file reads
    with pytest.raises(OSError, match="a character device"):
        FileIO().read_bytes("/dev/zero")  # would never end


def test_a_data_file_replaced_by_a_device_is_refused(table: mor.Table) -> None:
    (data_file,) = live_data_paths(table)
    os.remove(local(data_file))
    os.symlink("/dev/zero", local(data_file))
    with pytest.raises(CorruptMetadataError, match="a character device"):
        table.scan().to_arrow()
    assert table.scan(columns=[]).plan_files()  # planning reads no data file
