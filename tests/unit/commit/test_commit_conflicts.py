"""Compare-and-swap commits: a commit built on a stale base retries, or fails and changes nothing.

Two `Table` objects loaded from one catalog are two writers; the one that commits second holds
stale metadata. Fakes of the catalog store stand in for a lost acknowledgement and for a
writer that always loses.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from foreign_writes import commit_as_another_engine
from unit_helpers import (
    SCHEMA,
    assert_no_orphans,
    assert_rows_are,
    files_under,
    live_data_paths,
    live_delete_entries,
    make_rows,
    scan_ids,
)

import mor
from mor.catalog.sql import SqlCatalogStore
from mor.io.fileio import to_uri


@pytest.fixture(autouse=True)
def no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    """Retries wait with jittered backoff; these tests need not."""
    monkeypatch.setattr("mor.commit.retry.time.sleep", lambda seconds: None)


NO_REPLAN = {"mor.dml.replan.num-retries": "0"}  # a true conflict raises instead of re-planning


def _two_writers(catalog: mor.Catalog, *appends: range, **properties: str) -> tuple[mor.Table, mor.Table]:
    table = catalog.create_table("db.t", schema=SCHEMA)
    if properties:
        table.set_properties(**properties)
    for ids in appends:
        table.append(make_rows(ids))
    return catalog.load_table("db.t"), catalog.load_table("db.t")


def test_second_append_on_a_stale_base_retries_and_both_land(catalog: mor.Catalog) -> None:
    first, second = _two_writers(catalog)
    s1 = first.append(make_rows(range(0, 5)))
    s2 = second.append(make_rows(range(5, 10)))  # built on the empty table: loses the swap, retries

    current = catalog.load_table("db.t")
    assert current.metadata_location == second.metadata_location
    assert scan_ids(current) == list(range(10))
    assert s2.parent_snapshot_id == s1.snapshot_id
    assert (s1.sequence_number, s2.sequence_number) == (1, 2)
    assert current.metadata.last_sequence_number == 2
    assert [s.snapshot_id for s in current.snapshots()] == [s1.snapshot_id, s2.snapshot_id]
    assert s2.summary["total-records"] == "10"
    assert s2.summary["total-data-files"] == "2"
    assert_no_orphans(current)  # the losing attempt's manifest list and metadata are gone


def test_append_retry_keeps_rows_of_an_earlier_delete(catalog: mor.Catalog) -> None:
    first, second = _two_writers(catalog, range(0, 10))
    first.delete("id in (2, 3)")
    second.append(make_rows(range(10, 12)))
    current = catalog.load_table("db.t")
    assert scan_ids(current) == [0, 1, *range(4, 12)]
    assert len(live_delete_entries(current)) == 1
    assert_no_orphans(current)


def test_concurrent_position_deletes_on_one_file_both_apply(catalog: mor.Catalog) -> None:
    first, second = _two_writers(catalog, range(0, 10), **NO_REPLAN)
    first.delete("id = 1")
    second.delete("id = 2")  # stale: does not see the first delete, but does not conflict with it
    current = catalog.load_table("db.t")
    assert scan_ids(current) == [0, *range(3, 10)]
    assert len(live_delete_entries(current)) == 2
    assert current.current_snapshot().summary["total-position-deletes"] == "2"  # type: ignore[union-attr]
    assert_no_orphans(current)


@pytest.mark.parametrize("mode", ["merge-on-read", "copy-on-write"])
def test_updates_of_different_rows_of_one_file_do_not_conflict(catalog: mor.Catalog, mode: str) -> None:
    first, second = _two_writers(catalog, range(0, 10), **NO_REPLAN)
    first.update({"category": "'x'"}, where="id = 1", mode="merge-on-read")
    if mode == "copy-on-write":  # a rewrite depends on every row of the file: a true conflict
        with pytest.raises(mor.CommitConflictError):
            second.update({"category": "'y'"}, where="id = 2", mode=mode)
        return
    second.update({"category": "'y'"}, where="id = 2", mode=mode)
    rows = {r["id"]: r["category"] for r in catalog.load_table("db.t").scan().to_arrow().to_pylist()}
    assert (rows[1], rows[2], len(rows)) == ("x", "y", 10)


def test_an_equality_delete_of_another_key_does_not_conflict(catalog: mor.Catalog) -> None:
    """delete_rows of id 2 shares the file and partition of row 1, but not its key."""
    first, second = _two_writers(catalog, range(0, 10), **NO_REPLAN)
    first.delete_rows(pa.table({"id": pa.array([2], pa.int64())}))
    second.update({"category": "'y'"}, where="id = 1")
    assert scan_ids(catalog.load_table("db.t")) == [0, 1, *range(3, 10)]


def test_an_equality_delete_of_an_updated_row_conflicts(catalog: mor.Catalog) -> None:
    first, second = _two_writers(catalog, range(0, 10), **NO_REPLAN)
    first.delete_rows(pa.table({"id": pa.array([1], pa.int64())}))
    with pytest.raises(mor.CommitConflictError) as e:
        second.update({"category": "'y'"}, where="id = 1")
    assert e.value.snapshot_id == catalog.load_table("db.t").current_snapshot().snapshot_id  # type: ignore[union-attr]
    assert "deleted rows" in str(e.value)
    assert scan_ids(catalog.load_table("db.t")) == [0, *range(2, 10)]


def test_two_increments_of_one_row_add_two(catalog: mor.Catalog) -> None:
    """The loser's commit conflicts (the winner deleted the row it read) and is re-planned on
    the winner's row: never two rows, never a lost increment."""
    first, second = _two_writers(catalog, range(0, 3))
    incremented = {"value": pc.add(pc.field("value"), 1.0)}
    before = {r["id"]: r["value"] for r in catalog.load_table("db.t").scan().to_arrow().to_pylist()}
    first.update(incremented, where="id = 1")
    second.update(incremented, where="id = 1")
    rows = catalog.load_table("db.t").scan().to_arrow().to_pylist()
    assert sorted(r["id"] for r in rows) == [0, 1, 2]
    assert next(r["value"] for r in rows if r["id"] == 1) == before[1] + 2


