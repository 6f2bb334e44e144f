"""DELETE, UPDATE and UPSERT at 0.01% to 10% of the rows: merge-on-read against copy-on-write,
and against pyiceberg (copy-on-write DELETE, `upsert`). Iceberg-Spark replays the same cases
(suite/iceberg_spark.py).

Every run starts from the same table (Context.fresh_table) and is checked afterwards: mor reads
the result, and its row count and id sum must be what the case leaves. Written bytes are every
file that appeared under the warehouse during the call (data, delete files, manifests,
metadata), classified by header (common.diff_files).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from common import diff_files, list_files, timed_dml

from suite.context import Context, expected
from suite.dml_names import MOR_COW, MOR_EQ, MOR_MOR, PYICEBERG, TITLE

WAREHOUSE = "dml"
DATA_COLUMNS = {"id", "category", "value", "ts", "payload"}
NEW_ROWS_SHARE = 0.1  # an UPSERT source: existing keys plus this share of new ones


@dataclass(frozen=True)
class Case:
    verb: str  # delete | update | upsert
    layout: str  # scattered (rows at random positions in every file) | clustered (one id range)
    fraction: float
    predicate: str  # delete/update: the condition; upsert: "" (the source names the rows)
    affected: int  # rows deleted, updated or upserted (existing)
    new_rows: int = 0  # upsert: keys not in the table
    source: str = ""  # upsert: a Parquet file of the source rows

    @property
    def id(self) -> str:
        return f"{self.verb}/{self.layout}/{self.fraction:g}"


def cases(ctx: Context) -> list[Case]:
    out = []
    for f in ctx.scale.fractions:
        for layout in ("scattered", "clustered"):
            predicate = f"value < {f!r}" if layout == "scattered" else f"id < {round(f * ctx.rows)}"
            out.append(Case("delete", layout, f, predicate, _matching(ctx, predicate)))
    for f in ctx.scale.fractions:
        out.append(Case("update", "scattered", f, f"value < {f!r}", _matching(ctx, f"value < {f!r}")))
    for f in ctx.scale.fractions:
        source, existing, new = _upsert_source(ctx, f)
        out.append(Case("upsert", "scattered", f, "", existing, new, str(source)))
    return out


def _matching(ctx: Context, predicate: str) -> int:
    column, _, bound = predicate.split()
    return int(pc.sum(pc.less(ctx.data[column], float(bound) if column == "value" else int(bound))).as_py() or 0)


def _upsert_source(ctx: Context, fraction: float) -> tuple[Path, int, int]:
    """round(rows * fraction) existing ids (random, fixed seed) with value + 1, and a tenth as
    many new ids; written once as Parquet for the engines that read it from a file."""
    rng = np.random.default_rng(ctx.seed)
    existing = max(1, round(ctx.rows * fraction))
    new = max(1, round(existing * NEW_ROWS_SHARE))
    ids = np.sort(rng.choice(ctx.rows, size=existing, replace=False))
    old = ctx.data.take(pa.array(ids))
    old = old.set_column(old.schema.get_field_index("value"), "value", pc.add(old["value"], 1.0))
    fresh = ctx.data.slice(0, new).set_column(0, "id", pa.arange(ctx.rows, ctx.rows + new))
    path = ctx.data_dir / f"upsert-source-{fraction:g}-{ctx.rows}-{ctx.seed}.parquet"
    if not path.exists():
        pq.write_table(pa.concat_tables([old, fresh]).combine_chunks(), path)
    return path, existing, new


def expected_after(ctx: Context, case: Case) -> dict[str, int]:
    if case.verb == "delete":
        column, _, bound = case.predicate.split()
        value = float(bound) if column == "value" else int(bound)
        return expected(ctx, ctx.selected_ids(pc.field(column) < value))
    if case.verb == "update":
        return expected(ctx)
    new_ids = ctx.rows * case.new_rows + case.new_rows * (case.new_rows - 1) // 2  # ids rows..rows+new-1
    return {"rows": ctx.rows + case.new_rows, "id_sum": ctx.id_sum + new_ids}


# -- running ----------------------------------------------------------------------------------


def run(ctx: Context, earlier: dict[str, Any]) -> dict[str, Any]:
    all_cases = cases(ctx)
    engines = {c.id: _engines(c) for c in all_cases}
    steps = sum(len(e) for e in engines.values()) * ctx.scale.dml_repeat
    result: dict[str, Any] = {"warehouse": str(ctx.warehouse(WAREHOUSE)), "cases": []}
    with ctx.section(TITLE, steps + 1) as step:
        step("warming up")
        _warm_up(ctx, all_cases)
        for case in all_cases:
            runs: dict[str, Any] = {}
            for engine in engines[case.id]:
                samples = []
                for _ in range(ctx.scale.dml_repeat):
                    step(f"{case.id} {engine}")
                    samples.append(_one_run(ctx, case, engine))
                runs[engine] = _summary(samples)
            result["cases"].append({**asdict(case), "id": case.id, "expected": expected_after(ctx, case), "runs": runs})
    ctx.fresh_table(WAREHOUSE)  # Iceberg-Spark starts from the same table
    return result


def _warm_up(ctx: Context, all_cases: list[Case]) -> None:
    """Untimed: each mor verb and mode once, on the smallest case, so that no measured run pays
    for importing the modules a process imports on its first DML."""
    for verb in ("delete", "update", "upsert"):
        case = min((c for c in all_cases if c.verb == verb), key=lambda c: c.fraction)
        for engine in _engines(case):
            if not engine.startswith("pyiceberg"):
                _one_run(ctx, case, engine)


def _engines(case: Case) -> list[str]:
    if case.verb == "upsert":
        return [MOR_MOR, MOR_EQ, MOR_COW, "pyiceberg upsert"]
    if case.verb == "delete":
        return [MOR_MOR, MOR_COW, PYICEBERG]
    return [MOR_MOR, MOR_COW]


def _one_run(ctx: Context, case: Case, engine: str) -> dict[str, Any]:
    table = ctx.fresh_table(WAREHOUSE)
    root = ctx.warehouse(WAREHOUSE)
    if engine.startswith("pyiceberg"):
        run = _pyiceberg_run(ctx, case, root)
    else:
        run = timed_dml(table, root, mor_call(table, case, engine), DATA_COLUMNS)
        run = {"status": "ok", "seconds": run["wall_seconds"], "cpu_seconds": run["cpu_seconds"],
               "bytes_written": run["bytes_written"], "files_written": run["files"]["new_files"],
               "by_kind": run["files"]["new_by_kind"]}  # fmt: skip
    if run["status"] == "ok":
        run["check"] = _check(ctx, case)
        if not run["check"]["ok"]:
            run["status"] = "wrong"
    return run


def mor_call(table: Any, case: Case, engine: str) -> Callable[[], Any]:
    mode = "copy-on-write" if engine == MOR_COW else "merge-on-read"
    if case.verb == "delete":
        return lambda: table.delete(case.predicate, mode=mode)
    if case.verb == "update":
        return lambda: table.update({"value": pc.field("value") + 1}, where=case.predicate, mode=mode)
    source = pq.read_table(case.source)  # read before the clock starts, as every engine's source
    strategy = "equality" if engine == MOR_EQ else "position"
    return lambda: table.upsert(source, on=["id"], mode=mode, strategy=strategy)


def _check(ctx: Context, case: Case) -> dict[str, Any]:
    """mor's read of the result against what the case must leave."""
    from common import TABLE_NAME

    import mor

    current = mor.load_catalog(ctx.warehouse(WAREHOUSE)).load_table(TABLE_NAME)
    ids = current.scan(columns=["id"]).to_arrow()["id"]
    got = {"rows": len(ids), "id_sum": int(pc.sum(ids).as_py() or 0)}
    want = expected_after(ctx, case)
    return {**got, "ok": got == want and pc.count_distinct(ids).as_py() == len(ids)}


