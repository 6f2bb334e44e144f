"""spark.readStream.format("mor"): every appended row exactly once across restarts, delete and
overwrite snapshots refused unless skipped, a start timestamp, read limits, availableNow.

The first tests drive MorStreamReader directly as Spark's micro-batch loop does (fast, no
query); the last ones run real streaming queries with a checkpoint.
"""

from __future__ import annotations

import pickle
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from pyspark.errors import StreamingQueryException
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows
from spark_helpers import SCHEMA, canonical, rows

import mor
from mor.catalog.metadata_files import write_metadata
from mor.format.metadata import TableMetadata
from mor.io.fileio import FileIO
from mor.spark.options import TableRef
from mor.spark.source import MorDataSource
from mor.spark.stream import (
    SKIP_DELETE,
    SKIP_OVERWRITE,
    MorStreamReader,
    StreamOffset,
    pending_steps,
)

NAME = "db.events"


# -- the reader, driven as Spark's micro-batch loop drives it ---------------------------------------
def stream_reader(name: str, **options: str) -> MorStreamReader:
    options = {"path": name, **{k.replace("_", "-"): v for k, v in options.items()}}
    return MorStreamReader(TableRef(name, options.get("warehouse")), options, MorDataSource(options).schema())


def drain(reader: MorStreamReader, limit: ReadLimit | None = None, start: dict | None = None) -> tuple[list[list[int]], dict]:
    """Micro-batches until no new offset: the ids of each, and the last offset. Executors get
    the reader pickled, as Spark ships it."""
    start = reader.initialOffset() if start is None else start
    batches = []
    while (end := reader.latestOffset(start, limit or reader.getDefaultReadLimit())) != start:
        shipped = pickle.loads(pickle.dumps(reader))
        ids = [i for p in reader.partitions(start, end) for b in shipped.read(p) for i in b.column("id").to_pylist()]
        batches.append(sorted(ids))
        reader.commit(end)
        start = end
    return batches, start


def ids_of(batches: list[list[Any]]) -> list[Any]:
    return sorted(i for batch in batches for i in batch)


def variant(table: mor.Table, metadata: TableMetadata) -> str:
    """`metadata` written as a metadata file of `table`: a read-only version of it."""
    location = f"{table.location.rstrip('/')}/metadata/variant-{time.monotonic_ns()}.metadata.json"
    write_metadata(FileIO(), location, metadata)
    return location


def test_limits_split_a_snapshot_by_files_and_available_now_stops_at_its_start(catalog: mor.Catalog, warehouse: Path) -> None:
    table = catalog.create_table(NAME, schema=SCHEMA, partition_by=["category"])
    table.append(rows(range(0, 40)))  # 4 files: categories a, b, c and null
    table.append(rows(range(40, 80)))
    reader = stream_reader(NAME, warehouse=str(warehouse), streaming_max_files_per_micro_batch="3")
    start = reader.initialOffset()
    reader.prepareForTriggerAvailableNow()
    table.append(rows(range(80, 90)))  # after the availableNow query started: not read
    batches, end = drain(reader, start=start)
    assert len(batches) == 3  # 8 files, 3 at a time: micro-batches end inside snapshots
    assert ids_of(batches) == list(range(80))
    assert reader.latestOffset(end, ReadAllAvailable()) == end


def test_a_file_larger_than_the_row_limit_is_still_emitted(catalog: mor.Catalog, warehouse: Path) -> None:
    table = catalog.create_table(NAME, schema=SCHEMA)
    for ids in (range(0, 10), range(10, 20), range(20, 60), range(60, 70), range(70, 80)):
        table.append(rows(ids))
    reader = stream_reader(NAME, warehouse=str(warehouse), streaming_max_rows_per_micro_batch="25")
    batches, _ = drain(reader)
    assert [len(b) for b in batches] == [20, 40, 20]
    assert ids_of(batches) == list(range(80))
    # Spark may ask for everything whatever the options say (and the options may be absent).
    assert [len(b) for b in drain(reader, ReadAllAvailable())[0]] == [80]
    assert [len(b) for b in drain(stream_reader(NAME, warehouse=str(warehouse)), ReadMaxRows(30))[0]] == [20, 40, 20]


