"""df.write.format("mor"): one snapshot per write, files in their partitions, tables created on
first write, and a failed job (a task, the schema, the commit) leaves the table and its folder as
they were."""

from __future__ import annotations

import datetime as dt
import pickle
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.table import StaticTable as PyIcebergStaticTable
from pyiceberg.transforms import BucketTransform
from pyiceberg.types import LongType
from spark_helpers import canonical, spark_rows

import mor
from mor.catalog.sql import SqlCatalogStore
from mor.errors import CommitConflictError, CommitStateUnknownError, InvalidArgumentError
from mor.format.arrow_types import FIELD_ID_KEY, from_arrow_schema
from mor.io.fileio import to_local_path
from mor.spark.options import TableRef
from mor.spark.types import spark_schema
from mor.spark.write import MorCommitMessage, MorWriter
from mor.write.partitioning import split_partition_terms

DDL = "id long not null, category string, price decimal(10,2), day date, ts timestamp, ntz timestamp_ntz, note string"
ARROW = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("category", pa.string()),
        pa.field("price", pa.decimal128(10, 2)),
        pa.field("day", pa.date32()),
        pa.field("ts", pa.timestamp("us", tz="UTC")),
        pa.field("ntz", pa.timestamp("us")),
        pa.field("note", pa.string()),
    ]
)
T0 = dt.datetime(2024, 2, 27, 21, 30, tzinfo=dt.UTC)
# A one-partition DataFrame of DDL's columns, built by Spark (no driver-side rows).
RANGE_COLUMNS = [
    "id",
    "cast(id % 3 as string) as category",
    "cast(id / 100 as decimal(10,2)) as price",
    "date_add(date'2024-01-01', cast(id % 7 as int)) as day",
    "timestamp'2024-01-01 00:00:00' as ts",
    "timestamp_ntz'2024-01-01 00:00:00' as ntz",
    "cast(null as string) as note",
]


def make_rows(ids: range) -> list[tuple]:
    return [
        (
            i,
            None if i % 7 == 3 else "abc"[i % 3],
            Decimal(i * 101) / 100,
            dt.date(2024, 1, 1) + dt.timedelta(days=i % 40),
            T0 + dt.timedelta(hours=5 * i, microseconds=i),
            (T0 + dt.timedelta(minutes=7 * i)).replace(tzinfo=None),
            None if i % 5 == 0 else f"note {i}",
        )
        for i in ids
    ]


def arrow_rows(ids: range) -> pa.Table:
    return pa.Table.from_pylist([dict(zip(ARROW.names, row)) for row in make_rows(ids)], schema=ARROW)


def frame(spark: Any, ids: range, ddl: str = DDL) -> Any:
    return spark.createDataFrame(make_rows(ids), ddl)


def save(df: Any, warehouse: Path, name: str = "db.t", mode: str = "append", **options: str) -> None:
    writer = df.write.format("mor").option("warehouse", str(warehouse)).mode(mode)
    for key, value in options.items():
        writer = writer.option(key.replace("_", "-"), value)
    writer.save(name)


def files_under(location: str) -> set[str]:
    return {str(p) for p in Path(to_local_path(location)).rglob("*") if p.is_file()}


def pyiceberg_rows(table: mor.Table) -> list[tuple]:
    return canonical(PyIcebergStaticTable.from_metadata(table.metadata_location).scan().to_arrow())


# -- what a write commits -----------------------------------------------------------------------
def test_appends_round_trip_through_mor_spark_and_pyiceberg(spark: Any, catalog: mor.Catalog, warehouse: Path, read_mor: Any) -> None:
    table = catalog.create_table("db.t", schema=ARROW)
    save(frame(spark, range(0, 60)), warehouse)
    save(frame(spark, range(60, 100)), warehouse)
    table.refresh()

    expected = canonical(arrow_rows(range(100)))
    assert canonical(table.scan().to_arrow()) == expected
    assert spark_rows(read_mor("db.t")) == expected
    assert pyiceberg_rows(table) == expected

    assert [s.operation for s in table.snapshots()] == ["append", "append"]
    summary = table.current_snapshot().summary
    tasks = table.scan().plan_files()
    assert (summary["added-records"], summary["total-records"]) == ("40", "100")
    assert int(summary["total-data-files"]) == len(tasks)
    data_file = tasks[0].data_file
    assert data_file.lower_bounds and data_file.value_counts  # metrics for planning
    file_schema = pq.read_schema(to_local_path(data_file.file_path))
    assert [f.metadata[FIELD_ID_KEY] for f in file_schema] == [str(f.field_id).encode() for f in table.schema().fields]


