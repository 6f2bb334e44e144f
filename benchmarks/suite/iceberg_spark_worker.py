"""Iceberg-Spark (Spark 3.5.9 + Iceberg 1.10.2, the oracle's environment) on the report's
tables: run by suite/iceberg_spark.py with the oracle's Python, never imported by mor's.

    <oracle python> iceberg_spark_worker.py <oracle dir> <request.json> <result.json>

DML runs on mor's own table: its current metadata file is copied into a Hadoop catalog folder
as `v1.metadata.json`, so Spark's commits go there while the data files, and the new ones
Spark writes (under the table's location), are mor's. After each statement the table is
rolled back to the starting snapshot (`rollback_to_snapshot`), so every run starts from the
same state, as mor's do. Reads load each state by its metadata file. Stdlib and pyspark only
(plus pyarrow to tell data from delete files).
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # benchmarks/: the shared aggregate
from proc_cpu import tree_cpu_seconds
from spark_aggregate import sum_every_column

TABLE = "hc.bench.events"
STATEMENTS = {
    "delete": "DELETE FROM {t} WHERE {predicate}",
    "update": "UPDATE {t} SET value = value + 1 WHERE {predicate}",
    "upsert": "MERGE INTO {t} t USING (SELECT * FROM parquet.`{source}`) s ON t.id = s.id "
    "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
}
MODE_PROPERTIES = ("write.delete.mode", "write.update.mode", "write.merge.mode")


def main(oracle_dir: str, request_file: str, result_file: str) -> int:
    sys.path.insert(0, oracle_dir)
    import oracle  # the oracle's session builder: jars, UTC, local[2]

    request = json.loads(Path(request_file).read_text())
    hadoop = Path(request["hadoop_warehouse"])
    spark = oracle.spark_session(warehouse=hadoop.as_uri(), app="mor-report-iceberg-spark",
                                 extra_conf={"spark.driver.memory": "4g"})  # fmt: skip
    result: dict[str, Any] = {"spark_version": spark.version, "dml": {}, "reads": {}}
    if request["dml"]:
        base = _adopt(hadoop, request["dml_table"]["metadata"])
        watched = [Path(request["dml_table"]["warehouse_root"]), hadoop]
        _warm_up(spark, request["dml"], base)
        for job in request["dml"]:
            for mode in job["modes"]:
                result["dml"].setdefault(job["id"], {})[mode] = _dml(spark, job, mode, base, watched, request["repeat_dml"])
                _log(f"{job['id']} {mode}: {_brief(result['dml'][job['id']][mode])}")
    for job in request["reads"]:
        result["reads"][job["state"]] = _reads(spark, job, request["repeat_reads"])
        _log(f"read {job['state']}: " + ", ".join(f"{k} {_brief(v)}" for k, v in result["reads"][job["state"]].items()))
    spark.stop()
    Path(result_file).write_text(json.dumps(result, indent=1))
    return 0


def _adopt(hadoop: Path, metadata: str) -> int:
    """mor's table as `hc.bench.events` of a Hadoop catalog; its current snapshot id."""
    folder = hadoop / "bench" / "events" / "metadata"
    shutil.rmtree(folder.parent, ignore_errors=True)
    folder.mkdir(parents=True)
    source = metadata.removeprefix("file://")
    shutil.copy(source, folder / "v1.metadata.json")
    (folder / "version-hint.text").write_text("1")
    return int(json.loads(Path(source).read_text())["current-snapshot-id"])


def _warm_up(spark: Any, jobs: list[dict[str, Any]], base: int) -> None:
    """The session's first statement of each kind pays for class loading and code generation:
    not what is compared. The first job of each verb runs once in each mode, untimed."""
    for verb in dict.fromkeys(job["verb"] for job in jobs):
        job = next(j for j in jobs if j["verb"] == verb)
        for mode in job["modes"]:
            _set_mode(spark, mode)
            spark.sql(STATEMENTS[verb].format(t=TABLE, predicate=job["predicate"], source=job["source"]))
            spark.sql(f"CALL hc.system.rollback_to_snapshot('bench.events', {base})")


def _set_mode(spark: Any, mode: str) -> None:
    props = ", ".join(f"'{p}' = '{mode}'" for p in MODE_PROPERTIES)
    spark.sql(f"ALTER TABLE {TABLE} SET TBLPROPERTIES ({props})")


