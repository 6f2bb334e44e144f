"""The lake-scale planning benchmark (benchmarks/bench_scale_planning.py) at a tiny size: its
synthesized table is what it claims (N data files in M manifests, each with its one position
delete file in M delete manifests), and the plan digest it compares planners by agrees between
mor and pyiceberg. Its children (processes, the JVM) are not started here."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))

import bench_scale_planning as scale
from bench_planning import ROWS_PER_FILE, manifest_counts, open_with_pyiceberg
from common import TABLE_NAME

import mor


def test_the_synthesized_table_plans_one_task_per_data_file_with_its_one_delete_file(tmp_path: Path) -> None:
    assert scale.ROWS_PER_FILE == ROWS_PER_FILE  # its 1% filter's bound assumes bench_planning's files
    root = tmp_path / "wh"
    build = scale.build_table(root, 20, 2)
    table = mor.load_catalog(str(root)).load_table(TABLE_NAME)
    assert build["metadata_location"] == table.metadata_location
    assert manifest_counts(table) == {"data": 2, "deletes": 2}
    tasks = table.scan().plan_files()
    assert len(tasks) == 20
    for task in tasks:
        (delete,) = task.delete_files
        assert delete.referenced_data_file == task.data_file.file_path
    selected = table.scan(filter=scale.filter_text(scale.ROWS_PER_FILE)).plan_files()  # the 1% filter's form: data file 0
    assert len(selected) == 1 and len(selected[0].delete_files) == 1
    theirs = open_with_pyiceberg(root).scan().plan_files()
    assert scale.plan_digest(scale.mor_pairs(tasks)) == scale.plan_digest(scale.pyiceberg_pairs(theirs))


def test_the_digest_tells_a_moved_delete_file_apart() -> None:
    plan = [("a", ["da"]), ("b", ["db"])]
    moved = [("a", ["db"]), ("b", ["da"])]
    assert scale.plan_digest(plan) == scale.plan_digest(reversed(plan))
    assert scale.plan_digest(plan)["data_files_digest"] == scale.plan_digest(moved)["data_files_digest"]
    assert scale.plan_digest(plan)["plan_digest"] != scale.plan_digest(moved)["plan_digest"]