def test_first_write_creates_a_partitioned_table(spark: Any, catalog: mor.Catalog, warehouse: Path, read_mor: Any) -> None:
    save(frame(spark, range(200)), warehouse, partition_by="category, day(ts), bucket(4, id)")

    table = catalog.load_table("db.t")
    assert [(f.name, str(f.field_type), f.required) for f in table.schema().fields] == [
        ("id", "long", True),
        ("category", "string", False),
        ("price", "decimal(10, 2)", False),
        ("day", "date", False),
        ("ts", "timestamptz", False),
        ("ntz", "timestamp", False),
        ("note", "string", False),
    ]
    spec = [(table.schema().find_field(f.source_id).name, str(f.transform)) for f in table.spec().fields]
    assert spec == [("category", "identity"), ("ts", "day"), ("id", "bucket[4]")]
    assert [s.operation for s in table.snapshots()] == ["append"]
    expected = canonical(arrow_rows(range(200)))
    assert canonical(table.scan().to_arrow()) == expected
    assert spark_rows(read_mor("db.t")) == expected
    assert pyiceberg_rows(table) == expected

    # Every row of every file has the partition values its file is filed under.
    bucket = BucketTransform(4).transform(LongType())
    tasks = table.scan().plan_files()
    assert len(tasks) > 10
    for task in tasks:
        for row in pq.read_table(to_local_path(task.data_file.file_path)).to_pylist():
            day = (row["ts"].date() - dt.date(1970, 1, 1)).days
            assert (row["category"], day, bucket(row["id"])) == task.data_file.partition


def test_overwrite_replaces_data_and_deletes_in_one_snapshot(spark: Any, catalog: mor.Catalog, warehouse: Path, read_mor: Any) -> None:
    table = catalog.create_table("db.t", schema=ARROW, partition_by=["category"])
    table.append(arrow_rows(range(0, 50)))
    table.append(arrow_rows(range(50, 80)))
    table.delete("id < 10")  # merge-on-read: position delete files
    tasks = table.scan().plan_files()
    data_files = {t.data_file.file_path for t in tasks}
    delete_files = {d.file_path for t in tasks for d in t.delete_files}
    assert delete_files
    history = len(table.snapshots())

    save(frame(spark, range(1000, 1020)), warehouse, mode="overwrite")
    table.refresh()

    assert len(table.snapshots()) == history + 1
    summary = table.current_snapshot().summary
    assert summary["operation"] == "overwrite"
    assert int(summary["deleted-data-files"]) == len(data_files)
    assert int(summary["removed-delete-files"]) == len(delete_files)
    assert (summary["total-records"], summary["total-delete-files"]) == ("20", "0")
    assert summary["total-data-files"] == summary["added-data-files"]
    expected = canonical(arrow_rows(range(1000, 1020)))
    assert canonical(table.scan().to_arrow()) == expected
    assert spark_rows(read_mor("db.t")) == expected
    assert pyiceberg_rows(table) == expected
    assert not any(t.delete_files for t in table.scan().plan_files())


# -- failed jobs leave no trace -----------------------------------------------------------------
def _table_with_rows(catalog: mor.Catalog) -> tuple[mor.Table, str, set[str]]:
    table = catalog.create_table("db.t", schema=ARROW)
    table.append(arrow_rows(range(10)))
    return table, table.metadata_location, files_under(table.location)


def _gate(table_dir: str, known: int, seen: str, partition: int, after_rows: int, linger: float) -> Callable[..., Any]:
    """A mapInArrow function that passes batches through until, in `partition`, it reaches row
    `after_rows`; there it waits until a new data file appears in `table_dir` (so the writer has
    written something), marks `seen`, waits `linger` seconds and raises. Self-contained: it runs
    in Spark's Python workers, which cannot import this test module."""

    def gate(batches: Any) -> Any:
        import pathlib
        import time

        from pyspark import TaskContext

        mine = TaskContext.get().partitionId() == partition
        passed = 0
        for batch in batches:
            if mine and passed + batch.num_rows > after_rows:
                deadline = time.monotonic() + 30
                while time.monotonic() < deadline:
                    if sum(1 for _ in pathlib.Path(table_dir).rglob("*.parquet")) > known:
                        pathlib.Path(seen).touch()
                        break
                    time.sleep(0.05)
                time.sleep(linger)
                raise RuntimeError("planned failure")
            passed += batch.num_rows
            yield batch

    return gate


