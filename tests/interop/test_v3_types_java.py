"""Iceberg Java judges mor's format v3 types: `timestamp_ns`, `timestamptz_ns` and `unknown`
columns, through Iceberg core's generic reader (Spark has none of these types, so Iceberg's
Spark reader refuses such tables).

mor writes a table partitioned by day and by identity of nanosecond columns, deletes with
deletion vectors and with an equality delete, updates, filters by
nanosecond text, adds an `unknown` column and compacts; at every snapshot Java's rows equal
mor's to the nanosecond.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from oracle_support import java_generic_rows
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType, TimestampNanoType, TimestamptzNanoType, UnknownType

import mor

NS, NS_UTC = pa.timestamp("ns"), pa.timestamp("ns", tz="UTC")
BASE = 1_700_000_000_000_000_000  # 2023-11-14 22:13:20 UTC
DAY = 86_400_000_000_000


def batch(ids: range) -> pa.Table:
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "ts": pa.array([BASE + (i % 3) * DAY + i for i in ids], NS),
        "tz": pa.array([None if i % 7 == 3 else BASE - i * 1_001 for i in ids], NS_UTC),
        "s": pa.array([f"s{i}" for i in ids]),
    })  # fmt: skip


def build(table: mor.Table) -> list[int]:
    table.append(batch(range(0, 30)))
    table.append(batch(range(30, 60)))
    table.delete("id % 5 = 0")  # deletion vectors
    # An equality delete keyed on a string (Iceberg Java 1.10's generic reader fails on keys of
    # a timestamptz_ns column: "Not an instance of java.lang.Long", its InternalRecordWrapper).
    table.delete_rows(batch(range(40, 44)).select(["s"]))
    table.update({"s": pa.scalar("updated")}, where="ts > '2023-11-16 22:13:20.000000050'")
    table.update_schema().add_column("u", UnknownType()).commit()
    table.append(batch(range(60, 66)))
    table.delete("tz < '2023-11-14 22:13:19.999939000+00:00'")  # nanosecond text on a zoned column
    table.compact(min_input_files=1)
    return [s.snapshot_id for s in table.snapshots()]


def mor_rows(table: mor.Table, snapshot_id: int) -> list[str]:
    data = table.scan(snapshot_id=snapshot_id).to_arrow()
    columns = {}
    for name in data.column_names:
        column = data.column(name)
        columns[name] = column.cast(pa.int64()).to_pylist() if pa.types.is_timestamp(column.type) else column.to_pylist()
    rows = [dict(zip(columns, values, strict=True)) for values in zip(*columns.values(), strict=True)]
    return sorted(json.dumps(r, sort_keys=True) for r in rows)


def java_rows(rows: list[dict[str, Any]]) -> list[str]:
    return sorted(json.dumps(r, sort_keys=True) for r in rows)


@pytest.mark.parametrize("partition_by", [["day(ts)"], ["tz"]], ids=["day", "identity-tz"])
def test_iceberg_java_reads_nanosecond_and_unknown_columns_as_mor(tmp_path: Path, partition_by: list[str]) -> None:
    catalog = mor.load_catalog(tmp_path / "warehouse", create=True)
    schema = Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "ts", TimestampNanoType()),
                    NestedField(3, "tz", TimestamptzNanoType()), NestedField(4, "s", StringType()))  # fmt: skip
    table = catalog.create_table("db.ns", schema=schema, partition_by=partition_by, format_version=3)
    snapshots = build(table)
    assert len(snapshots) == 8 and any(d.equality_ids for t in table.scan(snapshot_id=snapshots[3]).plan_files() for d in t.delete_files)
    java = java_generic_rows([(table.metadata_location, s) for s in snapshots], tmp_path)
    for snapshot_id, theirs in zip(snapshots, java, strict=True):
        ours = mor_rows(table, snapshot_id)
        assert len(ours) > 0
        assert java_rows(theirs) == ours, f"snapshot {snapshot_id}"
