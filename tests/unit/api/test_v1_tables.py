"""Format v1 tables: created, read and written by mor. v1 has no delete files and no sequence
numbers, so every row-level verb rewrites files (copy-on-write), merge-on-read is refused with a
typed error naming the upgrade, and `upgrade(format_version=2 or 3)` opens merge-on-read.
pyiceberg reads what mor writes; Iceberg Java's judgement: tests/interop/test_oracle_reads_ours.py
(mor's v1 table) and the v1 fixtures Java wrote (tests/fixtures/gen_java_v1.py)."""

from __future__ import annotations

import json
from collections.abc import Callable

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from pyiceberg.table import StaticTable as PyicebergTable
from unit_helpers import make_rows, scan_ids

import mor
from mor.errors import UnsupportedFeatureError
from mor.io.fileio import to_local_path

MakeTable = Callable[..., mor.Table]


def metadata_json(table: mor.Table) -> dict:
    with open(to_local_path(table.metadata_location)) as f:
        return json.load(f)


def change_every_way(table: mor.Table) -> None:
    table.delete("id % 7 = 0")
    table.update({"value": pc.field("value") * 2}, where="id < 12")
    table.upsert(make_rows([1, 2, 300]), on=["id"])
    # On v1 the equality strategy finds the rows by a join (no equality deletes to write).
    table.upsert(make_rows([3, 301]), on=["id"], strategy="equality" if table.metadata.format_version == 1 else "position")
    table.merge(make_rows([4, 302]), on=["id"], when_matched_delete=True, when_not_matched_insert="*")
    table.delete_rows(make_rows([5, 6]).select(["id"]))
    table.overwrite(make_rows([8]), where="id = 8")
    table.compact(min_input_files=1)


def test_every_verb_rewrites_rows_and_agrees_with_a_v2_copy_on_write_twin(make_table: MakeTable) -> None:
    v1 = make_table(range(0, 40), name="v1", format_version=1, partition_by=["category"])
    v2 = make_table(range(0, 40), name="v2", partition_by=["category"], properties={
        "write.delete.mode": "copy-on-write", "write.update.mode": "copy-on-write", "write.merge.mode": "copy-on-write",
    })  # fmt: skip
    for table in (v1, v2):
        change_every_way(table)
    assert v1.scan().to_arrow().sort_by("id").equals(v2.scan().to_arrow().sort_by("id"))
    assert not any(t.delete_files for t in v1.scan().plan_files())
    document = metadata_json(v1)
    assert document["format-version"] == 1 and "schema" in document and "partition-spec" in document
    assert "last-sequence-number" not in document and all("sequence-number" not in s for s in document["snapshots"])
    assert "write.delete.mode" not in v1.properties  # no merge-on-read default on v1
    for snapshot in v1.snapshots():  # pyiceberg reads every snapshot alike
        theirs = PyicebergTable.from_metadata(v1.metadata_location).scan(snapshot_id=snapshot.snapshot_id).to_arrow()
        assert sorted(theirs["id"].to_pylist()) == scan_ids(v1, snapshot_id=snapshot.snapshot_id)


def test_merge_on_read_is_refused_until_the_upgrade(make_table: MakeTable) -> None:
    table = make_table(range(0, 20), format_version=1)
    before = table.metadata_location
    with pytest.raises(UnsupportedFeatureError, match=r"upgrade\(format_version=2\)"):
        table.delete("id = 1", mode="merge-on-read")
    with pytest.raises(UnsupportedFeatureError, match="upgrade"):
        table.update({"value": 0.0}, where="id = 1", mode="merge-on-read")
    table.set_properties(**{"write.delete.mode": "merge-on-read"})
    with pytest.raises(UnsupportedFeatureError, match="write.delete.mode"):
        table.delete("id = 1")
    assert scan_ids(table) == list(range(20)) and len(table.refresh().snapshots()) == 1
    assert table.metadata_location != before  # only the property commit
    table.upgrade(format_version=2)
    table.delete("id = 1")
    assert any(t.delete_files for t in table.scan().plan_files()) and 1 not in scan_ids(table)
    assert metadata_json(table)["format-version"] == 2


def test_upgrade_from_v1_to_v3_and_deletion_vectors(make_table: MakeTable) -> None:
    table = make_table(range(0, 20), format_version=1)
    table.delete("id < 2")
    table.upgrade(format_version=3)
    table.delete("id = 5")
    rows = table.scan(columns=["id", "_row_id"]).to_arrow()
    assert sorted(rows["id"].to_pylist()) == [i for i in range(2, 20) if i != 5]
    assert [d.file_format for t in table.scan().plan_files() for d in t.delete_files] == ["PUFFIN"]
    theirs = PyicebergTable.from_metadata(table.metadata_location).scan().to_arrow()
    assert sorted(theirs["id"].to_pylist()) == sorted(rows["id"].to_pylist())


def test_a_v1_table_survives_expiry_and_a_reload(make_table: MakeTable, catalog: mor.Catalog) -> None:
    import datetime as dt

    table = make_table(range(0, 10), format_version=1)
    table.append(make_rows(range(10, 20)))
    table.delete("id < 5")
    table.expire_snapshots(older_than=dt.timedelta(0), retain_last=1, allow_short_retention=True)
    again = catalog.load_table("db.t")
    assert again.metadata.format_version == 1 and scan_ids(again) == list(range(5, 20))
    again.append(pa.table({"id": [99]}).join(make_rows([99]), "id").select(make_rows([99]).column_names))
    assert 99 in scan_ids(again)
