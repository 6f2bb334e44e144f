"""Iceberg-Spark, the reference implementation, on the same tables: the DML section's scattered
cases at the scale's `iceberg_spark_fractions` as Spark SQL (`DELETE FROM`, `UPDATE`, `MERGE INTO`) in
merge-on-read and copy-on-write mode, and reads of the read section's tables, in one Spark 3.5
session of the oracle's environment (suite/iceberg_spark_worker.py; local[2], as the machine
has). mor's numbers for the same cases are copied next to Spark's."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from common import REPO_ROOT, BenchmarkError

from suite.context import Context
from suite.dml import MOR_COW, MOR_MOR, WAREHOUSE, cases, expected_after
from suite.dml_report import format_bytes

TITLE = "Iceberg-Spark (the reference implementation) on the same tables"
ORACLE_DIR = REPO_ROOT.parent / "shared" / "tools" / "iceberg-oracle"
ORACLE_VENV = Path(os.environ.get("MOR_ORACLE_VENV", REPO_ROOT / ".oracle-venv"))
MODES = ("merge-on-read", "copy-on-write")
# The read section's tables Spark reads: one of each kind of delete (and none), to keep the
# report within its time.
READ_STATES = ("no_deletes", "position_0.1", "copy_on_write_0.1", "equality_0.01", "deletion_vector_0.1")
MOR_ENGINE = {"merge-on-read": MOR_MOR, "copy-on-write": MOR_COW}


def run(ctx: Context, earlier: dict[str, Any]) -> dict[str, Any]:
    if not ctx.scale.spark:
        return {"skipped": "this scale runs no Spark"}
    dml_jobs = [
        {"id": c.id, "verb": c.verb, "predicate": c.predicate, "source": c.source, "expected": expected_after(ctx, c), "modes": list(MODES)}
        for c in cases(ctx) if c.fraction in ctx.scale.iceberg_spark_fractions and c.layout == "scattered"
    ]  # fmt: skip
    states = earlier.get("reads", {}).get("states", {})
    read_jobs = [{"state": name, **{k: s[k] for k in ("metadata", "data_files", "expected")}}
                 for name, s in states.items() if name in READ_STATES]  # fmt: skip
    table = ctx.fresh_table(WAREHOUSE)
    request = {
        "hadoop_warehouse": str(ctx.data_dir / "iceberg-spark-catalog"),
        "dml_table": {"metadata": table.metadata_location, "warehouse_root": str(ctx.warehouse(WAREHOUSE))},
        "dml": dml_jobs, "reads": read_jobs,
        "repeat_dml": ctx.scale.dml_repeat, "repeat_reads": ctx.scale.read_repeat,
    }  # fmt: skip
    steps = 2 + len(dml_jobs) * len(MODES) + len(read_jobs)
    with ctx.section(TITLE, steps) as step:
        step("setting up the oracle's environment")
        env = {**os.environ, "ORACLE_VENV": str(ORACLE_VENV)}
        subprocess.run(["bash", str(ORACLE_DIR / "setup.sh")], check=True, env=env, capture_output=True)
        step("starting Spark 3.5 with Iceberg 1.10")
        result = _run_worker(ctx, request, env, step)
    result["mor"] = _mor_reference(earlier)
    return result


def _run_worker(ctx: Context, request: dict[str, Any], env: dict[str, str], step: Any) -> dict[str, Any]:
    request_file, result_file = ctx.data_dir / "iceberg-spark-request.json", ctx.data_dir / "iceberg-spark-result.json"
    request_file.write_text(json.dumps(request))
    result_file.unlink(missing_ok=True)
    script = Path(__file__).with_name("iceberg_spark_worker.py")
    command = [str(ORACLE_VENV / "bin" / "python"), str(script), str(ORACLE_DIR), str(request_file), str(result_file)]
    log: list[str] = []
    with subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as worker:
        assert worker.stdout is not None
        for line in worker.stdout:  # one line per finished job: the progress display follows it
            log.append(line.rstrip())
            if line.startswith("[iceberg-spark]"):
                step(line.removeprefix("[iceberg-spark]").split(":")[0].strip())
    if worker.returncode != 0:
        raise BenchmarkError(f"the Iceberg-Spark worker failed (exit {worker.returncode}): " + " | ".join(log[-15:]))
    return json.loads(result_file.read_text())


def _mor_reference(earlier: dict[str, Any]) -> dict[str, Any]:
    """mor's runs of the same cases and its reads of the same tables, from this run's sections."""
    dml = {c["id"]: {mode: c["runs"].get(engine) for mode, engine in MOR_ENGINE.items()} for c in earlier.get("dml", {}).get("cases", [])}
    reads = earlier.get("reads", {}).get("readers", {})
    return {"dml": dml, "reads": {state: forms.get("aggregate", {}).get("mor") for state, forms in reads.items()}}


# -- the report -------------------------------------------------------------------------------


def render(result: dict[str, Any], out_dir: Path) -> str:
    if "skipped" in result:
        return f"## {TITLE}\n\nSkipped: {result['skipped']}.\n"
    lines = [f"## {TITLE}", ""]
    lines += [
        f"Spark {result['spark_version']} with Iceberg 1.10.2, `local[2]`, driven from the oracle's environment. DML runs on "
        "mor's table itself (its metadata adopted by a Hadoop catalog; rolled back after each statement). Cells: seconds, "
        "bytes written; mor's local verbs on the same case beside them.",
        "",
        "| case | Iceberg-Spark merge-on-read | Iceberg-Spark copy-on-write | mor merge-on-read | mor copy-on-write |",
        "|---|---|---|---|---|",
    ]
    for case_id, modes in result["dml"].items():
        mor = result["mor"]["dml"].get(case_id, {})
        cells = [_cell(modes.get(m)) for m in MODES] + [_cell(mor.get(m)) for m in MODES]
        lines.append(f"| {case_id} | " + " | ".join(cells) + " |")
    if result["reads"]:
        lines += [
            "",
            "Reads, each by the same Spark SQL aggregate over every column (count, sums, lengths): Iceberg-Spark's "
            "reader against this Spark's native Parquet read of the same data files with deletes ignored (its floor); "
            "mor's aggregate over its own streamed batches (read section) beside them.",
            "",
            "| table | native Parquet (floor) | Iceberg-Spark | Iceberg-Spark / floor | mor aggregate |",
            "|---|---|---|---|---|",
        ]
        for state, readers in result["reads"].items():
            floor, spark = readers.get("native_parquet", {}), readers.get("iceberg_spark", {})
            ratio = f"{spark['median_seconds'] / floor['median_seconds']:.2f}x" if _ok(floor) and _ok(spark) else ""
            lines.append(f"| {state} | {_cell(floor)} | {_cell(spark)} | {ratio} | {_cell(result['mor']['reads'].get(state))} |")
    return "\n".join(lines) + "\n"


def _ok(run: dict[str, Any] | None) -> bool:
    return bool(run) and run.get("status") == "ok"  # type: ignore[union-attr]


def _cell(run: dict[str, Any] | None) -> str:
    if not run:
        return "not run"
    if run.get("status") != "ok":
        return f"{run.get('status')}: {str(run.get('detail', ''))[:60]}"
    size = f", {format_bytes(run['bytes_written'])}" if "bytes_written" in run else ""
    return f"{run['median_seconds']:.2f} s{size}"


def targets(result: dict[str, Any]) -> list[dict[str, Any]]:
    if "skipped" in result:
        return []
    out = []
    spark = result["dml"].get("delete/scattered/0.001", {}).get("merge-on-read")
    mor = result["mor"]["dml"].get("delete/scattered/0.001", {}).get("merge-on-read")
    if _ok(spark) and _ok(mor):
        out.append({"target": "mor's local DELETE (0.1%, merge-on-read) faster than Iceberg-Spark local[2] on the same table",
                    "met": mor["median_seconds"] < spark["median_seconds"],
                    "measured": f"{spark['median_seconds'] / mor['median_seconds']:.1f}x "
                                f"({mor['median_seconds']:.2f} s vs {spark['median_seconds']:.2f} s)"})  # fmt: skip
    spark_read = result["reads"].get("position_0.1", {}).get("iceberg_spark")
    mor_read = result["mor"]["reads"].get("position_0.1")
    if _ok(spark_read) and _ok(mor_read):
        out.append({"target": "mor's read (10% position deletes, aggregate) faster than Iceberg-Spark local[2]",
                    "met": mor_read["median_seconds"] < spark_read["median_seconds"],
                    "measured": f"{spark_read['median_seconds'] / mor_read['median_seconds']:.1f}x "
                                f"({mor_read['median_seconds']:.2f} s vs {spark_read['median_seconds']:.2f} s)"})  # fmt: skip
    return out
