"""The benchmark report's "which mode, when" (benchmarks/suite/crossover.py): the break-even
number of reads per write, from a run's DML and read numbers."""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))

from suite import crossover
from suite.dml import MOR_COW, MOR_MOR


def ok(seconds: float) -> dict[str, Any]:
    return {"status": "ok", "median_seconds": seconds}


def sections(fraction: float, write_mor: float, write_cow: float, read_mor: float, floor: float) -> dict[str, Any]:
    case = {"verb": "delete", "layout": "scattered", "fraction": fraction, "runs": {MOR_MOR: ok(write_mor), MOR_COW: ok(write_cow)}}
    reads = {f"position_{fraction:g}": {"arrow": {"mor": ok(read_mor), "floor": ok(floor)}}}
    return {"dml": {"cases": [case]}, "reads": {"readers": reads}}


def test_copy_on_write_wins_after_the_writes_saving_is_spent_on_reads() -> None:
    # merge-on-read saves 1.0 s per write and costs 0.1 s more per read: 10 reads break even
    (row,) = crossover.analyze(sections(0.001, 0.2, 1.2, 0.3, 0.2))["deletes"]
    assert math.isclose(row["reads_per_write"], 10.0)
    assert "about 10 times" in crossover.recommendation(crossover.analyze(sections(0.001, 0.2, 1.2, 0.3, 0.2)))


def test_a_cheaper_copy_on_write_write_wins_at_once_and_a_free_merge_never_loses() -> None:
    assert crossover.analyze(sections(0.1, 2.0, 1.0, 0.3, 0.2))["deletes"][0]["reads_per_write"] == 0
    assert math.isinf(crossover.analyze(sections(0.1, 0.2, 1.0, 0.2, 0.25))["deletes"][0]["reads_per_write"])
    lines = crossover.render(crossover.analyze(sections(0.1, 2.0, 1.0, 0.3, 0.2)))
    assert any("already the cheaper one from 10.00%" in line for line in lines)


def test_cases_without_every_number_are_left_out() -> None:
    broken = sections(0.01, 0.2, 1.2, 0.3, 0.2)
    broken["reads"]["readers"]["position_0.01"]["arrow"]["mor"] = {"status": "timeout"}
    assert crossover.analyze(broken) == {"deletes": []}
    assert crossover.render(crossover.analyze(broken)) == []