def test_a_refused_snapshot_comes_after_the_rows_before_it(catalog: mor.Catalog, warehouse: Path) -> None:
    table = catalog.create_table(NAME, schema=SCHEMA)
    table.append(rows(range(10)))
    table.delete("id < 3")
    table.append(rows(range(10, 20)))
    reader = stream_reader(NAME, warehouse=str(warehouse))
    start = reader.initialOffset()
    end = reader.latestOffset(start, ReadAllAvailable())
    assert [b.num_rows for p in reader.partitions(start, end) for b in reader.read(p)] == [10]  # deletes not applied
    with pytest.raises(mor.StreamingChangeError, match=f"is a 'delete'.*{SKIP_DELETE}"):
        reader.latestOffset(end, ReadAllAvailable())
    batches, _ = drain(stream_reader(NAME, warehouse=str(warehouse), streaming_skip_delete_snapshots="true"), start=end)
    assert batches == [list(range(10, 20))]


def test_a_replace_snapshot_is_passed_over(catalog: mor.Catalog) -> None:
    table = catalog.create_table(NAME, schema=SCHEMA)
    table.append(rows(range(10)))
    rewrite = table.append(rows(range(10, 20)))  # stands in for a compaction's rewrite
    table.append(rows(range(20, 30)))
    snapshots = tuple(
        replace(s, summary={**s.summary, "operation": "replace"}) if s.snapshot_id == rewrite.snapshot_id else s
        for s in table.metadata.snapshots
    )
    batches, _ = drain(stream_reader(variant(table, replace(table.metadata, snapshots=snapshots))))
    assert ids_of(batches) == [*range(10), *range(20, 30)]


def test_expired_history_is_read_as_the_oldest_snapshot_left(catalog: mor.Catalog) -> None:
    table = catalog.create_table(NAME, schema=SCHEMA)
    first = table.append(rows(range(10)))
    table.delete("id < 3")
    table.append(rows(range(10, 20)))
    expired = replace(table.metadata, snapshots=tuple(s for s in table.metadata.snapshots if s != first))
    reader = stream_reader(variant(table, expired))
    assert reader.initialOffset()["scan_all_files"] is True
    # The table as of the oldest snapshot left (its deletes applied, though it is a delete), then the append.
    assert ids_of(drain(reader)[0]) == list(range(3, 20))


def test_rollback_and_expired_offsets(catalog: mor.Catalog) -> None:
    table = catalog.create_table(NAME, schema=SCHEMA)
    a, b, c = (table.append(rows(range(i, i + 5))) for i in (0, 5, 10))
    rolled_back = replace(table.metadata, current_snapshot_id=a.snapshot_id)
    with pytest.raises(mor.StreamingChangeError, match="not an ancestor"):
        pending_steps(rolled_back, a.snapshot_id, StreamOffset.done(b))
    expired = replace(table.metadata, snapshots=(b, c))
    # A finished snapshot may be expired: its child comes next.
    assert [s.snapshot.snapshot_id for s in pending_steps(expired, c.snapshot_id, StreamOffset.done(a))] == [b.snapshot_id, c.snapshot_id]
    with pytest.raises(mor.StreamingChangeError, match="expired before the stream read them"):
        pending_steps(expired, c.snapshot_id, StreamOffset.at(a, 0))


def test_time_travel_options_are_refused(catalog: mor.Catalog, warehouse: Path) -> None:
    table = catalog.create_table(NAME, schema=SCHEMA)
    table.append(rows(range(3)))
    with pytest.raises(mor.InvalidArgumentError, match="stream-from-timestamp"):
        stream_reader(NAME, warehouse=str(warehouse), snapshot_id=str(table.current_snapshot().snapshot_id))