def test_a_udf_failing_in_the_writing_task_leaves_no_files(spark: Any, catalog: mor.Catalog, warehouse: Path, tmp_path: Path) -> None:
    table, location, before = _table_with_rows(catalog)
    seen = tmp_path / "seen"
    known = sum(1 for f in before if f.endswith(".parquet"))
    df = spark.range(0, 50000, 1, 1).selectExpr(*RANGE_COLUMNS)
    # The gate passes three 10,000-row Arrow batches (enough for Spark to hand the writer the
    # first), which the writer writes at once (a target size of one byte); then the same task
    # fails upstream. Spark ends the writer's input as if complete and drops its message:
    # abort has to find those files by name.
    gated = df.mapInArrow(_gate(to_local_path(table.location), known, str(seen), 0, 30000, 0.0), df.schema)
    with pytest.raises(Exception, match="planned failure"):
        save(gated, warehouse, target_file_size_bytes="1")
    assert seen.exists()  # a file was written before the failure
    assert catalog.load_table("db.t").metadata_location == location
    assert files_under(table.location) == before


def test_abort_removes_the_files_of_tasks_that_succeeded(spark: Any, catalog: mor.Catalog, warehouse: Path, tmp_path: Path) -> None:
    table, location, before = _table_with_rows(catalog)
    seen = tmp_path / "seen"
    known = sum(1 for f in before if f.endswith(".parquet"))
    df = spark.range(0, 40, 1, 2).selectExpr(*RANGE_COLUMNS)
    # Partition 1 fails only once partition 0 has written its file and had a moment to report.
    gated = df.mapInArrow(_gate(to_local_path(table.location), known, str(seen), 1, 0, 1.0), df.schema)
    with pytest.raises(Exception, match="planned failure"):
        save(gated, warehouse)
    assert seen.exists()
    assert catalog.load_table("db.t").metadata_location == location
    assert files_under(table.location) == before


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda df, F: df.withColumn("extra", F.lit(1)), "unexpected ['extra']"),
        (lambda df, F: df.drop("note"), "missing ['note']"),
        (lambda df, F: df.withColumn("id", F.col("id").cast("string")), "column 'id': string does not fit"),
        (lambda df, F: df.withColumn("id", F.col("id") > 0), "column 'id': bool does not fit"),
    ],
    ids=["extra", "missing", "type", "boolean-into-long"],
)
def test_a_dataframe_that_does_not_fit_is_refused_before_writing(
    spark: Any, catalog: mor.Catalog, warehouse: Path, change: Callable[..., Any], message: str
) -> None:
    from pyspark.sql import functions as F

    table, location, before = _table_with_rows(catalog)
    with pytest.raises(Exception) as raised:
        save(change(frame(spark, range(5)), F), warehouse)
    assert "Failed to initialize Python data source writer" in str(raised.value)  # on the driver, before any task
    assert "SchemaMismatchError" in str(raised.value) and message in str(raised.value)
    assert catalog.load_table("db.t").metadata_location == location
    assert files_under(table.location) == before


def test_a_nullable_column_into_a_required_one_is_refused_with_the_nullability_check(
    spark: Any, catalog: mor.Catalog, warehouse: Path
) -> None:
    from pyspark.sql import functions as F

    table, location, before = _table_with_rows(catalog)
    df = frame(spark, range(5)).withColumn("id", F.when(F.col("id") >= 0, F.col("id")))
    with pytest.raises(Exception) as raised:
        save(df, warehouse, check_nullability="true")
    assert "SchemaMismatchError" in str(raised.value) and "column 'id' is required in the table but nullable" in str(raised.value)
    assert catalog.load_table("db.t").metadata_location == location
    assert files_under(table.location) == before


def test_nulls_into_a_required_column_fail_the_task(spark: Any, catalog: mor.Catalog, warehouse: Path) -> None:
    table, location, before = _table_with_rows(catalog)
    rows = make_rows(range(4))
    rows[2] = (None, *rows[2][1:])
    with pytest.raises(Exception) as raised:
        save(spark.createDataFrame(rows, DDL.replace("not null", "")), warehouse)
    assert "SchemaMismatchError: column 'id' is required but has 1 nulls" in str(raised.value)
    assert catalog.load_table("db.t").metadata_location == location
    assert files_under(table.location) == before


