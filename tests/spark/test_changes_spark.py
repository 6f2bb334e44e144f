"""The change feed in Spark: `format("mor").option("changes", "true")` gives the local feed's
rows, and a stream with `read-changes` keeps a copy equal to a table that keeps changing
(appends, deletes, updates, upserts, compactions), across restarts from its checkpoint."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from spark_helpers import SCHEMA, rows

import mor

NAME = "db.events"
CHANGE_COLUMNS = ["_change_type", "_change_ordinal", "_commit_snapshot_id"]


def bag(records: list[dict[str, Any]], columns: list[str]) -> Counter[tuple]:
    return Counter(tuple(r[c] for c in columns) for r in records)


def history(catalog: mor.Catalog, format_version: int) -> mor.Table:
    table = catalog.create_table(NAME, schema=SCHEMA, partition_by=["category"], format_version=format_version)
    table.append(rows(range(0, 30)))
    table.delete("id < 5")
    table.update({"n": 100}, where="id >= 25")
    table.delete("id = 10", mode="copy-on-write")
    table.compact(min_input_files=1)
    table.upsert(rows([7, 40], n=9), on=["id"])
    table.delete_rows(pa.table({"id": pa.array([8], pa.int64())}))
    return table


@pytest.mark.parametrize("format_version", [2, 3])
def test_batch_changes_equal_the_local_feed(spark: Any, catalog: mor.Catalog, warehouse: Path, format_version: int) -> None:
    table = history(catalog, format_version)
    snapshots = [s.snapshot_id for s in table.metadata.ancestors(table.current_snapshot().snapshot_id)][::-1]
    columns = [f.name for f in table.schema().fields] + CHANGE_COLUMNS
    cases: list[dict[str, str]] = [
        {},
        {"start-snapshot-id": str(snapshots[1]), "changes-on": "id"},
        {"start-snapshot-id": str(snapshots[0]), "end-snapshot-id": str(snapshots[4]), "columns": "id,n", "filter": "id > 6"},
        {"changes-on": "id", "net-changes": "true"},
    ]
    for options in cases:
        reader = spark.read.format("mor").option("warehouse", str(warehouse)).option("changes", "true")
        for k, v in options.items():
            reader = reader.option(k, v)
        got = reader.load(NAME).toArrow()
        local = table.changes(
            from_snapshot_id=int(options["start-snapshot-id"]) if "start-snapshot-id" in options else None,
            to_snapshot_id=int(options["end-snapshot-id"]) if "end-snapshot-id" in options else None,
            columns=options["columns"].split(",") if "columns" in options else None,
            filter=options.get("filter"),
            on=options["changes-on"].split(",") if "changes-on" in options else None,
            net_changes=options.get("net-changes") == "true",
        ).to_arrow()
        wanted = [c for c in columns if c in local.column_names]
        assert bag(got.to_pylist(), wanted) == bag(local.to_pylist(), wanted), options
        assert local.num_rows > 0


def test_a_bad_changes_option_is_a_clear_error(spark: Any, catalog: mor.Catalog, warehouse: Path) -> None:
    table = catalog.create_table(NAME, schema=SCHEMA)
    table.append(rows(range(3)))
    with pytest.raises(Exception, match="snapshot-id"):
        spark.read.format("mor").option("warehouse", str(warehouse)).option("changes", "true").option("snapshot-id", "1").load(
            NAME
        ).collect()


class Copy:
    """A table kept equal to the source by applying its change stream, micro-batch by micro-batch."""

    def __init__(self, catalog: mor.Catalog) -> None:
        self.table = catalog.create_table("db.copy", schema=SCHEMA)
        self.batches = 0

    def apply(self, df: Any, batch_id: int) -> None:
        changes = df.toArrow().to_pylist()
        for ordinal in sorted({r["_change_ordinal"] for r in changes}):  # snapshot by snapshot, in order
            these = [r for r in changes if r["_change_ordinal"] == ordinal]
            removed = [r["id"] for r in these if r["_change_type"] in ("DELETE", "UPDATE_BEFORE")]
            added = [{c: r[c] for c in SCHEMA.names} for r in these if r["_change_type"] in ("INSERT", "UPDATE_AFTER")]
            if removed:
                self.table.delete_rows(pa.table({"id": pa.array(removed, pa.int64())}))
            if added:
                self.table.append(pa.Table.from_pylist(added, schema=SCHEMA))
        self.batches += 1


def live(table: mor.Table) -> Counter[tuple]:
    return Counter(tuple(r.values()) for r in table.scan().to_arrow().to_pylist())


@pytest.mark.parametrize("format_version", [2, 3])
def test_a_change_stream_keeps_a_copy_equal_across_restarts(
    spark: Any, catalog: mor.Catalog, warehouse: Path, tmp_path: Path, format_version: int
) -> None:
    source = catalog.create_table(NAME, schema=SCHEMA, format_version=format_version)
    copy = Copy(catalog)
    checkpoint = str(tmp_path / "checkpoint")

    def run_query() -> None:  # a restart: a new query on the same checkpoint
        stream = (
            spark.readStream.format("mor").option("warehouse", str(warehouse)).option("read-changes", "true")
            .option("streaming-max-snapshots-per-micro-batch", "2").load(NAME)
        )  # fmt: skip
        query = stream.writeStream.foreachBatch(copy.apply).option("checkpointLocation", checkpoint).trigger(availableNow=True).start()
        query.awaitTermination()
        assert query.exception() is None
        assert live(copy.table) == live(source.refresh())

    steps = [
        lambda: source.append(rows(range(0, 20))),
        lambda: source.delete("id < 3"),
        lambda: source.update({"n": 7}, where="id >= 15"),
        lambda: source.compact(min_input_files=1),
        lambda: source.upsert(rows([4, 30], n=5), on=["id"]),
        lambda: source.delete("id = 11", mode="copy-on-write"),
        lambda: source.delete_rows(pa.table({"id": pa.array([12], pa.int64())})),
        lambda: source.append(rows(range(40, 45))),
    ]
    for i, step in enumerate(steps):
        step()
        if i % 2:  # sometimes two commits land between runs of the query
            run_query()
    run_query()
    before = copy.batches
    run_query()  # nothing new: nothing emitted twice
    assert copy.batches == before
    assert live(copy.table) == live(source)


def test_a_change_stream_never_guesses_across_expired_history(spark: Any, catalog: mor.Catalog, warehouse: Path, tmp_path: Path) -> None:
    """A checkpoint behind an expiry stops the stream naming the oldest snapshot left; so does
    a start time whose changes need an expired snapshot. A new stream with no start reads the
    oldest snapshot left as the table's state (INSERTs)."""
    import datetime as dt

    source = catalog.create_table(NAME, schema=SCHEMA)
    source.append(rows(range(0, 10)))
    started = source.current_snapshot()
    assert started is not None
    copy = Copy(catalog)
    checkpoint = str(tmp_path / "checkpoint")

    def query(checkpoint: str, **options: str) -> Any:
        reader = spark.readStream.format("mor").option("warehouse", str(warehouse)).option("read-changes", "true")
        for key, value in options.items():
            reader = reader.option(key, value)
        started_query = reader.load(NAME).writeStream.foreachBatch(copy.apply).option("checkpointLocation", checkpoint)
        running = started_query.trigger(availableNow=True).start()
        try:
            running.awaitTermination()
        except Exception as e:  # pyspark raises the query's exception from awaitTermination
            return e
        return running.exception()

    assert query(checkpoint) is None
    source.delete("id < 3")
    source.append(rows(range(20, 25)))
    source.delete("id = 20")
    source.expire_snapshots(older_than=dt.datetime.now(dt.UTC) + dt.timedelta(seconds=1), allow_short_retention=True)
    oldest = source.current_snapshot()
    assert oldest is not None and len(source.snapshots()) == 1
    failure = query(checkpoint)
    assert failure is not None and "expired before the stream read them" in str(failure) and str(oldest.snapshot_id) in str(failure)
    failure = query(str(tmp_path / "from-time"), **{"stream-from-timestamp": str(started.timestamp_ms)})
    assert failure is not None and "were expired" in str(failure)
    fresh = Copy.__new__(Copy)
    fresh.table, fresh.batches = catalog.create_table("db.fresh_copy", schema=SCHEMA), 0
    copy = fresh
    assert query(str(tmp_path / "new")) is None
    assert live(fresh.table) == live(source)