# -- real streaming queries --------------------------------------------------------------------------
def run_available_now(spark: Any, warehouse: Path, checkpoint: Path, out: list | None = None, **options: str) -> list[list[tuple]]:
    """One availableNow query on the checkpoint: the rows of each non-empty micro-batch it
    wrote, also added to `out` as they come (kept when the query fails)."""
    reader = spark.readStream.format("mor").option("warehouse", str(warehouse))
    for key, value in options.items():
        reader = reader.option(key.replace("_", "-"), value)
    batches: list[list[tuple]] = [] if out is None else out

    def collect(df: Any, batch_id: int) -> None:
        if batch := canonical(df.toArrow()):
            batches.append(batch)

    query = (
        reader.load(NAME).writeStream.foreachBatch(collect).option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start()
    )
    query.awaitTermination()
    return batches


def emitted(batches: list[list[tuple]]) -> list[tuple]:
    return sorted(row for batch in batches for row in batch)


@pytest.mark.cluster
def test_each_appended_row_once_across_restarts(spark: Any, catalog: mor.Catalog, warehouse: Path, tmp_path: Path) -> None:
    table = catalog.create_table(NAME, schema=SCHEMA, partition_by=["category"])
    table.append(rows(range(0, 50)))
    table.append(rows(range(50, 80)))
    checkpoint = tmp_path / "checkpoint"
    assert emitted(run_available_now(spark, warehouse, checkpoint)) == canonical(rows(range(80)))
    table.append(rows(range(80, 100)))
    table.append(rows(range(100, 120)))
    assert emitted(run_available_now(spark, warehouse, checkpoint)) == canonical(rows(range(80, 120)))
    assert run_available_now(spark, warehouse, checkpoint) == []


def test_delete_and_overwrite_snapshots_stop_the_stream_unless_skipped(
    spark: Any, catalog: mor.Catalog, warehouse: Path, tmp_path: Path
) -> None:
    table = catalog.create_table(NAME, schema=SCHEMA)
    table.append(rows(range(0, 30)))
    table.delete("id < 5")
    table.append(rows(range(30, 40)))
    assert table.update({"n": 1000}, where="id = 35").summary["operation"] == "overwrite"
    table.append(rows(range(40, 50)))
    checkpoint = tmp_path / "checkpoint"
    batches: list[list[tuple]] = []

    def run(**options: str) -> None:
        run_available_now(spark, warehouse, checkpoint, batches, **options)

    with pytest.raises(StreamingQueryException, match=f"StreamingChangeError.*is a 'delete'.*{SKIP_DELETE}"):
        run()
    assert emitted(batches) == canonical(rows(range(30)))  # what came before it, deletes not applied
    with pytest.raises(StreamingQueryException, match=f"StreamingChangeError.*is a 'overwrite'.*{SKIP_OVERWRITE}"):
        run(streaming_skip_delete_snapshots="true")
    skip_both = {"streaming_skip_delete_snapshots": "true", "streaming_skip_overwrite_snapshots": "true"}
    run(**skip_both)
    # Every append exactly once; the overwrite is skipped whole (35 keeps its first version).
    assert emitted(batches) == canonical(rows(range(50)))
    table.delete("id = 45")  # a micro-batch with nothing to read
    run(**skip_both)
    assert emitted(batches) == canonical(rows(range(50)))


def test_stream_from_timestamp_and_columns(spark: Any, catalog: mor.Catalog, warehouse: Path, tmp_path: Path) -> None:
    table = catalog.create_table(NAME, schema=SCHEMA)
    table.append(rows(range(0, 10)))
    time.sleep(0.01)  # the next commit gets a later timestamp
    since = table.append(rows(range(10, 20))).timestamp_ms
    table.append(rows(range(20, 30)))
    batches = run_available_now(spark, warehouse, tmp_path / "checkpoint", stream_from_timestamp=str(since), columns="n,id")
    assert emitted(batches) == sorted((i, i) for i in range(10, 30))


def test_read_limits_make_several_micro_batches(spark: Any, catalog: mor.Catalog, warehouse: Path, tmp_path: Path) -> None:
    table = catalog.create_table(NAME, schema=SCHEMA)
    for ids in (range(0, 10), range(10, 20), range(20, 60), range(60, 70)):
        table.append(rows(ids))
    batches = run_available_now(spark, warehouse, tmp_path / "checkpoint", streaming_max_rows_per_micro_batch="25")
    assert [len(b) for b in batches] == [20, 40, 10]
    assert emitted(batches) == canonical(rows(range(70)))