def _dml(spark: Any, job: dict[str, Any], mode: str, base: int, watched: list[Path], repeat: int) -> dict[str, Any]:
    _set_mode(spark, mode)
    statement = STATEMENTS[job["verb"]].format(t=TABLE, predicate=job["predicate"], source=job["source"])
    samples = []
    for _ in range(repeat):
        before = _files(watched)
        c0, t0 = tree_cpu_seconds(), time.perf_counter()
        spark.sql(statement)
        seconds, cpu = time.perf_counter() - t0, tree_cpu_seconds() - c0
        new = {p: size for p, size in _files(watched).items() if p not in before}
        row = spark.sql(f"SELECT count(*) AS rows, sum(id) AS id_sum FROM {TABLE}").collect()[0]
        spark.sql(f"CALL hc.system.rollback_to_snapshot('bench.events', {base})")
        got = {"rows": row["rows"], "id_sum": int(row["id_sum"] or 0)}
        if got != job["expected"]:
            return {"status": "wrong", "detail": f"{got}, expected {job['expected']}"}
        samples.append({"seconds": seconds, "cpu_seconds": cpu, "bytes_written": sum(new.values()),
                        "files_written": len(new), "by_kind": _kinds(new)})  # fmt: skip
    return {"status": "ok", "median_seconds": statistics.median(s["seconds"] for s in samples),
            "bytes_written": int(statistics.median(s["bytes_written"] for s in samples)),
            "files_written": int(statistics.median(s["files_written"] for s in samples)), "samples": samples}  # fmt: skip


def _files(roots: list[Path]) -> dict[str, int]:
    out = {}
    for root in roots:
        for folder, _, names in os.walk(root):
            for name in names:
                path = os.path.join(folder, name)
                try:
                    out[path] = os.stat(path).st_size
                except FileNotFoundError:  # a temporary file that went meanwhile
                    continue
    return out


def _kinds(files: dict[str, int]) -> dict[str, dict[str, int]]:
    import pyarrow.parquet as pq

    kinds: dict[str, dict[str, int]] = {}
    for path, size in files.items():
        if path.endswith(".parquet"):
            kind = "position_delete_parquet" if pq.read_schema(path).names[:2] == ["file_path", "pos"] else "data_parquet"
        elif path.endswith(".avro"):
            kind = "manifests_avro"
        elif path.endswith(".json") or path.endswith(".text"):
            kind = "metadata"
        else:
            kind = "other"
        entry = kinds.setdefault(kind, {"files": 0, "bytes": 0})
        entry["files"] += 1
        entry["bytes"] += size
    return kinds


def _reads(spark: Any, job: dict[str, Any], repeat: int) -> dict[str, Any]:
    """Iceberg-Spark's read of the state and this Spark's native Parquet read of its data files
    (deletes ignored), both by the same aggregate over every column; one checked warm-up each."""
    readers = {
        "native_parquet": lambda: spark.read.parquet(*job["data_files"]),
        "iceberg_spark": lambda: spark.read.format("iceberg").load(job["metadata"]),
    }
    out: dict[str, Any] = {}
    for name, load in readers.items():
        row = sum_every_column(load()).collect()[0]
        if name == "iceberg_spark" and {"rows": row["rows"], "id_sum": int(row["id"] or 0)} != job["expected"]:
            out[name] = {"status": "wrong", "detail": f"{row['rows']} rows, id sum {row['id']}; expected {job['expected']}"}
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in readers if name not in out}
    for _ in range(repeat):
        for name in samples:
            c0, t0 = tree_cpu_seconds(), time.perf_counter()
            sum_every_column(readers[name]()).collect()
            samples[name].append((time.perf_counter() - t0, tree_cpu_seconds() - c0))
    for name, runs in samples.items():
        out[name] = {"status": "ok", "median_seconds": statistics.median(s for s, _ in runs),
                     "median_cpu_seconds": statistics.median(c for _, c in runs), "samples_seconds": [s for s, _ in runs]}  # fmt: skip
    return out


def _brief(run: dict[str, Any]) -> str:
    return f"{run['median_seconds']:.2f} s" if run.get("status") == "ok" else f"{run.get('status')}: {run.get('detail')}"


def _log(message: str) -> None:
    print(f"[iceberg-spark] {message}", flush=True)


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