def _pyiceberg_run(ctx: Context, case: Case, root: Path) -> dict[str, Any]:
    """pyiceberg's call in a child process (its SqlCatalog over mor's catalog.db): timed there,
    without the import and the table load; killed after the reader timeout."""
    before = list_files(root)
    command = [sys.executable, str(Path(__file__).with_name("pyiceberg_dml.py")), str(root), case.verb, case.predicate, case.source]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=ctx.scale.dml_timeout_seconds)
    except subprocess.TimeoutExpired:
        return {"status": "timeout", "detail": f"did not finish in {ctx.scale.dml_timeout_seconds:.0f} s"}
    if done.returncode != 0:
        return {"status": "error", "detail": done.stderr.strip().splitlines()[-1][:300] if done.stderr.strip() else "?"}
    timing = json.loads(done.stdout.strip().splitlines()[-1])
    written = diff_files(root, before, list_files(root), DATA_COLUMNS)
    return {"status": "ok", "seconds": timing["seconds"], "cpu_seconds": timing["cpu_seconds"],
            "bytes_written": written["new_bytes"], "files_written": written["new_files"], "by_kind": written["new_by_kind"]}  # fmt: skip


def _summary(samples: list[dict[str, Any]]) -> dict[str, Any]:
    ok = [s for s in samples if s["status"] == "ok"]
    if len(ok) < len(samples):
        bad = next(s for s in samples if s["status"] != "ok")
        return {"status": bad["status"], "detail": bad.get("detail") or bad.get("check"), "samples": samples}
    return {"status": "ok", "median_seconds": statistics.median(s["seconds"] for s in ok),
            "bytes_written": int(statistics.median(s["bytes_written"] for s in ok)),
            "files_written": int(statistics.median(s["files_written"] for s in ok)), "samples": samples}  # fmt: skip


# -- the report -------------------------------------------------------------------------------


def render(result: dict[str, Any], out_dir: Path) -> str:
    from suite.dml_report import render_dml

    return render_dml(result, out_dir)


def targets(result: dict[str, Any]) -> list[dict[str, Any]]:
    from suite.dml_report import dml_targets

    return dml_targets(result)
