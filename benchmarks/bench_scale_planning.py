"""Planning at lake scale (issue 53, item 5): cold `plan_files()` time and peak RSS of mor,
pyiceberg 0.12 and Iceberg Java 1.10 on tables of N data files + N position delete files.

The tables are bench_planning.py's synthetic files (planning opens no data file): data file i
holds ids [i * 100,000, (i + 1) * 100,000), and one position delete file names it. They are
committed through mor's own commit path (`commit(table, Changes(...))`) in M rounds of an append
of N / M data files and a commit of their N / M delete files (`--manifests`, default
max(1, N // 100,000)), manifest merging off, so the table has M data + M delete manifests. They
are cached under `--data-dir` by size: a second run plans the same table without building.

Every plan runs in a fresh process, so its peak RSS (VmHWM: ru_maxrss survives exec and could
report the parent's) is that planner's alone, with the process's baseline before planning
beside it. Per size and filter (a full scan; `id < X` selecting 1% of the data files):
  - mor: `mor.load_catalog(wh).load_table(t).scan(filter).plan_files()`, cold, then a second
    plan in the same process (warm: decoded manifests in mor's process-wide cache);
  - pyiceberg: `SqlCatalog(...).load_table(t).scan(row_filter).plan_files()` over mor's
    catalog.db, one plan, killed after `--pyiceberg-timeout`;
  - java: Iceberg Java 1.10.2 through ../shared/tools/iceberg-oracle (Spark 3.5 in local mode,
    driven by py4j): `table.newScan().filter(e).planFiles()` copied into an ArrayList inside
    the JVM, cold then warm. Its time is Iceberg's own `totalPlanningDuration` (a timer in the
    JVM from planFiles() to the close of its iterable), so neither JVM nor Spark start-up is
    counted. Peak RSS is the JVM's VmHWM, which includes Spark's session and depends on the
    heap limit (`--java-memory`); `live_heap_mb` (heap in use after a full GC, the plan held;
    `live_heap_before_mb` before planning) is the planner's own footprint. The warm plan runs
    with the cold plan's delete index still reachable in the JVM (held by the py4j or pool
    plumbing until the next plan ends; its tasks are freed): at 1M files that is ~2.4 GB more
    heap in use, and the warm time there is not a clean "JIT warm" number.
Checks (the run aborts on a disagreement): every mor plan has the expected tasks, each with exactly
one delete file; mor and pyiceberg return the same data files with the same delete files
(a digest of the sorted plan); Java's ScanReport counts the same data and delete files, and at
sizes up to `--java-check-max` its plan, fetched through py4j after the timing, has the same digest.
A mor plan that fails aborts the run; pyiceberg and Java failures and timeouts are recorded.

    .venv/bin/python benchmarks/bench_scale_planning.py --sizes 10000,100000,1000000 \
        --mor-rev HEAD --out benchmarks/results/scale_planning.json

`--stream` measures mor's plan as its reads consume it (`scan.plan_tasks()`: tasks counted as
they come, none held), the plan whose cost the lake-scale targets are about; without it mor's
plan is `plan_files()`, a list of every task (`--read-plan`: without column metrics).

`--mor-rev REV` exports mor as committed at REV (`git archive`, under `--data-dir`) and makes
this process and every child import it (the tables are built by it too); `--mor-path DIR`
imports it from DIR. Without either, the working tree's mor is measured, in whatever state it is.

The Java child runs in the oracle's virtualenv, which has no mor: this module imports mor,
pyiceberg and the other benchmarks only inside the functions that use them.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parent
ORACLE_DIR = REPO_ROOT.parent / "shared" / "tools" / "iceberg-oracle"
ORACLE_VENV = Path(os.environ.get("MOR_ORACLE_VENV", REPO_ROOT / ".oracle-venv"))
BUILDER_VERSION = 1  # raise when the synthesized table changes: cached tables of another version are rebuilt
RESULT_MARK = "SCALE-PLANNING-RESULT "
ROWS_PER_FILE = 100_000  # bench_planning's: data file i holds ids [i * ROWS_PER_FILE, (i + 1) * ROWS_PER_FILE)
PLANNERS = ("mor", "pyiceberg", "java")


# --------------------------------------------------------------------------- the table


def default_manifests(files: int) -> int:
    return max(1, files // 100_000)


def build_table(root: Path, files: int, manifests: int) -> dict[str, Any]:
    """A fresh warehouse: `manifests` appends of files // manifests data files, each followed by
    a commit of one position delete file per data file it added (so delete file i applies to
    data file i by its sequence number and by `referenced_data_file`). Manifest merging is off:
    one manifest per commit, as many of each kind as asked."""
    from bench_planning import SCHEMA, data_file, manifest_counts, merge_property, position_delete_file
    from common import TABLE_NAME, remove_warehouse

    import mor
    from mor.commit.snapshot_producer import Changes
    from mor.dml.runner import commit
    from mor.format.spec import Operation

    remove_warehouse(root)
    root.mkdir(parents=True)
    started = time.perf_counter()
    table = mor.load_catalog(str(root)).create_table(TABLE_NAME, schema=SCHEMA, properties=merge_property(False))
    location = table.location.rstrip("/")
    for m in range(manifests):
        chunk = range(files * m // manifests, files * (m + 1) // manifests)
        added = [data_file(location, i, False) for i in chunk]
        commit(table, Changes(Operation.APPEND, added_data=added))
        commit(table, Changes(Operation.DELETE, added_deletes=[position_delete_file(d, i) for i, d in zip(chunk, added)]))
    return {"builder": BUILDER_VERSION, "files": files, "seconds": time.perf_counter() - started,
            "manifests": manifest_counts(table), "metadata_location": table.metadata_location,
            "peak_rss_mb": status_mb("VmHWM"), "mor_imported_from": str(Path(mor.__file__).parent)}  # fmt: skip


def ensure_table(data_dir: Path, files: int, manifests: int, timeout: float) -> dict[str, Any]:
    """The cached table of this size, built (in a child process, so this one stays small) when
    missing. The builder writes `build.json` last: a table without it is rebuilt."""
    root = data_dir / f"scale-{files}-{manifests}"
    marker = root / "build.json"
    if marker.exists():
        build = json.loads(marker.read_text())
        if build.get("builder") == BUILDER_VERSION:
            return {**build, "warehouse": str(root), "cached": True}
    spec = {"root": str(root), "files": files, "manifests": manifests}
    build = run_child([sys.executable, __file__, "--child", "build", json.dumps(spec)], timeout)
    if build["status"] != "ok":
        raise RuntimeError(f"building {files} files: {build}")
    return {**build, "warehouse": str(root), "cached": False}


# --------------------------------------------------------------------------- the planners (children)


def status_mb(key: str, pid: int | str = "self") -> float:
    """VmHWM (peak) or VmRSS (now) of a process, in MB."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {key} in /proc/{pid}/status")


