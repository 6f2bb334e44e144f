"""Tables Iceberg Java wrote with the format v3 types Spark lacks (`timestamp_ns`,
`timestamptz_ns`, `unknown`; tests/fixtures/gen_java_v3_types.py, through Iceberg core's API),
read by mor at every snapshot: exactly the rows Iceberg core's generic reader read, to the
nanosecond, equality deletes and the added `unknown` column included. pyiceberg 0.12 is held to
the same rows where it reads the table."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyiceberg.table import StaticTable as PyIcebergStaticTable

import mor

SOURCE = Path(__file__).resolve().parents[1] / "fixtures" / "iceberg-java-generic"
TABLES = sorted(p.name for p in (SOURCE / "expected").iterdir() if (p / "snapshots.json").is_file())
SNAPSHOTS = [
    pytest.param(name, snap, id=f"{name}-seq{snap['sequence_number']}")
    for name in TABLES
    for snap in json.loads((SOURCE / "expected" / name / "snapshots.json").read_text())["snapshots"]
]


def as_rows(data: pa.Table) -> list[dict[str, Any]]:
    """Rows as the fixture spells them: timestamps as epoch integers in their unit, sorted by id."""
    columns = {
        name: (c.cast(pa.int64()) if pa.types.is_timestamp(c.type) else c).to_pylist() for name, c in zip(data.column_names, data.columns)
    }
    rows = [dict(zip(columns, values, strict=True)) for values in zip(*columns.values(), strict=True)]
    return sorted(rows, key=lambda r: r["id"])


def test_every_table_is_found() -> None:
    assert TABLES == ["v3_ns"]
    assert len(SNAPSHOTS) == 7


@pytest.mark.parametrize(("name", "snap"), SNAPSHOTS)
def test_mor_reads_every_snapshot_as_iceberg_java(java_generic_fixtures: Path, name: str, snap: dict[str, Any]) -> None:
    info = json.loads((java_generic_fixtures / "expected" / name / "snapshots.json").read_text())
    expected_file = java_generic_fixtures / "expected" / name / f"{snap['snapshot_id']}.json"
    expected = [json.loads(line) for line in expected_file.read_text().splitlines()]
    assert len(expected) == snap["row_count"] > 0
    table = mor.StaticTable.from_metadata(str(java_generic_fixtures / info["final_metadata_file"]))
    assert as_rows(table.scan(snapshot_id=snap["snapshot_id"]).to_arrow()) == expected
    at_its_time = mor.StaticTable.from_metadata(str(java_generic_fixtures / snap["metadata_file"]))
    assert as_rows(at_its_time.scan().to_arrow()) == expected


def test_pyiceberg_reads_the_same_rows_before_the_equality_deletes(java_generic_fixtures: Path) -> None:
    """pyiceberg 0.12 reads nanosecond and unknown columns; it refuses equality deletes."""
    info = json.loads((java_generic_fixtures / "expected" / "v3_ns" / "snapshots.json").read_text())
    theirs = PyIcebergStaticTable.from_metadata(str(java_generic_fixtures / info["final_metadata_file"]))
    for snap in info["snapshots"][:3]:  # the appends before the first equality delete
        expected_file = java_generic_fixtures / "expected" / "v3_ns" / f"{snap['snapshot_id']}.json"
        expected = [json.loads(line) for line in expected_file.read_text().splitlines()]
        assert as_rows(theirs.scan(snapshot_id=snap["snapshot_id"]).to_arrow()) == expected


def test_mor_writes_on_the_java_table_and_iceberg_java_reads_it(java_generic_fixtures: Path, tmp_path: Path) -> None:
    """mor's DELETE (deletion vectors, by nanosecond text), UPDATE, append and delete by key on
    a copy of Java's table; Iceberg core's generic reader reads every new snapshot as mor does."""
    from fixture_copies import relocate_fixture
    from oracle_support import java_generic_rows

    from tests.conftest import GENERIC_FIXTURES_ROOT

    table = mor.StaticTable.from_metadata(relocate_fixture("v3_ns", tmp_path, SOURCE, str(GENERIC_FIXTURES_ROOT)))
    catalog = mor.load_catalog(tmp_path / "catalog", create=True)
    table = catalog.register_table("db.v3_ns", table.metadata_location)
    before = {s.snapshot_id for s in table.snapshots()}
    table.delete("ts > '2023-11-15 22:13:20.000000016' and ts < '2023-11-16 22:13:20.000000025'")
    table.update({"s": pa.scalar("updated")}, where="tz < '2023-11-14 22:13:19.999980000Z'")
    table.append(pa.table({"id": pa.array([40, 41], pa.int32()), "ts": pa.array([1, None], pa.timestamp("ns")),
                           "tz": pa.array([None, -1], pa.timestamp("ns", tz="UTC")), "s": ["a", "b"]}))  # fmt: skip
    table.delete_rows(pa.table({"id": pa.array([0, 33], pa.int32())}))
    new = [s.snapshot_id for s in table.snapshots() if s.snapshot_id not in before]
    assert len(new) == 4
    java = java_generic_rows([(table.metadata_location, s) for s in new], tmp_path)
    for snapshot_id, theirs in zip(new, java, strict=True):
        ours = as_rows(table.scan(snapshot_id=snapshot_id).to_arrow())
        assert sorted(theirs, key=lambda r: r["id"]) == ours, f"snapshot {snapshot_id}"
