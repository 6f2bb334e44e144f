"""Concurrent writers of a v3 table: one deletion vector per data file, whoever commits first.

Two `Table` objects loaded from one catalog are two writers that read the same snapshot; the
second to commit holds stale metadata. Two DVs for one data file would be corrupt (a reader may
apply only one), so a DV committed meanwhile for a data file the second writer also writes a DV
for is a conflict: the second re-plans on the new state and merges the first's deletes into its
DV, or, with re-planning off (`mor.dml.replan.num-retries=0`), raises CommitConflictError and
leaves nothing behind.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest
from unit_helpers import (
    SCHEMA,
    assert_no_orphans,
    data_file_holding,
    live_data_paths,
    live_delete_entries,
    local,
    make_rows,
    scan_ids,
)

import mor
from mor.format import deletion_vector

NO_REPLAN = {"mor.dml.replan.num-retries": "0"}


@pytest.fixture(autouse=True)
def no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("mor.commit.retry.time.sleep", lambda seconds: None)


def two_writers(
    catalog: mor.Catalog, *, format_version: int = 3, deletes: tuple[str, ...] = (), **properties: str
) -> tuple[mor.Table, mor.Table]:
    """Two data files (ids 0..19, 20..39), the given deletes, then two handles on that state."""
    t = catalog.create_table("db.t", schema=SCHEMA, format_version=format_version, properties=properties)
    t.append(make_rows(range(20)))
    t.append(make_rows(range(20, 40)))
    for where in deletes:
        t.delete(where)
    return catalog.load_table("db.t"), catalog.load_table("db.t")


def dvs_by_file(table: mor.Table) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for e in live_delete_entries(table):
        assert e.data_file["file_format"].upper() == "PUFFIN", e.path  # a v3 table's DML writes no Parquet deletes
        out.setdefault(e.data_file["referenced_data_file"], []).append(e)
    return out


def positions(entry: Any) -> list[int]:
    d = entry.data_file
    with open(local(entry.path), "rb") as f:
        f.seek(d["content_offset"])
        return deletion_vector.deserialize(f.read(d["content_size_in_bytes"]), entry.path).tolist()


def assert_one_dv_each(table: mor.Table, expected: dict[int, list[int]]) -> None:
    """{a row id the data file holds: the positions of its one DV}."""
    found = dvs_by_file(table)
    want = {data_file_holding(table, row): ps for row, ps in expected.items()}
    assert {p: len(es) for p, es in found.items()} == dict.fromkeys(want, 1)
    assert {p: positions(es[0]) for p, es in found.items()} == want


# -- two deletes of one data file ---------------------------------------------------------------
@pytest.mark.parametrize("earlier", [(), ("id = 1",)], ids=["first-dv", "with-an-earlier-dv"])
def test_concurrent_deletes_of_one_file_are_replanned_into_one_dv(catalog: mor.Catalog, earlier: tuple[str, ...]) -> None:
    first, second = two_writers(catalog, deletes=earlier)
    s1 = first.delete("id = 2")
    s2 = second.delete("id = 3")  # stale: a DV for the same file landed meanwhile
    current = catalog.load_table("db.t")
    gone = {2, 3} | ({1} if earlier else set())
    assert scan_ids(current) == [i for i in range(40) if i not in gone]
    assert_one_dv_each(current, {0: sorted(gone)})
    assert s2.parent_snapshot_id == s1.snapshot_id
    assert s2.summary["removed-dvs"] == "1" and s2.summary["added-dvs"] == "1"
    assert s2.summary["total-position-deletes"] == str(len(gone))
    assert_no_orphans(current)  # the first plan's Puffin file is gone


@pytest.mark.parametrize("earlier", [(), ("id = 1",)], ids=["first-dv", "with-an-earlier-dv"])
def test_without_replanning_the_second_dv_is_a_conflict(catalog: mor.Catalog, earlier: tuple[str, ...]) -> None:
    first, second = two_writers(catalog, deletes=earlier, **NO_REPLAN)
    s1 = first.delete("id = 2")
    with pytest.raises(mor.CommitConflictError, match="deletion vector") as e:
        second.delete("id = 3")
    assert e.value.snapshot_id == s1.snapshot_id
    current = catalog.load_table("db.t")
    assert current.current_snapshot().snapshot_id == s1.snapshot_id  # type: ignore[union-attr]
    gone = {2} | ({1} if earlier else set())
    assert scan_ids(current) == [i for i in range(40) if i not in gone]
    assert_one_dv_each(current, {0: sorted(gone)})
    assert_no_orphans(current)  # the loser's Puffin file was deleted


def test_concurrent_deletes_of_different_files_do_not_conflict(catalog: mor.Catalog) -> None:
    first, second = two_writers(catalog, deletes=("id in (1, 21)",), **NO_REPLAN)
    first.delete("id = 2")
    second.delete("id = 22")  # its DV is for the other file: commits on top without re-planning
    current = catalog.load_table("db.t")
    assert scan_ids(current) == [i for i in range(40) if i not in (1, 2, 21, 22)]
    assert_one_dv_each(current, {0: [1, 2], 20: [1, 2]})
    assert_no_orphans(current)


def test_a_dv_for_one_file_and_a_dv_for_both_conflict(catalog: mor.Catalog) -> None:
    first, second = two_writers(catalog)
    first.delete("id = 25")
    second.delete("id in (4, 26)")  # one Puffin for both files; re-planned with the first's DV
    current = catalog.load_table("db.t")
    assert scan_ids(current) == [i for i in range(40) if i not in (4, 25, 26)]
    assert_one_dv_each(current, {0: [4], 20: [5, 6]})
    assert_no_orphans(current)


# -- other verbs --------------------------------------------------------------------------------
def test_concurrent_update_and_delete_of_one_file(catalog: mor.Catalog) -> None:
    first, second = two_writers(catalog)
    first.delete("id = 7")
    s = second.update({"category": "'u'"}, where="id = 8")
    current = catalog.load_table("db.t")
    rows = {r["id"]: (r["category"], r["_row_id"]) for r in current.scan(columns=["id", "category", "_row_id"]).to_arrow().to_pylist()}
    assert 7 not in rows and rows[8] == ("u", 8)  # the updated row keeps its id
    assert len(rows) == 39
    assert_one_dv_each(current, {0: [7, 8]})
    assert s.summary["added-dvs"] == "1"


def test_concurrent_merges_of_one_file(catalog: mor.Catalog) -> None:
    first, second = two_writers(catalog)
    first.merge(pa.table({"id": pa.array([5], pa.int64())}), on=["id"], when_matched_delete=True)
    second.merge(pa.table({"id": pa.array([6], pa.int64())}), on=["id"], when_matched_delete=True)
    current = catalog.load_table("db.t")
    assert scan_ids(current) == [i for i in range(40) if i not in (5, 6)]
    assert_one_dv_each(current, {0: [5, 6]})


def test_a_delete_racing_a_whole_file_delete(catalog: mor.Catalog) -> None:
    first, second = two_writers(catalog, deletes=("id = 1",))
    first.delete("id < 20")  # drops the data file and its DV
    assert second.delete("id = 3") is None  # re-planned: nothing left to delete
    current = catalog.load_table("db.t")
    assert scan_ids(current) == list(range(20, 40))
    assert not live_delete_entries(current)
    assert_no_orphans(current)


def test_a_delete_racing_an_upgrade_is_replanned_with_dvs(catalog: mor.Catalog) -> None:
    """A v2 writer plans Parquet position deletes; the table turns v3 meanwhile. Committing
    them would leave a v3 table with new v2 deletes: the writer re-plans and writes a DV."""
    first, second = two_writers(catalog, format_version=2, deletes=("id = 1",))
    first.upgrade()
    s = second.delete("id = 2")
    current = catalog.load_table("db.t")
    assert current.metadata.format_version == 3
    assert s.summary["added-dvs"] == "1" and "added-position-delete-files" not in s.summary
    assert s.summary["removed-position-delete-files"] == "1"  # the v2 file for id 1 went into the DV
    assert_one_dv_each(current, {0: [1, 2]})
    assert scan_ids(current) == [i for i in range(40) if i not in (1, 2)]
    assert_no_orphans(current)


def test_a_delete_racing_an_upgrade_conflicts_without_replanning(catalog: mor.Catalog) -> None:
    first, second = two_writers(catalog, format_version=2, **NO_REPLAN)
    first.upgrade()
    with pytest.raises(mor.CommitConflictError, match="upgraded"):
        second.delete("id = 2")
    current = catalog.load_table("db.t")
    assert current.metadata.format_version == 3 and not live_delete_entries(current)
    assert scan_ids(current) == list(range(40))
    assert len(live_data_paths(current)) == 2
    assert_no_orphans(current)
