"""Reads after each kind of delete: mor against DuckDB's iceberg extension, pyiceberg, polars,
daft and the plain-scan floor, as a full read into Arrow and as an aggregate over every column.

Each table state is its own warehouse (the generated table, then one mor DML call); each
(state, reader) runs in a fresh process (suite/read_worker.py) with a time limit, so a reader
that hangs or crashes costs only its own cells. mor and the floor share their process, with
their timed calls interleaved. The states' metadata paths stay in the
result: the Iceberg-Spark section reads the same tables afterwards.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from common import local_path, round_ratios

from suite.context import Context, expected
from suite.dml import MOR_EQ, MOR_MOR, expected_after, mor_call
from suite.dml import cases as dml_cases

TITLE = "Reads after deletes: mor against DuckDB, pyiceberg, polars, daft and the floor"
READERS = ("mor", "floor", "duckdb", "pyiceberg", "polars", "daft")
# One worker process each; mor and the floor share one, their rounds interleaved, so that
# their ratio (the targets') does not drift with the machine's load between two processes.
GROUPS = (("mor", "floor"), ("duckdb",), ("pyiceberg",), ("polars",), ("daft",))
FORMS = ("arrow", "aggregate")
WORKER = Path(__file__).resolve().parent / "read_worker.py"
CALLS = {
    "mor": "`mor.load_catalog(warehouse).load_table(...).scan().to_arrow()` (aggregate: `scan().to_batches()` folded with pyarrow.compute)",
    "floor": "`pyarrow.dataset.dataset(data_files).to_table()` on the state's live data files, deletes ignored "
    "(aggregate: its batches folded with pyarrow.compute)",
    "duckdb": "`SELECT * FROM iceberg_scan('<metadata.json>')` into Arrow (aggregate: one SQL query over iceberg_scan), "
    "extension loaded from the `duckdb-extension-iceberg` wheel",
    "pyiceberg": "`StaticTable.from_metadata(metadata).scan().to_arrow()` "
    "(aggregate: `to_arrow_batch_reader()` folded with pyarrow.compute)",
    "polars": "`polars.scan_iceberg(metadata).collect().to_arrow()` (aggregate: one lazy `select` of the aggregates)",
    "daft": "`daft.read_iceberg(StaticTable).to_arrow()` (aggregate: one `agg` of the aggregates)",
}  # fmt: skip


# --------------------------------------------------------------------------- table states


def _states(ctx: Context) -> dict[str, tuple[str, int, Any]]:
    """state -> (description, format version, (table) -> the rows left after its DML call)."""
    rows, data = ctx.rows, ctx.data

    def by_value(f: float, mode: str) -> Any:
        def apply(t: Any) -> dict[str, int]:
            t.delete(f"value < {f!r}", mode=mode)
            return expected(ctx, ctx.selected_ids(pc.field("value") < f))

        return apply

    def equality(f: float) -> Any:
        def apply(t: Any) -> dict[str, int]:
            ids = pa.array(np.random.default_rng(ctx.seed).choice(rows, size=round(rows * f), replace=False), pa.int64())
            t.delete_rows(pa.table({"id": ids}))
            return expected(ctx, ids)

        return apply

    def dml_case(verb: str, f: float, engine: str) -> Any:  # the DML section's own case and call
        case = next(c for c in dml_cases(ctx) if c.verb == verb and c.layout == "scattered" and c.fraction == f)

        def apply(t: Any) -> dict[str, int]:
            mor_call(t, case, engine)()
            return expected_after(ctx, case)

        return apply

    states: dict[str, tuple[str, int, Any]] = {"no_deletes": ("no delete at all", 2, lambda t: expected(ctx))}
    for f in ctx.scale.fractions:
        states[f"position_{f}"] = (f"merge-on-read `value < {f}`: {f:.2%} of rows, scattered", 2, by_value(f, "merge-on-read"))
    states["copy_on_write_0.1"] = ("copy-on-write `value < 0.1`: rewritten data files, no delete file", 2, by_value(0.1, "copy-on-write"))
    for f in (0.001, 0.01):
        states[f"equality_{f}"] = (f"`delete_rows` of {f:.1%} of ids (one equality delete file)", 2, equality(f))
    states["deletion_vector_0.1"] = ("format v3 `value < 0.1`: deletion vectors", 3, by_value(0.1, "merge-on-read"))
    states["update_0.1"] = (
        "merge-on-read UPDATE of `value < 0.1` (10% of rows): position deletes, the rows rewritten into new data files",
        2,
        dml_case("update", 0.1, MOR_MOR),
    )
    states["upsert_0.01"] = (
        'merge-on-read UPSERT of 1% of ids plus a tenth as many new ones, `strategy="equality"`: '
        "an equality delete file and the rows in new data files",
        2,
        dml_case("upsert", 0.01, MOR_EQ),
    )
    assert len(data) == rows
    return states  # fmt: skip


def _build(ctx: Context, state: str, description: str, version: int, apply: Any) -> dict[str, Any]:
    table = ctx.fresh_table(f"reads-{state}", format_version=version)
    want = apply(table)
    files = [local_path(t.data_file.file_path) for t in table.scan().plan_files()]
    return {"metadata": local_path(table.metadata_location), "data_files": files, "expected": want,
            "description": description, "format_version": version, "warehouse": str(ctx.warehouse(f"reads-{state}")),
            "data_file_rows": sum(pq.ParquetFile(f).metadata.num_rows for f in files)}  # fmt: skip


# --------------------------------------------------------------------------- measuring


def run(ctx: Context, earlier: dict[str, Any]) -> dict[str, Any]:
    specs = _states(ctx)
    result: dict[str, Any] = {"states": {}, "readers": {}, "repeat": ctx.scale.read_repeat,
                              "paired_repeat": ctx.scale.paired_read_repeat,
                              "timeout_seconds": ctx.scale.reader_timeout_seconds}  # fmt: skip
    with ctx.section(TITLE, len(specs) * (1 + len(GROUPS))) as step:
        for state, (description, version, apply) in specs.items():
            step(f"{state}: building")
            result["states"][state] = info = _build(ctx, state, description, version, apply)
            for group in GROUPS:
                step(f"{state}: {' and '.join(group)}")
                for (form, reader), cell in _measure(ctx, info, group).items():
                    result["readers"].setdefault(state, {}).setdefault(form, {})[reader] = cell
                    if cell["status"] != "ok":
                        ctx.log(f"reads {state} {form} {reader}: {cell['status']} {cell['detail']}")
    return result


def _measure(ctx: Context, info: dict[str, Any], readers: tuple[str, ...]) -> dict[tuple[str, str], dict[str, Any]]:
    """Every form of a reader group on one state, in one worker process (its start-up, imports
    included, is paid once): (form, reader) -> cell."""
    empty = {"median_seconds": None, "samples_seconds": [], "median_cpu_seconds": None}
    spec = {"readers": list(readers), "forms": list(FORMS), "warehouse": info["warehouse"], "metadata": info["metadata"],
            "data_files": info["data_files"], "expected": info["expected"],
            "repeat": ctx.scale.paired_read_repeat if "floor" in readers else ctx.scale.read_repeat,
            "floor_expected": {"rows": info["data_file_rows"], "id_sum": None}}  # fmt: skip
    limit = ctx.scale.reader_timeout_seconds
    try:  # subprocess.run kills the worker when the limit passes
        done = subprocess.run([sys.executable, str(WORKER), json.dumps(spec)], capture_output=True, text=True, timeout=limit)
        stdout, failed = done.stdout, None if done.returncode == 0 else done
    except subprocess.TimeoutExpired as e:
        stdout, failed = (e.stdout.decode() if isinstance(e.stdout, bytes) else e.stdout or ""), None
    cells = {(line["form"], line["reader"]): {**empty, **line}
             for line in map(json.loads, stdout.strip().splitlines()) if line.get("form")}  # fmt: skip
    for form in FORMS:  # the forms the worker did not finish: the first was cut off, the rest not run
        if any((form, r) in cells for r in readers):
            continue
        if failed is not None:  # a reader crashed the process (e.g. a segfault)
            how = f"killed by signal {-failed.returncode}" if failed.returncode < 0 else f"exit {failed.returncode}"
            tail = (failed.stderr.strip().splitlines() or ["no output"])[-1]
            cell = {**empty, "status": "error", "detail": f"worker {how}: {tail}"[:300]}
        elif not any(c.get("status") == "timeout" for c in cells.values()):
            cell = {**empty, "status": "timeout", "detail": f"did not finish in {limit:.0f} s"}
        else:
            cell = {**empty, "status": "skipped", "detail": "not run: an earlier form used up the time limit"}
        cells.update({(form, r): cell for r in readers})
    return cells


# --------------------------------------------------------------------------- report


def _cell(result: dict[str, Any], state: str, form: str, reader: str) -> dict[str, Any]:
    return result["readers"].get(state, {}).get(form, {}).get(reader, {"status": "missing"})


def _ratio(result: dict[str, Any], state: str, form: str, reader: str, base: str = "floor") -> float | None:
    a, b = _cell(result, state, form, reader), _cell(result, state, form, base)
    if a["status"] != "ok" or b["status"] != "ok" or not b["median_seconds"]:
        return None
    return a["median_seconds"] / b["median_seconds"]


def _table(result: dict[str, Any], form: str) -> list[str]:
    lines = ["| state | " + " | ".join(READERS) + " |", "|---|" + "---|" * len(READERS)]
    for state in result["states"]:
        cells = []
        for reader in READERS:
            c = _cell(result, state, form, reader)
            if c["status"] != "ok":
                cells.append(f"*{c['status']}*")
                continue
            ratio = _ratio(result, state, form, reader)
            cells.append(f"{c['median_seconds']:.3f}" + ("" if reader == "floor" or ratio is None else f" ({ratio:.2f}x)"))
        lines.append(f"| {state} | " + " | ".join(cells) + " |")
    return lines


def _plot(result: dict[str, Any], out_dir: Path) -> str:
    import matplotlib.pyplot as plt

    states = list(result["states"])
    width = 0.8 / len(READERS)
    fig, ax = plt.subplots(figsize=(max(8, 1.1 * len(states)), 4.5))
    for i, reader in enumerate(READERS):
        xs = [j + (i - (len(READERS) - 1) / 2) * width for j in range(len(states))]
        cells = [_cell(result, s, "arrow", reader) for s in states]
        ys = [c["median_seconds"] if c["status"] == "ok" else float("nan") for c in cells]  # not ok: no bar
        bars = ax.bar(xs, ys, width, label=reader)
        for x, c in zip(xs, cells):
            if c["status"] != "ok":  # say why the bar is missing, in the reader's colour
                ax.text(
                    x,
                    0.02,
                    c["status"],
                    transform=ax.get_xaxis_transform(),
                    rotation=90,
                    ha="center",
                    va="bottom",
                    fontsize=7,
                    color=bars.patches[0].get_facecolor(),
                )
    ax.set_xticks(range(len(states)), states, rotation=30, ha="right")
    ax.set_yscale("log")  # a reader minutes slow must not flatten the others' bars
    ax.set_ylabel("median seconds (log scale)")
    ax.set_title("Full read into Arrow per table state (no bar: the reader's status is written instead)")
    ax.legend(ncol=3, fontsize="small")
    fig.tight_layout()
    fig.savefig(out_dir / "reads-full.png", dpi=110)
    plt.close(fig)
    return "reads-full.png"


def render(result: dict[str, Any], out_dir: Path) -> str:
    lines = [f"## {TITLE}", "",
             f"Every reader runs in a fresh process per state (mor and the floor share one, their timed calls "
             f"interleaved): a warm-up call checked against the expected row count and "
             f"id sum, then the median of {result['repeat']} timed calls ({result.get('paired_repeat', result['repeat'])} "
             "for mor and the floor, whose ratio the targets use), in seconds; in parentheses the ratio to the "
             f"floor of the same state. A status word instead: *timeout* (over {result['timeout_seconds']:.0f} s), "
             "*wrong* (rows or id sum differ), *error*, *unsupported*, or *skipped* (the aggregate of a reader whose full "
             "read timed out), with the detail below. A reader whose warm-up took over 5 s gets one timed call.", "",
             "The reader calls:", ""]  # fmt: skip
    lines += [f"- **{r}**: {CALLS[r]}." for r in READERS] + ["", "The table states:", ""]
    lines += [f"- **{s}**: {i['description']} ({i['expected']['rows']:,} rows left, format v{i['format_version']})."
              for s, i in result["states"].items()] + [""]  # fmt: skip
    for form, what in (("arrow", "Full read into Arrow (all columns)"),
                       ("aggregate", "Aggregate over every column "
                                     "(count, sum(id), sum(value), min/max(ts), min(category), sum(length(payload)))")):  # fmt: skip
        lines += [f"### {what}", "", *_table(result, form), ""]
    lines += [f"![Full read into Arrow per state and reader]({_plot(result, out_dir)})", ""]
    failures = [f"- {s} / {f} / {r}: *{c['status']}*: {c.get('detail', '')}"
                for s, forms in result["readers"].items() for f, cells in forms.items()
                for r, c in cells.items() if c["status"] != "ok"]  # fmt: skip
    if failures:
        lines += ["Cells without a time:", "", *failures, ""]
    return "\n".join(lines)


# Why mor's merged read costs more than the floor, for a report whose run missed the bound.
WHY_OVER_FLOOR = {
    "position_0.1": "mor decodes the same data files as the floor, then copies the rows that survive out of each "
    "decoded batch (Arrow's filter, every column) and reads the delete files; the floor only decodes. "
    "pyarrow's Parquet reader cannot skip rows while it decodes, so the copy stays. {spread} What would "
    "close it: a decoder that skips deleted rows (a selection vector), which pyarrow does not offer.",
    "equality_0.01": "on top of the floor's decoding, mor hashes every row's key for the anti-join against the deleted "
    "keys and copies the surviving rows out. {spread} What would close it: the anti-join inside a "
    "native scan, which pyarrow does not offer.",
}


def _paired_spread(result: dict[str, Any], state: str, reader: str, base: str) -> str:
    low_high = round_ratios(*(_cell(result, state, "arrow", r).get("samples_seconds") or [] for r in (reader, base)))
    if low_high is None:
        return ""
    return f"Its interleaved rounds in this run gave ratios from {low_high[0]:.2f}x to {low_high[1]:.2f}x."


def _versus(result: dict[str, Any], state: str, reader: str, base: str, limit: float | None, target: str) -> dict[str, Any]:
    ratio = _ratio(result, state, "arrow", reader, base)
    if ratio is None:
        why = "; ".join(f"{r} {_cell(result, state, 'arrow', r)['status']}" for r in (reader, base))
        return {"target": target, "measured": "no number", "met": False, "note": f"({why})"}
    a, b = (_cell(result, state, "arrow", r)["median_seconds"] for r in (reader, base))
    why = WHY_OVER_FLOOR.get(state, "") if base == "floor" else ""
    return {"target": target, "measured": f"{ratio:.2f}x ({a:.3f} s vs {base} {b:.3f} s)",
            "met": None if limit is None else ratio <= limit, "note": f"state {state}, full read into Arrow",
            "why": why.format(spread=_paired_spread(result, state, reader, base))}  # fmt: skip


def targets(result: dict[str, Any]) -> list[dict[str, Any]]:
    out = [_versus(result, "position_0.1", "mor", "floor", 1.3, "reads with 10% position deletes <= 1.3x the floor"),
           _versus(result, "position_0.1", "mor", "duckdb", 1.0, "reads no slower than DuckDB's iceberg_scan into Arrow"),
           _versus(result, "position_0.1", "mor", "pyiceberg", 1.0, "reads faster than pyiceberg"),
           _versus(result, "equality_0.01", "mor", "floor", 1.5, "equality-deleted reads <= 1.5x the floor")]  # fmt: skip
    duck = _cell(result, "equality_0.01", "arrow", "duckdb")
    if duck["status"] == "ok":
        measured = f"{duck['median_seconds']:.3f} s ({_ratio(result, 'equality_0.01', 'arrow', 'duckdb') or 0:.2f}x the floor)"
    else:
        measured = f"{duck['status']}: {duck.get('detail', '')}"
    out.append(
        {"target": "DuckDB on equality deletes", "measured": measured, "met": None, "note": "state equality_0.01, full read into Arrow"}
    )
    return out
