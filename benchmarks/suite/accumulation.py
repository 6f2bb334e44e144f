"""Reads as small merge-on-read DELETEs pile up, then after one compaction; and the same DELETEs
in copy-on-write mode, whose reads stay at the floor but whose every DELETE rewrites files.

Delete k removes `value` in [k * f, (k + 1) * f) with f = accumulation_fraction: `value` is
uniform in [0, 1), so each DELETE takes new rows at random positions in every data file, and
after k deletes each data file carries k position delete files. After each one the full read
(`scan().to_arrow()`, checked: row count and id sum) is timed against the floor, a
pyarrow.dataset read of the same data files with the deletes ignored.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
from common import BenchmarkError, local_path, median_timing, timed_dml
from matplotlib.ticker import MaxNLocator

from suite.context import Context, expected
from suite.dml_report import format_bytes
from suite.render import save_figure

TITLE = "Accumulation: reads over successive small deletes, then compaction"
WAREHOUSE = "accumulation"  # both modes start from this one template
DATA_COLUMNS = {"id", "category", "value", "ts", "payload"}


def run(ctx: Context, earlier: dict[str, Any]) -> dict[str, Any]:
    n = ctx.scale.accumulation_steps
    with ctx.section(TITLE, 2 * n + 3) as step:
        step("building the table")
        table = ctx.fresh_table(WAREHOUSE)
        steps, deleted = [], []
        for k in range(n):
            step(f"merge-on-read delete {k + 1} of {n}, reads")
            steps.append(_mor_step(ctx, table, k, deleted))
        step("compacting")
        compaction = _compact(ctx, table, deleted)
        cow = []
        table = ctx.fresh_table(WAREHOUSE)
        for k in range(n):
            step(f"copy-on-write delete {k + 1} of {n}")
            cow.append(_delete(ctx, table, k, "copy-on-write"))
        step("copy-on-write read")
        cow_read = _time_read(ctx, table, expected(ctx, pa.concat_arrays(deleted)))
    return {"fraction": ctx.scale.accumulation_fraction, "rows": ctx.rows, "files": ctx.scale.files,
            "repeat": ctx.scale.read_repeat, "merge_on_read": steps, "compaction": compaction,
            "copy_on_write": cow, "copy_on_write_read": cow_read}  # fmt: skip


def band(ctx: Context, k: int) -> tuple[str, pc.Expression]:
    """Delete k's predicate (`value` in [k * f, (k + 1) * f)), as text for mor and as an expression
    for the expected ids (the same floats: repr round-trips). Also suite/memory.py's deletes."""
    f = ctx.scale.accumulation_fraction
    low, high = k * f, (k + 1) * f
    return f"value >= {low!r} and value < {high!r}", (pc.field("value") >= low) & (pc.field("value") < high)


def _delete(ctx: Context, table: Any, k: int, mode: str) -> dict[str, Any]:
    text, _ = band(ctx, k)
    done = timed_dml(table, ctx.warehouse(WAREHOUSE), lambda: table.delete(text, mode=mode), DATA_COLUMNS)
    return {"predicate": text, "seconds": done["wall_seconds"], "cpu_seconds": done["cpu_seconds"],
            "bytes_written": done["bytes_written"], "by_kind": done["files"]["new_by_kind"]}  # fmt: skip


def _mor_step(ctx: Context, table: Any, k: int, deleted: list[pa.Array]) -> dict[str, Any]:
    write = _delete(ctx, table, k, "merge-on-read")
    deleted.append(ctx.selected_ids(band(ctx, k)[1]))
    tasks = table.scan().plan_files()
    return {"deletes": k + 1, "delete": write, "delete_files_per_data_file": max(len(t.delete_files) for t in tasks),
            "read": _time_read(ctx, table, expected(ctx, pa.concat_arrays(deleted)))}  # fmt: skip


