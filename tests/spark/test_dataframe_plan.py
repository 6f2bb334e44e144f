"""The JVM path (native Parquet scans filtered by mor's delete functions, mor/spark/dataframe_plan.py) and
mor.spark.read_table on each of its paths: exactly the local reader's rows and mor's Spark types,
at every snapshot of tables with every kind of delete and evolution, and of the Iceberg Java
fixtures."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from java_fixtures import JAVA_SNAPSHOTS, JavaSnapshot, to_json_rows
from pyiceberg.expressions import In
from spark_helpers import SCHEMA, build_history, rows

import mor
import mor.spark
from mor.errors import InvalidArgumentError, UnsupportedFeatureError
from mor.spark.dataframe_plan import read_dataframe_plan
from mor.spark.file_paths import has_s3a, spark_read_path
from mor.spark.types import spark_schema

PATHS = ["auto", "python", "jvm"]


def json_rows(table_rows: list[dict[str, Any]]) -> list[str]:
    """Rows in a form that compares as a multiset (NaN, maps, bytes included)."""
    return sorted(json.dumps(r, sort_keys=True) for r in to_json_rows(table_rows))


def plan_of_every_file(spark: Any, table: mor.Table, snapshot_id: int | None, columns: list[str] | None = None) -> Any:
    """The DataFrame plan over every file of the scan (delete-free ones too)."""
    scan = table.scan(snapshot_id=snapshot_id, columns=columns, case_sensitive=False)
    return read_dataframe_plan(spark, table, scan.schema, scan.projection, scan.plan_files())


def assert_reads_as_local(df: Any, table: mor.Table, snapshot_id: int | None, columns: list[str] | None = None) -> None:
    scan = table.scan(snapshot_id=snapshot_id, columns=columns)
    local = scan.to_arrow()
    assert df.schema.simpleString() == spark_schema(scan.projection).simpleString(), f"snapshot {snapshot_id}"
    if not df.columns:  # toArrow() of no columns has no rows either: count them
        assert df.count() == local.num_rows, f"snapshot {snapshot_id}"
        return
    assert json_rows(df.toArrow().to_pylist()) == json_rows(local.to_pylist()), f"snapshot {snapshot_id}"


def assert_every_snapshot(spark: Any, table: mor.Table, columns: list[str] | None = None) -> None:
    """read_table's DataFrame path at every snapshot; at the current one, the plan over every
    file (delete-free ones too) and each other path of read_table (the Python source has its own
    tests in test_read.py). One Spark read a snapshot: each costs a job's tasks."""
    for snapshot in table.metadata.snapshots:
        sid = snapshot.snapshot_id
        assert_reads_as_local(mor.spark.read_table(spark, table, columns=columns, snapshot_id=sid, path="jvm"), table, sid, columns)
    assert_reads_as_local(plan_of_every_file(spark, table, None, columns), table, None, columns)
    for path in ("auto", "python"):
        assert_reads_as_local(mor.spark.read_table(spark, table, columns=columns, path=path), table, None, columns)


@pytest.mark.parametrize("partition_by", [None, ["category", "day(ts)"]], ids=["unpart", "cat-day"])
def test_position_equality_deletes_upserts_and_merges(spark: Any, catalog: mor.Catalog, partition_by: list[str] | None) -> None:
    table = catalog.create_table("db.t", schema=SCHEMA, partition_by=partition_by)
    build_history(table)
    assert_every_snapshot(spark, table)


def test_interop_scenarios_at_every_snapshot(spark: Any, tmp_path: Path) -> None:
    """The tables every other reader is judged on (tests/interop/test_readers_matrix.py), at
    every snapshot, through the JVM path."""
    from interop_tables import scenario_tables

    for table in scenario_tables(mor.load_catalog(tmp_path / "warehouse", create=True)):
        for snapshot in table.metadata.snapshots:
            df = mor.spark.read_table(spark, table, snapshot_id=snapshot.snapshot_id, path="jvm")
            assert_reads_as_local(df, table, snapshot.snapshot_id)


def test_deletion_vectors(spark: Any, catalog: mor.Catalog) -> None:
    table = catalog.create_table("db.v3", schema=SCHEMA, partition_by=["category"], format_version=3)
    table.append(rows(range(0, 200)))
    table.append(rows(range(200, 300)))
    table.delete(In("id", list(range(0, 300, 7))))
    table.delete("id > 280")  # a second DV for the same files replaces the first
    table.delete_rows(pa.table({"id": pa.array([1, 2, 201], pa.int64())}))
    table.upsert(rows([3, 4, 999], n=5), on=["id"])
    assert_every_snapshot(spark, table)


