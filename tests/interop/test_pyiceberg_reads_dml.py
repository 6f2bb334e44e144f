"""pyiceberg 0.12 reads the position-delete tables UPDATE, UPSERT and MERGE write.

Every snapshot of each table is read by mor and by pyiceberg (from the metadata file and
through its SqlCatalog on our catalog.db); both must equal a list-of-rows model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.table import StaticTable as PyIcebergStaticTable

import mor

pytestmark = pytest.mark.interop

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("category", pa.string()), ("n", pa.int64())])
Row = dict[str, Any]


def make_rows(ids: list[int], n: int = 0) -> list[Row]:
    return [{"id": i, "category": None if i % 9 == 4 else "xyz"[i % 3], "n": i + n} for i in ids]


def table_of(rows: list[Row]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=SCHEMA)


def canonical(rows: list[Row]) -> list[tuple]:
    return sorted((r["id"], r["category"] or "", r["n"]) for r in rows)


@pytest.mark.parametrize("mode", ["merge-on-read", "copy-on-write"])
@pytest.mark.parametrize("partition_by", [None, ["category"], ["bucket(3, id)"]], ids=["unpart", "category", "bucket"])
def test_pyiceberg_reads_every_dml_snapshot(tmp_path: Path, mode: str, partition_by: list[str] | None) -> None:
    table = mor.load_catalog(tmp_path).create_table("db.t", schema=SCHEMA, partition_by=partition_by)
    model = make_rows(list(range(60)))
    history: list[tuple[int, list[Row]]] = []

    def record(snapshot: Any, rows: list[Row]) -> None:
        assert snapshot is not None
        history.append((snapshot.snapshot_id, rows))

    record(table.append(table_of(model)), list(model))

    # UPDATE, including a partition column (rows move partitions).
    model = [{**r, "n": r["n"] * 10, "category": "moved"} if r["id"] < 8 else r for r in model]
    record(table.update({"n": pc.field("n") * 10, "category": "'moved'"}, where="id < 8", mode=mode), list(model))

    # UPSERT by position (join): replaces ids 3, 30 and inserts 100, 101.
    new = make_rows([3, 30, 100, 101], n=1000)
    model = [r for r in model if r["id"] not in (3, 30, 100, 101)] + new
    record(table.upsert(table_of(new), on=["id"], mode=mode, strategy="position"), list(model))

    # MERGE: delete 40, update 41, insert 102; 103 (op D, not matched) is ignored.
    source = pa.table({"id": [40, 41, 102, 103], "op": ["D", "U", "U", "D"], "n": [0, -41, -102, -103]})
    model = [({**r, "n": -41} if r["id"] == 41 else r) for r in model if r["id"] != 40]
    model += [{"id": 102, "category": None, "n": -102}]
    record(
        table.merge(
            source, on=["id"], mode=mode,
            when_matched_delete=pc.field("source.op") == "D",
            when_matched_update={"n": pc.field("source.n")},
            when_not_matched_insert={"id": pc.field("source.id"), "n": pc.field("source.n")},
            when_not_matched_insert_if=pc.field("source.op") != "D",
        ),
        list(model),
    )  # fmt: skip

    # A second UPDATE on rows that already carry position deletes.
    bumped = {0, 5, 10, 15, 20, 25, 30, 35, 45, 50, 55, 100}
    model = [{**r, "n": r["n"] + 1} if r["id"] in bumped else r for r in model]
    where = f"id in ({', '.join(map(str, sorted(bumped)))})"
    record(table.update({"n": pc.field("n") + 1}, where=where, mode=mode), list(model))

    # OVERWRITE of some rows by new ones (ids that exist and a new one).
    replacement = make_rows([1, 2, 200], n=2000)
    model = [r for r in model if not 1 <= r["id"] <= 2 and r["id"] < 50] + replacement
    record(table.overwrite(table_of(replacement), where="id between 1 and 2 or id >= 50", mode=mode), list(model))

    if mode == "merge-on-read":
        live_deletes = [d for t in table.scan().plan_files() for d in t.delete_files]
        assert live_deletes and all(d.content == mor.FileContent.POSITION_DELETES for d in live_deletes)
    else:
        assert all(not t.delete_files for t in table.scan().plan_files())

    catalog = SqlCatalog("default", uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=f"file://{tmp_path}")
    via_catalog = catalog.load_table("db.t")
    via_metadata = PyIcebergStaticTable.from_metadata(table.metadata_location)
    for snapshot_id, rows in history:
        expected = canonical(rows)
        assert canonical(table.scan(snapshot_id=snapshot_id).to_arrow().to_pylist()) == expected
        assert canonical(via_metadata.scan(snapshot_id=snapshot_id).to_arrow().to_pylist()) == expected
        assert canonical(via_catalog.scan(snapshot_id=snapshot_id).to_arrow().to_pylist()) == expected