def _compact(ctx: Context, table: Any, deleted: list[pa.Array]) -> dict[str, Any]:
    """compact() with its defaults: min_delete_ratio 0 picks every data file with deletes, so
    every file is rewritten here; checked by the plan afterwards (no delete file left)."""
    done: dict[str, Any] = {}
    write = timed_dml(table, ctx.warehouse(WAREHOUSE), lambda: done.update(table.compact().to_dict()), DATA_COLUMNS)
    left = sum(len(t.delete_files) for t in table.scan().plan_files())
    if done["rewritten_data_files"] == 0 or left:
        raise BenchmarkError(f"compaction rewrote {done['rewritten_data_files']} files, {left} delete files left")
    return {"seconds": write["wall_seconds"], "bytes_written": write["bytes_written"], "result": done,
            "read": _time_read(ctx, table, expected(ctx, pa.concat_arrays(deleted)))}  # fmt: skip


def _time_read(ctx: Context, table: Any, want: dict[str, int]) -> dict[str, Any]:
    """Median full read against the floor (the table's current data files, deletes ignored),
    interleaved; the first (warm-up) read is checked."""
    files = [local_path(t.data_file.file_path) for t in table.scan().plan_files()]
    timings = median_timing({"mor": _checked(lambda: table.scan().to_arrow(), want),
                             "floor": lambda: ds.dataset(files).to_table()}, ctx.scale.read_repeat)  # fmt: skip
    mor, floor = timings["mor"]["median_seconds"], timings["floor"]["median_seconds"]
    return {"mor_seconds": mor, "floor_seconds": floor, "ratio": mor / floor, "data_files": len(files),
            "expected": want, "timings": timings}  # fmt: skip


def _checked(read: Callable[[], pa.Table], want: dict[str, int]) -> Callable[[], pa.Table]:
    first = True

    def checked_read() -> pa.Table:
        nonlocal first
        result = read()
        if first:  # the warm-up call: the check stays out of the timed rounds
            got = {"rows": result.num_rows, "id_sum": int(pc.sum(result["id"]).as_py() or 0)}
            if got != want:
                raise BenchmarkError(f"merged read: got {got}, expected {want}")
            first = False
        return result

    return checked_read


# -- the report -------------------------------------------------------------------------------


def render(result: dict[str, Any], out_dir: Path) -> str:
    steps, comp, cow = result["merge_on_read"], result["compaction"], result["copy_on_write"]
    last, mor = steps[-1]["read"], [s["delete"] for s in steps]
    lines = [
        f"## {TITLE}", "",
        f"{len(steps)} successive DELETEs on {result['rows']:,} rows in {result['files']} data files, each of about "
        f"{result['fraction']:.2%} of the rows (a new band of `value`, so rows at random positions in every file): "
        f"after k merge-on-read deletes each data file carries k position delete files. After each, the full read "
        f"(`scan().to_arrow()`, median of {result['repeat']}, row count and id sum checked) against the floor "
        "(pyarrow.dataset over the same data files, deletes ignored). Then `compact()` rewrites the files with their "
        "deletes applied. The same deletes in copy-on-write mode start again from the same table.", "",
        "| deletes | delete files per data file | MoR delete | MoR read | floor | read / floor | CoW delete |",
        "|---|---|---|---|---|---|---|",
    ]  # fmt: skip
    for s, c in zip(steps, cow):
        r, d = s["read"], s["delete"]
        lines.append(f"| {s['deletes']} | {s['delete_files_per_data_file']} | {d['seconds']:.2f} s, {format_bytes(d['bytes_written'])} "
                     f"| {r['mor_seconds']:.3f} s | {r['floor_seconds']:.3f} s | {r['ratio']:.2f}x "
                     f"| {c['seconds']:.2f} s, {format_bytes(c['bytes_written'])} |")  # fmt: skip
    cr, wr = comp["read"], result["copy_on_write_read"]
    lines.append(f"| after `compact()` | 0 | {comp['seconds']:.2f} s, {format_bytes(comp['bytes_written'])} (the compaction) "
                 f"| {cr['mor_seconds']:.3f} s | {cr['floor_seconds']:.3f} s | {cr['ratio']:.2f}x | |")  # fmt: skip
    lines += [
        "",
        f"After {len(steps)} deletes the merged read takes {last['ratio']:.2f}x the floor; after compaction "
        f"({comp['result']['rewritten_data_files']} files rewritten into {comp['result']['added_data_files']}, "
        f"{comp['result']['removed_position_delete_files']} delete files dropped) {cr['ratio']:.2f}x. "
        f"All {len(steps)} DELETEs took {_sum(mor, 'seconds'):.1f} s and wrote {format_bytes(_sum(mor, 'bytes_written'))} "
        f"merge-on-read (plus {comp['seconds']:.1f} s for the compaction), {_sum(cow, 'seconds'):.1f} s and "
        f"{format_bytes(_sum(cow, 'bytes_written'))} copy-on-write, whose read after the last is "
        f"{wr['mor_seconds']:.3f} s ({wr['ratio']:.2f}x its floor).",
        "",
        _plot(result, out_dir),
        "",
    ]  # fmt: skip
    return "\n".join(lines)


