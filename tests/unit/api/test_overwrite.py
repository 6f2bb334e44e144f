"""Table.overwrite: the rows matching a predicate (every row by default) replaced by new rows in
one snapshot, in both modes; bad input leaves the table and its folder as they were; a commit
that conflicts re-plans without losing the rows already written."""

from __future__ import annotations

import pyarrow as pa
import pytest
from unit_helpers import SCHEMA, assert_no_orphans, assert_rows_are, files_under, make_rows, scan_ids

import mor

MODES = ["merge-on-read", "copy-on-write"]


@pytest.fixture(params=["2", "3"], ids=["v2", "v3"])
def table(catalog: mor.Catalog, request: pytest.FixtureRequest) -> mor.Table:
    t = catalog.create_table("db.t", schema=SCHEMA, partition_by=["category"], properties={"format-version": request.param})
    t.append(make_rows(range(30)))
    return t


def test_overwrite_by_default_replaces_every_row(table: mor.Table) -> None:
    snapshot = table.overwrite(make_rows([100, 101]))
    assert snapshot is not None and snapshot.operation == "overwrite"
    assert_rows_are(table.scan().to_arrow(), [100, 101])
    assert all(not t.delete_files for t in table.scan().plan_files())  # whole files dropped, nothing read
    assert_no_orphans(table)


@pytest.mark.parametrize("mode", MODES)
def test_overwrite_where_replaces_only_matching_rows(table: mor.Table, mode: str) -> None:
    before = table.current_snapshot()
    snapshot = table.overwrite(make_rows([3, 4, 40]), where="id between 3 and 4 or id >= 25", mode=mode)
    assert snapshot is not None and snapshot.operation == "overwrite"
    assert_rows_are(table.scan().to_arrow(), [i for i in range(25) if i not in (3, 4)] + [3, 4, 40])
    assert before is not None
    assert_rows_are(table.scan(snapshot_id=before.snapshot_id).to_arrow(), range(30))
    deletes = [d for t in table.scan().plan_files() for d in t.delete_files]
    assert bool(deletes) == (mode == "merge-on-read")


def test_overwrite_takes_a_pandas_dataframe_and_residual_predicates(table: mor.Table) -> None:
    frame = make_rows([7, 77]).to_pandas()
    table.overwrite(frame, where="id % 7 = 0")
    assert scan_ids(table) == sorted([i for i in range(30) if i % 7 != 0] + [7, 77])


def test_overwrite_matching_nothing_appends_and_of_nothing_with_nothing_is_none(table: mor.Table) -> None:
    snapshot = table.overwrite(make_rows([5000]), where="id > 1000")
    assert snapshot is not None and snapshot.operation == "append"
    assert scan_ids(table) == [*range(30), 5000]
    location = table.metadata_location
    assert table.overwrite(SCHEMA.empty_table(), where="id > 100000") is None
    assert table.metadata_location == location


def test_overwrite_with_no_rows_deletes_the_matching_ones(table: mor.Table) -> None:
    snapshot = table.overwrite(SCHEMA.empty_table(), where="category = 'a'")
    assert snapshot is not None and snapshot.operation == "delete"
    assert scan_ids(table) == list(range(10, 30))


@pytest.mark.parametrize(
    ("data", "where", "error"),
    [
        pytest.param(make_rows([1]), None, mor.InvalidArgumentError, id="where-none"),
        pytest.param(make_rows([1]), "nope = 1", mor.MorError, id="unknown-column"),
        pytest.param(pa.table({"id": [1], "other": ["x"]}), True, mor.SchemaMismatchError, id="wrong-columns"),
        pytest.param("not rows", True, mor.SchemaMismatchError, id="not-rows"),
        pytest.param(make_rows([1]), "id = 1", mor.InvalidArgumentError, id="bad-mode"),
    ],
)
def test_bad_overwrite_leaves_the_table_and_its_folder_as_they_were(
    table: mor.Table, data: object, where: object, error: type[Exception]
) -> None:
    location, files = table.metadata_location, files_under(table.location)
    mode = "sideways" if where == "id = 1" else None
    with pytest.raises(error):
        table.overwrite(data, where=where, mode=mode)  # type: ignore[arg-type]
    assert table.metadata_location == location
    assert files_under(table.location) == files
    assert scan_ids(table) == list(range(30))


def test_narrowing_that_does_not_fit_refuses_the_overwrite(catalog: mor.Catalog) -> None:
    schema = pa.schema([pa.field("id", pa.int32(), nullable=False)])
    table = catalog.create_table("db.narrow", schema=schema)
    table.append(pa.table({"id": pa.array([1, 2], pa.int32())}))
    location, files = table.metadata_location, files_under(table.location)
    with pytest.raises(mor.SchemaMismatchError, match="id"):
        table.overwrite(pa.table({"id": pa.array([3, 2**40], pa.int64())}))
    assert table.metadata_location == location and files_under(table.location) == files
    table.overwrite(pa.table({"id": pa.array([3, 4], pa.int64())}))  # fits: narrowed
    assert scan_ids(table) == [3, 4]


def test_a_conflicting_overwrite_replans_and_keeps_the_rows_it_wrote(catalog: mor.Catalog, table: mor.Table) -> None:
    stale = catalog.load_table("db.t")
    table.delete("id in (5, 15)")  # lands first: the stale handle's plan removes rows already gone
    stale.overwrite(make_rows([5, 15, 16]), where="id in (5, 15, 16)")
    fresh = catalog.load_table("db.t")
    assert scan_ids(fresh) == sorted([i for i in range(30) if i not in (5, 15, 16)] + [5, 15, 16])
    assert_no_orphans(fresh)


def test_a_conflicting_overwrite_that_cannot_replan_removes_its_files(catalog: mor.Catalog, table: mor.Table) -> None:
    table.set_properties(**{"mor.dml.replan.num-retries": "0"})
    stale = catalog.load_table("db.t")
    table.delete("id in (5, 15)")
    location, files = table.metadata_location, files_under(table.location)
    with pytest.raises(mor.CommitConflictError):
        stale.overwrite(make_rows([5, 15, 16]), where="id in (5, 15, 16)")
    fresh = catalog.load_table("db.t")
    assert fresh.metadata_location == location
    assert files_under(table.location) == files
    assert_no_orphans(fresh)