def plan_digest(plan: Iterable[tuple[str, Iterable[str]]]) -> dict[str, str]:
    """Digests of the data files planned, and of each with its delete files, order-free."""
    rows = sorted((path, sorted(deletes)) for path, deletes in plan)
    files, full = hashlib.sha256(), hashlib.sha256()
    for path, deletes in rows:
        files.update(path.encode() + b"\n")
        full.update("\t".join([path, *deletes]).encode() + b"\n")
    return {"data_files_digest": files.hexdigest(), "plan_digest": full.hexdigest()}


def mor_pairs(tasks: Iterable[Any]) -> Iterable[tuple[str, list[str]]]:
    return ((t.data_file.file_path, [d.file_path for d in t.delete_files]) for t in tasks)


def pyiceberg_pairs(tasks: Iterable[Any]) -> Iterable[tuple[str, list[str]]]:
    return ((t.file.file_path, [d.file_path for d in t.delete_files]) for t in tasks)


def filter_text(bound: int | None) -> str | None:
    return None if bound is None else f"id < {bound}"


def timed(plan: Any) -> tuple[Any, dict[str, Any]]:
    import gc

    gc.collect()
    before = status_mb("VmRSS")
    c0, t0 = time.process_time(), time.perf_counter()
    tasks = plan()
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    return tasks, {"seconds": seconds, "cpu_seconds": cpu, "rss_before_mb": before, "peak_rss_mb": status_mb("VmHWM")}