def test_two_increments_without_replanning_conflict(catalog: mor.Catalog) -> None:
    first, second = _two_writers(catalog, range(0, 3), **NO_REPLAN)
    first.update({"value": pc.add(pc.field("value"), 1.0)}, where="id = 1")
    winner = catalog.load_table("db.t")
    with pytest.raises(mor.CommitConflictError) as e:
        second.update({"value": pc.add(pc.field("value"), 1.0)}, where="id = 1")
    assert e.value.snapshot_id == winner.current_snapshot().snapshot_id  # type: ignore[union-attr]
    assert e.value.operation == "overwrite"
    assert catalog.load_table("db.t").metadata_location == winner.metadata_location
    assert_no_orphans(winner)


def test_delete_retries_over_an_append_that_cannot_match(catalog: mor.Catalog) -> None:
    first, second = _two_writers(catalog, range(0, 10), **NO_REPLAN)
    first.append(make_rows(range(100, 110)))
    second.delete("id = 4")  # the new file's id bounds (100..109) cannot hold id 4
    current = catalog.load_table("db.t")
    assert scan_ids(current) == [*range(0, 4), *range(5, 10), *range(100, 110)]
    assert_no_orphans(current)


def test_delete_over_an_append_whose_bounds_overlap_but_rows_do_not_match(catalog: mor.Catalog) -> None:
    first, second = _two_writers(catalog, range(0, 10), **NO_REPLAN)
    first.append(make_rows([3, 50]))  # bounds 3..50 hold 20, no row is 20
    second.delete("id = 20")
    second.delete("id = 5")
    assert scan_ids(catalog.load_table("db.t")) == sorted([*range(0, 5), *range(6, 10), 3, 50])


def test_delete_over_an_append_that_matches_conflicts_when_serializable(catalog: mor.Catalog) -> None:
    first, second = _two_writers(catalog, range(0, 10), **NO_REPLAN)
    first.append(make_rows(range(10, 20)))
    winner = catalog.load_table("db.t").metadata_location
    with pytest.raises(mor.CommitConflictError) as e:
        second.delete("id >= 5")
    assert e.value.operation == "append"
    current = catalog.load_table("db.t")
    assert current.metadata_location == winner
    assert scan_ids(current) == list(range(20))
    assert_no_orphans(current)


def test_delete_over_an_append_that_matches_is_replanned(catalog: mor.Catalog) -> None:
    first, second = _two_writers(catalog, range(0, 10))
    first.append(make_rows(range(10, 20)))
    second.delete("id >= 5")  # conflicts, re-plans on the new state, deletes the new rows too
    current = catalog.load_table("db.t")
    assert scan_ids(current) == list(range(5))
    assert_no_orphans(current)


def test_snapshot_isolation_allows_rows_appended_meanwhile(catalog: mor.Catalog) -> None:
    first, second = _two_writers(catalog, range(0, 10), **NO_REPLAN, **{"write.delete.isolation-level": "snapshot"})
    first.append(make_rows(range(10, 20)))
    second.delete("id >= 5")  # deletes what it read; the rows appended meanwhile stay
    assert scan_ids(catalog.load_table("db.t")) == [*range(0, 5), *range(10, 20)]


def test_snapshot_isolation_still_refuses_a_lost_update(catalog: mor.Catalog) -> None:
    props = {**NO_REPLAN, "write.update.isolation-level": "snapshot"}
    first, second = _two_writers(catalog, range(0, 3), **props)
    first.update({"category": "'x'"}, where="id = 1")
    with pytest.raises(mor.CommitConflictError):
        second.update({"category": "'y'"}, where="id = 1")


