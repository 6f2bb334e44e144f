"""Iceberg Java and pyiceberg read the tables mor evolves, at every snapshot, exactly as mor does.

One table goes through every schema and spec change mor offers: add, rename, re-add a dropped
name, widen int/float/decimal, drop, add and rename nested struct fields, add and remove
partition fields. Merge-on-read deletes (and updates, an upsert, a merge) come before and after
each change, so data and delete files exist under every schema and spec. Each snapshot is read
with the schema it was written with by all three readers; the current schema by a plain scan.
"""

from __future__ import annotations

import decimal
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from java_fixtures import describe_row_differences, to_json_rows
from oracle_support import read_with_iceberg_java
from pyiceberg.table import StaticTable as PyIcebergStaticTable

import mor

pytestmark = pytest.mark.interop

INFO = pa.struct([("a", pa.int32()), ("b", pa.string())])
SCHEMA = pa.schema([
    pa.field("id", pa.int64(), nullable=False),
    ("name", pa.string()),
    ("n", pa.int32()),
    ("value", pa.float32()),
    ("price", pa.decimal128(9, 2)),
    ("category", pa.string()),
    ("info", INFO),
])  # fmt: skip


def rows(lo: int, hi: int, schema: pa.Schema) -> pa.Table:
    """Rows lo..hi-1 in the columns of `schema` (values derived from the id)."""

    def value(name: str, t: pa.DataType, i: int) -> Any:
        if name == "id":
            return i
        if pa.types.is_struct(t):
            return None if i % 11 == 3 else {f.name: value(f.name, f.type, i) for f in t}
        if pa.types.is_decimal(t):
            return decimal.Decimal(i * 125) / 100
        if pa.types.is_integer(t):
            return i * 3
        if pa.types.is_floating(t):
            return i / 4
        if name == "category":
            return "abc"[i % 3]
        return None if i % 13 == 5 else f"{name}-{i}"

    return pa.Table.from_pylist([{f.name: value(f.name, f.type, i) for f in schema} for i in range(lo, hi)], schema=schema)


def appended(table: mor.Table, lo: int, hi: int) -> None:
    table.append(rows(lo, hi, table.arrow_schema()))


def evolve(table: mor.Table) -> None:
    """Every change, with merge-on-read DML before and after each."""
    appended(table, 0, 40)
    table.delete("id in (0, 10, 20, 30)")
    with table.update_schema() as u:
        u.add_column("extra", pa.string())
    appended(table, 40, 60)
    table.delete("id in (41, 5)")
    with table.update_schema() as u:
        u.rename_column("name", "full_name")
    table.update({"full_name": "'renamed'"}, where="id < 8")
    with table.update_schema() as u:
        u.add_column("name", pa.string())  # the old name: a new column, null in old rows
    table.upsert(rows(58, 62, table.arrow_schema()), on=["id"])
    with table.update_schema() as u:
        u.widen("n", pa.int64())
        u.widen("value", pa.float64())
        u.widen("price", pa.decimal128(12, 2))
    table.update({"n": pc.add(pc.field("n"), pa.scalar(3_000_000_000, pa.int64()))}, where="id < 20")
    with table.update_schema() as u:
        u.drop_column("extra")
    table.delete("id = 13")
    with table.update_schema() as u:
        u.add_column("info.c", pa.string())
        u.rename_column("info.a", "aa")
    appended(table, 60, 70)
    table.delete("id in (61, 66)")
    with table.update_schema() as u:
        u.add_column("extra", pa.int32())  # a dropped name again, another type
    table.update({"extra": 7}, where="id > 50")
    with table.update_spec() as s:
        s.add_field("bucket(4, id)")
    appended(table, 70, 80)
    table.delete("id in (71, 3, 44)")
    with table.update_spec() as s:
        s.remove_field("category")
    appended(table, 80, 90)
    table.delete("id in (82, 17)")
    source = rows(85, 95, table.arrow_schema())
    table.merge(source, on=["id"], when_matched_update={"full_name": pc.field("source.full_name")}, when_not_matched_insert="*")
    table.delete("id in (86, 93)")


def assert_same_rows(theirs: pa.Table, ours: pa.Table, how: str) -> None:
    assert sorted(theirs.column_names) == sorted(ours.column_names), how
    a = to_json_rows(ours.to_pylist())
    b = to_json_rows(theirs.select(ours.column_names).to_pylist())
    assert sorted(b, key=json.dumps) == sorted(a, key=json.dumps), f"{how}:\n{describe_row_differences(a, b)}"


@pytest.fixture(scope="module")
def evolved(tmp_path_factory: pytest.TempPathFactory) -> tuple[mor.Table, Path]:
    root = tmp_path_factory.mktemp("evolution")
    table = mor.load_catalog(str(root / "warehouse"), create=True).create_table("db.t", schema=SCHEMA, partition_by=["category"])
    evolve(table)
    return table, root


def test_the_history_covers_every_schema_and_spec(evolved: tuple[mor.Table, Path]) -> None:
    table, _ = evolved
    snapshots = table.snapshots()
    assert len({s.schema_id for s in snapshots}) >= 7
    assert len(table.metadata.partition_specs) == 3
    summaries = [s.summary for s in snapshots]
    assert sum("added-position-delete-files" in s for s in summaries) >= 10


def test_pyiceberg_reads_every_snapshot_as_mor(evolved: tuple[mor.Table, Path]) -> None:
    table, _ = evolved
    static = PyIcebergStaticTable.from_metadata(table.metadata_location)
    for s in table.snapshots():
        ours = table.scan(snapshot_id=s.snapshot_id).to_arrow()
        assert_same_rows(static.scan(snapshot_id=s.snapshot_id).to_arrow(), ours, f"pyiceberg at {s.snapshot_id}")
    assert_same_rows(static.scan().to_arrow(), table.scan().to_arrow(), "pyiceberg, plain scan")


@pytest.mark.oracle
def test_iceberg_java_reads_every_snapshot_as_mor(evolved: tuple[mor.Table, Path]) -> None:
    table, root = evolved
    snapshots = table.snapshots()
    java = read_with_iceberg_java([(table.metadata_location, s.snapshot_id) for s in snapshots], root)
    for s, theirs in zip(snapshots, java):
        assert_same_rows(theirs, table.scan(snapshot_id=s.snapshot_id).to_arrow(), f"Iceberg Java at {s.snapshot_id}")