def test_row_lineage_columns_stored_or_inherited(spark: Any, catalog: mor.Catalog) -> None:
    """v3 `_row_id` and `_last_updated_sequence_number` through the JVM path: stored in files
    an UPDATE or compaction wrote, inherited (first row id + position, data sequence number)
    elsewhere; with every kind of delete in between."""
    table = catalog.create_table("db.lineage", schema=SCHEMA, partition_by=["category"], format_version=3)
    table.append(rows(range(0, 80)))
    table.append(rows(range(80, 120)))
    table.delete(In("id", list(range(0, 120, 9))))
    table.update({"n": pc.field("n") + 1}, where="id < 30")
    table.delete_rows(pa.table({"id": pa.array([31, 95], pa.int64())}))
    table.compact()
    table.append(rows(range(120, 130)))
    table.delete("id > 125")
    columns = ["id", "n", "_row_id", "_last_updated_sequence_number"]
    for snapshot in table.metadata.snapshots:
        sid = snapshot.snapshot_id
        df = mor.spark.read_table(spark, table, columns=columns, snapshot_id=sid, path="jvm")
        assert_reads_as_local(df, table, sid, columns)


def test_files_split_across_tasks(spark: Any, catalog: mor.Catalog) -> None:
    """A data file Spark splits (by row group) across tasks: each split's rows meet the file's
    sorted deleted positions from wherever the split starts."""
    from mor.format.properties import PARQUET_ROW_GROUP_LIMIT

    table = catalog.create_table("db.split", schema=SCHEMA, properties={PARQUET_ROW_GROUP_LIMIT: "500"})
    table.append(rows(range(0, 6000)))
    table.delete(In("id", [0, 1, 499, 500, 501, 2999, 3000, 5999] + list(range(1200, 1900, 3))))
    table.delete_rows(pa.table({"id": pa.array([4000, 4001], pa.int64())}))
    previous = spark.conf.get("spark.sql.files.maxPartitionBytes")
    spark.conf.set("spark.sql.files.maxPartitionBytes", "4096")
    try:
        df = mor.spark.read_table(spark, table, path="jvm")
        assert df.rdd.getNumPartitions() > 2
        assert_reads_as_local(df, table, None)
    finally:
        spark.conf.set("spark.sql.files.maxPartitionBytes", previous)


@pytest.mark.parametrize("format_version", [2, 3])
def test_metadata_columns_name_each_row_as_the_table_does(spark: Any, catalog: mor.Catalog, format_version: int) -> None:
    """`_file` (the table's spelling of the data file) and `_pos` through the JVM path are the
    Python source's, and name the rows the local reader reads at those positions."""
    import pyarrow.parquet as pq

    from mor.io.fileio import to_local_path

    table = catalog.create_table("db.meta", schema=SCHEMA, partition_by=["category"], format_version=format_version)
    table.append(rows(range(0, 60)))
    table.append(rows(range(60, 90)))
    table.delete(In("id", list(range(0, 90, 4))))
    table.delete_rows(pa.table({"id": pa.array([5, 61], pa.int64())}))
    columns = ["id", "n", "_file", "_pos"]
    jvm = mor.spark.read_table(spark, table, columns=["id", "n"], path="jvm", metadata_columns=True)
    python = mor.spark.read_table(spark, table, columns=["id", "n"], path="python", metadata_columns=True)
    assert jvm.columns == python.columns == columns
    got = sorted(tuple(r) for r in jvm.collect())
    assert got == sorted(tuple(r) for r in python.collect())
    paths = {t.data_file.file_path for t in table.scan().plan_files()}
    assert {r[2] for r in got} <= paths
    for id_, _, file, pos in got:
        assert pq.read_table(to_local_path(file), columns=["id"]).column("id")[pos].as_py() == id_


def test_reads_leave_nothing_in_the_session(spark: Any, catalog: mor.Catalog) -> None:
    """The read's deletes are in the session conf only while Spark resolves the functions."""
    table = catalog.create_table("db.t", schema=SCHEMA)
    table.append(rows(range(0, 40)))
    table.delete("id < 10")
    df = mor.spark.read_table(spark, table, path="jvm")
    assert df.count() == 30
    left = [r[0] for r in spark.sql("SET").collect() if r[0].startswith("mor.deletes.")]
    assert left == []
    assert df.filter("id < 20").count() == 10  # the DataFrame still reads: its plan carries the deletes


