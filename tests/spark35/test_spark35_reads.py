"""mor.spark.read_table on Spark 3.5 (no Python data sources: native scans filtered by mor's
delete functions, the same jar as on Spark 4) gives exactly the local reader's rows and mor's
Spark types, at the last two snapshots of mor-written tables (position and equality deletes,
upserts, merges, deletion vectors, schema evolution, the interop scenarios: where their deletes
have piled up) and at the last snapshot of each Iceberg Java fixture. Spark 4 reads every
snapshot of them through the same jar functions (tests/spark); this checks Spark 3.5's side.

The tables are built and the local reader runs here (pyspark 4 env); one subprocess in the
Spark 3.5 env (.spark35-venv, built once by spark35_env.py) reads each of those snapshots and
writes the rows with Spark's Parquet writer.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from interop_tables import scenario_tables
from java_fixtures import JAVA_SNAPSHOTS, to_json_rows
from pyiceberg.expressions import In
from pyiceberg.types import TimeType, UUIDType
from spark35_env import ensure_spark35

import mor

pytestmark = pytest.mark.spark
pytest.importorskip("pyspark", reason="the expected Spark types come from mor.spark.types (mor[spark])")

HERE = Path(__file__).resolve().parent
_helpers_spec = importlib.util.spec_from_file_location("spark35_spark_helpers", HERE.parent / "spark" / "spark_helpers.py")
assert _helpers_spec is not None and _helpers_spec.loader is not None
spark_helpers = importlib.util.module_from_spec(_helpers_spec)
_helpers_spec.loader.exec_module(spark_helpers)


def json_rows(rows: list[dict[str, Any]]) -> list[str]:
    return sorted(json.dumps(r, sort_keys=True) for r in to_json_rows(rows))


def v3_deletion_vectors(table: mor.Table) -> None:
    table.append(spark_helpers.rows(range(0, 120)))
    table.delete(In("id", list(range(0, 120, 9))))
    table.delete("id > 100")
    table.delete_rows(pa.table({"id": pa.array([1, 2], pa.int64())}))
    table.upsert(spark_helpers.rows([3, 4, 700], n=2), on=["id"])


def evolved(table: mor.Table) -> None:
    table.append(spark_helpers.rows(range(0, 60)))
    table.delete("id < 5")
    with table.update_schema() as update:
        update.rename_column("n", "n2").add_column("extra", pa.string()).drop_column("category")
    table.delete_rows(pa.table({"n2": pa.array([20, 21], pa.int64())}))
    table.upsert(
        pa.table(
            {
                "id": pa.array([30, 999], pa.int64()),
                "n2": pa.array([1, 2], pa.int64()),
                "ts": pa.array([None, None], pa.timestamp("us", tz="UTC")),
                "extra": ["x", None],
            }
        ),
        on=["id"],
        strategy="equality",
    )


def build_tables(catalog: mor.Catalog) -> list[mor.Table]:
    # The partitioned history only: the unpartitioned one exercises the same jar functions,
    # and Spark 4 reads both (tests/spark).
    partitioned = catalog.create_table("db.part", schema=spark_helpers.SCHEMA, partition_by=["category", "day(ts)"])
    spark_helpers.build_history(partitioned)
    v3 = catalog.create_table("db.v3", schema=spark_helpers.SCHEMA, partition_by=["bucket(2, id)"], format_version=3)
    v3_deletion_vectors(v3)
    evo = catalog.create_table("db.evo", schema=spark_helpers.SCHEMA)
    evolved(evo)
    # One layout of the interop scenarios (the partitioned one): Spark 4 reads all three, and the
    # jar is the same; three would add a minute to the suite.
    return [partitioned, v3, evo, *scenario_tables(catalog, layouts=("category-day",))]


def natively_typed_columns(table: mor.Table, snapshot_id: int) -> list[str] | None:
    """Without uuid and time columns, which the DataFrame plan refuses (None: every column)."""
    fields = table.scan(snapshot_id=snapshot_id).projection.fields
    kept = [f.name for f in fields if not isinstance(f.field_type, (UUIDType, TimeType))]
    return None if len(kept) == len(fields) else kept


def last_snapshots(snapshots: list[Any], n: int) -> list[Any]:
    """The last `n` snapshots of each Java fixture table: where its deletes have piled up
    (Spark 4 reads every snapshot of each, tests/spark/test_dataframe_plan.py)."""
    by_table: dict[str, list[Any]] = {}
    for snap in snapshots:
        by_table.setdefault(snap.table, []).append(snap)
    return [snap for kept in by_table.values() for snap in sorted(kept, key=lambda s: s.sequence_number)[-n:]]


def java_home() -> dict[str, str]:
    if os.environ.get("JAVA_HOME"):
        return {}
    for candidate in sorted(Path("/usr/lib/jvm").glob("*17*")):
        if (candidate / "bin" / "java").exists():
            return {"JAVA_HOME": str(candidate)}
    return {}


def test_spark35_reads_the_last_snapshots_as_the_local_reader(tmp_path: Path, java_fixtures: Path) -> None:
    from mor.spark.types import spark_schema

    python = ensure_spark35()
    catalog = mor.load_catalog(tmp_path / "warehouse", create=True)
    tables = build_tables(catalog)
    cases: list[tuple[mor.Table, int]] = [(t, s.snapshot_id) for t in tables for s in t.snapshots()[-2:]]
    fixtures = {}
    for snap in last_snapshots(JAVA_SNAPSHOTS, 1):
        location = str(java_fixtures / snap.final_metadata_file)
        fixtures.setdefault(location, mor.StaticTable.from_metadata(location))
        cases.append((fixtures[location], snap.snapshot_id))
    requests = []
    for i, (table, snapshot_id) in enumerate(cases):
        columns = natively_typed_columns(table, snapshot_id)
        requests.append(
            {"metadata": table.metadata_location, "snapshot_id": snapshot_id, "columns": columns, "out": str(tmp_path / f"out-{i}")}
        )
    request_file = tmp_path / "requests.json"
    request_file.write_text(json.dumps(requests))
    done = subprocess.run(
        [str(python), str(HERE / "driver35.py"), str(request_file)],
        env={**os.environ, **java_home(), "PYSPARK_PYTHON": str(python)}, capture_output=True, text=True, timeout=1200,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-6000:]
    for (table, snapshot_id), request in zip(cases, requests):
        scan = table.scan(snapshot_id=snapshot_id, columns=request["columns"])
        where = f"{table.metadata_location} snapshot {snapshot_id}"
        assert Path(request["out"] + ".schema").read_text() == spark_schema(scan.projection).simpleString(), where
        got = pq.read_table(request["out"]).to_pylist() if any(Path(request["out"]).glob("*.parquet")) else []
        assert json_rows(got) == json_rows(scan.to_arrow().to_pylist()), where
