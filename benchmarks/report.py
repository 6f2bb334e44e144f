"""The benchmark report (issue 28): merge-on-read against copy-on-write, and mor against the
engines a data engineer would use instead, measured in one run on generated data.

    bash scripts/bench.sh                      # default scale: 2M rows, under 15 minutes on 2 cores
    bash scripts/bench.sh --scale large        # 100M rows, for bigger machines
    .venv/bin/python benchmarks/report.py --scale smoke --out-dir /tmp/report   # a quick look
    .venv/bin/python benchmarks/report.py --render-only   # the report again from samples.json

Writes `report.md` with its PNG plots and `samples.json` (every sample, the machine, the git
commit, the version of every library compared) to `--out-dir` (default
benchmarks/results/report). Each section is a module of benchmarks/suite with
`run(ctx, earlier) -> dict`, `render(result, out_dir) -> str` (Markdown) and
`targets(result) -> list` (the issue's targets it measures: met or not, and why).
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import REPO_ROOT, start_result
from suite.context import SCALES, Context

# In running order: iceberg_spark replays the DML section's cases and reads the read section's
# tables in one JVM, so it comes after both.
SECTIONS = ("dml", "reads", "iceberg_spark", "spark_reads", "accumulation", "planning", "memory")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scale", choices=sorted(SCALES), default="default")
    p.add_argument("--only", default=",".join(SECTIONS), help=f"sections to run, of {','.join(SECTIONS)}")
    p.add_argument("--planning-sizes", help="data files (and as many delete files) to plan, e.g. 1000,10000,100000")
    p.add_argument("--seed", type=int, default=20240101)
    p.add_argument("--data-dir", type=Path, default=REPO_ROOT / "benchmarks" / "data" / "report")
    p.add_argument("--out-dir", type=Path, default=REPO_ROOT / "benchmarks" / "results" / "report")
    p.add_argument("--render-only", action="store_true", help="measure nothing: write the report again from --out-dir's samples.json")
    args = p.parse_args(argv)
    if args.render_only:
        from suite.render import write_report

        print(write_report(json.loads((args.out_dir / "samples.json").read_text()), args.out_dir))
        return 0
    chosen = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = sorted(set(chosen) - set(SECTIONS))
    if unknown:
        p.error(f"unknown sections {unknown}")

    args.data_dir.mkdir(parents=True, exist_ok=True)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    scale = SCALES[args.scale]
    if args.planning_sizes:
        scale = dataclasses.replace(scale, planning_sizes=tuple(int(n) for n in args.planning_sizes.split(",")))
    ctx = Context(scale, args.data_dir, args.seed)
    result = start_result("report", args)
    result["scale"] = vars(ctx.scale)
    result["versions"] = library_versions()
    sections: dict[str, Any] = {}
    result["sections"] = sections
    started = time.perf_counter()
    with ctx.running():
        for name in SECTIONS:
            if name not in chosen:
                continue
            module = importlib.import_module(f"suite.{name}")
            section_started = time.perf_counter()
            try:
                sections[name] = module.run(ctx, sections)
            except Exception as e:  # a failed section is reported as such; the others still run
                sections[name] = {"failed": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc()}
                ctx.log(f"[red]section {name} failed: {type(e).__name__}: {e}")
            sections[name]["section_seconds"] = time.perf_counter() - section_started
            write_samples(args.out_dir, result)  # what ran so far survives a later failure
    result["total_seconds"] = time.perf_counter() - started
    result["load_average_end"] = os.getloadavg()
    write_samples(args.out_dir, result)
    from suite.render import write_report  # matplotlib only now

    report = write_report(result, args.out_dir)
    ctx.log(f"wrote {report} and {args.out_dir / 'samples.json'} in {result['total_seconds']:.0f} s")
    return 1 if any("failed" in s for s in sections.values()) else 0


def write_samples(out_dir: Path, result: dict[str, Any]) -> None:
    (out_dir / "samples.json").write_text(json.dumps(result, indent=1, default=str) + "\n")


def library_versions() -> dict[str, str | None]:
    """The version of every library the report compares or measures with."""
    import importlib.metadata

    def version(dist: str) -> str | None:
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            return None

    names = ("mor", "pyarrow", "pyiceberg", "duckdb", "duckdb-extension-iceberg", "polars", "daft", "pyspark", "numpy", "matplotlib")
    return {name: version(name) for name in names}


if __name__ == "__main__":
    sys.exit(main())