def test_a_session_without_the_jar_reads_through_the_python_source(spark: Any, catalog: mor.Catalog, monkeypatch: Any, caplog: Any) -> None:
    import mor.spark.delete_functions as delete_functions

    table = catalog.create_table("db.t", schema=SCHEMA)
    table.append(rows(range(0, 40)))
    table.delete("id < 10")
    catalog_key = f"spark.sql.catalog.{delete_functions.CATALOG}"
    monkeypatch.setattr(delete_functions, "jar_path", lambda: Path("/nonexistent/mor-deletes.jar"))
    spark.conf.unset(catalog_key)  # as in a session the jar was never added to
    try:
        with caplog.at_level(logging.INFO, logger="mor.spark"):
            df = mor.spark.read_table(spark, table)
        assert "jar is missing" in caplog.text and "0 files native, 1 through the Python source" in caplog.text
        assert sorted(r.id for r in df.collect()) == list(range(10, 40))
        with pytest.raises(UnsupportedFeatureError, match="jar is missing"):
            mor.spark.read_table(spark, table, path="jvm")
    finally:
        monkeypatch.undo()
        assert delete_functions.install(spark) is None
    assert spark.conf.get(catalog_key) == delete_functions.CATALOG_CLASS


def test_position_delete_file_naming_other_files_deletes_only_where_it_applies(spark: Any, catalog: mor.Catalog) -> None:
    """One delete file for two data files; a later rewrite of one leaves the delete file
    naming a file that no longer exists in the snapshot: rows elsewhere stay."""
    table = catalog.create_table("db.t", schema=SCHEMA)
    table.append(rows(range(0, 50)))
    table.append(rows(range(50, 100)))
    table.delete(In("id", [1, 2, 60, 61]))
    table.update({"n": pc.field("n") + 1}, where="id < 10")
    table.delete("id >= 90 and id < 95", mode="copy-on-write")
    assert_every_snapshot(spark, table)


def test_nulls_in_equality_keys(spark: Any, catalog: mor.Catalog) -> None:
    schema = pa.schema([("k", pa.string()), ("g", pa.int64()), ("v", pa.float64())])
    table = catalog.create_table("db.nulls", schema=schema)
    table.append(
        pa.table({"k": ["a", None, "b", None, "c"], "g": [1, 1, None, None, 2], "v": [1.0, 2.0, float("nan"), None, 5.0]}, schema=schema)
    )
    table.delete_rows(pa.table({"k": pa.array([None], pa.string()), "g": pa.array([None], pa.int64())}))
    table.delete_rows(pa.table({"k": pa.array(["a"], pa.string())}))
    table.append(pa.table({"k": [None, "a"], "g": [None, 1], "v": [7.0, 8.0]}, schema=schema))  # newer: not deleted
    assert_every_snapshot(spark, table)


@pytest.mark.parametrize("column", ["s", "i", "id"])
def test_one_key_column_with_nulls(spark: Any, catalog: mor.Catalog, column: str) -> None:
    """Equality deletes on one string or integer column take the direct forms of the keep
    function (keep_string, keep_long): a null delete value deletes the null rows, newer rows stay."""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("s", pa.string()), ("i", pa.int32())])
    table = catalog.create_table("db.keys", schema=schema)

    def batch(ids: range) -> pa.Table:
        return pa.table({"id": list(ids), "s": [None if i % 5 == 0 else f"s{i % 7}" for i in ids],
                         "i": [None if i % 4 == 0 else i % 9 for i in ids]}, schema=schema)  # fmt: skip

    table.append(batch(range(0, 60)))
    table.append(batch(range(60, 90)))
    deleted = {"s": pa.array([None, "s3"], pa.string()), "i": pa.array([None, 2, -1], pa.int32()),
               "id": pa.array([1, 61, -5], pa.int64())}[column]  # fmt: skip
    table.delete_rows(pa.table({column: deleted}))
    table.append(batch(range(90, 100)))  # newer than the deletes: kept
    table.delete("id = 95")
    df = mor.spark.read_table(spark, table, path="jvm")
    kind = {"s": "KeepKey$OfString", "i": "KeepKey$OfLong", "id": "KeepKey$OfLong"}[column]
    assert kind in df._jdf.queryExecution().executedPlan().toString()
    assert_every_snapshot(spark, table)


LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1


@pytest.mark.parametrize(
    "deleted",
    [[3, 5, 6, 7, 40, None], [LONG_MIN, LONG_MAX, 0, -1, 7], [LONG_MAX - 5, LONG_MAX - 1], [LONG_MIN, LONG_MIN + 2, 12]],
    ids=["dense", "both-ends", "dense-at-the-top", "dense-at-the-bottom"],
)
def test_long_keys_close_together_far_apart_and_at_the_ends_of_the_range(
    spark: Any, catalog: mor.Catalog, deleted: list[int | None]
) -> None:
    """The JVM keeps one-column integer keys as a bitset over their range when they lie close
    together, else hashed: each form deletes exactly its keys, near the ends of the long range too."""
    schema = pa.schema([("k", pa.int64()), ("n", pa.int32())])
    table = catalog.create_table("db.long_keys", schema=schema)
    near_ends = [LONG_MIN + i for i in range(0, 70, 3)] + [LONG_MAX - i for i in range(0, 70, 3)] + [LONG_MAX - 1]
    keys = [*range(-5, 50), *near_ends, None]
    table.append(pa.table({"k": keys, "n": list(range(len(keys)))}, schema=schema))
    table.delete_rows(pa.table({"k": pa.array(deleted, pa.int64())}))
    left = mor.spark.read_table(spark, table, path="jvm")
    assert "KeepKey$OfLong" in left._jdf.queryExecution().executedPlan().toString()
    assert sorted(r["k"] for r in left.collect() if r["k"] is not None) == sorted(k for k in keys if k is not None and k not in deleted)
    assert_every_snapshot(spark, table)


def test_schema_evolution(spark: Any, catalog: mor.Catalog) -> None:
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("a", pa.int32()), ("f", pa.float32()), ("s", pa.string()),
                        ("info", pa.struct([("x", pa.int32()), ("y", pa.string())]))])  # fmt: skip

    def batch(ids: range, sch: pa.Schema) -> pa.Table:
        data: dict[str, list[Any]] = {"id": list(ids)}
        for f in sch:
            if f.name == "id":
                continue
            if pa.types.is_struct(f.type):
                data[f.name] = [
                    {c.name: (i if pa.types.is_integer(c.type) else f"{c.name}{i}") for c in f.type} if i % 4 else None for i in ids
                ]
            elif pa.types.is_integer(f.type):
                data[f.name] = [i * 3 if i % 5 else None for i in ids]
            elif pa.types.is_floating(f.type):
                data[f.name] = [i / 4 for i in ids]
            else:
                data[f.name] = [f"{f.name}-{i}" for i in ids]
        return pa.table(data, schema=sch)

    table = catalog.create_table("db.evo", schema=schema)
    table.append(batch(range(0, 40), schema))
    table.delete("id < 4")
    table.delete_rows(pa.table({"id": pa.array([10], pa.int64())}))
    with table.update_schema() as update:
        update.rename_column("a", "a2").rename_column("info.y", "why").widen("a2", pa.int64()).widen("f", pa.float64())
        update.add_column("added", pa.string()).add_column("info.z", pa.int64()).drop_column("s")
    table.delete_rows(pa.table({"a2": pa.array([15 * 3], pa.int64())}))
    new_schema = mor_arrow_schema(table)
    table.append(batch(range(40, 60), new_schema))
    table.delete("id >= 50 and id < 53")
    with table.update_schema() as update:
        update.add_column("s", pa.string())  # the old name again: a new column, null in old files
    table.delete("id = 41")
    assert_every_snapshot(spark, table)


def mor_arrow_schema(table: mor.Table) -> pa.Schema:
    from mor.format.arrow_types import to_arrow_schema

    return pa.schema([f.remove_metadata() for f in to_arrow_schema(table.metadata.schema())])


def test_partition_evolution(spark: Any, catalog: mor.Catalog) -> None:
    table = catalog.create_table("db.pe", schema=SCHEMA, partition_by=["category"])
    table.append(rows(range(0, 60)))
    table.delete(In("id", [1, 2, 3]))
    with table.update_spec() as spec:
        spec.remove_field("category").add_field("id", "bucket[4]")
    table.append(rows(range(60, 120)))
    table.delete_rows(pa.table({"id": pa.array([5, 70], pa.int64())}))
    table.upsert(rows([6, 80, 500], n=3), on=["id"], strategy="equality")
    assert_every_snapshot(spark, table)


