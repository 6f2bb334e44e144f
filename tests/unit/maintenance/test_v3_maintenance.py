"""Maintenance on format v3 tables: compaction drops the deletion vectors of the files it
rewrites (one Puffin file may hold vectors that stay) and keeps row lineage; a deletion vector
committed meanwhile for a rewritten file is a conflict; rewrite_position_deletes turns v2 position
delete files into deletion vectors; expiry deletes a Puffin file only once no retained snapshot
reads any of its vectors; orphan removal never takes a live Puffin file; maintain() end to end."""

from __future__ import annotations

import datetime as dt
import os
import shutil

import pytest
from pyiceberg.expressions import In
from test_compact import race  # compaction raced by a concurrent commit
from unit_helpers import (
    SCHEMA,
    RawEntry,
    assert_no_orphans,
    files_under,
    live_data_paths,
    live_delete_entries,
    local,
    make_rows,
    raw_entries,
)

import mor

LINEAGE = ["_row_id", "_last_updated_sequence_number"]
NOW = dt.timedelta(0)


def v3_table(catalog: mor.Catalog, name: str = "db.t", **create_args: object) -> mor.Table:
    return catalog.create_table(name, schema=SCHEMA, format_version=3, **create_args)  # type: ignore[arg-type]


def lineage_rows(table: mor.Table, **scan_args: object) -> list[dict]:
    """Whole rows with their lineage, sorted by id."""
    rows = table.scan(columns=[*SCHEMA.names, *LINEAGE], **scan_args).to_arrow().to_pylist()  # type: ignore[arg-type]
    return sorted(rows, key=lambda r: r["id"])


def vectors(table: mor.Table, snapshot_id: int | None = None) -> list[RawEntry]:
    """The live deletion vectors (read straight from the manifests)."""
    entries = live_delete_entries(table, snapshot_id)
    return [e for e in entries if e.data_file["file_format"].upper() == "PUFFIN"]


def assert_one_vector_per_data_file(table: mor.Table) -> None:
    """Each live vector names a live data file, no data file has two, and no v2 position delete
    file is live."""
    live = vectors(table)
    named = [e.data_file["referenced_data_file"] for e in live]
    assert len(named) == len(set(named))
    assert {local(p) for p in named} <= {local(p) for p in live_data_paths(table)}
    assert [e for e in live_delete_entries(table) if e.content == 1 and e not in live] == []
    for task in table.scan().plan_files():
        assert len(task.position_deletes) <= 1 and all(d.is_deletion_vector for d in task.position_deletes)


def puffin_files(table: mor.Table) -> set[str]:
    return {p for p in files_under(table.location) if p.endswith(".puffin")}


def history(table: mor.Table) -> dict[int, list[dict]]:
    return {s.snapshot_id: lineage_rows(table, snapshot_id=s.snapshot_id) for s in table.snapshots()}


def read_by(table: mor.Table, snapshot_id: int) -> set[str]:
    """Files a snapshot reads: its manifest list, manifests and live content files."""
    s = table.metadata.snapshot_by_id(snapshot_id)
    entries = raw_entries(s.manifest_list)
    return (
        {local(s.manifest_list)} | {local(e.manifest["manifest_path"]) for e in entries} | {local(e.path) for e in entries if e.status != 2}
    )


# -- compaction --------------------------------------------------------------------------------


def three_partitions(catalog: mor.Catalog) -> mor.Table:
    """Categories a, b, c (ids in runs of ten), two appends, an UPDATE (rows keep their
    `_row_id`, get a new sequence number) and a DELETE whose vectors share one Puffin file."""
    table = v3_table(catalog, partition_by=["category"])
    table.append(make_rows(range(90)))
    table.append(make_rows(range(90, 180)))
    table.update({"value": -1.0}, where="id in (5, 95)")
    table.delete(In("id", [1, 11, 21, 91, 101, 111]))
    return table


def test_compaction_drops_the_vectors_of_rewritten_files_only_and_keeps_lineage(catalog: mor.Catalog) -> None:
    table = three_partitions(catalog)
    before, snapshots = lineage_rows(table), history(table)
    assert {r["id"]: r["_row_id"] for r in before}[95] == 95  # the updated row kept its id
    shared = vectors(table)
    assert len({e.path for e in shared}) == 1 and len(shared) == 6  # the DELETE's one Puffin file
    in_a = {t.data_file.file_path for t in table.scan(filter="category = 'a'").plan_files()}
    dropped = [e for e in shared if e.data_file["referenced_data_file"] in in_a]

    result = table.compact(where="category = 'a'")

    assert lineage_rows(table) == before
    assert history(table) == {**snapshots, result.snapshot_id: before}
    left = vectors(table)
    assert len(left) == 4 and {e.path for e in left} == {shared[0].path}  # b's and c's vectors stay
    assert not any(e.data_file["referenced_data_file"] in in_a for e in left)
    assert_one_vector_per_data_file(table)
    assert result.removed_position_delete_files == len(dropped) == 2
    assert result.removed_position_delete_bytes == sum(e.data_file["content_size_in_bytes"] for e in dropped)

    result = table.compact()

    assert lineage_rows(table) == before
    assert vectors(table) == [] and live_delete_entries(table) == []
    assert result.removed_position_delete_files == 4
    assert {r["id"]: r["_last_updated_sequence_number"] for r in lineage_rows(table)}[95] == 3  # the UPDATE's
    assert_no_orphans(table)