def test_refusals_in_spark_and_in_the_writer(spark: Any, catalog: mor.Catalog, warehouse: Path) -> None:
    table, location, before = _table_with_rows(catalog)
    df = frame(spark, range(3))
    # Spark accepts only append and overwrite from a Python data source; no mode means "error".
    for mode in ("error", "ignore", None):
        writer = df.write.format("mor").option("warehouse", str(warehouse))
        with pytest.raises(Exception, match="UNSUPPORTED_DATA_SOURCE_SAVE_MODE"):
            (writer if mode is None else writer.mode(mode)).save("db.t")
    with pytest.raises(Exception) as raised:
        save(df, warehouse, name=table.metadata_location)
    assert "InvalidArgumentError" in str(raised.value) and "read-only" in str(raised.value)
    with pytest.raises(Exception) as raised:
        save(df, warehouse, partition_by="bucket(4, id)")
    assert "InvalidArgumentError" in str(raised.value) and "only applies when the write creates the table" in str(raised.value)
    with pytest.raises(Exception, match="give option 'warehouse'"):
        df.write.format("mor").mode("append").save("db.t")
    assert catalog.load_table("db.t").metadata_location == location
    assert files_under(table.location) == before


def test_an_idempotent_job_commits_once_per_version(spark: Any, catalog: mor.Catalog, warehouse: Path) -> None:
    """Options txn-app-id / txn-version: a repeated job (a retry, a replayed batch) commits
    nothing and removes what it wrote; the next version commits; overwrite too."""
    table, _, _ = _table_with_rows(catalog)
    save(frame(spark, range(10, 20)), warehouse, txn_app_id="ingest", txn_version="1")
    location, files = catalog.load_table("db.t").metadata_location, files_under(table.location)
    save(frame(spark, range(10, 20)), warehouse, txn_app_id="ingest", txn_version="1")
    save(frame(spark, range(10, 20)), warehouse, mode="overwrite", txn_app_id="ingest", txn_version="0")
    assert catalog.load_table("db.t").metadata_location == location
    assert files_under(table.location) == files
    save(frame(spark, range(20, 25)), warehouse, mode="overwrite", txn_app_id="ingest", txn_version="2")
    current = catalog.load_table("db.t")
    assert sorted(current.scan().to_arrow().column("id").to_pylist()) == list(range(20, 25))
    assert current.current_snapshot().summary["mor.txn-version"] == "2"
    for options in ({"txn_app_id": "ingest"}, {"txn_version": "3"}, {"txn_app_id": "ingest", "txn_version": "three"}):
        with pytest.raises(Exception) as raised:
            save(frame(spark, range(3)), warehouse, **options)
        assert "InvalidArgumentError" in str(raised.value) and "txn-" in str(raised.value)
    assert catalog.load_table("db.t").metadata_location == current.metadata_location


# -- the writer's commit and abort, called directly (as Spark's driver does) ---------------------
def _writer(warehouse: Path, overwrite: bool = False, **options: str) -> MorWriter:
    schema = spark_schema(from_arrow_schema(ARROW))
    return MorWriter(TableRef("db.t", str(warehouse)), {k.replace("_", "-"): v for k, v in options.items()}, schema, overwrite)


def _write(writer: MorWriter, ids: range) -> MorCommitMessage:
    message = writer.write(iter(arrow_rows(ids).to_batches(max_chunksize=10)))
    assert message.files and all(Path(to_local_path(f.file_path)).exists() for f in message.files)
    return message


def _exists(message: MorCommitMessage) -> list[bool]:
    return [Path(to_local_path(f.file_path)).exists() for f in message.files]


def test_the_writer_pickles_without_table_handles_and_flushes_at_the_target_size(catalog: mor.Catalog, warehouse: Path) -> None:
    table, _, _ = _table_with_rows(catalog)
    table.set_properties(**{"write.target-file-size-bytes": "1"})
    writer = pickle.loads(pickle.dumps(_writer(warehouse)))
    assert not any(isinstance(v, (mor.Table, mor.Catalog)) for v in vars(writer).values())
    small = _write(writer, range(100, 130))
    assert len(small.files) == 3  # one file per 10-row batch
    whole = pickle.loads(pickle.dumps(_write(_writer(warehouse, target_file_size_bytes=str(1 << 30)), range(130, 160))))
    assert len(whole.files) == 1  # the option wins over the table property
    writer.commit([small, whole])
    assert table.refresh().current_snapshot().summary["added-data-files"] == "4"
    assert canonical(table.scan().to_arrow()) == canonical(pa.concat_tables([arrow_rows(range(10)), arrow_rows(range(100, 160))]))


def test_a_task_whose_input_fails_deletes_what_it_wrote(catalog: mor.Catalog, warehouse: Path) -> None:
    table, _, before = _table_with_rows(catalog)
    writer = _writer(warehouse, target_file_size_bytes="1")

    def batches() -> Any:
        yield from arrow_rows(range(100, 120)).to_batches(max_chunksize=10)
        assert len(files_under(table.location)) == len(before) + 2  # both batches are on disk
        raise RuntimeError("upstream failure")

    with pytest.raises(RuntimeError, match="upstream failure"):
        writer.write(batches())
    assert files_under(table.location) == before


