"""Peak RSS, each measured in a fresh child process (so that the peak is the operation's, not
this process's): (a) a streaming read (`scan().to_batches()`, consumed batch by batch) of a table
whose every data file carries many position delete files, against a streaming pyarrow.dataset
read of the same data files (bench_delete_stack.py's children); (b) one `table.append` of rows
generated lazily by a RecordBatchReader, against the same rows as one in-memory pyarrow Table
(bench_append_memory.py's children).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import pyarrow as pa
from bench_append_memory import append_peak
from bench_delete_stack import streaming_peak
from common import BenchmarkError, local_path

from suite.accumulation import band
from suite.context import Context, expected
from suite.render import save_figure

TITLE = "Memory: peak RSS"
WAREHOUSE = "memory"


def run(ctx: Context, earlier: dict[str, Any]) -> dict[str, Any]:
    n = ctx.scale.memory_delete_files
    with ctx.section(TITLE, n + 5) as step:
        step("building the table")
        table = ctx.fresh_table(WAREHOUSE)
        deleted = []
        for k in range(n):
            step(f"merge-on-read delete {k + 1} of {n}")
            deleted.append(_delete_band(ctx, table, k))
        want = expected(ctx, pa.concat_arrays(deleted))
        read = _read_peaks(ctx, table, want["rows"], step)
        append = {}
        for mode in ("stream", "table"):
            step(f"appending {ctx.scale.append_rows:,} rows ({mode})")
            append[mode] = _append_peak(ctx, mode)
    return {"rows": ctx.rows, "files": ctx.scale.files, "deletes": n, "read": read,
            "append_rows": ctx.scale.append_rows, "append": append}  # fmt: skip


def _delete_band(ctx: Context, table: Any, k: int) -> pa.Array:
    """Delete k of accumulation's series: new rows in every data file (value is uniform), so
    every data file gets one more position delete file. Returns the ids it deletes."""
    text, selects = band(ctx, k)
    table.delete(text, mode="merge-on-read")
    return ctx.selected_ids(selects)


def _read_peaks(ctx: Context, table: Any, rows: int, step: Any) -> dict[str, Any]:
    tasks = table.scan().plan_files()
    files = [local_path(t.data_file.file_path) for t in tasks]
    out: dict[str, Any] = {"delete_files_per_data_file": min(len(t.delete_files) for t in tasks)}
    for mode, want in (("mor", rows), ("floor", ctx.rows)):
        step(f"streaming read ({mode})")
        out[mode] = streaming_peak(mode, str(ctx.warehouse(WAREHOUSE)), files)
        if out[mode]["rows"] != want:  # the floor ignores the deletes: it reads every row
            raise BenchmarkError(f"streaming read {mode}: {out[mode]['rows']} rows, expected {want}")
    return out


def _append_peak(ctx: Context, mode: str) -> dict[str, Any]:
    run = append_peak(mode, ctx.scale.append_rows, ctx.data_dir)
    if run["records"] != ctx.scale.append_rows:
        raise BenchmarkError(f"append ({mode}) added {run['records']} rows, expected {ctx.scale.append_rows}")
    return run


# -- the report -------------------------------------------------------------------------------

PAIRS = (("read", "mor", "floor"), ("append", "stream", "table"))
LABELS = {("read", "mor"): "mor streaming read", ("read", "floor"): "pyarrow.dataset streaming read (floor)",
          ("append", "stream"): "append of a lazy RecordBatchReader", ("append", "table"): "append of an in-memory Table"}  # fmt: skip


def render(result: dict[str, Any], out_dir: Path) -> str:
    read = result["read"]
    lines = [
        f"## {TITLE}", "",
        f"Each number is the peak resident memory (VmHWM) of a fresh child process. Read: {result['rows']:,} rows in "
        f"{result['files']} data files after {result['deletes']} merge-on-read DELETEs of small disjoint bands of "
        f"`value` (each data file carries {read['delete_files_per_data_file']} position delete files), streamed batch "
        f"by batch, against pyarrow.dataset streaming the same data files (deletes ignored). Append: "
        f"{result['append_rows']:,} generated rows in one `table.append`. *After imports*: the child's peak before the "
        "operation (the interpreter and its libraries).", "",
        "| operation | peak RSS | after imports | peak above imports |", "|---|---|---|---|",
    ]  # fmt: skip
    for kind, a, b in PAIRS:
        for mode in (a, b):
            r = result[kind][mode]
            lines.append(f"| {LABELS[kind, mode]} | {r['peak_rss_mb']:.0f} MB | {r['rss_after_imports_mb']:.0f} MB "
                         f"| {r['peak_rss_mb'] - r['rss_after_imports_mb']:.0f} MB |")  # fmt: skip
    lines += ["", f"Ratios: streaming read {_ratio(result, 'read')}; append {_ratio(result, 'append')}.", "", _plot(result, out_dir), ""]
    return "\n".join(lines)


def _ratio(result: dict[str, Any], kind: str) -> str:
    a, b = next((result[kind][x], result[kind][y]) for k, x, y in PAIRS if k == kind)
    above = (a["peak_rss_mb"] - a["rss_after_imports_mb"]) / max(b["peak_rss_mb"] - b["rss_after_imports_mb"], 1)
    return f"{a['peak_rss_mb'] / b['peak_rss_mb']:.2f}x the peak ({above:.2f}x above imports)"


def _plot(result: dict[str, Any], out_dir: Path) -> str:
    fig, ax = plt.subplots(figsize=(7, 3.2))
    bars = [(LABELS[kind, mode], result[kind][mode]) for kind, a, b in PAIRS for mode in (a, b)]
    ys = range(len(bars))
    ax.barh(ys, [r["rss_after_imports_mb"] for _, r in bars], color="lightgrey", label="after imports")
    ax.barh(ys, [r["peak_rss_mb"] - r["rss_after_imports_mb"] for _, r in bars],
            left=[r["rss_after_imports_mb"] for _, r in bars], color="tab:blue", label="operation")  # fmt: skip
    ax.set_yticks(list(ys), [label for label, _ in bars], fontsize=8)
    ax.invert_yaxis()
    ax.set(xlabel="peak RSS (MB)", title="Peak memory, fresh process each")
    ax.grid(True, axis="x", alpha=0.3)
    ax.legend(fontsize=8)
    return save_figure(fig, out_dir, "memory-peak-rss.png", "Peak RSS of streaming reads and appends")


def targets(result: dict[str, Any]) -> list[dict[str, Any]]:
    read, append = result["read"], result["append"]
    return [
        {"target": f"streaming read with {read['delete_files_per_data_file']} delete files per data file: peak RSS vs streaming floor",
         "measured": f"{read['mor']['peak_rss_mb']:.0f} MB vs {read['floor']['peak_rss_mb']:.0f} MB, {_ratio(result, 'read')}",
         "met": None, "note": ""},
        {"target": f"streaming append of {result['append_rows']:,} rows: peak RSS vs an in-memory Table",
         "measured": f"{append['stream']['peak_rss_mb']:.0f} MB vs {append['table']['peak_rss_mb']:.0f} MB, {_ratio(result, 'append')}",
         "met": None, "note": ""},
    ]  # fmt: skip
