"""A DML verb that fails before or at its commit removes the data and delete files it wrote.

Before the commit: the new rows go to a partition whose folder cannot be made (a file of
that name is in the way), after the files removing the old rows were written. At the commit:
a concurrent commit deleted the rows the verb changes, and re-planning is off, so the commit
fails with CommitConflictError. Either way the table folder holds exactly the files it held.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from unit_helpers import SCHEMA, assert_no_orphans, files_under, local, make_rows, scan_ids

import mor

Verb = Callable[[mor.Table], object]


def _moved(ids: list[int]) -> pa.Table:
    """Rows with keys `ids`, in the partition category=zzz."""
    rows = make_rows(ids)
    return rows.set_column(1, "category", pa.array(["zzz"] * len(ids)))


VERBS_MOVING_ROWS: list[object] = [
    pytest.param(lambda t: t.update({"category": "'zzz'"}, where="id in (1, 15, 25)"), id="update"),
    pytest.param(lambda t: t.update({"category": "'zzz'"}, where="id in (1, 15, 25)", mode="copy-on-write"), id="update-cow"),
    pytest.param(
        lambda t: t.merge(_moved([1, 15, 25]), on=["id"], when_matched_update={"category": pc.field("source.category")}),
        id="merge",
    ),
    pytest.param(lambda t: t.upsert(_moved([1, 15, 25]), on=["id"]), id="upsert-position"),
    pytest.param(lambda t: t.upsert(_moved([1, 15, 25]), on=["id"], strategy="equality"), id="upsert-equality"),
]


@pytest.fixture(params=["2", "3"], ids=["v2", "v3"])
def table(catalog: mor.Catalog, request: pytest.FixtureRequest) -> mor.Table:
    t = catalog.create_table("db.t", schema=SCHEMA, partition_by=["category"], properties={"format-version": request.param})
    t.append(make_rows(range(30)))
    return t


@pytest.mark.parametrize("verb", VERBS_MOVING_ROWS)
def test_a_verb_failing_after_writing_files_removes_them(catalog: mor.Catalog, table: mor.Table, verb: Verb) -> None:
    with open(local(f"{table.location}/data/category=zzz"), "w") as f:
        f.write("in the way of the partition folder")
    location, files, rows = table.metadata_location, files_under(table.location), scan_ids(table)
    with pytest.raises(mor.StorageError, match="category=zzz"):
        verb(table)
    assert table.metadata_location == location
    assert files_under(table.location) == files
    assert scan_ids(catalog.load_table("db.t")) == rows


VERBS: list[object] = [
    pytest.param(lambda t: t.delete("id in (5, 15)"), id="delete"),
    pytest.param(lambda t: t.delete("id in (5, 15)", mode="copy-on-write"), id="delete-cow"),
    pytest.param(lambda t: t.delete_rows(pa.table({"id": pa.array([5, 15], pa.int64())})), id="delete-rows-positions"),
    pytest.param(lambda t: t.update({"name": "'x'"}, where="id in (5, 15)"), id="update"),
    pytest.param(lambda t: t.update({"category": "'zzz'"}, where="id in (5, 15)", mode="copy-on-write"), id="update-cow"),
    pytest.param(lambda t: t.upsert(make_rows([5, 15, 99]), on=["id"]), id="upsert"),
    pytest.param(lambda t: t.merge(make_rows([5, 15]), on=["id"], when_matched_update="*"), id="merge"),
]


@pytest.mark.parametrize("verb", VERBS)
def test_a_verb_whose_commit_conflicts_removes_its_files(catalog: mor.Catalog, table: mor.Table, verb: Verb) -> None:
    table.set_properties(**{"mor.dml.replan.num-retries": "0", "mor.write.equality-deletes.enabled": "false"})
    stale = catalog.load_table("db.t")
    table.delete("id in (5, 15)")  # lands first: the stale handle's rows are gone
    location, files = table.metadata_location, files_under(table.location)
    with pytest.raises(mor.CommitConflictError):
        verb(stale)
    fresh = catalog.load_table("db.t")
    assert fresh.metadata_location == location
    assert files_under(table.location) == files
    assert_no_orphans(fresh)


def test_a_copy_on_write_delete_failing_in_one_file_removes_the_others_rewrites(catalog: mor.Catalog, table: mor.Table) -> None:
    """Three files are rewritten in parallel into the new spec (category, name); one rewrite
    cannot make its partition folder, after the others wrote theirs."""
    table.update_spec().add_field("name").commit()
    blocked = local(f"{table.location}/data/category=c/name=n25")
    os.makedirs(os.path.dirname(blocked), exist_ok=True)
    with open(blocked, "w") as f:
        f.write("in the way of the partition folder")
    location, files, rows = table.metadata_location, files_under(table.location), scan_ids(table)
    with pytest.raises(mor.StorageError, match="name=n25"):
        table.delete("id in (1, 11, 21)", mode="copy-on-write")
    assert table.metadata_location == location
    assert files_under(table.location) == files
    assert scan_ids(catalog.load_table("db.t")) == rows
