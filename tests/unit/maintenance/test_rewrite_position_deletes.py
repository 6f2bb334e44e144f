"""`rewrite_position_deletes`: one sorted position delete file per data file, rows unchanged,
in mor and pyiceberg, at every snapshot; concurrent writers lose nothing."""

from __future__ import annotations

import pyarrow as pa
import pytest
from pyiceberg.expressions import And, EqualTo, GreaterThanOrEqual, In, LessThan
from pyiceberg.table import StaticTable
from unit_helpers import assert_no_orphans, local, make_rows, scan_ids

import mor
from mor.format.spec import FileContent
from mor.maintenance import rewrite_deletes as rewrite_module
from mor.read.decoded_cache import SHARED


def position_delete_counts(table: mor.Table) -> list[int]:
    return sorted(len(t.position_deletes) for t in table.scan().plan_files())


def pyiceberg_ids(table: mor.Table, snapshot_id: int | None = None) -> list[int]:
    return sorted(StaticTable.from_metadata(table.metadata_location).scan(snapshot_id=snapshot_id).to_arrow()["id"].to_pylist())


@pytest.mark.parametrize("partition_by", [None, ["category"]])
def test_stacked_deletes_become_one_file_per_data_file(catalog: mor.Catalog, partition_by: list[str] | None) -> None:
    table = catalog.create_table("db.t", schema=make_rows([]).schema, partition_by=partition_by)
    table.append(make_rows(range(0, 300)))
    table.append(make_rows(range(300, 600)))
    for k in range(8):
        table.delete(In("id", [k, 301 + k, 150 + 2 * k]))
    expected = scan_ids(table)
    history = {s.snapshot_id: scan_ids(table, snapshot_id=s.snapshot_id) for s in table.snapshots()}
    assert max(position_delete_counts(table)) > 1

    result = table.rewrite_position_deletes()

    assert result.snapshot_id == table.current_snapshot().snapshot_id
    assert table.current_snapshot().summary["operation"] == "replace"
    assert max(position_delete_counts(table)) == 1
    assert result.added_delete_files == sum(position_delete_counts(table))
    assert result.removed_delete_files > result.added_delete_files and result.dangling_delete_files == 0
    assert result.removed_delete_bytes > result.added_delete_bytes > 0
    assert scan_ids(table) == expected == pyiceberg_ids(table)
    for snapshot_id, ids in history.items():
        assert scan_ids(table, snapshot_id=snapshot_id) == ids
    for t in table.scan().plan_files():  # each new file names its one data file
        assert all(f.referenced_data_file == t.data_file.file_path for f in t.position_deletes)
    assert_no_orphans(table)


def test_nothing_to_merge_commits_nothing(catalog: mor.Catalog) -> None:
    table = catalog.create_table("db.t", schema=make_rows([]).schema)
    assert table.rewrite_position_deletes().snapshot_id is None  # no snapshot at all
    table.append(make_rows(range(10)))
    table.delete(EqualTo("id", 3))
    before = table.current_snapshot().snapshot_id
    result = table.rewrite_position_deletes()
    assert (result.snapshot_id, result.added_delete_files, result.removed_delete_files) == (None, 0, 0)
    assert table.current_snapshot().snapshot_id == before


def test_equality_deletes_stay_and_still_apply(catalog: mor.Catalog) -> None:
    table = catalog.create_table("db.t", schema=make_rows([]).schema)
    table.append(make_rows(range(20)))
    table.delete(EqualTo("id", 1))
    table.delete_rows(pa.table({"id": pa.array([2, 3], pa.int64())}))
    table.delete(EqualTo("id", 4))
    table.rewrite_position_deletes()
    (task,) = table.scan().plan_files()
    assert [f.content for f in task.position_deletes] == [FileContent.POSITION_DELETES]
    assert [f.content for f in task.equality_deletes] == [FileContent.EQUALITY_DELETES]
    assert scan_ids(table) == [0, *range(5, 20)]


def race(monkeypatch: pytest.MonkeyPatch, concurrent) -> None:  # type: ignore[no-untyped-def]
    """Run `concurrent()` once, after the rewrite has planned (and written) and before it commits."""
    real = rewrite_module.plan_rewrite
    pending = [concurrent]

    def planned_then_raced(io, metadata):  # type: ignore[no-untyped-def]
        plan = real(io, metadata)
        while pending:
            pending.pop()()
        return plan

    monkeypatch.setattr(rewrite_module, "plan_rewrite", planned_then_raced)


def test_a_delete_committed_meanwhile_is_kept(catalog: mor.Catalog, monkeypatch: pytest.MonkeyPatch) -> None:
    table = catalog.create_table("db.t", schema=make_rows([]).schema)
    table.append(make_rows(range(100)))
    for k in range(5):
        table.delete(EqualTo("id", k))
    race(monkeypatch, lambda: catalog.load_table("db.t").delete(In("id", [50, 51])))
    table.rewrite_position_deletes()
    assert scan_ids(table) == [i for i in range(5, 100) if i not in (50, 51)]
    assert position_delete_counts(table) == [2]  # the merged file and the concurrent one


def test_a_data_file_removed_meanwhile_replans(catalog: mor.Catalog, monkeypatch: pytest.MonkeyPatch) -> None:
    table = catalog.create_table("db.t", schema=make_rows([]).schema)
    table.append(make_rows(range(100)))
    table.append(make_rows(range(100, 200)))
    for k in range(4):
        table.delete(In("id", [k, 100 + k]))
    # Copy-on-write rewrites the first data file: the merged deletes planned for it are void.
    touch_first = And(GreaterThanOrEqual("id", 90), LessThan("id", 100))
    race(monkeypatch, lambda: catalog.load_table("db.t").delete(touch_first, mode="copy-on-write"))
    result = table.rewrite_position_deletes()
    assert scan_ids(table) == [*range(4, 90), *range(104, 200)]
    assert position_delete_counts(table) == [0, 1]  # the rewritten file has none; the other one merged
    assert result.snapshot_id == table.current_snapshot().snapshot_id
    assert_no_orphans(table)


def test_an_unreadable_delete_file_fails_cleanly(catalog: mor.Catalog) -> None:
    table = catalog.create_table("db.t", schema=make_rows([]).schema)
    table.append(make_rows(range(100)))
    table.append(make_rows(range(100, 200)))
    for k in range(3):
        table.delete(In("id", [k, 100 + k]))
    before = table.metadata_location
    (victim, *_) = next(t for t in table.scan().plan_files() if t.position_deletes).position_deletes
    with open(local(victim.file_path), "wb") as f:
        f.write(b"not parquet")
    SHARED.clear()  # as in a new process: this one decoded the file while planning the DELETEs
    with pytest.raises(mor.CorruptMetadataError, match="position delete file"):
        table.rewrite_position_deletes()
    assert catalog.load_table("db.t").metadata_location == before
    assert_no_orphans(table)
