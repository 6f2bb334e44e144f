"""Sort orders and clustered files across engines.

- Iceberg Java's own `ALTER TABLE ... WRITE ORDERED BY x DESC NULLS LAST, id` (the fixture
  tests/fixtures/iceberg-java/db/sorted_v2: Spark 3.5 + Iceberg 1.10.2 wrote 300 rows sorted,
  then deleted every tenth by merge-on-read): mor reads the order as Java wrote it, keeps it
  (the same terms give the same id, no commit), and its appends and compactions sort by it and
  record its id; pyiceberg reads the same rows.
- Iceberg Java reads a table mor sorted by its order and clustered (Z-order, then sort_by) with
  the same rows as mor, at every snapshot.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from fixture_copies import relocate_fixture
from oracle_support import read_with_iceberg_java
from pyiceberg.table import StaticTable

import mor

pytestmark = pytest.mark.interop

JAVA_ORDER = [
    {"transform": "identity", "source-id": 2, "direction": "desc", "null-order": "nulls-last"},
    {"transform": "identity", "source-id": 1, "direction": "asc", "null-order": "nulls-first"},
]


def java_fixture_rows() -> list[dict]:
    """The fixture's rows, as its generator's SQL made them."""
    return [{"id": i, "x": None if i % 17 == 4 else (i * 37) % 11, "s": f"s{i}"} for i in range(300) if i % 10 != 0]


def in_java_order(rows: list[dict]) -> list[dict]:
    """x descending with nulls last, then id ascending."""
    return sorted(rows, key=lambda r: (r["x"] is None, -(r["x"] or 0), r["id"]))


def by_id(rows: list[dict]) -> list[dict]:
    return sorted(rows, key=lambda r: r["id"])


def local(path: str) -> str:
    return path.removeprefix("file://").removeprefix("file:")


def test_mor_keeps_javas_write_ordered_by(tmp_path: Path) -> None:
    catalog = mor.load_catalog(tmp_path / "warehouse", create=True)
    table = catalog.register_table("db.sorted_v2", relocate_fixture("sorted_v2", tmp_path / "copy"))
    java_metadata = json.loads(Path(local(table.metadata_location)).read_text())
    assert java_metadata["default-sort-order-id"] == 1
    assert java_metadata["sort-orders"][1]["fields"] == JAVA_ORDER
    assert table.sort_order().order_id == 1
    expected = java_fixture_rows()
    assert by_id(table.scan().to_arrow().to_pylist()) == expected
    for task in table.scan().plan_files():  # Java's Spark sorted each file by the order
        rows = pq.read_table(local(task.data_file.file_path)).to_pylist()
        assert rows == in_java_order(rows)

    location = table.metadata_location
    assert table.replace_sort_order("x desc nulls last", "id").order_id == 1
    assert table.replace_sort_order("x desc", "id asc nulls first").order_id == 1
    assert table.metadata_location == location  # the same order: nothing to commit

    added = [{"id": 1000 + i, "x": None if i % 9 == 0 else i % 13, "s": f"m{i}"} for i in range(120)]
    table.append(pa.Table.from_pylist(added, schema=table.scan().to_arrow().schema))
    expected = by_id(expected + added)
    [new_file] = [t.data_file for t in table.scan().plan_files() if t.data_file.record_count == 120]
    assert new_file.sort_order_id == 1
    written = pq.read_table(local(new_file.file_path)).to_pylist()
    assert written == in_java_order(written)
    metadata = json.loads(Path(local(table.metadata_location)).read_text())
    assert metadata["sort-orders"] == java_metadata["sort-orders"] and metadata["default-sort-order-id"] == 1

    table.compact(sort_by=["x desc nulls last", "id"])
    for task in table.scan().plan_files():
        assert task.data_file.sort_order_id == 1 and task.delete_files == ()
        rows = pq.read_table(local(task.data_file.file_path)).to_pylist()
        assert rows == in_java_order(rows)
    assert by_id(table.scan().to_arrow().to_pylist()) == expected
    assert by_id(StaticTable.from_metadata(table.metadata_location).scan().to_arrow().to_pylist()) == expected


@pytest.mark.oracle
def test_iceberg_java_reads_sorted_and_clustered_tables(tmp_path: Path) -> None:
    catalog = mor.load_catalog(tmp_path / "warehouse", create=True)
    schema = pa.schema([("id", pa.int64()), ("x", pa.int64()), ("y", pa.float64()), ("s", pa.string())])
    table = catalog.create_table("db.t", schema=schema, partition_by=["bucket(2, id)"])
    table.replace_sort_order("x desc", "id")
    rng = np.random.default_rng(1)
    for i in range(4):
        ids = np.arange(i * 500, (i + 1) * 500)
        s = [None if v % 7 == 0 else f"s{v}" for v in ids]
        table.append(pa.table({"id": ids, "x": rng.integers(0, 100, 500), "y": rng.random(500), "s": s}, schema=schema))
    table.delete("id % 10 = 3")
    table.compact(zorder_by=["x", "y"], target_file_size=8000)
    table.update({"s": "'u'"}, where="id < 50")
    table.compact(sort_by=["y desc", "x"], target_file_size=8000)
    snapshots = [s.snapshot_id for s in table.snapshots()]
    theirs = read_with_iceberg_java([(table.metadata_location, s) for s in snapshots], tmp_path, sort=False)
    for snapshot_id, java_rows in zip(snapshots, theirs, strict=True):
        assert by_id(java_rows.to_pylist()) == by_id(table.scan(snapshot_id=snapshot_id).to_arrow().to_pylist())