def test_nested_types(spark: Any, catalog: mor.Catalog) -> None:
    schema = pa.schema([
        pa.field("id", pa.int64(), nullable=False),
        ("tags", pa.list_(pa.string())),
        ("attrs", pa.map_(pa.string(), pa.int64())),
        ("point", pa.struct([("x", pa.float64()), ("ys", pa.list_(pa.int32())),
                             ("m", pa.map_(pa.string(), pa.struct([("q", pa.int32())])))])),
    ])  # fmt: skip

    def nested(ids: range) -> pa.Table:
        return pa.table({
            "id": list(ids),
            "tags": [[f"t{i}", None] if i % 3 else None for i in ids],
            "attrs": [[("a", i), ("b", None)] if i % 2 else [] for i in ids],
            "point": [{"x": i / 2, "ys": [i, i + 1], "m": [("k", {"q": i})]} if i % 5 else None for i in ids],
        }, schema=schema)  # fmt: skip

    table = catalog.create_table("db.nested", schema=schema)
    table.append(nested(range(0, 30)))
    table.delete("id < 5")
    table.delete_rows(pa.table({"id": pa.array([7], pa.int64())}))
    with table.update_schema() as update:
        update.rename_column("point.x", "x2").add_column("point.w", pa.string()).widen("point.ys.element", pa.int64())
    table.append(nested_after(range(30, 40)))
    table.delete("id = 33 or id = 12")
    assert_every_snapshot(spark, table)


def nested_after(ids: range) -> pa.Table:
    schema = pa.schema([
        pa.field("id", pa.int64(), nullable=False),
        ("tags", pa.list_(pa.string())),
        ("attrs", pa.map_(pa.string(), pa.int64())),
        ("point", pa.struct([("x2", pa.float64()), ("ys", pa.list_(pa.int64())),
                             ("m", pa.map_(pa.string(), pa.struct([("q", pa.int32())]))), ("w", pa.string())])),
    ])  # fmt: skip
    return pa.table({
        "id": list(ids),
        "tags": [[f"t{i}"] for i in ids],
        "attrs": [[("c", i)] for i in ids],
        "point": [{"x2": i / 3, "ys": [i], "m": [], "w": f"w{i}"} for i in ids],
    }, schema=schema)  # fmt: skip


def test_columns_and_filters(spark: Any, catalog: mor.Catalog) -> None:
    table = catalog.create_table("db.t", schema=SCHEMA, partition_by=["category"])
    build_history(table)
    for columns in (["n", "id"], ["category"], []):
        for path in PATHS:
            assert_reads_as_local(mor.spark.read_table(spark, table, columns=columns, path=path), table, None, columns)
    local = table.scan(filter="n > 100 and category = 'a'", columns=["id"]).to_arrow()
    df = mor.spark.read_table(spark, table, filter="n > 100 and category = 'a'", columns=["id"], path="jvm")
    assert json_rows(df.toArrow().to_pylist()) == json_rows(local.to_pylist())


@pytest.mark.parametrize("snap", [pytest.param(s, id=s.test_id) for s in JAVA_SNAPSHOTS])
def test_java_fixture_snapshots(spark: Any, java_fixtures: Path, snap: JavaSnapshot) -> None:
    table = mor.StaticTable.from_metadata(str(java_fixtures / snap.final_metadata_file))
    columns = natively_typed_columns(table, snap.snapshot_id)
    df = mor.spark.read_table(spark, table, snapshot_id=snap.snapshot_id, columns=columns, path="jvm")
    assert_reads_as_local(df, table, snap.snapshot_id, columns)


@pytest.mark.parametrize("name", sorted({s.table for s in JAVA_SNAPSHOTS}))
def test_java_fixture_tables_on_every_path(spark: Any, java_fixtures: Path, name: str) -> None:
    snap = next(s for s in JAVA_SNAPSHOTS if s.table == name)
    table = mor.StaticTable.from_metadata(str(java_fixtures / snap.final_metadata_file))
    sid = table.metadata.current_snapshot_id
    columns = natively_typed_columns(table, sid)
    assert_reads_as_local(plan_of_every_file(spark, table, sid, columns), table, sid, columns)
    for path in ("auto", "python"):
        assert_reads_as_local(mor.spark.read_table(spark, table, snapshot_id=sid, path=path), table, sid)