def test_a_vector_committed_meanwhile_for_a_rewritten_file_is_a_conflict(catalog: mor.Catalog, monkeypatch: pytest.MonkeyPatch) -> None:
    table = v3_table(catalog)
    table.set_properties(**{"mor.dml.replan.num-retries": "0"})
    table.append(make_rows(range(100)))
    table.delete(In("id", [0, 1]))
    race(monkeypatch, lambda: catalog.load_table("db.t").delete(In("id", [60, 61])))

    with pytest.raises(mor.CommitConflictError, match="position deletes"):
        table.compact()

    fresh = catalog.load_table("db.t")
    assert fresh.current_snapshot().operation == "delete"
    assert [r["id"] for r in lineage_rows(fresh)] == [i for i in range(2, 100) if i not in (60, 61)]
    assert_one_vector_per_data_file(fresh)
    assert_no_orphans(fresh)


def test_with_replans_a_concurrent_vector_is_applied_and_one_elsewhere_is_no_conflict(
    catalog: mor.Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = v3_table(catalog, partition_by=["category"])
    table.append(make_rows(range(90)))
    table.delete(In("id", [0, 1, 10]))
    plans = race(monkeypatch, lambda: catalog.load_table("db.t").delete(In("id", [2, 3])))
    table.compact(where="category = 'a'")
    assert len(plans) == 2  # the vector for the file being rewritten made it plan again
    assert [r["id"] for r in lineage_rows(table, filter="category = 'a'")] == list(range(4, 10)) + list(range(30, 40)) + list(range(60, 70))

    plans = race(monkeypatch, lambda: catalog.load_table("db.t").delete(In("id", [20, 21])))
    table.compact(where="category = 'b'")
    assert len(plans) == 1  # a vector for a file of another partition: no conflict
    assert_one_vector_per_data_file(table)
    assert sorted(r["id"] for r in lineage_rows(table)) == [i for i in range(90) if i not in (0, 1, 2, 3, 10, 20, 21)]
    assert [len(t.delete_files) for t in table.scan(filter="category = 'c'").plan_files()] == [1]
    assert_no_orphans(table)


# -- rewrite_position_deletes ------------------------------------------------------------------


def test_rewrite_turns_v2_position_deletes_of_an_upgraded_table_into_vectors(catalog: mor.Catalog) -> None:
    table = catalog.create_table("db.t", schema=SCHEMA, partition_by=["category"])  # v2
    table.append(make_rows(range(90)))
    table.delete(In("id", [1, 2]))
    table.delete(In("id", [3, 12]))
    table.delete(In("id", [25]))
    table.upgrade(format_version=3)
    table.delete(In("id", [26]))  # c: a vector with 25 and 26 replaces c's v2 file
    c_vector = vectors(table)
    assert len(c_vector) == 1
    v2_files = [e for e in live_delete_entries(table) if e.data_file["file_format"].upper() == "PARQUET"]
    assert len(v2_files) == 3  # a: two files, b: one
    before, snapshots = lineage_rows(table), history(table)
    sequence_number = table.current_snapshot().sequence_number

    result = table.rewrite_position_deletes()

    assert table.current_snapshot().snapshot_id == result.snapshot_id
    assert table.current_snapshot().operation == "replace"
    assert lineage_rows(table) == before
    assert history(table) == {**snapshots, result.snapshot_id: before}
    assert_one_vector_per_data_file(table)
    new = [e for e in vectors(table) if e.path != c_vector[0].path]
    assert len(new) == 2 and len({e.path for e in new}) == 1  # one Puffin file for both
    assert all(e.data_sequence_number == e.file_sequence_number == sequence_number + 1 for e in new)
    assert result.added_delete_files == 2 and result.removed_delete_files == 3
    assert result.added_delete_bytes == sum(e.data_file["content_size_in_bytes"] for e in new)
    assert result.removed_delete_bytes == sum(e.data_file["file_size_in_bytes"] for e in v2_files)
    assert result.dangling_delete_files == 0
    assert {r["id"] for r in before}.isdisjoint({1, 2, 3, 12, 25, 26})

    again = table.rewrite_position_deletes()
    assert again.snapshot_id is None and again.added_delete_files == again.removed_delete_files == 0
    assert table.current_snapshot().snapshot_id == result.snapshot_id
    assert_no_orphans(table)


# -- expire_snapshots and remove_orphan_files --------------------------------------------------


def expire(table: mor.Table, retain_last: int) -> mor.ExpireResult:
    return table.expire_snapshots(older_than=NOW, retain_last=retain_last, allow_short_retention=True)


def check_retained(table: mor.Table, seen: dict[int, list[dict]]) -> None:
    """Every retained snapshot reads as it did, and every file it reads is there."""
    for s in table.snapshots():
        assert lineage_rows(table, snapshot_id=s.snapshot_id) == seen[s.snapshot_id]
        assert all(os.path.exists(p) for p in read_by(table, s.snapshot_id))


def test_a_shared_puffin_file_goes_only_when_no_retained_snapshot_reads_any_of_its_vectors(catalog: mor.Catalog) -> None:
    table = v3_table(catalog, partition_by=["category"])
    table.append(make_rows(range(90)))
    table.delete(In("id", [1, 11]))  # P1: vectors for a and b
    (p1,) = {local(e.path) for e in vectors(table)}
    table.delete(In("id", [2]))  # P2: a's vector, replacing the one in P1
    seen = history(table)

    result = expire(table, retain_last=1)

    assert result.expired_snapshots == 2 and result.deleted_position_delete_files == 0
    assert os.path.exists(p1)  # b's vector in it is still live
    check_retained(table, seen)

    table.delete(In("id", [12]))  # P3: b's vector, replacing the one in P1
    seen.update(history(table))
    result = expire(table, retain_last=2)
    assert result.expired_snapshots == 0 and os.path.exists(p1)  # the older retained snapshot reads it
    check_retained(table, seen)

    result = expire(table, retain_last=1)

    assert result.expired_snapshots == 1
    assert not os.path.exists(p1)
    assert result.deleted_position_delete_files == 1  # counted by Puffin file
    assert p1 in result.deleted_paths and result.deleted_data_files == 0
    assert len(puffin_files(table)) == 2
    check_retained(table, seen)
    assert_one_vector_per_data_file(table)
    assert_no_orphans(table)


def test_vectors_of_compacted_files_go_with_their_snapshots_and_orphan_removal_keeps_live_puffins(catalog: mor.Catalog) -> None:
    table = three_partitions(catalog)
    table.compact(where="category = 'a'")  # the shared Puffin file stays: b's and c's vectors
    seen = history(table)
    live_puffins = {local(e.path) for e in vectors(table)}
    stray = os.path.join(local(table.location), "data", "stray-deletes.puffin")
    shutil.copy(next(iter(live_puffins)), stray)  # as a killed writer would leave it
    an_hour_ago = dt.datetime.now().timestamp() - 3600
    os.utime(stray, (an_hour_ago, an_hour_ago))

    orphans = table.remove_orphan_files(older_than=dt.timedelta(minutes=30))
    assert list(orphans) == [stray]
    assert all(os.path.exists(p) for p in live_puffins)
    assert table.remove_orphan_files(older_than=NOW, dry_run=True) == []
    replaced = puffin_files(table) - live_puffins  # the UPDATE's: the DELETE's vectors took their place
    assert len(replaced) == 1
    sizes = {p: os.path.getsize(p) for p in replaced}

    result = expire(table, retain_last=1)

    assert result.deleted_position_delete_files == 1
    assert {p for p in result.deleted_paths if p.endswith(".puffin")} == replaced
    assert result.deleted_position_delete_bytes == sum(sizes.values())  # bytes on disk: the whole file
    check_retained(table, seen)
    assert all(os.path.exists(p) for p in live_puffins)
    assert table.remove_orphan_files(older_than=NOW) == []
    table.compact()
    seen.update(history(table))
    result = expire(table, retain_last=1)
    assert result.deleted_position_delete_files == 1  # the DELETE's, once no vector in it is read
    assert puffin_files(table) == set() and vectors(table) == []
    check_retained(table, seen)
    assert table.remove_orphan_files(older_than=NOW) == []
    assert_no_orphans(table)


# -- maintain ----------------------------------------------------------------------------------


def test_maintain_compacts_expires_and_removes_orphans_of_a_v3_table(catalog: mor.Catalog) -> None:
    table = v3_table(catalog, properties={"write.target-file-size-bytes": "1000"})
    table.append(make_rows(range(100)))
    table.append(make_rows(range(100, 200)))
    table.update({"value": -2.0}, where="id in (7, 150)")
    table.delete(In("id", [*range(10, 40), 160]))  # the first file: 30% deleted, the second 1%
    before = lineage_rows(table)
    table.set_properties(
        **{
            "history.expire.max-snapshot-age-ms": "0",
            "history.expire.min-snapshots-to-keep": "1",
            "mor.maintain.remove-orphans.min-age-ms": "0",
        }
    )
    shared = {local(e.path) for e in vectors(table)}
    assert len(shared) == 1
    snapshots = len(table.snapshots())  # then compaction adds one, and only it stays

    result = table.maintain()

    assert result.compaction.rewritten_data_files == 1 and result.compaction.removed_position_delete_files == 1
    assert result.expiry.expired_snapshots == snapshots
    assert lineage_rows(table) == before
    assert len(table.snapshots()) == 1
    assert all(os.path.exists(p) for p in shared)  # the second file's vector lives in it
    assert list(result.orphans) == []
    assert_one_vector_per_data_file(table)
    assert len(vectors(table)) == 1
    assert_no_orphans(table)
