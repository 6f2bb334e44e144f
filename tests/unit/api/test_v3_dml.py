"""Row-level DML on format v3 tables: deletion vectors instead of position delete files.

A v3 table keeps at most one deletion vector (DV) per data file. Each merge-on-read DML writes
one new DV per data file it touches, merged with what already applied to that file (the
previous DV, or the v2 position delete files of an upgraded table), all in one Puffin file, and
the same commit removes what the new DV replaces. What a snapshot holds is read straight from
its manifests (fastavro, `unit_helpers.raw_entries`), not through mor's planner.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from unit_helpers import (
    SCHEMA,
    TableState,
    assert_no_orphans,
    assert_rows_are,
    data_file_holding,
    files_under,
    live_data_paths,
    live_delete_entries,
    local,
    make_rows,
    raw_entries,
    rows_of,
    scan_ids,
)

import mor
from mor.commit.snapshot_producer import Changes
from mor.dml.runner import commit
from mor.errors import InvalidArgumentError
from mor.format import deletion_vector
from mor.format.content_file import DeleteFile
from mor.format.puffin import read_footer
from mor.format.spec import FileContent, Operation

FILE_PATH_ID, POS_ID = 2147483546, 2147483545


def dvs(table: mor.Table, snapshot_id: int | None = None) -> dict[str, list[Any]]:
    """{data file path: its live DV entries} of a snapshot."""
    out: dict[str, list[Any]] = {}
    for e in live_delete_entries(table, snapshot_id):
        if e.data_file["file_format"].upper() == "PUFFIN":
            out.setdefault(e.data_file["referenced_data_file"], []).append(e)
    return out


def v2_position_files(table: mor.Table) -> list[Any]:
    return [e for e in live_delete_entries(table) if e.content == 1 and e.data_file["file_format"].upper() == "PARQUET"]


def dv_positions(entry: Any) -> list[int]:
    """A DV's positions, read from its blob by offset and length (mor's decoder for the bitmap)."""
    d = entry.data_file
    with open(local(entry.path), "rb") as f:
        f.seek(d["content_offset"])
        blob = f.read(d["content_size_in_bytes"])
    return deletion_vector.deserialize(blob, entry.path).tolist()


def assert_one_dv_per_file(table: mor.Table) -> None:
    for path, entries in dvs(table).items():
        assert len(entries) == 1, (path, entries)
        assert path in live_data_paths(table)
        assert entries[0].data_file["record_count"] == len(dv_positions(entries[0]))


@pytest.fixture
def v3(catalog: mor.Catalog) -> mor.Table:
    """Two data files: ids 0..19 and 20..39."""
    t = catalog.create_table("db.t", schema=SCHEMA, format_version=3)
    t.append(make_rows(range(20)))
    t.append(make_rows(range(20, 40)))
    return t


# -- one DV per data file -----------------------------------------------------------------------
def test_repeated_deletes_leave_one_dv_per_data_file(v3: mor.Table) -> None:
    deleted: set[int] = set()
    steps = [("id = 1", {1}), ("id in (2, 21)", {2, 21}), ("id = 22", {22}), ("id >= 35", set(range(35, 40))),
             ("id in (3, 4, 5, 23)", {3, 4, 5, 23}), ("id = 6", {6})]  # fmt: skip
    for i, (where, ids) in enumerate(steps):
        s = v3.delete(where)
        deleted |= ids
        assert_rows_are(v3.scan().to_arrow(), set(range(40)) - deleted)
        assert_one_dv_per_file(v3)
        assert not v2_position_files(v3)
        assert s.summary["total-position-deletes"] == str(len(deleted)), (i, s.summary)
        assert s.summary["total-delete-files"] == str(len(dvs(v3)))
    found = {p: dv_positions(e[0]) for p, e in dvs(v3).items()}
    assert sorted(len(v) for v in found.values()) == [6, 8]
    assert_no_orphans(v3)


def test_a_new_dv_replaces_the_previous_one_in_the_same_commit(v3: mor.Table) -> None:
    s1 = v3.delete("id = 1")
    (first,) = dvs(v3)[_file_of(v3, 1)]
    s2 = v3.delete("id = 2")
    assert (s2.summary["added-dvs"], s2.summary["removed-dvs"]) == ("1", "1")
    assert s2.summary["added-position-deletes"] == "2" and s2.summary["removed-position-deletes"] == "1"
    assert "added-position-delete-files" not in s2.summary
    (second,) = dvs(v3)[_file_of(v3, 1)]
    assert (second.path, second.data_file["content_offset"]) != (first.path, first.data_file["content_offset"])
    assert dv_positions(second) == [1, 2]
    assert second.data_sequence_number == s2.sequence_number
    # The old DV is marked DELETED by the second snapshot, and still read by the first.
    statuses = {(e.path, e.status) for e in raw_entries(s2.manifest_list) if e.content == 1}
    assert (first.path, 2) in statuses and (second.path, 1) in statuses
    assert scan_ids(v3, snapshot_id=s1.snapshot_id) == [0, *range(2, 40)]


def _file_of(table: mor.Table, row_id: int) -> str:
    return data_file_holding(table, row_id)


def test_one_puffin_file_per_operation(v3: mor.Table, catalog: mor.Catalog) -> None:
    v3.append(make_rows(range(40, 60)))
    s = v3.delete("id in (0, 10, 20, 30, 40, 50)")  # rows in each of the three files
    assert s.summary["added-dvs"] == "3"
    entries = [e[0] for e in dvs(v3).values()]
    assert len({e.path for e in entries}) == 1
    assert min(e.data_file["content_offset"] for e in entries) == 4
    blobs, _ = read_footer(Path(local(entries[0].path)).read_bytes(), entries[0].path)
    assert sorted((b.offset, b.length, b.properties["referenced-data-file"]) for b in blobs) == sorted(
        (e.data_file["content_offset"], e.data_file["content_size_in_bytes"], e.data_file["referenced_data_file"]) for e in entries
    )
    # UPDATE and MERGE too: one Puffin file for the DVs of both files they touch.
    v3.update({"category": "'u'"}, where="id in (1, 21)")
    assert len({e[0].path for p, e in dvs(v3).items() if p != _file_of(v3, 41)}) == 1
    v3.merge(rows_of([{"id": 2}, {"id": 22}, {"id": 42}]), on=["id"], when_matched_delete=True)
    assert len({e[0].path for e in dvs(v3).values()}) == 1
    assert_one_dv_per_file(v3)
    assert scan_ids(v3) == [i for i in range(60) if i % 10 and i not in (2, 22, 42)]
    assert_no_orphans(v3)


def test_every_dml_writes_dvs_and_no_position_delete_files(v3: mor.Table) -> None:
    v3.update({"name": "'x'"}, where="id = 3")
    v3.upsert(make_rows([4, 24, 100]), on=["id"], strategy="position")
    v3.merge(rows_of([{"id": 5, "name": "m"}]), on=["id"], when_matched_update={"name": "'m'"})
    v3.set_properties(**{"mor.write.equality-deletes.enabled": "false"})
    v3.delete_rows(pa.table({"id": pa.array([6, 26], pa.int64())}))
    v3.upsert(make_rows([7]), on=["id"], strategy="equality")
    for s in v3.snapshots()[2:]:
        assert "added-position-delete-files" not in s.summary, s.summary
        assert "added-equality-delete-files" not in s.summary, s.summary
    assert not v2_position_files(v3)
    assert_one_dv_per_file(v3)
    assert scan_ids(v3) == sorted([*[i for i in range(40) if i not in (6, 26)], 100])


def test_equality_deletes_stay_equality_deletes_on_v3_by_default(v3: mor.Table) -> None:
    s = v3.delete_rows(pa.table({"id": pa.array([6], pa.int64())}))
    assert s.summary["added-equality-delete-files"] == "1" and "added-dvs" not in s.summary
    s = v3.delete("id in (6, 7)")  # id 6 is already gone: only 7 in the DV
    (entry,) = dvs(v3)[_file_of(v3, 7)]
    assert dv_positions(entry) == [7]
    assert scan_ids(v3) == [i for i in range(40) if i not in (6, 7)]


# -- whole data files ---------------------------------------------------------------------------
def test_deleting_every_live_row_drops_the_data_file_and_its_dv(v3: mor.Table) -> None:
    v3.delete("id in (1, 21)")  # one Puffin, DVs for both files
    first, second = _file_of(v3, 0), _file_of(v3, 20)
    puffin = dvs(v3)[first][0].path
    s = v3.delete("id < 20")
    assert s.summary["deleted-data-files"] == "1" and s.summary["removed-dvs"] == "1"
    assert "added-dvs" not in s.summary and "added-delete-files" not in s.summary
    assert live_data_paths(v3) == {second}
    # The other file's DV lives on in the same Puffin file.
    assert list(dvs(v3)) == [second] and dvs(v3)[second][0].path == puffin
    assert scan_ids(v3) == [i for i in range(20, 40) if i != 21]
    assert_no_orphans(v3)


def test_copy_on_write_replaces_a_file_and_drops_its_dv(v3: mor.Table) -> None:
    v3.delete("id = 1")
    s = v3.delete("id = 2", mode="copy-on-write")
    assert s.summary["removed-dvs"] == "1" and "added-dvs" not in s.summary
    assert not dvs(v3)
    assert scan_ids(v3) == [i for i in range(40) if i not in (1, 2)]


# -- upgraded tables: v2 position delete files meet DVs -----------------------------------------
@pytest.fixture
def upgraded(catalog: mor.Catalog) -> mor.Table:
    """A v2 table with two data files and two file-scoped position delete files on the first
    (ids 1 and 2), upgraded to v3."""
    t = catalog.create_table("db.t", schema=SCHEMA)
    t.append(make_rows(range(20)))
    t.append(make_rows(range(20, 40)))
    t.delete("id = 1")
    t.delete("id = 2")
    assert len(v2_position_files(t)) == 2
    t.upgrade()
    return t


def test_a_dv_merges_and_removes_the_file_scoped_position_deletes_of_an_upgraded_table(upgraded: mor.Table) -> None:
    s = upgraded.delete("id = 3")
    assert s.summary["added-dvs"] == "1" and s.summary["removed-position-delete-files"] == "2"
    assert s.summary["removed-delete-files"] == "2" and s.summary["total-delete-files"] == "1"
    assert not v2_position_files(upgraded)
    (entry,) = dvs(upgraded)[_file_of(upgraded, 0)]
    assert dv_positions(entry) == [1, 2, 3]
    assert scan_ids(upgraded) == [0, *range(4, 40)]
    # The other file had no deletes: its first DV holds only its own.
    upgraded.delete("id = 30")
    assert dv_positions(dvs(upgraded)[_file_of(upgraded, 20)][0]) == [10]
    assert_one_dv_per_file(upgraded)
    assert_no_orphans(upgraded)


def test_a_whole_file_delete_of_an_upgraded_table_removes_its_position_delete_files(upgraded: mor.Table) -> None:
    s = upgraded.delete("id < 20")
    assert s.summary["deleted-data-files"] == "1" and s.summary["removed-position-delete-files"] == "2"
    assert not live_delete_entries(upgraded)
    assert scan_ids(upgraded) == list(range(20, 40))


def _shared_position_delete_file(table: mor.Table, targets: dict[str, list[int]], name: str = "shared", bounds: bool = False) -> DeleteFile:
    """A v2 partition-granularity position delete file (as Spark writes with
    write.delete.granularity=partition): rows for several data files, no referenced_data_file,
    and `file_path` bounds only when asked for (Iceberg Java's way to say "one data file")."""
    location = f"{table.location}/data/{name}-deletes.parquet"
    paths = [p for p, ps in sorted(targets.items()) for _ in ps]
    positions = [x for _, ps in sorted(targets.items()) for x in ps]
    schema = pa.schema([
        pa.field("file_path", pa.string(), nullable=False, metadata={"PARQUET:field_id": str(FILE_PATH_ID)}),
        pa.field("pos", pa.int64(), nullable=False, metadata={"PARQUET:field_id": str(POS_ID)}),
    ])  # fmt: skip
    pq.write_table(pa.table([paths, positions], schema=schema), local(location))
    lower = {FILE_PATH_ID: min(paths).encode()} if bounds else None
    upper = {FILE_PATH_ID: max(paths).encode()} if bounds else None
    return DeleteFile(
        content=FileContent.POSITION_DELETES, file_path=location, file_format="PARQUET", spec_id=0, partition=(),
        record_count=len(positions), file_size_in_bytes=Path(local(location)).stat().st_size,
        lower_bounds=lower, upper_bounds=upper,
    )  # fmt: skip


def test_a_dv_removes_a_position_delete_file_whose_bounds_name_its_data_file(catalog: mor.Catalog) -> None:
    """Iceberg Java's v2 files name their one data file by equal `file_path` bounds (no
    referenced_data_file); a DV for that file replaces them too, and leaves a file that spans two."""
    t = catalog.create_table("db.t", schema=SCHEMA)
    t.append(make_rows(range(20)))
    t.append(make_rows(range(20, 40)))
    a, b = _file_of(t, 0), _file_of(t, 20)
    single = _shared_position_delete_file(t, {a: [1]}, name="single", bounds=True)
    spanning = _shared_position_delete_file(t, {a: [2], b: [3]}, name="spanning", bounds=True)
    commit(t, Changes(Operation.DELETE, added_deletes=[single, spanning]))
    t.upgrade()
    s = t.delete("id = 5")
    assert s.summary["removed-position-delete-files"] == "1"
    assert [e.path for e in v2_position_files(t)] == [spanning.file_path]
    assert dv_positions(dvs(t)[a][0]) == [1, 2, 5]
    assert scan_ids(t) == [i for i in range(40) if i not in (1, 2, 5, 23)]


def test_a_position_delete_file_shared_by_data_files_stays_while_one_still_needs_it(catalog: mor.Catalog) -> None:
    t = catalog.create_table("db.t", schema=SCHEMA)
    t.append(make_rows(range(20)))
    t.append(make_rows(range(20, 40)))
    a, b = _file_of(t, 0), _file_of(t, 20)
    shared = _shared_position_delete_file(t, {a: [1, 2], b: [3]})  # ids 1, 2 and 23
    commit(t, Changes(Operation.DELETE, added_deletes=[shared]))
    t.upgrade()
    expected = [i for i in range(40) if i not in (1, 2, 23)]
    assert scan_ids(t) == expected

    s = t.delete("id = 4")  # a's DV takes in ids 1, 2; b still needs the shared file
    assert "removed-delete-files" not in s.summary
    assert dv_positions(dvs(t)[a][0]) == [1, 2, 4]
    assert [e.path for e in v2_position_files(t)] == [shared.file_path]
    expected.remove(4)
    assert scan_ids(t) == expected
    (task_a,) = [x for x in t.scan().plan_files() if x.data_file.file_path == a]
    assert [f.file_format for f in task_a.delete_files] == ["PUFFIN"]  # the DV hides the shared file for a
    (task_b,) = [x for x in t.scan().plan_files() if x.data_file.file_path == b]
    assert [f.file_path for f in task_b.delete_files] == [shared.file_path]

    t.delete("id = 25")  # b's DV takes in id 23: now no data file needs the shared file
    assert dv_positions(dvs(t)[b][0]) == [3, 5]
    expected.remove(25)
    assert scan_ids(t) == expected
    assert all(f.file_format == "PUFFIN" for x in t.scan().plan_files() for f in x.delete_files)
    # As Iceberg Java: the commit removes only position delete files that name the one data
    # file; maintenance drops the shared one once it applies to no data file.
    assert [e.path for e in v2_position_files(t)] == [shared.file_path]
    t.rewrite_position_deletes()
    assert not v2_position_files(t)
    assert scan_ids(t) == expected
    assert_one_dv_per_file(t)


def test_a_shared_position_delete_file_goes_with_the_last_data_file_it_applies_to(catalog: mor.Catalog) -> None:
    t = catalog.create_table("db.t", schema=SCHEMA)
    t.append(make_rows(range(20)))
    t.append(make_rows(range(20, 40)))
    a, b = _file_of(t, 0), _file_of(t, 20)
    shared = _shared_position_delete_file(t, {a: [1], b: [3]})
    commit(t, Changes(Operation.DELETE, added_deletes=[shared]))
    t.upgrade()
    t.delete("id < 20")  # a goes whole; b still needs the shared file
    assert live_data_paths(t) == {b} and [e.path for e in v2_position_files(t)] == [shared.file_path]
    assert scan_ids(t) == [i for i in range(20, 40) if i != 23]


# -- snapshot summaries -------------------------------------------------------------------------
def test_summaries_count_dvs_by_blob(v3: mor.Table) -> None:
    s = v3.delete("id in (1, 21)")
    assert s.summary["added-dvs"] == "2" and s.summary["added-delete-files"] == "2"
    assert s.summary["added-position-deletes"] == "2" and s.summary["total-delete-files"] == "2"
    sizes = sum(e[0].data_file["content_size_in_bytes"] for e in dvs(v3).values())
    assert s.summary["added-files-size"] == str(sizes)  # blobs, not the Puffin file twice
    s = v3.delete("id in (2, 3)")
    assert (s.summary["added-dvs"], s.summary["removed-dvs"]) == ("1", "1")
    assert (s.summary["added-position-deletes"], s.summary["removed-position-deletes"]) == ("3", "1")
    assert s.summary["total-position-deletes"] == "4" and s.summary["total-delete-files"] == "2"


# -- format versions: bad inputs ----------------------------------------------------------------
@pytest.mark.parametrize(
    "args",
    [
        {"format_version": 4},
        {"format_version": 0},
        {"format_version": "x"},
        {"format_version": True},
        {"format_version": 2.5},
        {"properties": {"format-version": "4"}},
        {"properties": {"format-version": "three"}},
        {"format_version": 2, "properties": {"format-version": "3"}},
        {"format_version": 3, "properties": {"format-version": "2"}},
    ],
    ids=str,
)
def test_create_table_refuses_a_bad_format_version(catalog: mor.Catalog, warehouse: Path, args: dict) -> None:
    before = files_under(str(warehouse)) if warehouse.exists() else set()
    with pytest.raises(InvalidArgumentError, match="format"):
        catalog.create_table("db.t", schema=SCHEMA, **args)
    assert not catalog.table_exists("db.t")
    assert (files_under(str(warehouse)) if warehouse.exists() else set()) == before


@pytest.mark.parametrize(
    "args",
    [{"format_version": 3}, {"properties": {"format-version": "3"}}, {"format_version": 3, "properties": {"format-version": "3"}}],
    ids=str,
)
def test_create_table_v3(catalog: mor.Catalog, args: dict) -> None:
    t = catalog.create_table("db.t", schema=SCHEMA, **args)
    raw = json.loads(Path(local(t.metadata_location)).read_text())
    assert (raw["format-version"], raw["next-row-id"]) == (3, 0)
    assert "format-version" not in raw["properties"]
    assert catalog.load_table("db.t").metadata.format_version == 3


@pytest.mark.parametrize(
    "change",
    [
        lambda t: t.upgrade(2),
        lambda t: t.upgrade(4),
        lambda t: t.upgrade("x"),
        lambda t: t.upgrade(1),
        lambda t: t.set_properties(**{"format-version": "2"}),
        lambda t: t.set_properties(**{"format-version": "4"}),
        lambda t: t.set_properties(**{"format-version": "x", "write.delete.mode": "copy-on-write"}),
        lambda t: t.set_properties(**{"format-version": "2", "write.delete.mode": "copy-on-write"}),
    ],
    ids=["upgrade(2)", "upgrade(4)", "upgrade(x)", "upgrade(1)", "set 2", "set 4", "set x with another", "set 2 with another"],
)
def test_a_bad_version_change_of_a_v3_table_leaves_it_unchanged(v3: mor.Table, change: Any) -> None:
    state = TableState(v3)
    with pytest.raises(InvalidArgumentError):
        change(v3)
    state.assert_unchanged()
    assert v3.metadata.format_version == 3 and v3.properties["write.delete.mode"] == "merge-on-read"


@pytest.mark.parametrize(
    "change", [lambda t: t.upgrade(4), lambda t: t.set_properties(**{"format-version": "4", "k": "v"})], ids=["upgrade", "set"]
)
def test_a_bad_upgrade_of_a_v2_table_leaves_it_unchanged(catalog: mor.Catalog, change: Any) -> None:
    t = catalog.create_table("db.t", schema=SCHEMA)
    t.append(make_rows(range(3)))
    state = TableState(t)
    with pytest.raises(InvalidArgumentError):
        change(t)
    state.assert_unchanged()
    assert t.metadata.format_version == 2 and "k" not in t.properties


def test_upgrading_to_the_same_version_changes_nothing(v3: mor.Table, catalog: mor.Catalog) -> None:
    state = TableState(v3)
    v3.upgrade(3)
    state.assert_unchanged()
    v3.set_properties(**{"format-version": "3"})  # the same version and nothing else: no commit
    state.assert_unchanged()
    assert (v3.metadata.format_version, v3.metadata.next_row_id, len(v3.snapshots())) == (3, 40, 2)
    assert "format-version" not in v3.properties
    t = catalog.create_table("db.v2", schema=SCHEMA)
    t.set_properties(**{"format-version": "2"})
    assert (t.metadata.format_version, t.metadata.next_row_id) == (2, None)


def test_upgrade_and_properties_in_one_commit(catalog: mor.Catalog) -> None:
    t = catalog.create_table("db.t", schema=SCHEMA)
    t.append(make_rows(range(3)))
    log = len(json.loads(Path(local(t.metadata_location)).read_text()).get("metadata-log", []))
    t.set_properties(**{"format-version": "3", "write.delete.mode": "copy-on-write"})
    raw = json.loads(Path(local(t.metadata_location)).read_text())
    assert len(raw["metadata-log"]) == log + 1
    assert raw["format-version"] == 3 and raw["properties"]["write.delete.mode"] == "copy-on-write"
    assert "format-version" not in raw["properties"]
    reloaded = catalog.load_table("db.t")
    assert reloaded.metadata.format_version == 3
    reloaded.delete("id = 1", mode="merge-on-read")
    assert dvs(reloaded) and scan_ids(reloaded) == [0, 2]


# -- equality deletes switched off --------------------------------------------------------------
@pytest.mark.parametrize("partition_by", [None, ["category"]])
def test_equality_deletes_off_on_v3_write_dvs(catalog: mor.Catalog, partition_by: list[str] | None) -> None:
    t = catalog.create_table(
        "db.t", schema=SCHEMA, partition_by=partition_by, format_version=3,
        properties={"mor.write.equality-deletes.enabled": "false"},
    )  # fmt: skip
    t.append(make_rows(range(30)))
    t.delete("id = 0")
    s = t.delete_rows(pa.table({"id": pa.array([1, 12, 25, 999], pa.int64())}))
    assert "added-equality-delete-files" not in s.summary and int(s.summary["added-dvs"]) >= 1
    s = t.upsert(make_rows([2, 13, 50]), on=["id"], strategy="equality")
    assert "added-equality-delete-files" not in s.summary and "added-dvs" in s.summary
    kinds = Counter(e.data_file["file_format"].upper() for e in live_delete_entries(t))
    assert set(kinds) == {"PUFFIN"}
    assert_one_dv_per_file(t)
    assert scan_ids(t) == sorted([*[i for i in range(30) if i not in (0, 1, 12, 25)], 50])
    # Without equality deletes the upsert read the old rows: lineage is kept.
    got = {r["id"]: r["_row_id"] for r in t.scan(columns=["id", "_row_id"]).to_arrow().to_pylist()}
    assert (got[2], got[13]) == (2, 13)