def natively_typed_columns(table: mor.Table, snapshot_id: int) -> list[str] | None:
    """The snapshot's columns without uuid and time ones (None: all of them), which the
    DataFrame plan refuses (see test_uuid_and_time_columns_are_refused_by_the_plan)."""
    from pyiceberg.types import TimeType, UUIDType

    fields = table.scan(snapshot_id=snapshot_id).projection.fields
    kept = [f.name for f in fields if not isinstance(f.field_type, (UUIDType, TimeType))]
    return None if len(kept) == len(fields) else kept


def test_uuid_and_time_columns_are_refused_by_the_plan(spark: Any, catalog: mor.Catalog) -> None:
    import uuid

    from pyiceberg.schema import Schema
    from pyiceberg.types import LongType, NestedField, UUIDType

    table = catalog.create_table("db.u", schema=Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "u", UUIDType())))
    table.append(pa.table({"id": pa.array([1, 2], pa.int64()), "u": pa.array([uuid.uuid4().bytes, None], pa.binary(16))}))
    table.delete("id = 2")
    with pytest.raises(UnsupportedFeatureError, match="uuid"):
        mor.spark.read_table(spark, table, path="jvm")
    assert [r.id for r in mor.spark.read_table(spark, table, path="auto").collect()] == [1]  # the Python source
    assert [r.id for r in mor.spark.read_table(spark, table, columns=["id"], path="jvm").collect()] == [1]


def test_equality_deletes_outside_the_columns_are_a_reason_not_a_crash(spark: Any, catalog: mor.Catalog) -> None:
    """An equality delete on a field that is no top-level column (another engine dropped it, or
    it lies inside a struct) sends the read to the Python source, with the reason."""
    import dataclasses

    from mor.format.content_file import make_content_file
    from mor.format.spec import FileContent
    from mor.spark.dataframe_plan import unsupported_reason

    table = catalog.create_table("db.t", schema=SCHEMA)
    table.append(rows(range(10)))
    delete = make_content_file(FileContent.EQUALITY_DELETES, file_path="/elsewhere/eq.parquet", file_format="PARQUET", spec_id=0,
                               partition={}, record_count=1, file_size_in_bytes=10, equality_ids=(999,))  # fmt: skip
    task = dataclasses.replace(table.scan().plan_files()[0], delete_files=(delete,))
    reason = unsupported_reason(spark, table.schema(), table.schema(), [task])
    assert reason is not None and "999" in reason


def test_dml_target_rows_the_jvm_path_cannot_read_go_through_the_python_source(spark: Any, catalog: mor.Catalog, caplog: Any) -> None:
    """A time column has no native Spark type: Spark's DELETE plan reads its target rows
    (`_file`, `_pos`) through the Python source, and removes what the local verb removes."""
    import datetime as dt

    from pyiceberg.schema import Schema
    from pyiceberg.types import LongType, NestedField, TimeType

    table = catalog.create_table(
        "db.times", schema=Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "t", TimeType()))
    )
    table.append(pa.table({"id": pa.array(range(6), pa.int64()), "t": pa.array([dt.time(1, i) for i in range(6)], pa.time64("us"))}))
    from pyspark.sql import functions as F

    with caplog.at_level(logging.INFO, logger="mor.spark"):
        mor.spark.delete(spark, table, F.col("id") < 3)  # a Column: Spark's plan (text would run mor's matcher)
    assert "target rows go through the Python source" in caplog.text and "uuid and time" in caplog.text
    assert sorted(catalog.load_table("db.times").scan().to_arrow().column("id").to_pylist()) == [3, 4, 5]


def test_bad_path_is_a_clear_error(spark: Any, catalog: mor.Catalog) -> None:
    table = catalog.create_table("db.t", schema=SCHEMA)
    with pytest.raises(InvalidArgumentError, match="path"):
        mor.spark.read_table(spark, table, path="fast")  # type: ignore[arg-type]


