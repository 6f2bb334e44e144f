"""The report: Markdown with PNG plots, from one run's results (samples.json's content)."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only, no display

from suite import crossover


def save_figure(fig: Any, out_dir: Path, name: str, alt: str) -> str:
    """Write a section's plot beside the report; the Markdown that shows it."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(out_dir / name, dpi=110)
    plt.close(fig)
    return f"![{alt}]({name})"


def write_report(result: dict[str, Any], out_dir: Path) -> Path:
    """report.md (the facts of the run, the targets, which mode when, then every section) and
    headline.md (the targets table and the recommendation, as the README shows them)."""
    sections = result["sections"]
    targets: list[dict[str, Any]] = []
    body: list[str] = []
    for name, section in sections.items():
        module = importlib.import_module(f"suite.{name}")
        if "failed" in section:
            body += [f"## {getattr(module, 'TITLE', name)}", "", f"This section failed: `{section['failed']}`.", ""]
            continue
        body += [module.render(section, out_dir).rstrip(), ""]
        targets += module.targets(section)
    analysis = crossover.analyze(sections)
    table = _targets_table(targets)
    advice = [crossover.recommendation(analysis), ""] if analysis["deletes"] else []
    (out_dir / "headline.md").write_text("\n".join(table + advice).rstrip() + "\n")
    lines = [f"# mor benchmark report ({result['scale']['name']} scale)", "", *_run_facts(result), *table]
    lines += crossover.render(analysis) + body
    path = out_dir / "report.md"
    path.write_text("\n".join(lines).rstrip() + "\n")
    return path


def _targets_table(targets: list[dict[str, Any]]) -> list[str]:
    if not targets:
        return []
    lines = ["## Targets", "", "| target | measured | verdict |", "|---|---|---|"]
    for t in targets:
        verdict = {True: "met", False: "**missed**", None: "stated"}[t["met"]]
        note = f" {t['note']}" if t.get("note") else ""
        lines.append(f"| {t['target']} | {t['measured']}{note} | {verdict} |")
    lines.append("")
    missed = [t for t in targets if t["met"] is False]
    if missed:
        lines += ["Missed in this run, why, and what would close it:", ""]
        lines += [f"- {t['target']}: {t.get('why') or 'no cause is known: an unexpected result, see its section.'}" for t in missed]
        lines.append("")
    return lines


def _run_facts(result: dict[str, Any]) -> list[str]:
    machine = result["machine"]
    versions = ", ".join(f"{k} {v}" for k, v in result["versions"].items() if v)
    scale = result["scale"]
    return [
        f"Measured {result['started_at']} in {result.get('total_seconds', 0):.0f} s on {machine['platform']}, "
        f"{machine['cpu_count']} cores, {machine['memory_total_bytes'] / 2**30:.0f} GiB; git commit `{machine['git_head']}`"
        + (" (with uncommitted changes in mor/)" if machine.get("git_uncommitted_in_mor") else "")
        + ".",
        "",
        f"Libraries: {versions}.",
        "",
        f"Data: {scale['rows']:,} generated rows (id, category, value, ts, payload) in {scale['files']} data files. "
        f"Command: `{result['command']}`. Every number below was measured in this run; the raw samples are in "
        "`samples.json` beside this file.",
        "",
    ]