def plan_mor(spec: dict[str, Any]) -> dict[str, Any]:
    """Cold, then warm on the same table object; the digest is taken from the warm plan, after
    both peaks were read, so hashing a million paths is in neither."""
    from common import TABLE_NAME

    import mor
    from mor.planning import manifest_cache

    t0 = time.perf_counter()
    table = mor.load_catalog(spec["warehouse"]).load_table(TABLE_NAME)
    load = time.perf_counter() - t0
    runs: list[dict[str, Any]] = []
    tasks: list[Any] = []
    pairs: list[Any] = []
    for _ in ("cold", "warm"):
        tasks = []  # the previous plan is freed before the next one starts
        scan = table.scan(filter=filter_text(spec["bound"]))
        if spec.get("stream"):
            # --stream: the plan as reads consume it (mor >= 58f4f2a): tasks counted as they come, none
            # held; the warm pass keeps the paths for the digest (its time and peak include them).
            keep = bool(runs)
            (count, deletes, pairs), run = timed(lambda scan=scan, keep=keep: consume(scan.plan_tasks(), keep))
            runs.append({**run, "tasks": count, "delete_files": deletes, "streamed": True})
            continue
        # --read-plan: the plan a read makes (mor >= e162354): without column metrics when nothing is pruned
        tasks, run = timed(lambda scan=scan: scan.plan_files(keep_metrics=False) if spec.get("read_plan") else scan.plan_files())
        runs.append({**run, "tasks": len(tasks), "delete_files": sum(len(t.delete_files) for t in tasks)})
    if not spec.get("stream"):
        pairs = list(mor_pairs(tasks))
    settings = {k: v for k, v in vars(manifest_cache.cache()).items() if k.startswith("max_")}  # its bound, whichever kind
    return {"load_table_seconds": load, "cold": runs[0], "warm": runs[1], "manifest_cache": settings,
            "mor_imported_from": str(Path(mor.__file__).parent), **plan_digest(pairs)}  # fmt: skip


def consume(stream: Iterable[Any], keep: bool) -> tuple[int, int, list[Any]]:
    """Tasks and delete files of a stream of tasks; `keep`: each task's paths, for the digest."""
    count = deletes = 0
    kept: list[Any] = []
    for t in stream:
        count += 1
        deletes += len(t.delete_files)
        if keep:
            kept.append((t.data_file.file_path, [d.file_path for d in t.delete_files]))
    return count, deletes, kept


def plan_pyiceberg(spec: dict[str, Any]) -> dict[str, Any]:
    from bench_planning import open_with_pyiceberg

    t0 = time.perf_counter()
    table = open_with_pyiceberg(Path(spec["warehouse"]))
    load = time.perf_counter() - t0
    text = filter_text(spec["bound"])
    tasks, run = timed(lambda: list((table.scan() if text is None else table.scan(row_filter=text)).plan_files()))
    run.update(tasks=len(tasks), delete_files=sum(len(t.delete_files) for t in tasks))
    return {"load_table_seconds": load, "cold": run, **plan_digest(pyiceberg_pairs(tasks))}