def test_the_path_each_file_took_is_logged_and_named_in_the_plan(spark: Any, catalog: mor.Catalog, caplog: Any) -> None:
    table = catalog.create_table("db.t", schema=SCHEMA)
    table.append(rows(range(0, 50)))
    table.append(rows(range(50, 100)))
    table.append(rows(range(100, 150)))
    table.delete("id < 10")
    with caplog.at_level(logging.INFO, logger="mor.spark"):
        df = mor.spark.read_table(spark, table, path="jvm")
    assert "2 files native, 1 through the JVM delete functions" in caplog.text
    plan = df._jdf.queryExecution().analyzed().toString()
    assert "mor_native_2_files" in plan and "mor_jvm_1_files" in plan
    physical = df._jdf.queryExecution().executedPlan().toString()
    assert "BatchScan mor" not in physical and "Join" not in physical and "KeepPositions" in physical


@pytest.mark.parametrize("folder", ["a dir+x", "sp ace%41+plus", "ünï,\tcomma"])
def test_odd_file_names_are_found_by_the_delete_functions(spark: Any, tmp_path: Path, folder: str) -> None:
    """The JVM functions find each file's deletes by the path Spark reports
    (`_metadata.file_path`, percent-encoded by Java's URI): spaces, '%', '+', tabs and letters
    beyond ASCII in the table's location."""
    catalog = mor.load_catalog(tmp_path / folder, create=True)
    table = catalog.create_table("db.t", schema=SCHEMA)
    table.append(rows(range(0, 30)))
    table.append(rows(range(30, 60)))
    table.delete("id % 4 = 0")
    table.delete_rows(pa.table({"id": pa.array([1, 31], pa.int64())}))
    assert_reads_as_local(mor.spark.read_table(spark, table, path="jvm"), table, None)


def test_s3a_detection_and_paths(spark: Any) -> None:
    """The test session has hadoop-aws (tests/spark/conftest.py); s3:// locations map to s3a://."""
    assert has_s3a(spark) is True
    assert spark_read_path("s3://bucket/some/key.parquet") == "s3a://bucket/some/key.parquet"


def test_object_storage_reads_natively_at_every_snapshot(spark: Any, s3_server: Any, tmp_path: Path, caplog: Any) -> None:
    """Tables on the S3 test server through s3a: the interop scenarios (every delete kind, v2
    and v3) at their last two snapshots (where every kind has piled up; every snapshot reads
    from local files in test_interop_scenarios_at_every_snapshot) through the JVM path, the
    executors loading delete files and deletion vectors from S3 themselves; read_table's
    automatic choice goes the same way."""
    from interop_tables import scenario_tables

    catalog = mor.load_catalog(s3_server.fresh_prefix(), uri=f"sqlite:///{tmp_path}/catalog.db", properties=s3_server.properties)
    tables = scenario_tables(catalog, layouts=("category-day",))
    assert {t.metadata.format_version for t in tables} == {2, 3}
    for table in tables:
        assert table.location.startswith("s3://")
        for snapshot in table.metadata.snapshots[-2:]:
            df = mor.spark.read_table(spark, table, snapshot_id=snapshot.snapshot_id, path="jvm")
            assert_reads_as_local(df, table, snapshot.snapshot_id)
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="mor.spark"):
            df = mor.spark.read_table(spark, table)
        assert "through the JVM delete functions" in caplog.text, caplog.text
        assert_reads_as_local(df, table, None)


def test_object_storage_without_s3a_reads_through_the_python_source(
    spark: Any, s3_server: Any, tmp_path: Path, caplog: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A session without hadoop-aws (this one, with s3a hidden from mor's check): tables on S3
    read through the Python source, and the JVM path asked for by name is a typed error."""
    import mor.spark.dataframe_plan
    import mor.spark.fast_path

    for module in (mor.spark.dataframe_plan, mor.spark.fast_path):
        monkeypatch.setattr(module, "has_s3a", lambda spark: False)
    catalog = mor.load_catalog(s3_server.fresh_prefix(), uri=f"sqlite:///{tmp_path}/catalog.db", properties=s3_server.properties)
    table = catalog.create_table("db.t", schema=SCHEMA)
    table.append(rows(range(0, 30)))
    table.append(rows(range(30, 60)))
    table.delete("id < 5")
    with caplog.at_level(logging.INFO, logger="mor.spark"):
        df = mor.spark.read_table(spark, table)
    assert "0 files native, 2 through the Python source" in caplog.text
    assert_reads_as_local(df, table, None)
    with pytest.raises(UnsupportedFeatureError, match="s3a"):
        mor.spark.read_table(spark, table, path="jvm")
