"""df.writeStream.format("mor"): one commit per micro-batch, keyed by the query id and the batch
id, so every input row lands exactly once: across restarts from the checkpoint, and when the
driver is killed between the files and the commit or between the commit and the checkpoint."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import mor

DRIVER = Path(__file__).with_name("stream_driver.py")
ROWS_PER_FILE = 10


def write_inputs(folder: Path, files: range) -> list[int]:
    """One Parquet file per number in `files` (ten ids each); the ids written."""
    folder.mkdir(exist_ok=True)
    ids: list[int] = []
    for n in files:
        block = list(range(n * ROWS_PER_FILE, (n + 1) * ROWS_PER_FILE))
        pq.write_table(pa.table({"id": block, "part": [i % 3 for i in block]}), folder / f"input-{n:03d}.parquet")
        ids += block
    return ids


def stream(spark: Any, source: Path, warehouse: Path, checkpoint: Path, name: str = "db.t", **options: str) -> Any:
    rows = spark.readStream.schema("id long, part long").option("maxFilesPerTrigger", 1).parquet(str(source))
    writer = rows.writeStream.format("mor").option("warehouse", str(warehouse)).option("checkpointLocation", str(checkpoint))
    for key, value in options.items():
        writer = writer.option(key.replace("_", "-"), value)
    return writer.trigger(availableNow=True).start(name)


def committed_versions(table: mor.Table) -> list[tuple[str | None, str | None]]:
    ancestry = table.metadata.ancestors(table.metadata.current_snapshot_id)
    return [(s.summary.get("mor.txn-app-id"), s.summary.get("mor.txn-version")) for s in reversed(ancestry)]


def ids_in(table: mor.Table) -> list[int]:
    return sorted(table.scan().to_arrow().column("id").to_pylist())


def test_each_micro_batch_is_one_commit_and_a_restart_carries_on(spark: Any, catalog: mor.Catalog, warehouse: Path, tmp_path: Path) -> None:
    source, checkpoint = tmp_path / "in", tmp_path / "checkpoint"
    expected = write_inputs(source, range(3))
    query = stream(spark, source, warehouse, checkpoint, partition_by="part")
    query.awaitTermination()
    table = catalog.load_table("db.t")
    assert ids_in(table) == expected
    assert committed_versions(table) == [(query.id, "0"), (query.id, "1"), (query.id, "2")]
    assert [f.name for f in table.spec().fields] == ["part"]

    expected += write_inputs(source, range(3, 5))  # new input; the same query, restarted
    again = stream(spark, source, warehouse, checkpoint, partition_by="part")
    again.awaitTermination()
    assert again.id == query.id  # the checkpoint keeps the query's id
    table = catalog.load_table("db.t")
    assert ids_in(table) == sorted(expected)
    assert [v for _, v in committed_versions(table)] == ["0", "1", "2", "3", "4"]


def test_complete_mode_replaces_the_rows_with_each_result(spark: Any, catalog: mor.Catalog, warehouse: Path, tmp_path: Path) -> None:
    source = tmp_path / "in"
    ids = write_inputs(source, range(3))
    counts = spark.readStream.schema("id long, part long").option("maxFilesPerTrigger", 1).parquet(str(source))
    query = (
        counts.groupBy("part").count()
        .writeStream.format("mor").outputMode("complete")
        .option("warehouse", str(warehouse)).option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True).start("db.counts")
    )  # fmt: skip
    query.awaitTermination()
    table = catalog.load_table("db.counts")
    assert table.scan().to_arrow().sort_by("part").to_pylist() == [
        {"part": p, "count": n} for p, n in sorted(Counter(i % 3 for i in ids).items())
    ]
    assert [s.operation for s in table.snapshots()] == ["overwrite"] * 3  # one per micro-batch


def test_an_app_id_option_keys_the_commits_and_a_version_option_is_refused(
    spark: Any, catalog: mor.Catalog, warehouse: Path, tmp_path: Path
) -> None:
    source = tmp_path / "in"
    write_inputs(source, range(1))
    stream(spark, source, warehouse, tmp_path / "c1", txn_app_id="ingest").awaitTermination()
    assert committed_versions(catalog.load_table("db.t")) == [("ingest", "0")]
    # Another query (a new checkpoint) with the same app id replays batch 0: already committed.
    stream(spark, source, warehouse, tmp_path / "c2", txn_app_id="ingest").awaitTermination()
    assert committed_versions(catalog.load_table("db.t")) == [("ingest", "0")]
    query = stream(spark, source, warehouse, tmp_path / "c3", txn_version="1")
    with pytest.raises(Exception) as raised:
        query.awaitTermination()
    assert "InvalidArgumentError" in str(raised.value) and "txn-version" in str(raised.value)


def _run_driver(source: Path, warehouse: Path, checkpoint: Path, fault: str | None) -> int:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MOR_FAULT")}
    if fault is not None:
        faults = Path(__file__).resolve().parents[1] / "faults"  # its sitecustomize kills at the step, in every worker
        pythonpath = os.pathsep.join([str(faults), *filter(None, [env.get("PYTHONPATH")])])
        env.update({"MOR_FAULT_POINT": fault, "MOR_FAULT_KILL": "group", "PYTHONPATH": pythonpath})
    run = subprocess.run(
        [sys.executable, str(DRIVER), str(source), str(warehouse), str(checkpoint)],
        env=env, start_new_session=True, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    if fault is None:
        assert run.returncode == 0, run.stderr[-3000:]
    return run.returncode


def test_a_driver_killed_mid_batch_loses_nothing_and_writes_nothing_twice(catalog: mor.Catalog, warehouse: Path, tmp_path: Path) -> None:
    """The driver killed at the first batch's commit twice over, at each side of it: before the
    commit (nothing lands), then, restarted from the checkpoint, after the commit and before the
    checkpoint (the batch lands and the checkpoint does not know). One history for both faults:
    each driver costs a Spark start-up."""
    source, checkpoint = tmp_path / "in", tmp_path / "checkpoint"
    expected = write_inputs(source, range(3))
    assert _run_driver(source, warehouse, checkpoint, "files-written") != 0
    assert not (catalog.table_exists("db.t") and catalog.load_table("db.t").current_snapshot() is not None)

    assert _run_driver(source, warehouse, checkpoint, "committed") != 0  # the batch again, killed after its commit
    assert [v for _, v in committed_versions(catalog.load_table("db.t"))] == ["0"]

    _run_driver(source, warehouse, checkpoint, None)  # restarted: the batch is not written twice
    table = catalog.load_table("db.t")
    assert ids_in(table) == expected  # every input row exactly once
    versions = committed_versions(table)
    assert [v for _, v in versions] == ["0", "1", "2"] and len({a for a, _ in versions}) == 1