def test_an_unknown_isolation_level_fails_before_writing(catalog: mor.Catalog) -> None:
    table, _ = _two_writers(catalog, range(0, 3))
    with pytest.raises(mor.InvalidArgumentError, match="write.delete.isolation-level"):
        table.set_properties(**{"write.delete.isolation-level": "chaos"})
    # Another engine may have written it: found when a DELETE needs it, before any file is written.
    bad = dataclasses.replace(table.metadata, properties={**table.metadata.properties, "write.delete.isolation-level": "chaos"})
    commit_as_another_engine(table, bad)
    before = (table.metadata_location, files_under(table.location))
    with pytest.raises(mor.InvalidArgumentError, match="write.delete.isolation-level"):
        table.delete("id = 1")
    assert (catalog.load_table("db.t").metadata_location, files_under(table.location)) == before


def test_delete_racing_a_copy_on_write_that_removed_its_file_conflicts(catalog: mor.Catalog) -> None:
    first, second = _two_writers(catalog, range(0, 10), **NO_REPLAN)
    first.delete("id = 3", mode="copy-on-write")  # rewrites the one data file
    winner = catalog.load_table("db.t")
    files = files_under(winner.location)
    with pytest.raises(mor.CommitConflictError):
        second.delete("id = 5")  # its position deletes name the file the winner removed
    current = catalog.load_table("db.t")
    assert current.metadata_location == winner.metadata_location
    assert current.metadata == winner.metadata
    assert_rows_are(current.scan().to_arrow(), [i for i in range(10) if i != 3])
    assert files_under(current.location) == files  # the loser's delete file and manifests are gone
    assert_no_orphans(current)


def test_delete_racing_a_copy_on_write_is_replanned(catalog: mor.Catalog) -> None:
    first, second = _two_writers(catalog, range(0, 10))
    first.delete("id = 3", mode="copy-on-write")
    second.delete("id = 5")
    current = catalog.load_table("db.t")
    assert_rows_are(current.scan().to_arrow(), [i for i in range(10) if i not in (3, 5)])
    assert_no_orphans(current)


def test_delete_racing_a_rewrite_that_dropped_its_file_conflicts_even_when_no_new_row_matches(
    catalog: mor.Catalog,
) -> None:
    """The rewritten file cannot hold id 7 (its bounds say 0..4), so only the check that our
    delete file's data file is still live can catch this."""
    first, second = _two_writers(catalog, range(0, 10), **NO_REPLAN)
    first.delete("id >= 5", mode="copy-on-write")
    winner = catalog.load_table("db.t")
    with pytest.raises(mor.CommitConflictError):
        second.delete("id = 7")
    current = catalog.load_table("db.t")
    assert current.metadata_location == winner.metadata_location
    assert_rows_are(current.scan().to_arrow(), range(5))
    assert_no_orphans(current)


def test_delete_racing_a_merge_on_read_delete_that_removed_its_file_conflicts(catalog: mor.Catalog) -> None:
    first, second = _two_writers(catalog, range(0, 5), range(5, 10), **NO_REPLAN)
    first.delete("id < 5")  # every row of the first file: the file is dropped
    winner = catalog.load_table("db.t").metadata_location
    with pytest.raises(mor.CommitConflictError):
        second.delete("id = 2")
    current = catalog.load_table("db.t")
    assert current.metadata_location == winner
    assert scan_ids(current) == list(range(5, 10))
    assert_no_orphans(current)


def test_copy_on_write_racing_a_new_delete_on_its_file_conflicts(catalog: mor.Catalog) -> None:
    """A rewrite must not resurrect rows a concurrent delete removed from the file it rewrites."""
    first, second = _two_writers(catalog, range(0, 10), **NO_REPLAN)
    first.delete("id = 7")
    winner = catalog.load_table("db.t").metadata_location
    with pytest.raises(mor.CommitConflictError):
        second.delete("id = 2", mode="copy-on-write")
    current = catalog.load_table("db.t")
    assert current.metadata_location == winner
    assert scan_ids(current) == [i for i in range(10) if i != 7]
    assert_no_orphans(current)


def test_copy_on_write_racing_a_new_delete_is_replanned(catalog: mor.Catalog) -> None:
    first, second = _two_writers(catalog, range(0, 10))
    first.delete("id = 7")
    second.delete("id = 2", mode="copy-on-write")
    current = catalog.load_table("db.t")
    assert scan_ids(current) == [i for i in range(10) if i not in (2, 7)]
    assert_no_orphans(current)