def _sum(deletes: list[dict[str, Any]], key: str) -> float:
    return sum(d[key] for d in deletes)


def _cumulative(values: list[float]) -> list[float]:
    out, total = [], 0.0
    for v in values:
        total += v
        out.append(total)
    return out


def _plot(result: dict[str, Any], out_dir: Path) -> str:
    steps, comp = result["merge_on_read"], result["compaction"]
    xs = [s["deletes"] for s in steps]
    n = xs[-1]
    fig, (reads, writes) = plt.subplots(1, 2, figsize=(11, 4))
    reads.plot(xs, [s["read"]["mor_seconds"] for s in steps], marker="o", label="mor merged read")
    reads.plot(xs, [s["read"]["floor_seconds"] for s in steps], marker=".", label="floor (deletes ignored)")
    # compact() comes after the last delete: its point one step to the right, apart from the others
    reads.plot([n + 1], [comp["read"]["mor_seconds"]], marker="*", markersize=14, linestyle="", label="mor read after compact()")
    reads.plot([n + 1], [comp["read"]["floor_seconds"]], marker="*", markersize=9, linestyle="", color="tab:orange")
    reads.plot([n], [result["copy_on_write_read"]["mor_seconds"]], marker="s", linestyle="", label="copy-on-write table's read")
    reads.set(xlabel="deletes so far (then compact())", ylabel="read seconds (median)", title="Full read")
    reads.set_ylim(bottom=0)
    mor_writes = _cumulative([s["delete"]["seconds"] for s in steps])
    writes.plot(xs, mor_writes, marker="o", label="merge-on-read")
    writes.plot(xs, _cumulative([c["seconds"] for c in result["copy_on_write"]]), marker="o", label="copy-on-write")
    writes.plot([n], [mor_writes[-1] + comp["seconds"]], marker="*", markersize=14, linestyle="", label="merge-on-read + compact()")
    writes.set(xlabel="deletes", ylabel="cumulative seconds", title="Time spent deleting")
    for ax in (reads, writes):
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    return save_figure(fig, out_dir, "accumulation-reads.png", "Read time over successive deletes, and cumulative delete time")


def targets(result: dict[str, Any]) -> list[dict[str, Any]]:
    last, comp = result["merge_on_read"][-1], result["compaction"]["read"]
    return [
        {"target": f"full read after {last['deletes']} small merge-on-read deletes, vs the floor",
         "measured": f"{last['read']['ratio']:.2f}x ({last['read']['mor_seconds']:.3f} s vs {last['read']['floor_seconds']:.3f} s)",
         "met": None, "note": ""},
        {"target": "full read after `compact()`, vs the floor",
         "measured": f"{comp['ratio']:.2f}x ({comp['mor_seconds']:.3f} s vs {comp['floor_seconds']:.3f} s)", "met": None, "note": ""},
    ]  # fmt: skip
