"""Which mode, when: the crossover between merge-on-read and copy-on-write, computed from the
numbers of this run (the DML section's writes, the read section's reads).

A DELETE of a fraction f costs W_mor(f) or W_cow(f) once; every read afterwards costs R_mor(f)
(the merged read) or R_cow (a read of rewritten files: the plain floor). Over one write and k
reads merge-on-read costs W_mor + k * R_mor, copy-on-write W_cow + k * R_cow; copy-on-write is
cheaper once k > (W_cow - W_mor) / (R_mor - R_cow). That k, per fraction, is the number of reads
per write above which copy-on-write wins (until the next compaction, which turns merge-on-read's
reads back into plain ones).
"""

from __future__ import annotations

import math
from typing import Any

from suite.dml import MOR_COW, MOR_MOR


def analyze(sections: dict[str, Any]) -> dict[str, Any]:
    dml, reads = sections.get("dml", {}), sections.get("reads", {})
    rows = []
    for case in dml.get("cases", []):
        if case["verb"] != "delete" or case["layout"] != "scattered":
            continue
        write_mor, write_cow = case["runs"].get(MOR_MOR, {}), case["runs"].get(MOR_COW, {})
        state = reads.get("readers", {}).get(f"position_{case['fraction']:g}", {}).get("arrow", {})
        read_mor, read_floor = state.get("mor", {}), state.get("floor", {})
        if not all(r.get("status") == "ok" for r in (write_mor, write_cow, read_mor, read_floor)):
            continue
        w_mor, w_cow = write_mor["median_seconds"], write_cow["median_seconds"]
        r_mor, r_cow = read_mor["median_seconds"], read_floor["median_seconds"]
        extra_read = r_mor - r_cow
        if w_cow <= w_mor:
            reads_per_write = 0.0  # copy-on-write is cheaper even before the first read
        elif extra_read <= 0:
            reads_per_write = math.inf  # the merged read is no slower: merge-on-read always wins
        else:
            reads_per_write = (w_cow - w_mor) / extra_read
        rows.append({"fraction": case["fraction"], "write_mor": w_mor, "write_cow": w_cow, "read_mor": r_mor,
                     "read_cow": r_cow, "reads_per_write": reads_per_write})  # fmt: skip
    return {"deletes": rows}


def render(analysis: dict[str, Any]) -> list[str]:
    rows = analysis["deletes"]
    if not rows:
        return []
    lines = [
        "## Which mode, when",
        "",
        "From this run's numbers (scattered DELETEs, full reads into Arrow): one write followed by k reads costs "
        "W_mor + k·R_mor in merge-on-read and W_cow + k·R_cow in copy-on-write, whose reads are plain reads. "
        "Copy-on-write is the better choice above the break-even k below (reads between a write and the next "
        "compaction).",
        "",
        "| rows deleted | write, merge-on-read | write, copy-on-write | read, merge-on-read | read, copy-on-write "
        "| copy-on-write wins after |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['fraction']:.2%} | {r['write_mor']:.2f} s | {r['write_cow']:.2f} s | {r['read_mor']:.2f} s | "
            f"{r['read_cow']:.2f} s | {_reads(r['reads_per_write'])} |"
        )
    cheaper = [r["fraction"] for r in rows if r["reads_per_write"] == 0]
    lines += [
        "",
        f"Copy-on-write's write is already the cheaper one from {min(cheaper):.2%} of the rows on."
        if cheaper else
        f"Merge-on-read's write is the cheaper one at every measured fraction (up to {max(r['fraction'] for r in rows):.0%}): "
        "the crossover is in reads per write, not in the fraction deleted.",
        "The break-even divides a write's saving by a read's extra cost, a difference of tens of milliseconds between "
        "two measured reads at this scale: read it as an order of magnitude.",
        "",
        recommendation(analysis),
        "",
    ]  # fmt: skip
    return lines


def _reads(k: float) -> str:
    if math.isinf(k):
        return "never (the merged read is as fast)"
    if k == 0:
        return "the first read (its write is cheaper)"
    return f"{_whole(k):,} reads per write"


def _whole(k: float) -> int:
    """The reads needed to break even, a whole number (10.000000000000002 is 10 reads)."""
    return math.ceil(round(k, 9))


def recommendation(analysis: dict[str, Any]) -> str:
    rows = analysis["deletes"]
    finite = [r for r in rows if not math.isinf(r["reads_per_write"])]
    if not finite:
        return ("Recommendation: merge-on-read (`write.delete.mode`, `write.update.mode`, `write.merge.mode` = "
                "`merge-on-read`, mor's default) at every measured fraction; compact when reads slow down.")  # fmt: skip
    lowest = min(finite, key=lambda r: r["reads_per_write"])
    k = _whole(lowest["reads_per_write"])
    return (
        f"Recommendation: merge-on-read (mor's default) when a table is read fewer than about {k:,} times between "
        "writes (or between compactions); copy-on-write (`write.delete.mode` = `copy-on-write`, likewise "
        f"`write.update.mode` and `write.merge.mode`) when it is read more often than that. {k:,} is this run's "
        f"lowest break-even, for DELETEs of {lowest['fraction']:.2%} of the rows; the others are higher. With "
        "merge-on-read, `compact()` (or `maintain()` with its delete-ratio threshold) turns reads back into plain "
        "reads (accumulation section)."
    )
