"""The DML section's tables, plots and targets (suite/dml.py measures)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt

from suite.dml_names import MOR_COW, MOR_MOR, TITLE

VERBS = (("delete", "scattered"), ("delete", "clustered"), ("update", "scattered"), ("upsert", "scattered"))


def render_dml(result: dict[str, Any], out_dir: Path) -> str:
    lines = [f"## {TITLE}", ""]
    lines += [
        "Each run starts from the same table and is checked by reading the result. *Scattered*: `value < f` "
        "(rows at random positions in every data file); *clustered*: `id < f * rows` (one id range). UPDATE "
        "sets `value = value + 1` on the scattered rows; UPSERT merges a source of f * rows existing keys "
        "(random, value + 1) and a tenth as many new keys, on `id`. Bytes are every file the call wrote "
        "(data, delete files, manifests, metadata). Cells: seconds, bytes written, and in parentheses the "
        "time relative to mor's merge-on-read.",
        "",
    ]
    for verb, layout in VERBS:
        chosen = [c for c in result["cases"] if c["verb"] == verb and c["layout"] == layout]
        if not chosen:
            continue
        engines = list(dict.fromkeys(e for c in chosen for e in c["runs"]))
        lines += [f"### {verb.upper()}, {layout}", "", "| rows | " + " | ".join(engines) + " |", "|---" * (len(engines) + 1) + "|"]
        for case in chosen:
            base = case["runs"].get(MOR_MOR, {})
            cells = [_cell(case["runs"][e], base) if e in case["runs"] else "" for e in engines]
            lines.append(f"| {case['fraction']:.2%} ({case['affected']:,}) | " + " | ".join(cells) + " |")
        lines.append("")
    lines += _plots(result, out_dir)
    return "\n".join(lines)


def _cell(run: dict[str, Any], base: dict[str, Any]) -> str:
    if run.get("status") != "ok":
        return f"{run.get('status')}: {str(run.get('detail', ''))[:80]}"
    text = f"{run['median_seconds']:.2f} s, {format_bytes(run['bytes_written'])}"
    if base.get("status") == "ok" and run is not base:
        text += f" ({run['median_seconds'] / base['median_seconds']:.1f}x)"
    return text


def format_bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return ""


def _plots(result: dict[str, Any], out_dir: Path) -> list[str]:
    fig, axes = plt.subplots(2, len(VERBS), figsize=(4.2 * len(VERBS), 7), squeeze=False)
    for col, (verb, layout) in enumerate(VERBS):
        chosen = [c for c in result["cases"] if c["verb"] == verb and c["layout"] == layout]
        engines = list(dict.fromkeys(e for c in chosen for e in c["runs"]))
        for engine in engines:
            points = [(c["fraction"], c["runs"][engine]) for c in chosen if c["runs"].get(engine, {}).get("status") == "ok"]
            if not points:
                continue
            xs = [f * 100 for f, _ in points]
            style = {"marker": "o", "label": engine, "color": _color(engine)}  # one colour per engine in every panel
            axes[0][col].plot(xs, [r["median_seconds"] for _, r in points], **style)
            axes[1][col].plot(xs, [r["bytes_written"] / 2**20 for _, r in points], **style)
        axes[0][col].set_title(f"{verb.upper()}, {layout}")
        for row, label in ((0, "seconds"), (1, "MB written")):
            ax = axes[row][col]
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel("% of rows")
            ax.set_ylabel(label)
            ax.grid(True, which="both", alpha=0.3)
    for ax in axes[0]:
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out_dir / "dml.png", dpi=110)
    plt.close(fig)
    return ["![DML time and bytes written by fraction of rows](dml.png)", ""]


def _color(engine: str) -> str:
    palette = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    order = [MOR_MOR, MOR_COW, "pyiceberg (copy-on-write)", "mor merge-on-read, equality deletes", "pyiceberg upsert"]
    return palette[order.index(engine) % len(palette)] if engine in order else "black"


def dml_targets(result: dict[str, Any]) -> list[dict[str, Any]]:
    case = next((c for c in result["cases"] if c["verb"] == "delete" and c["layout"] == "scattered" and c["fraction"] == 0.001), None)
    if case is None:
        return []
    mor, cow = case["runs"].get(MOR_MOR, {}), case["runs"].get(MOR_COW, {})
    if mor.get("status") != "ok" or cow.get("status") != "ok":
        return [{"target": "DELETE of 0.1%: >= 10x faster, >= 100x fewer bytes than copy-on-write",
                 "measured": "not measured", "met": False,
                 "note": f"merge-on-read {mor.get('status')}, copy-on-write {cow.get('status')}"}]  # fmt: skip
    speed = cow["median_seconds"] / mor["median_seconds"]
    size = cow["bytes_written"] / mor["bytes_written"]
    return [
        {"target": "DELETE of 0.1% (scattered) >= 10x faster than copy-on-write", "met": speed >= 10,
         "measured": f"{speed:.1f}x ({mor['median_seconds']:.2f} s vs {cow['median_seconds']:.2f} s)"},
        {"target": "DELETE of 0.1% (scattered) >= 100x fewer bytes than copy-on-write", "met": size >= 100,
         "measured": f"{size:.0f}x ({format_bytes(mor['bytes_written'])} vs {format_bytes(cow['bytes_written'])})"},
    ]  # fmt: skip
