"""Distributed DELETE/UPDATE/MERGE/UPSERT (mor.spark.dml, mor.spark.dml_merge) against the local
API: each test builds twin tables with the same history, runs the local verb on one and the
Spark verb on the other, and expects the same rows, one snapshot of the same operation, and the
same errors; a failed Spark job leaves the table and its folder as they were."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from foreign_writes import commit_as_another_engine
from pyiceberg.expressions import In
from pyiceberg.table import StaticTable as PyIcebergStaticTable
from pyspark.errors import AnalysisException, PythonException
from spark_helpers import SCHEMA, canonical, rows, source_rows

import mor
from mor.io.fileio import to_local_path
from mor.spark.dml_merge import DRIVER_SOURCE_CONF
from mor.spark.functions import delete, merge, update, upsert

FILE_PATH_ID, POS_ID = 2147483546, 2147483545


@pytest.fixture(autouse=True)
def distributed_merges(spark: Any) -> Any:
    """These tests' sources are small: keep MERGE/UPSERT distributed (the driver path has its
    own tests, tests/spark/test_dml_speed_paths.py)."""
    spark.conf.set(DRIVER_SOURCE_CONF, "-1")
    yield
    spark.conf.unset(DRIVER_SOURCE_CONF)


PARTITIONINGS = [pytest.param(None, id="unpartitioned"), pytest.param(["category"], id="partitioned")]


def make_table(catalog: mor.Catalog, name: str, partition_by: list[str] | None, equality_deletes: bool = True) -> mor.Table:
    """Four data files (per partition), position deletes, and (optionally) equality deletes."""
    table = catalog.create_table(name, schema=SCHEMA, partition_by=partition_by)
    for ids in (range(0, 40), range(40, 80), range(80, 120), range(120, 160)):
        table.append(rows(ids))
    table.delete(In("id", [3, 13, 44, 85, 121]))
    if equality_deletes:
        table.delete_rows(pa.table({"id": pa.array([7, 48, 95, 150], pa.int64())}))
    return table


def twins(catalog: mor.Catalog, partition_by: list[str] | None, equality_deletes: bool = True) -> tuple[mor.Table, mor.Table]:
    return make_table(catalog, "db.local", partition_by, equality_deletes), make_table(catalog, "db.spark", partition_by, equality_deletes)


def files_under(table: mor.Table) -> set[str]:
    return {str(p) for p in Path(to_local_path(table.location)).rglob("*") if p.is_file()}


def live_rows(table: mor.Table) -> list[tuple]:
    return canonical(table.scan().to_arrow())


MERGE_SOURCE = source_rows([4, 15, 16, 17, 30, 44, 90, 500, 501], n=1000, categories={17: "zzz", 501: None})
MERGE_CLAUSES: dict[str, Any] = {
    "when_matched_delete": "source.id = 30",
    "when_matched_update": {"n": "source.n + n", "category": "source.category"},
    "when_matched_update_if": "source.id != 16",
    "when_not_matched_insert": "*",
    "when_not_matched_insert_if": "source.id != 501",
}
# The same clauses with SQL text conditions (the filter language, over the joined rows).
TEXT_MERGE_CLAUSES: dict[str, Any] = {
    **MERGE_CLAUSES,
    "when_matched_delete": "source.id = 30",
    "when_matched_update_if": "source.id <> 16 and (target.n is null or source.n + n > -1)",
    "when_not_matched_insert_if": "source.id <> 501",
}
UPSERT_SOURCE = source_rows([1, 2, 13, 48, 90, 150, 155, 700], n=5)
# name -> (the local verb, the Spark verb, the snapshot operation)
VERBS: dict[str, tuple[Callable[[mor.Table], Any], Callable[[Any, mor.Table], Any], str]] = {
    "delete": (
        lambda t: t.delete("n >= 30 and n < 90"),
        lambda s, t: delete(s, t, "n >= 30 and n < 90"),
        "delete",
    ),
    "update": (
        lambda t: t.update({"n": "n * 10", "category": "'moved'"}, where="id >= 20 and id < 130"),
        lambda s, t: update(s, t, {"n": "n * 10", "category": "'moved'"}, where="id >= 20 and id < 130"),
        "overwrite",
    ),
    "merge": (
        lambda t: t.merge(MERGE_SOURCE, on=["id", "category"], **MERGE_CLAUSES),
        lambda s, t: merge(s, t, s.createDataFrame(MERGE_SOURCE), on=["id", "category"], **MERGE_CLAUSES),
        "overwrite",
    ),
    "merge-text-conditions-distributed": (
        lambda t: t.merge(MERGE_SOURCE, on=["id", "category"], **TEXT_MERGE_CLAUSES),
        lambda s, t: merge(s, t, s.createDataFrame(MERGE_SOURCE), on=["id", "category"], path="distributed", **TEXT_MERGE_CLAUSES),
        "overwrite",
    ),
    "upsert": (
        lambda t: t.upsert(UPSERT_SOURCE, on=["id"]),
        lambda s, t: upsert(s, t, s.createDataFrame(UPSERT_SOURCE), on=["id"]),
        "overwrite",
    ),
}


@pytest.mark.parametrize("verb", list(VERBS))
@pytest.mark.parametrize("partition_by", PARTITIONINGS)
def test_spark_verb_leaves_the_rows_the_local_verb_leaves(spark: Any, catalog: mor.Catalog, verb: str, partition_by: Any) -> None:
    local, distributed = twins(catalog, partition_by)
    local_verb, spark_verb, operation = VERBS[verb]
    before = len(distributed.snapshots())
    assert live_rows(local) == live_rows(distributed)

    expected = local_verb(local)
    snapshot = spark_verb(spark, distributed)

    assert live_rows(distributed) == live_rows(local)
    assert live_rows(distributed) != live_rows(make_table(catalog, "db.untouched", partition_by))
    assert len(distributed.snapshots()) == before + 1
    assert snapshot == distributed.current_snapshot()
    assert snapshot.operation == expected.operation == operation
    for key in ("total-records", "added-position-deletes", "deleted-data-files", "added-records"):
        assert snapshot.summary.get(key) == expected.summary.get(key), key
    assert live_rows(catalog.load_table("db.spark")) == live_rows(local)


def test_position_delete_files_are_sorted_and_reference_their_data_file(spark: Any, catalog: mor.Catalog) -> None:
    table = make_table(catalog, "db.t", ["category"])
    before = {d.file_path for t in table.scan().plan_files() for d in t.delete_files}
    delete(spark, table, In("id", [1, 2, 30, 31, 39, 50, 60, 119, 122, 159]))

    written = {d for t in table.scan().plan_files() for d in t.position_deletes if d.file_path not in before}
    assert len(written) == len({d.referenced_data_file for d in written}) >= 4  # one per touched data file
    for d in written:
        assert d.referenced_data_file is not None
        data = pq.read_table(to_local_path(d.file_path))
        assert data.column_names == ["file_path", "pos"]
        positions = data.column("pos").to_pylist()
        assert positions == sorted(set(positions)) and len(positions) == d.record_count
        assert set(data.column("file_path").to_pylist()) == {d.referenced_data_file}
        assert d.lower_bounds[FILE_PATH_ID] == d.upper_bounds[FILE_PATH_ID] == d.referenced_data_file.encode()
        assert (d.lower_bounds[POS_ID], d.upper_bounds[POS_ID]) == (
            positions[0].to_bytes(8, "little"),
            positions[-1].to_bytes(8, "little"),
        )


def test_pyiceberg_reads_what_the_spark_verbs_wrote(spark: Any, catalog: mor.Catalog) -> None:
    local, distributed = twins(catalog, ["category"], equality_deletes=False)  # pyiceberg reads no equality deletes
    for verb, (local_verb, spark_verb, _) in VERBS.items():
        local_verb(local)
        spark_verb(spark, distributed)
        static = PyIcebergStaticTable.from_metadata(distributed.metadata_location)
        assert canonical(static.scan().to_arrow()) == live_rows(local), verb


def test_a_whole_file_delete_drops_the_file_and_its_position_deletes(spark: Any, catalog: mor.Catalog) -> None:
    # Without equality deletes: they make the live row count unknown, so no file is dropped.
    local, distributed = twins(catalog, ["category"], equality_deletes=False)
    files_a = {t.data_file.file_path for t in distributed.scan(filter="category = 'a'").plan_files()}
    assert len(files_a) == 4

    expected = local.delete("category = 'a'")
    snapshot = delete(spark, distributed, "category = 'a'")

    assert live_rows(distributed) == live_rows(local)
    assert snapshot.summary["deleted-data-files"] == expected.summary["deleted-data-files"] == "4"
    assert "added-delete-files" not in snapshot.summary
    # The position delete file of id 3 (category 'a') could only apply to a dropped file.
    assert snapshot.summary["removed-position-delete-files"] == expected.summary["removed-position-delete-files"] == "1"
    assert not files_a & {t.data_file.file_path for t in distributed.scan().plan_files()}


@pytest.mark.parametrize(
    "verb",
    [
        pytest.param(lambda s, t: delete(s, t, "id = 13"), id="delete-only-deleted-rows"),
        pytest.param(lambda s, t: update(s, t, {"n": 0}, where="id in (3, 44)"), id="update-only-deleted-rows"),
        pytest.param(
            lambda s, t: merge(s, t, s.createDataFrame(source_rows([1000, 1001], n=0)), on=["id"], when_matched_delete=True),
            id="merge-no-match-no-insert",
        ),
        pytest.param(lambda s, t: upsert(s, t, s.createDataFrame(rows([])), on=["id"]), id="upsert-empty-source"),
    ],
)
def test_nothing_to_change_commits_nothing(spark: Any, catalog: mor.Catalog, verb: Callable[[Any, mor.Table], Any]) -> None:
    table = make_table(catalog, "db.t", None)
    location, files = table.metadata_location, files_under(table)
    assert verb(spark, table) is None
    assert catalog.load_table("db.t").metadata_location == location
    assert files_under(table) == files


@pytest.mark.parametrize("verb", ["delete", "merge"])
def test_copy_on_write_rewrites_files_like_the_local_api(spark: Any, catalog: mor.Catalog, verb: str) -> None:
    local, distributed = twins(catalog, ["category"])
    for t in (local, distributed):
        t.set_properties(**{"write.delete.mode": "copy-on-write", "write.merge.mode": "copy-on-write"})
    local_verb, spark_verb, _ = VERBS[verb]
    expected = local_verb(local)
    snapshot = spark_verb(spark, distributed)

    assert live_rows(distributed) == live_rows(local)
    assert snapshot.operation == expected.operation == "overwrite"
    assert "added-delete-files" not in snapshot.summary
    assert snapshot.summary["deleted-data-files"] == expected.summary["deleted-data-files"]


def unchanged(catalog: mor.Catalog, table: mor.Table, location: str, files: set[str], rows_before: list[tuple]) -> None:
    fresh = catalog.load_table(table.identifier)
    assert fresh.metadata_location == location
    assert files_under(table) == files  # nothing the job wrote is left behind
    assert live_rows(fresh) == rows_before


@pytest.mark.cluster
def test_a_failing_task_leaves_the_table_unchanged_and_no_files(spark: Any, catalog: mor.Catalog) -> None:
    local, distributed = twins(catalog, None)
    for t in (local, distributed):
        task = t.scan().plan_files()[2]  # a file with matches; the others' tasks still write theirs
        Path(to_local_path(task.data_file.file_path)).unlink()
    location, files = distributed.metadata_location, files_under(distributed)

    with pytest.raises(mor.CorruptMetadataError, match="is missing|cannot be opened"):
        local.delete("n >= 10")
    with pytest.raises(mor.CorruptMetadataError, match="is missing|cannot be opened"):
        delete(spark, distributed, "n >= 10")
    assert distributed.metadata_location == location
    assert files_under(distributed) == files
    assert catalog.load_table("db.spark").metadata_location == location


@pytest.mark.cluster
def test_a_merge_failing_in_one_task_leaves_the_table_unchanged_and_no_files(spark: Any, catalog: mor.Catalog) -> None:
    local, distributed = twins(catalog, ["category"])
    # Matches in every partition; one source row updates the required `id` to null.
    source = source_rows([1, 2, 50, 51, 100, 101, 140, 141], n=0)
    source = source.set_column(2, "n", pa.array([1, 2, 3, 4, None, 6, 7, 8], pa.int64()))
    clauses = {"when_matched_update": {"id": "source.n"}, "when_not_matched_insert": "*"}
    location, files, before = distributed.metadata_location, files_under(distributed), live_rows(distributed)

    with pytest.raises(mor.SchemaMismatchError, match="'id' is required"):
        local.merge(source, on=["id"], **clauses)
    with pytest.raises(mor.SchemaMismatchError, match="'id' is required"):
        merge(spark, distributed, spark.createDataFrame(source), on=["id"], **clauses)
    unchanged(catalog, distributed, location, files, before)


@pytest.mark.parametrize(
    ("verb", "error"),
    [
        pytest.param(lambda s, t: update(s, t, {"n": "nope + 1"}), mor.SchemaMismatchError, id="update-unknown-column"),
        pytest.param(lambda s, t: delete(s, t, "nope = 1"), mor.InvalidFilterError, id="delete-unknown-column"),
        pytest.param(
            lambda s, t: merge(s, t, s.createDataFrame(rows([1, 2])), on=["id"], when_matched_update={"n": "source.nope"}),
            mor.SchemaMismatchError,
            id="merge-unknown-source-column",
        ),
        pytest.param(
            lambda s, t: merge(s, t, s.createDataFrame(rows([1, 2, 1])), on=["id"], when_matched_delete=True),
            mor.DuplicateKeyError,
            id="merge-duplicate-keys",
        ),
        pytest.param(
            lambda s, t: upsert(s, t, s.createDataFrame(source_rows([5, 5, 6], n=0)), on=["id"]),
            mor.DuplicateKeyError,
            id="upsert-duplicate-keys",
        ),
        pytest.param(
            lambda s, t: upsert(s, t, s.createDataFrame(rows([5]).drop_columns(["n"])), on=["id"]),
            mor.SchemaMismatchError,
            id="upsert-missing-column",
        ),
        pytest.param(lambda s, t: delete(s, t, "id = 1", mode="sideways"), mor.InvalidArgumentError, id="unknown-mode"),
    ],
)
def test_bad_requests_fail_before_writing(spark: Any, catalog: mor.Catalog, verb: Callable[[Any, mor.Table], Any], error: type) -> None:
    table = make_table(catalog, "db.t", ["category"])
    location, files, before = table.metadata_location, files_under(table), live_rows(table)
    with pytest.raises(error):
        verb(spark, table)
    unchanged(catalog, table, location, files, before)


@pytest.mark.parametrize("verb", ["delete", "update", "merge"])
def test_a_concurrent_rewrite_of_a_touched_file_is_a_conflict(spark: Any, catalog: mor.Catalog, verb: str) -> None:
    local, distributed = twins(catalog, None)
    local_verb, spark_verb, _ = VERBS[verb]
    for t in (local, distributed):  # a true conflict raises instead of re-planning
        t.set_properties(**{"mor.dml.replan.num-retries": "0"})
    stale = {t.identifier: catalog.load_table(t.identifier) for t in (local, distributed)}
    for t in (local, distributed):  # another writer rewrites the file of ids 0-39 after the stale handles planned
        t.delete("id = 21", mode="copy-on-write")
    location, files, after = distributed.metadata_location, files_under(distributed), live_rows(distributed)

    with pytest.raises(mor.CommitConflictError, match="removed data files"):
        local_verb(stale["db.local"])
    with pytest.raises(mor.CommitConflictError, match="removed data files"):
        spark_verb(spark, stale["db.spark"])
    unchanged(catalog, distributed, location, files, after)


@pytest.mark.parametrize("verb", sorted(VERBS))
def test_a_concurrent_rewrite_of_a_touched_file_is_replanned_like_the_local_api(spark: Any, catalog: mor.Catalog, verb: str) -> None:
    local, distributed = twins(catalog, None)
    local_verb, spark_verb, _ = VERBS[verb]
    stale = {t.identifier: catalog.load_table(t.identifier) for t in (local, distributed)}
    for t in (local, distributed):
        t.delete("id = 21", mode="copy-on-write")
    local_verb(stale["db.local"])
    spark_verb(spark, stale["db.spark"])
    assert live_rows(distributed) == live_rows(local)
    soon = datetime.now(UTC) + timedelta(seconds=5)  # every file not referenced, however young
    assert distributed.remove_orphan_files(older_than=soon, dry_run=True) == []


def test_upsert_into_an_empty_table_inserts_every_row(spark: Any, catalog: mor.Catalog) -> None:
    table = catalog.create_table("db.t", schema=SCHEMA, partition_by=["category"])
    snapshot = upsert(spark, table, spark.createDataFrame(rows(range(30))), on=["id"])
    assert snapshot.operation == "append"
    assert live_rows(table) == canonical(rows(range(30)))


def test_read_only_tables_are_refused(spark: Any, catalog: mor.Catalog) -> None:
    table = make_table(catalog, "db.t", None)
    static = mor.StaticTable.from_metadata(table.metadata_location)
    with pytest.raises(mor.MorError, match="read-only"):
        delete(spark, static, "id = 1")


@pytest.mark.parametrize("column", ["_file", "_pos"])
def test_merge_and_upsert_refuse_a_table_with_a_metadata_column_name(spark: Any, catalog: mor.Catalog, column: str) -> None:
    """A table another engine made with a column `_file` or `_pos` (renamed in its metadata here,
    past mor's checks): the Spark MERGE reads those metadata columns, so it is a typed error on
    the driver, before any job, not a clash of names inside Spark."""
    from pyiceberg.schema import Schema

    from mor.format.metadata import with_schema

    table = make_table(catalog, "db.t", None, equality_deletes=False)
    renamed = Schema(*[f.model_copy(update={"name": column}) if f.name == "n" else f for f in table.schema().fields])
    commit_as_another_engine(table, with_schema(table.metadata, renamed))
    location, files = table.metadata_location, files_under(table)
    source = spark.createDataFrame(source_rows([1, 900], n=0).rename_columns(["id", "category", column, "ts"]))
    for verb in (
        lambda: merge(spark, table, source, on=["id"], when_matched_update="*", when_not_matched_insert="*"),
        lambda: upsert(spark, table, source, on=["id"]),
    ):
        with pytest.raises(mor.UnsupportedFeatureError, match=f"column named '{column}'"):
            verb()
    assert catalog.load_table("db.t").metadata_location == location
    assert files_under(table) == files


def test_a_merge_that_cannot_read_the_target_writes_nothing(spark: Any, catalog: mor.Catalog) -> None:
    """The target is read by Spark (natively, or through format "mor"): its error arrives as
    ours, chained to Spark's; the read ends at a shuffle, before any task writes."""
    table = make_table(catalog, "db.t", None)
    Path(to_local_path(table.scan().plan_files()[1].data_file.file_path)).unlink()
    location, files = table.metadata_location, files_under(table)
    source = spark.createDataFrame(source_rows([1, 50, 100, 900], n=0))
    with pytest.raises(mor.CorruptMetadataError, match="data file .* (is missing|cannot be opened)") as caught:
        merge(spark, table, source, on=["id"], when_matched_update="*", when_not_matched_insert="*", path="distributed")
    assert isinstance(caught.value.__cause__, (PythonException, AnalysisException))
    assert catalog.load_table("db.t").metadata_location == location
    assert files_under(table) == files


def test_merge_takes_source_columns_by_name_and_widens_keys_like_the_local_api(spark: Any, catalog: mor.Catalog) -> None:
    local, distributed = twins(catalog, ["category"])
    source = source_rows([1, 2, 3, 600], n=50)
    source = source.select(["n", "ts", "category", "id"]).set_column(3, "id", source.column("id").cast(pa.int32()))
    source = source.append_column("op", pa.array(["U", "D", "U", "I"]))  # a column only the clauses read
    clauses: dict[str, Any] = {
        "when_matched_delete": "source.op = 'D'",
        "when_matched_update": "*",
        "when_not_matched_insert": "*",
    }
    local.merge(source, on=["id"], **clauses)
    merge(spark, distributed, spark.createDataFrame(source), on=["id"], **clauses)
    assert live_rows(distributed) == live_rows(local)


@pytest.mark.parametrize("path", ["driver", "distributed"])
def test_a_fractional_key_is_refused_as_the_local_api_refuses_it(spark: Any, catalog: mor.Catalog, path: str) -> None:
    """Keys match exactly on every path: a double key 2.5 is no bigint key (the local merge's
    `conform(exact=True)`), never cast to 2 on Spark's executors; 3.0 is 3."""
    local, distributed = twins(catalog, ["category"])
    before = distributed.metadata_location
    source = spark.createDataFrame([(2.5, 7), (3.0, 8)], "id double, n long")
    with pytest.raises(mor.SchemaMismatchError, match="2.5"):
        local.merge(source.toArrow(), on=["id"], when_matched_update={"n": "source.n"})
    with pytest.raises(mor.SchemaMismatchError, match="2.5"):
        merge(spark, distributed, source, on=["id"], when_matched_update={"n": "source.n"}, path=path)
    assert catalog.load_table("db.spark").metadata_location == before
    whole = spark.createDataFrame([(3.0, 8)], "id double, n long")
    local.merge(whole.toArrow(), on=["id"], when_matched_update={"n": "source.n"})
    merge(spark, distributed, whole, on=["id"], when_matched_update={"n": "source.n"}, path=path)
    assert live_rows(distributed) == live_rows(local)


def test_spark_dml_and_writes_check_the_tables_constraints(spark: Any, catalog: mor.Catalog, warehouse: Path) -> None:
    """New rows written on executors (UPDATE's new values, MERGE inserts, df.write) are checked
    against the CHECK constraints before anything is committed."""
    table = make_table(catalog, "db.checked", ["category"], equality_deletes=False)
    table.add_constraint("small_n", "n < 1000")
    location, files = table.metadata_location, files_under(table)
    with pytest.raises(mor.ConstraintViolationError, match="small_n"):
        update(spark, table, {"n": "n + 1000"}, "id = 5")
    with pytest.raises(mor.ConstraintViolationError, match="small_n"):
        upsert(spark, table, spark.createDataFrame(source_rows([5, 900], n=5000)), on=["id"])
    with pytest.raises(Exception, match="ConstraintViolationError") as raised:
        spark.createDataFrame(source_rows([901], n=5000)).write.format("mor").option("warehouse", str(warehouse)).mode("append").save(
            "db.checked"
        )
    assert "small_n" in str(raised.value)
    assert catalog.load_table("db.checked").metadata_location == location
    assert files_under(table) == files
    update(spark, table, {"n": "n + 1"}, "id = 5")  # within the constraint: commits
    assert catalog.load_table("db.checked").metadata_location != location


def test_spark_dml_is_idempotent_per_app_id_and_version(spark: Any, catalog: mor.Catalog) -> None:
    table = make_table(catalog, "db.idem", None, equality_deletes=False)
    first = update(spark, table, {"n": "n + 1"}, "id < 10", idempotency=("job", 1))
    location, before = table.metadata_location, live_rows(table)
    assert update(spark, table, {"n": "n + 1"}, "id < 10", idempotency=("job", 1)) == first
    assert delete(spark, table, "id < 5", idempotency=("job", 1)) == first
    source = spark.createDataFrame(source_rows([1, 2, 900], n=7))
    assert upsert(spark, table, source, on=["id"], idempotency=("job", 0)) == first
    assert merge(spark, table, source, on=["id"], when_matched_delete=True, idempotency=("job", 1)) == first
    assert catalog.load_table("db.idem").metadata_location == location and live_rows(table) == before
    upserted = upsert(spark, table, source, on=["id"], idempotency=("job", 2))
    assert upserted is not None and upserted.summary["mor.txn-version"] == "2"
