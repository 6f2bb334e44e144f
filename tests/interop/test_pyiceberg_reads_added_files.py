"""pyiceberg reads tables holding adopted Parquet files (`add_files`, `create_table_from_files`)
with the same rows as mor: files without field ids (read through the table's name mapping),
files with field ids, partitioned and not, after merge-on-read deletes."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.table import StaticTable as PyIcebergStaticTable

import mor

pytestmark = pytest.mark.interop

SCHEMA = pa.schema([("id", pa.int64()), ("cat", pa.string()), ("value", pa.float64()), ("ts", pa.timestamp("us"))])


def rows(ids: range, cat: str, day: int) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(list(ids), pa.int64()),
            "cat": [cat] * len(ids),
            "value": [None if i % 7 == 3 else i / 10 for i in ids],
            "ts": pa.array([dt.datetime(2024, 1, day, i % 24) for i in ids], pa.timestamp("us")),
        }
    )


def with_ids(table: pa.Table) -> pa.Table:
    ids = {"id": 1, "cat": 2, "value": 3, "ts": 4}
    return table.cast(pa.schema([f.with_metadata({b"PARQUET:field_id": str(ids[f.name])}) for f in table.schema]))


def by_id(table: pa.Table) -> list[dict[str, object]]:
    return sorted(table.select(["id", "cat", "value", "ts"]).cast(SCHEMA).to_pylist(), key=lambda r: r["id"])  # type: ignore[arg-type, return-value]


def pyiceberg_rows(warehouse: Path, table: mor.Table) -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    static = by_id(PyIcebergStaticTable.from_metadata(table.metadata_location).scan().to_arrow())
    catalog = SqlCatalog("default", uri=f"sqlite:///{warehouse}/catalog.db", warehouse=f"file://{warehouse}")
    try:
        through_catalog = by_id(catalog.load_table(table.identifier).scan().to_arrow())
    finally:
        catalog.engine.dispose()
    return static, through_catalog


@pytest.mark.parametrize("partition_by", [None, ["cat", "day(ts)"], ["bucket(3, id)"]], ids=["unpartitioned", "cat-day", "bucket"])
@pytest.mark.parametrize("field_ids", [False, True], ids=["no-ids", "ids"])
def test_pyiceberg_reads_added_files(tmp_path: Path, partition_by: list[str] | None, field_ids: bool) -> None:
    warehouse = tmp_path / "warehouse"
    catalog = mor.load_catalog(warehouse, create=True)
    table = catalog.create_table("db.t", schema=SCHEMA, partition_by=partition_by)
    table.append(rows(range(0, 30), "a", 1))
    parts = [rows(range(100, 130), "a", 1), rows(range(200, 230), "b", 2)]
    if partition_by == ["bucket(3, id)"]:
        # one bucket per file: take the rows mor's writer put together
        scratch = catalog.create_table("db.scratch", schema=SCHEMA, partition_by=partition_by)
        scratch.append(pa.concat_tables(parts))
        parts = [pq.read_table(t.data_file.file_path.removeprefix("file://")).select(SCHEMA.names) for t in scratch.scan().plan_files()]
    paths = []
    for i, part in enumerate(parts):
        path = tmp_path / "src" / f"{i}.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(with_ids(part) if field_ids else part, path)
        paths.append(str(path))
    table.add_files(paths)
    table.delete("id >= 110 and id < 120")
    mine = by_id(table.scan().to_arrow())
    assert len(mine) == 30 + sum(p.num_rows for p in parts) - 10
    static, through_catalog = pyiceberg_rows(warehouse, table)
    assert static == mine
    assert through_catalog == mine


def test_pyiceberg_reads_a_table_created_from_files(tmp_path: Path) -> None:
    warehouse = tmp_path / "warehouse"
    catalog = mor.load_catalog(warehouse, create=True)
    folder = tmp_path / "legacy"
    folder.mkdir()
    for i, cat in enumerate("abc"):
        pq.write_table(rows(range(i * 50, i * 50 + 50), cat, i + 1), folder / f"part-{i}.parquet")
    table = catalog.create_table_from_files("db.legacy", str(folder), partition_by=["cat"])
    table.update({"value": 0.0}, where="id < 5")
    mine = by_id(table.scan().to_arrow())
    assert len(mine) == 150
    static, through_catalog = pyiceberg_rows(warehouse, table)
    assert static == mine
    assert through_catalog == mine


def test_iceberg_java_reads_added_files(tmp_path: Path) -> None:
    """Iceberg Java (the oracle) reads tables with adopted files as mor does: files without ids
    through the name mapping, with ids, partitioned by day, with
    narrower integer types, dictionary-encoded columns, and merge-on-read deletes."""
    from oracle_support import read_with_iceberg_java

    warehouse = tmp_path / "warehouse"
    catalog = mor.load_catalog(warehouse, create=True)
    src = tmp_path / "src"
    src.mkdir()
    tables = []
    for name, partition_by, field_ids in [("plain", None, False), ("ids", ["cat"], True), ("days", ["day(ts)"], False)]:
        table = catalog.create_table(f"db.{name}", schema=SCHEMA, partition_by=partition_by)
        table.append(rows(range(0, 20), "a", 1))
        first, second = rows(range(100, 120), "a", 1), rows(range(200, 220), "b", 2)
        # a 32-bit id in one file, a dictionary column in the other
        first = first.cast(pa.schema([("id", pa.int32()), ("cat", pa.string()), ("value", pa.float64()), ("ts", pa.timestamp("us"))]))
        second = second.set_column(1, "cat", second.column("cat").dictionary_encode())
        if field_ids:
            first, second = with_ids(first), with_ids(second)
        paths = [str(src / f"{name}-1.parquet"), str(src / f"{name}-2.parquet")]
        pq.write_table(first, paths[0])
        pq.write_table(second, paths[1])
        table.add_files(paths)
        table.delete("id >= 105 and id < 110 or id = 201")
        tables.append(table)
    nested = pa.table(
        {
            "id": pa.array([1, 2, 3], pa.int64()),
            "info": pa.array([{"a": i, "b": f"b{i}"} for i in range(3)], pa.struct([("a", pa.int32()), ("b", pa.string())])),
            "tags": pa.array([["p"], [], None], pa.list_(pa.string())),
        }
    )
    pq.write_table(nested, src / "nested.parquet")
    nested_table = catalog.create_table_from_files("db.nested", str(src / "nested.parquet"))
    nested_table.delete("id = 2")
    everything = [*tables, nested_table]
    read = read_with_iceberg_java([(t.metadata_location, t.metadata.current_snapshot_id) for t in everything], tmp_path)  # type: ignore[misc]
    for table, java in zip(tables, read):
        mine = by_id(table.scan().to_arrow())
        assert len(mine) == 20 + 40 - 6
        assert by_id(java) == mine, table.identifier
    mine_nested = nested_table.scan().to_arrow().sort_by("id")
    assert read[-1].sort_by("id").cast(mine_nested.schema).to_pylist() == mine_nested.to_pylist()


def test_pyiceberg_reads_nested_columns_through_the_name_mapping(tmp_path: Path) -> None:
    data = pa.table(
        {
            "id": pa.array([1, 2, 3], pa.int64()),
            "info": pa.array([{"a": i, "b": f"b{i}"} for i in range(3)], pa.struct([("a", pa.int32()), ("b", pa.string())])),
            "tags": pa.array([["p"], [], None], pa.list_(pa.string())),
            "attrs": pa.array([[("k", 1)], None, []], pa.map_(pa.string(), pa.int64())),
        }
    )
    path = tmp_path / "nested.parquet"
    pq.write_table(data, path)
    catalog = mor.load_catalog(tmp_path / "warehouse", create=True)
    table = catalog.create_table_from_files("db.nested", str(path))
    table.delete("id = 2")
    mine = table.scan().to_arrow().sort_by("id")
    theirs = PyIcebergStaticTable.from_metadata(table.metadata_location).scan().to_arrow().sort_by("id")
    assert theirs.cast(mine.schema).to_pylist() == mine.to_pylist()
    assert mine["id"].to_pylist() == [1, 3]
