"""The Iceberg Java fixtures (``shared/fixtures/iceberg-java``): where they are, their snapshots,
and their rows in the fixtures' JSON-lines form. Shared by the interop and Spark tests."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

FIXTURES_SOURCE = Path(__file__).resolve().parents[1].parent / "shared" / "fixtures" / "iceberg-java"
# Ours, made the same way (tests/fixtures/gen_java_evolution.py): schema and partition evolution.
# Both are written into the same warehouse path, so they are copied into one folder to be read.
OWN_FIXTURES_SOURCE = Path(__file__).resolve().parent / "fixtures" / "iceberg-java"
FIXTURE_SOURCES = (FIXTURES_SOURCE, OWN_FIXTURES_SOURCE)


@dataclass(frozen=True)
class JavaSnapshot:
    """One snapshot of one fixture table, as ``expected/<table>/snapshots.json`` describes it."""

    table: str
    format_version: int
    final_metadata_file: str  # relative to the fixtures root
    metadata_file: str  # first metadata file where this snapshot is current
    snapshot_id: int
    sequence_number: int

    @property
    def test_id(self) -> str:
        return f"{self.table}-seq{self.sequence_number}"


def read_json_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def load_fixture_tables() -> dict[str, dict[str, Any]]:
    if not (FIXTURES_SOURCE / "expected").is_dir():
        pytest.fail(
            f"Iceberg Java fixtures not found at {FIXTURES_SOURCE}: the interop tests need the "
            "shared/ folder beside this checkout (shared/fixtures/iceberg-java/expected).",
            pytrace=False,
        )
    return {
        table_dir.name: json.loads((table_dir / "snapshots.json").read_text())
        for source in FIXTURE_SOURCES
        for table_dir in sorted((source / "expected").iterdir())
        if (table_dir / "snapshots.json").is_file()
    }


def fixture_source(table: str) -> Path:
    """The fixtures folder (shared or ours) that holds `table`."""
    return next(s for s in FIXTURE_SOURCES if (s / "expected" / table).is_dir())


def load_java_snapshots(tables: dict[str, dict[str, Any]]) -> list[JavaSnapshot]:
    return [
        JavaSnapshot(
            table=name,
            format_version=info["format_version"],
            final_metadata_file=info["final_metadata_file"],
            metadata_file=snap["metadata_file"],
            snapshot_id=snap["snapshot_id"],
            sequence_number=snap["sequence_number"],
        )
        for name, info in tables.items()
        for snap in info["snapshots"]
    ]


FIXTURE_TABLES = load_fixture_tables()
JAVA_SNAPSHOTS = load_java_snapshots(FIXTURE_TABLES)

SNAPSHOT_PARAMS = [pytest.param(snap, id=snap.test_id) for snap in JAVA_SNAPSHOTS]
TABLE_PARAMS = [pytest.param(name, id=name) for name in FIXTURE_TABLES]


def json_value(value: Any) -> Any:
    """A value as the fixtures spell it in JSON (timestamps: ISO-8601 UTC, 6 fraction digits;
    decimals as strings, binary as hex, maps as objects)."""
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(dt.UTC)
        return value.isoformat(timespec="microseconds")
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, (bytes, bytearray)):
        return value.hex()
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: json_value(v) for k, v in value.items()}
    if isinstance(value, list):
        if value and all(isinstance(v, tuple) and len(v) == 2 for v in value):  # an Arrow map
            return {str(k): json_value(v) for k, v in value}
        return [json_value(v) for v in value]
    return value


def to_json_rows(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows as they come back from writing them as JSON lines and parsing them again."""
    plain = [{name: json_value(value) for name, value in row.items()} for row in rows]
    return json.loads(json.dumps(plain))


def row_sort_key(row: dict[str, Any]) -> tuple[tuple[bool, Any], ...]:
    """Sort by all columns in schema order, NULLs first."""
    return tuple((value is not None, value) for value in row.values())


def describe_row_differences(expected: list[dict[str, Any]], actual: list[dict[str, Any]]) -> str:
    """Empty when the two row multisets are equal; else which ids are missing, extra or changed."""
    expected_counts = Counter(json.dumps(row) for row in expected)
    actual_counts = Counter(json.dumps(row) for row in actual)
    missing = [json.loads(row) for row in (expected_counts - actual_counts).elements()]
    extra = [json.loads(row) for row in (actual_counts - expected_counts).elements()]
    if not missing and not extra:
        return ""
    missing_ids = sorted({row.get("id") for row in missing}, key=str)
    extra_ids = sorted({row.get("id") for row in extra}, key=str)
    changed_ids = sorted(set(missing_ids) & set(extra_ids), key=str)
    lines = [
        f"expected {len(expected)} rows, got {len(actual)}",
        f"missing ids ({len(missing)} rows): {missing_ids[:40]}",
        f"extra ids ({len(extra)} rows): {extra_ids[:40]}",
        f"ids with changed values: {changed_ids[:40]}",
    ]
    lines += [f"  missing: {row}" for row in missing[:5]]
    lines += [f"  extra:   {row}" for row in extra[:5]]
    return "\n".join(lines)


def expected_rows_file(root: Path, snap: JavaSnapshot) -> Path:
    return root / "expected" / snap.table / f"{snap.snapshot_id}.json"