def test_concurrent_inserts_of_one_key_by_upsert_leave_one_row(catalog: mor.Catalog) -> None:
    """Serializable MERGE: the second upsert's key was added meanwhile, so it re-plans and
    replaces that row instead of adding a duplicate."""
    first, second = _two_writers(catalog, range(0, 3))
    first.upsert(make_rows([50]), on=["id"])
    second.upsert(make_rows([50]), on=["id"])
    assert scan_ids(catalog.load_table("db.t")) == [0, 1, 2, 50]


def test_a_commit_on_top_of_a_missing_manifest_is_refused(catalog: mor.Catalog) -> None:
    table, _ = _two_writers(catalog, range(0, 3))
    manifest = next(p for p in files_under(table.location) if p.endswith(".avro") and "snap-" not in p)
    Path(manifest).unlink()
    with pytest.raises(mor.CorruptMetadataError, match="manifest"):
        table.append(make_rows(range(3, 5)))
    assert catalog.load_table("db.t").metadata_location == table.metadata_location


class LostAcknowledgementStore(SqlCatalogStore):
    """The swap is applied, then the connection fails: the writer cannot know it won."""

    fail_next = False

    def swap(self, namespace: str, name: str, expected: str, new: str) -> bool:
        swapped = super().swap(namespace, name, expected, new)
        if self.fail_next:
            raise mor.CommitStateUnknownError("connection lost after the UPDATE")
        return swapped


class AlwaysLosingStore(SqlCatalogStore):
    """Another writer always moves the pointer first."""

    losing = False

    def swap(self, namespace: str, name: str, expected: str, new: str) -> bool:
        if self.losing:
            return False
        return super().swap(namespace, name, expected, new)


def _catalog_with(store_class: type[SqlCatalogStore], warehouse: Path) -> tuple[mor.Catalog, SqlCatalogStore]:
    warehouse.mkdir(parents=True, exist_ok=True)
    store = store_class(f"sqlite:///{warehouse.resolve()}/catalog.db")
    return mor.SqlCatalog(store, to_uri(warehouse)), store


def test_unknown_commit_state_cleans_up_nothing(warehouse: Path) -> None:
    catalog, store = _catalog_with(LostAcknowledgementStore, warehouse)
    table = catalog.create_table("db.t", schema=SCHEMA)
    table.append(make_rows(range(5)))
    store.fail_next = True  # type: ignore[attr-defined]
    with pytest.raises(mor.CommitStateUnknownError):
        table.append(make_rows(range(5, 8)))
    store.fail_next = False  # type: ignore[attr-defined]
    # The swap did land: every file it needs must still be there.
    current = catalog.load_table("db.t")
    assert scan_ids(current) == list(range(8))
    assert_no_orphans(current)


def test_unknown_commit_state_of_a_delete_cleans_up_nothing(warehouse: Path) -> None:
    catalog, store = _catalog_with(LostAcknowledgementStore, warehouse)
    table = catalog.create_table("db.t", schema=SCHEMA)
    table.append(make_rows(range(5)))
    store.fail_next = True  # type: ignore[attr-defined]
    with pytest.raises(mor.CommitStateUnknownError):
        table.delete("id = 1")
    store.fail_next = False  # type: ignore[attr-defined]
    current = catalog.load_table("db.t")
    assert scan_ids(current) == [0, 2, 3, 4]
    assert len(live_delete_entries(current)) == 1


def test_a_writer_that_always_loses_gives_up_and_leaves_no_files(warehouse: Path) -> None:
    catalog, store = _catalog_with(AlwaysLosingStore, warehouse)
    table = catalog.create_table("db.t", schema=SCHEMA)
    table.append(make_rows(range(5)))
    before = (table.metadata_location, files_under(table.location))
    table.set_properties(**{"commit.retry.num-retries": "3"})
    before = (table.metadata_location, files_under(table.location))
    store.losing = True  # type: ignore[attr-defined]
    with pytest.raises(mor.CommitConflictError, match="gave up after 4 attempts"):
        table.append(make_rows(range(5, 8)))
    with pytest.raises(mor.CommitConflictError):
        table.delete("id = 2")
    with pytest.raises(mor.CommitConflictError):
        table.delete("id = 2", mode="copy-on-write")
    store.losing = False  # type: ignore[attr-defined]
    current = catalog.load_table("db.t")
    assert (current.metadata_location, files_under(current.location)) == before
    assert scan_ids(current) == list(range(5))


def test_two_writers_keep_the_data_files_of_both(catalog: mor.Catalog) -> None:
    first, second = _two_writers(catalog, range(0, 3))
    first.append(make_rows(range(3, 6)))
    second.append(make_rows(range(6, 9)))
    first.refresh()
    first.append(make_rows(range(9, 12)))
    current = catalog.load_table("db.t")
    assert len(live_data_paths(current)) == 4
    assert_rows_are(current.scan().to_arrow(), range(12))