def plan_java(spec: dict[str, Any]) -> dict[str, Any]:
    """Iceberg Java's planning in the oracle's Spark driver, called through py4j: a handful of
    calls per plan, so the time is the JVM's (Iceberg's own planning timer)."""
    sys.path.insert(0, str(ORACLE_DIR))
    import oracle

    started = time.perf_counter()
    spark = oracle.spark_session(app="scale-planning", extra_conf={"spark.driver.memory": spec["memory"]})
    jvm = spark._jvm
    pid = jvm.java.lang.ProcessHandle.current().pid()
    session = time.perf_counter() - started
    t0 = time.perf_counter()
    table = oracle.java_table(spark, spec["metadata"])
    table.currentSnapshot()  # reads the metadata JSON: loading, not planning
    load = time.perf_counter() - t0
    runtime = jvm.java.lang.Runtime.getRuntime()
    gateway = spark.sparkContext._gateway
    iterables = jvm.org.apache.iceberg.relocated.com.google.common.collect.Iterables
    # The plan stays in the JVM, in this list, emptied before the next plan: a list returned
    # through py4j was never released (measured: every plan stayed in the heap).
    tasks = jvm.java.util.ArrayList()
    runs: list[dict[str, Any]] = []
    for _ in ("cold", "warm"):
        tasks.retainAll(jvm.java.util.Collections.emptyList())  # clear(): py4j's list wrapper redefines it
        jvm.java.lang.System.gc()
        heap_before = (runtime.totalMemory() - runtime.freeMemory()) / 2**20
        reporter = jvm.org.apache.iceberg.metrics.InMemoryMetricsReporter()
        scan = table.newScan().metricsReporter(reporter)
        if spec["bound"] is not None:
            scan = scan.filter(jvm.org.apache.iceberg.expressions.Expressions.lessThan("id", spec["bound"]))
        before = status_mb("VmRSS", pid)
        t0 = time.perf_counter()
        iterable = scan.planFiles()
        iterables.addAll(tasks, iterable)
        iterable.close()  # ends Iceberg's planning timer and sends its ScanReport
        py4j_seconds = time.perf_counter() - t0
        peak = status_mb("VmHWM", pid)
        metrics = reporter.scanReport().scanMetrics()
        jvm.java.lang.System.gc()
        runs.append({"seconds": metrics.totalPlanningDuration().totalDuration().toNanos() / 1e9, "seconds_through_py4j": py4j_seconds,
                     "rss_before_mb": before, "peak_rss_mb": peak,
                     "live_heap_before_mb": heap_before, "live_heap_mb": (runtime.totalMemory() - runtime.freeMemory()) / 2**20,
                     "tasks": tasks.size(), "data_files": metrics.resultDataFiles().value(),
                     "delete_files": metrics.resultDeleteFiles().value(),
                     "scanned_manifests": metrics.scannedDataManifests().value() + metrics.scannedDeleteManifests().value()})  # fmt: skip
        for held in (iterable, scan, reporter, metrics):
            gateway.detach(held)
    out: dict[str, Any] = {"session_start_seconds": session, "load_table_seconds": load, "jvm_pid": pid,
                           "max_heap_mb": runtime.maxMemory() / 2**20, "cold": runs[0], "warm": runs[1]}  # fmt: skip
    if spec["files"] <= spec["check_max"]:  # the serialized plan names every delete file of the table
        t0 = time.perf_counter()
        try:
            out.update(plan_digest(java_pairs(jvm, table, tasks)), digest_seconds=time.perf_counter() - t0)
        except Exception as e:  # the counts above still hold; the check reports the plan as not compared
            out["digest_error"] = repr(e)[:2000]
    return out


def java_pairs(jvm: Any, table: Any, tasks: Any) -> list[tuple[str, list[str]]]:
    """Java's plan as (data file, delete files), in a few py4j calls: Iceberg's REST
    PlanTableScanResponse serializer writes the tasks as JSON, each naming its delete files by
    index into a list we give it (every delete file the table's snapshots added). Asking each
    task through py4j instead cost 12 ms a task here."""
    lists = jvm.org.apache.iceberg.relocated.com.google.common.collect.Lists
    deletes = lists.newArrayList()
    for snapshot in table.snapshots():
        deletes.addAll(lists.newArrayList(snapshot.addedDeleteFiles(table.io())))
    responses = jvm.org.apache.iceberg.rest.responses
    response = (responses.PlanTableScanResponse.builder().withPlanStatus(jvm.org.apache.iceberg.rest.PlanStatus.COMPLETED)
                .withFileScanTasks(tasks).withDeleteFiles(deletes).withSpecsById(table.specs()).build())  # fmt: skip
    plan = json.loads(responses.PlanTableScanResponseParser.toJson(response))
    paths = [d["file-path"] for d in plan.get("delete-files", [])]
    return [(t["data-file"]["file-path"], [paths[i] for i in t.get("delete-file-references", [])]) for t in plan["file-scan-tasks"]]


def child_main(role: str, spec: dict[str, Any]) -> None:
    if role == "build":
        result = build_table(Path(spec["root"]), spec["files"], spec["manifests"])
        (Path(spec["root"]) / "build.json").write_text(json.dumps(result))  # last: marks the table complete
    else:
        result = {"mor": plan_mor, "pyiceberg": plan_pyiceberg, "java": plan_java}[role](spec)
    print(RESULT_MARK + json.dumps(result), flush=True)