@pytest.mark.parametrize("concurrent", ["append", "copy-on-write delete"])
def test_overwrite_conflicts_with_concurrent_changes(catalog: mor.Catalog, warehouse: Path, concurrent: str) -> None:
    table, _, _ = _table_with_rows(catalog)
    writer = _writer(warehouse, overwrite=True)
    message = _write(writer, range(100, 120))
    if concurrent == "append":
        table.append(arrow_rows(range(20, 30)))  # overwriting would silently keep these rows
    else:
        table.delete("id < 3", mode="copy-on-write")  # removes a file the overwrite removes
    moved = table.metadata_location
    with pytest.raises(CommitConflictError):
        writer.commit([message])
    assert catalog.load_table("db.t").metadata_location == moved
    assert _exists(message) == [False]


def test_a_job_planned_before_a_constraint_cannot_commit_rows_that_break_it(catalog: mor.Catalog, warehouse: Path) -> None:
    """The executors checked the rows against the table the job was planned on; the driver's
    commit checks them again against a constraint added meanwhile (issue 38)."""
    table, _, _ = _table_with_rows(catalog)
    writer = _writer(warehouse)
    breaking, keeping = _write(writer, range(100, 110)), _write(_writer(warehouse), range(200, 210))
    table.add_constraint("small_ids", "id < 50")
    moved = table.metadata_location
    with pytest.raises(mor.ConstraintViolationError, match="small_ids"):
        writer.commit([breaking])
    assert catalog.load_table("db.t").metadata_location == moved
    assert _exists(breaking) == [False]
    table.drop_constraint("small_ids")
    table.add_constraint("big_ids", "id >= 0")
    _writer(warehouse).commit([keeping])  # planned after: checked on the executors; and again
    assert catalog.load_table("db.t").scan(filter="id >= 200").count() == 10


def test_no_cleanup_after_an_unknown_commit_state(catalog: mor.Catalog, warehouse: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _table_with_rows(catalog)
    writer = _writer(warehouse)
    message, other = _write(writer, range(100, 110)), _write(writer, range(110, 120))
    another_job = _write(_writer(warehouse), range(120, 130))

    def lost_connection(*args: Any) -> bool:
        raise CommitStateUnknownError("connection lost during the swap")

    monkeypatch.setattr(SqlCatalogStore, "swap", lost_connection)
    with pytest.raises(CommitStateUnknownError):
        writer.commit([message, other])
    writer.abort([message, other])  # Spark's abort after the failed commit
    assert _exists(message) == _exists(other) == [True]
    # A task failed, so commit never ran: abort removes the job's files, reported or not
    # (`other` stands for a task whose message Spark dropped), and no other job's.
    writer.abort([message, None])
    assert _exists(message) == _exists(other) == [False]
    assert _exists(another_job) == [True]


def test_dataframe_columns_match_table_columns_in_any_case(catalog: mor.Catalog, warehouse: Path) -> None:
    table, _, _ = _table_with_rows(catalog)
    schema = spark_schema(table.schema())
    for field in schema.fields:
        field.name = field.name.upper()
    writer = MorWriter(TableRef("db.t", str(warehouse)), {}, schema, overwrite=False)
    upper = arrow_rows(range(10, 20)).rename_columns([n.upper() for n in ARROW.names])
    writer.commit([writer.write(iter(upper.to_batches()))])
    assert canonical(table.refresh().scan().to_arrow()) == canonical(arrow_rows(range(20)))


def test_a_table_created_meanwhile_makes_the_creating_write_fail(catalog: mor.Catalog, warehouse: Path) -> None:
    writer = _writer(warehouse)
    message = _write(writer, range(5))
    other = catalog.create_table("db.t", schema=ARROW)
    with pytest.raises(CommitConflictError, match="created by another writer"):
        writer.commit([message])
    assert _exists(message) == [False]
    assert catalog.load_table("db.t").metadata_location == other.metadata_location


def test_split_partition_terms() -> None:
    assert split_partition_terms("category, day(ts),bucket(16, id) , truncate(4,name)") == [
        "category", "day(ts)", "bucket(16, id)", "truncate(4,name)"
    ]  # fmt: skip
    assert split_partition_terms("  ") == []
    for bad in ("a,,b", "bucket(16, id", "day(ts))", "a,"):
        with pytest.raises(InvalidArgumentError):
            split_partition_terms(bad)