# --------------------------------------------------------------------------- the parent


def run_child(command: list[str], timeout: float, env: dict[str, str] | None = None) -> dict[str, Any]:
    """One child in its own session (so a timeout kills the JVM it started too); its result is
    the JSON it prints after RESULT_MARK. Its stderr passes through."""
    load = os.getloadavg()
    t0 = time.perf_counter()
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, start_new_session=True, env=env, cwd=HERE)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return {"status": "timed out", "timeout_seconds": timeout, "load_average_before": load}
    wall = time.perf_counter() - t0
    for line in reversed(out.splitlines()):
        if line.startswith(RESULT_MARK):
            return {"status": "ok", **json.loads(line.removeprefix(RESULT_MARK)), "process_seconds": wall, "load_average_before": load}
    return {"status": "failed", "returncode": proc.returncode, "stdout_tail": out[-2000:], "load_average_before": load}


def oracle_python() -> Path:
    """The oracle's virtualenv, installed when missing (idempotent; as tests/interop does)."""
    env = {**os.environ, "ORACLE_VENV": str(ORACLE_VENV)}
    subprocess.run(["bash", str(ORACLE_DIR / "setup.sh")], check=True, env=env, capture_output=True)
    return ORACLE_VENV / "bin" / "python"


def check(label: str, runs: dict[str, list[dict[str, Any]]], expected: int) -> dict[str, Any]:
    """Raise on any disagreement; what was compared, for the JSON."""
    from common import BenchmarkError

    if any(r["status"] != "ok" for r in runs["mor"]):
        raise BenchmarkError(f"{label}: mor's plan {runs['mor'][-1]['status']} (its error is above)")
    done = {p: [r for r in rs if r["status"] == "ok"] for p, rs in runs.items()}
    for planner, rs in done.items():
        for r in rs:
            for phase in ("cold", "warm") if "warm" in r else ("cold",):
                got = (r[phase]["tasks"], r[phase]["delete_files"], r[phase].get("data_files", r[phase]["tasks"]))
                if got != (expected, expected, expected):
                    what = "(tasks, delete files, data files)"
                    raise BenchmarkError(f"{label}: {planner} {phase} planned {what} {got}, expected {expected} each")
    digests = {(p, r["plan_digest"], r["data_files_digest"]) for p, rs in done.items() for r in rs if "plan_digest" in r}
    if len({d[1] for d in digests}) > 1:
        same_files = len({d[2] for d in digests}) == 1
        how = "same data files, different delete files" if same_files else "different data files"
        raise BenchmarkError(f"{label}: plans differ ({how}): {sorted(digests)}")
    not_compared = {p: r.get("digest_error", "a table of more files than --java-check-max") for p, rs in done.items() for r in rs
                    if "plan_digest" not in r}  # fmt: skip
    return {"expected_tasks": expected, "counts_checked": {p: len(rs) for p, rs in done.items()},
            "plans_compared": sorted({d[0] for d in digests}), "same_plan": True, "plans_not_compared": not_compared}  # fmt: skip


def median(runs: list[dict[str, Any]], phase: str, key: str) -> float | None:
    values = [r[phase][key] for r in runs if r["status"] == "ok" and phase in r and key in r[phase]]
    return statistics.median(values) if values else None


def summarize(runs: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for planner, rs in runs.items():
        if not rs:
            continue
        ok = [r for r in rs if r["status"] == "ok"]
        s: dict[str, Any] = {"status": "ok" if ok else rs[0]["status"]}
        for phase in ("cold", "warm"):
            for key in ("seconds", "peak_rss_mb", "rss_before_mb", "live_heap_mb"):
                if (v := median(rs, phase, key)) is not None:
                    s[f"{phase}_{key}"] = round(v, 3)
        out[planner] = s
    mor = out.get("mor", {})
    for other in ("pyiceberg", "java"):
        theirs = out.get(other, {})
        if "cold_seconds" in mor and "cold_seconds" in theirs:
            out[f"mor_over_{other}_seconds"] = round(mor["cold_seconds"] / theirs["cold_seconds"], 3)
            out[f"mor_over_{other}_peak_rss"] = round(mor["cold_peak_rss_mb"] / theirs["cold_peak_rss_mb"], 3)
    return out


def measure_size(args: argparse.Namespace, files: int, skip: dict[str, str]) -> dict[str, Any]:
    from common import log

    manifests = args.manifests or default_manifests(files)
    log(f"{files:,} data + {files:,} delete files in {manifests} + {manifests} manifests: building or reusing")
    build = ensure_table(args.data_dir, files, manifests, args.build_timeout)
    log(f"  {'cached' if build['cached'] else 'built'}: {build['seconds']:.1f} s to build, peak {build['peak_rss_mb']:.0f} MB")
    selected = max(1, files // 100)
    row: dict[str, Any] = {"files": files, "manifests_per_kind": manifests, "build": build, "filters": {}}
    for name, bound, expected in (("full", None, files), ("id_1pct", selected * ROWS_PER_FILE, selected)):
        runs: dict[str, list[dict[str, Any]]] = {p: [] for p in PLANNERS}
        for _ in range(args.repeat):
            for planner in PLANNERS:
                if planner in skip:
                    continue
                spec: dict[str, Any] = {"warehouse": build["warehouse"], "bound": bound, "read_plan": args.read_plan, "stream": args.stream}
                python, timeout = sys.executable, args.timeout
                if planner == "pyiceberg":
                    timeout = args.pyiceberg_timeout
                elif planner == "java":
                    python = str(args.oracle_python)
                    spec.update(metadata=build["metadata_location"], memory=args.java_memory, check_max=args.java_check_max, files=files)
                result = run_child([python, __file__, "--child", planner, json.dumps(spec)], timeout)
                runs[planner].append(result)
                shown = {phase: {k: round(v, 2) for k, v in result[phase].items() if k in ("seconds", "peak_rss_mb", "live_heap_mb")}
                         for phase in ("cold", "warm") if phase in result}  # fmt: skip
                log(f"  {name} {planner}: {result['status']} {json.dumps(shown)}")
                if result["status"] == "timed out":
                    skip[planner] = f"timed out ({timeout:.0f} s) at {files:,} files, {name}"
        entry = {"filter": filter_text(bound), "runs": runs, "skipped": {p: skip[p] for p in PLANNERS if not runs[p] and p in skip},
                 "summary": summarize(runs), "check": check(f"{files} files, {name}", runs, expected)}  # fmt: skip
        row["filters"][name] = entry
    return row


def render(sizes: list[dict[str, Any]]) -> list[str]:
    def cell(s: dict[str, Any], planner: str, key: str, fmt: str = "{:.2f}") -> str:
        p = s.get(planner)
        if p is None:
            return "skipped" if planner in s["skipped"] else "-"
        return fmt.format(p[key]) if key in p else p["status"] if p["status"] != "ok" else "-"

    lines = ["| files (+ as many deletes) | manifests | filter | mor cold s | mor warm s | mor peak MB | pyiceberg s | "
             "pyiceberg peak MB | java cold s | java warm s | java peak MB (live heap) | mor/pyiceberg s, RSS | mor/java s |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for row in sizes:
        for name, entry in row["filters"].items():
            s = {**entry["summary"], "skipped": entry["skipped"]}
            heap = f" ({s['java']['cold_live_heap_mb']:.0f})" if "cold_live_heap_mb" in s.get("java", {}) else ""
            py_ratio = (f"{s['mor_over_pyiceberg_seconds']:.2f}, {s['mor_over_pyiceberg_peak_rss']:.2f}"
                        if "mor_over_pyiceberg_seconds" in s else "-")  # fmt: skip
            java_ratio = f"{s['mor_over_java_seconds']:.2f}" if "mor_over_java_seconds" in s else "-"
            cells = [f"{row['files']:,}", f"{row['manifests_per_kind']} + {row['manifests_per_kind']}", name,
                     cell(s, "mor", "cold_seconds"), cell(s, "mor", "warm_seconds"), cell(s, "mor", "cold_peak_rss_mb", "{:.0f}"),
                     cell(s, "pyiceberg", "cold_seconds"), cell(s, "pyiceberg", "cold_peak_rss_mb", "{:.0f}"),
                     cell(s, "java", "cold_seconds"), cell(s, "java", "warm_seconds"),
                     cell(s, "java", "cold_peak_rss_mb", "{:.0f}") + heap, py_ratio, java_ratio]  # fmt: skip
            lines.append("| " + " | ".join(cells) + " |")
    return lines


def export_mor(rev: str, data_dir: Path) -> tuple[Path, str]:
    """`git archive` of the revision's mor/ (read-only for the checkout): others may be editing
    the working tree's mor while a long run imports it."""
    commit = subprocess.run(["git", "-C", str(REPO_ROOT), "rev-parse", "--verify", f"{rev}^{{commit}}"],
                            capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    folder = data_dir / f"mor-{commit[:12]}"
    if not (folder / "mor" / "__init__.py").exists():
        folder.mkdir(parents=True, exist_ok=True)
        archive = subprocess.Popen(["git", "-C", str(REPO_ROOT), "archive", commit, "mor"], stdout=subprocess.PIPE)
        subprocess.run(["tar", "-x", "-C", str(folder)], stdin=archive.stdout, check=True)
        if archive.wait() != 0:
            raise RuntimeError(f"git archive {commit} mor failed")
    return folder, commit


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child_main(sys.argv[2], json.loads(sys.argv[3]))
        return
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="10000,100000,1000000", help="data files (and as many position delete files)")
    parser.add_argument("--manifests", type=int, default=None, help="manifests per kind; default max(1, files // 100,000)")
    parser.add_argument("--repeat", type=int, default=1, help="fresh processes per planner, size and filter (medians)")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "scale_planning.json")
    parser.add_argument("--data-dir", type=Path, default=HERE / "data" / "scale")
    parser.add_argument("--skip-java", action="store_true")
    parser.add_argument("--skip-pyiceberg", action="store_true")
    parser.add_argument("--pyiceberg-timeout", type=float, default=900)
    parser.add_argument("--timeout", type=float, default=3600, help="for a mor or Java child")
    parser.add_argument("--build-timeout", type=float, default=1800)
    parser.add_argument("--java-memory", default="8g", help="the Spark driver's heap (-Xmx)")
    parser.add_argument("--java-check-max", type=int, default=100_000, help="compare Java's whole plan on tables up to this many files")
    parser.add_argument("--mor-rev", default=None, help="measure mor as committed at this git revision (exported under --data-dir)")
    parser.add_argument("--mor-path", type=Path, default=None, help="import mor from this folder (holding `mor/`)")
    parser.add_argument("--read-plan", action="store_true", help="mor plans as its reads do: plan_files(keep_metrics=False)")
    parser.add_argument("--stream", action="store_true", help="mor's plan consumed as reads consume it: scan.plan_tasks(), no task held")
    args = parser.parse_args()
    measured = {"rev": args.mor_rev, "commit": None, "path": None if args.mor_path is None else str(args.mor_path)}
    if args.mor_rev:
        args.mor_path, measured["commit"] = export_mor(args.mor_rev, args.data_dir)
        measured["path"] = str(args.mor_path)
    if args.mor_path:  # this process and every child (mor's commit path builds the tables too)
        sys.path.insert(0, str(args.mor_path))
        os.environ["PYTHONPATH"] = os.pathsep.join([str(args.mor_path), os.environ.get("PYTHONPATH", "")])
    from common import log, start_result

    result = start_result("scale_planning", args)
    result["mor_measured"] = measured  # machine.git_head is the checkout's HEAD, not necessarily what ran
    skip: dict[str, str] = {}
    if args.skip_pyiceberg:
        skip["pyiceberg"] = "--skip-pyiceberg"
    if args.skip_java:
        skip["java"] = "--skip-java"
    else:
        args.oracle_python = oracle_python()
    result["sizes"] = []
    for files in (int(s) for s in args.sizes.split(",") if s):
        result["sizes"].append(measure_size(args, files, skip))
        result["load_average_end"] = os.getloadavg()
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2, default=str))  # after each size: a long run keeps what it measured
    for line in render(result["sizes"]):
        print(line)
    log(f"wrote {args.out}")


if __name__ == "__main__":
    main()
