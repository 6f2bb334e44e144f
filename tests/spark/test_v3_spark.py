"""Format v3 tables on Spark: reads of tables with deletion vectors (ours and Iceberg Java's) on
the normal and the fast path, the row lineage columns as Spark columns, DELETE/UPDATE/MERGE/UPSERT
writing one deletion vector per data file and keeping `_row_id` as the local API does, and Spark
writes assigning row ids. (Every snapshot of the Java v3 fixtures is read by test_read.py.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from java_fixtures import JAVA_SNAPSHOTS, describe_row_differences, expected_rows_file, read_json_lines, row_sort_key, to_json_rows
from pyiceberg.expressions import In
from spark_helpers import SCHEMA, canonical, rows, source_rows

import mor
from mor.api.table import StaticTable
from mor.format.spec import ManifestContent
from mor.planning.planner import live_entries
from mor.spark import read_table
from mor.spark.functions import delete, merge, update, upsert

LINEAGE = ["_row_id", "_last_updated_sequence_number"]
V3_FIXTURES = sorted({s.table for s in JAVA_SNAPSHOTS if s.format_version >= 3})


def lineage_rows(data: pa.Table) -> list[tuple]:
    return canonical(data.select([*SCHEMA.names, *LINEAGE]))


def local_lineage(table: mor.Table) -> list[tuple]:
    return lineage_rows(table.scan(columns=[*SCHEMA.names, *LINEAGE]).to_arrow())


@pytest.mark.parametrize("name", V3_FIXTURES)
def test_java_v3_tables_read_on_the_fast_path_with_lineage(spark: Any, java_fixtures: Path, name: str) -> None:
    snap = max((s for s in JAVA_SNAPSHOTS if s.table == name), key=lambda s: s.sequence_number)
    location = str(java_fixtures / snap.final_metadata_file)
    expected = read_json_lines(expected_rows_file(java_fixtures, snap))
    df = read_table(spark, location, snapshot_id=snap.snapshot_id)
    actual = to_json_rows(df.toArrow().to_pylist())
    assert sorted(actual, key=row_sort_key) == sorted(expected, key=row_sort_key), describe_row_differences(expected, actual)

    static = StaticTable.from_metadata(location)
    columns = [*static.schema().column_names, *LINEAGE]
    local = static.scan(columns=columns, snapshot_id=snap.snapshot_id).to_arrow()
    for df in (
        read_table(spark, location, columns=columns, snapshot_id=snap.snapshot_id),
        spark.read.format("mor").option("columns", ",".join(columns)).option("snapshot-id", str(snap.snapshot_id)).load(location),
    ):
        assert df.columns == columns
        got, want = to_json_rows(df.toArrow().to_pylist()), to_json_rows(local.to_pylist())
        assert sorted(got, key=row_sort_key) == sorted(want, key=row_sort_key), describe_row_differences(want, got)


def v3_table(catalog: mor.Catalog, name: str) -> mor.Table:
    """As test_dml.make_table, in format v3: four data files per partition, deletion vectors
    and equality deletes."""
    table = catalog.create_table(name, schema=SCHEMA, partition_by=["category"], format_version=3)
    for ids in (range(0, 40), range(40, 80), range(80, 120), range(120, 160)):
        table.append(rows(ids))
    table.delete(In("id", [3, 13, 44, 85, 121]))
    table.update({"n": "n + 1000"}, where="id in (20, 100)")
    table.delete_rows(pa.table({"id": pa.array([7, 48, 95, 150], pa.int64())}))
    return table


@pytest.mark.cluster
def test_lineage_columns_read_by_option_schema_and_fast_path(spark: Any, catalog: mor.Catalog, read_mor: Any, warehouse: Path) -> None:
    table = v3_table(catalog, "db.t")
    expected = local_lineage(table)
    assert len({r[4] for r in expected}) == len(expected) and {r[5] for r in expected} == {1, 2, 3, 4, 6}  # 6: the UPDATE

    by_option = read_mor("db.t", columns=",".join([*SCHEMA.names, *LINEAGE]))
    assert by_option.columns == [*SCHEMA.names, *LINEAGE]
    assert lineage_rows(by_option.toArrow()) == expected
    low = sorted(r[4] for r in expected)[:10]
    assert sorted(r._row_id for r in by_option.filter(f"_row_id <= {low[-1]}").collect()) == low  # not pushed: Spark filters
    schema = "id long, category string, n long, ts timestamp, _row_id long, _last_updated_sequence_number long"
    by_schema = spark.read.format("mor").schema(schema).option("warehouse", str(warehouse)).load("db.t")
    assert lineage_rows(by_schema.toArrow()) == expected
    fast = read_table(spark, table, columns=[*SCHEMA.names, *LINEAGE], filter="id >= 10")
    assert lineage_rows(fast.toArrow()) == [r for r in expected if r[0] >= 10]
    assert canonical(read_table(spark, table).toArrow()) == canonical(table.scan().to_arrow())
    catalog.create_table("db.v2", schema=SCHEMA).append(rows(range(3)))  # no lineage before v3
    with pytest.raises(Exception, match="not in the table"):
        spark.read.format("mor").schema("id long, _row_id long").option("warehouse", str(warehouse)).load("db.v2").collect()


# As in test_dml.py: matched rows deleted, updated (partly) and kept; new keys inserted or not.
MERGE_SOURCE = source_rows([4, 15, 16, 17, 30, 44, 90, 100, 500, 501], n=1000, categories={17: "zzz", 501: None})
MERGE_CLAUSES: dict[str, Any] = {
    "when_matched_delete": "source.id = 30",
    "when_matched_update": {"n": "source.n + n", "category": "source.category"},
    "when_matched_update_if": "source.id != 16",
    "when_not_matched_insert": "*",
    "when_not_matched_insert_if": "source.id != 501",
}
UPSERT_SOURCE = source_rows([1, 2, 13, 20, 48, 90, 150, 155, 700], n=5)
VERBS = {
    "delete": (lambda t: t.delete("n >= 30 and n < 90"), lambda s, t: delete(s, t, "n >= 30 and n < 90")),
    "update": (
        lambda t: t.update({"n": "n * 10", "category": "'moved'"}, where="id >= 20 and id < 130"),
        lambda s, t: update(s, t, {"n": "n * 10", "category": "'moved'"}, where="id >= 20 and id < 130"),
    ),
    "merge": (
        lambda t: t.merge(MERGE_SOURCE, on=["id", "category"], **MERGE_CLAUSES),
        lambda s, t: merge(s, t, s.createDataFrame(MERGE_SOURCE), on=["id", "category"], **MERGE_CLAUSES),
    ),
    "merge-all": (  # "*" reads only the keys of the target (and `_row_id`)
        lambda t: t.merge(MERGE_SOURCE, on=["id"], when_matched_update="*", when_not_matched_insert="*"),
        lambda s, t: merge(s, t, s.createDataFrame(MERGE_SOURCE), on=["id"], when_matched_update="*", when_not_matched_insert="*"),
    ),
    "upsert": (lambda t: t.upsert(UPSERT_SOURCE, on=["id"]), lambda s, t: upsert(s, t, s.createDataFrame(UPSERT_SOURCE), on=["id"])),
}


def with_new_ids_masked(data: list[tuple], next_row_id: int) -> list[tuple]:
    """Rows with lineage; ids the operation assigned (which depend on how its files were
    split) become -1."""
    return sorted(r[:4] + (-1 if r[4] >= next_row_id else r[4],) + r[5:] for r in data)


def live_vectors(table: mor.Table) -> list:
    deletes = live_entries(table.io, table.metadata, table.current_snapshot(), ManifestContent.DELETES)
    return [e.file for e in deletes if e.file.is_deletion_vector]


@pytest.mark.parametrize("verb", list(VERBS))
def test_spark_verbs_write_deletion_vectors_and_keep_row_ids(spark: Any, catalog: mor.Catalog, verb: str) -> None:
    local, distributed = v3_table(catalog, "db.local"), v3_table(catalog, "db.spark")
    local_verb, spark_verb = VERBS[verb]
    next_row_id = distributed.metadata.next_row_id
    before = {v.key for v in live_vectors(distributed)}
    assert local_lineage(local) == local_lineage(distributed)

    expected = local_verb(local)
    snapshot = spark_verb(spark, distributed)

    assert snapshot.operation == expected.operation
    for key in ("total-records", "added-records", "deleted-data-files", "added-dvs", "removed-dvs", "added-position-deletes",
                "removed-position-deletes", "total-position-deletes"):  # fmt: skip
        assert snapshot.summary.get(key) == expected.summary.get(key), key
    assert canonical(distributed.scan().to_arrow()) == canonical(local.scan().to_arrow())
    after = local_lineage(distributed)
    assert with_new_ids_masked(after, next_row_id) == with_new_ids_masked(local_lineage(local), next_row_id)
    assert len({r[4] for r in after}) == len(after)  # row ids stay unique
    assert distributed.metadata.next_row_id == local.metadata.next_row_id
    vectors = live_vectors(distributed)
    named = [v.referenced_data_file for v in vectors]
    assert len(named) == len(set(named))  # one live vector per data file
    touched = {v.referenced_data_file for v in vectors if v.key not in before}
    assert touched  # every verb here removes rows from files it keeps
    assert not any(v.referenced_data_file in touched for v in vectors if v.key in before)  # replaced
    for task in distributed.scan().plan_files():
        assert len(task.position_deletes) <= 1 and all(d.is_deletion_vector for d in task.position_deletes)


@pytest.mark.cluster
def test_spark_writes_assign_row_ids(spark: Any, catalog: mor.Catalog, warehouse: Path, read_mor: Any) -> None:
    def write(data: pa.Table, mode: str, **options: str) -> None:
        writer = spark.createDataFrame(data).repartition(2).write.format("mor").mode(mode).option("warehouse", str(warehouse))
        for key, value in options.items():
            writer = writer.option(key, value)
        writer.save("db.w")

    write(rows(range(30)), "append", **{"format-version": "3", "partition-by": "category"})
    table = catalog.load_table("db.w")
    assert table.metadata.format_version == 3 and table.metadata.next_row_id == 30
    write(rows(range(30, 50)), "append")
    table.refresh()
    assert table.metadata.next_row_id == 50
    ids = read_mor("db.w", columns="id,_row_id").toArrow()
    assert sorted(ids.column("_row_id").to_pylist()) == list(range(50))
    table.delete("id < 5")
    write(rows(range(100, 110)), "overwrite")
    table.refresh()
    assert table.metadata.next_row_id == 60
    assert sorted(local_lineage(table))[0][4] >= 50 and [r[0] for r in local_lineage(table)] == list(range(100, 110))
    with pytest.raises(Exception, match="format-version"):
        write(rows([200]), "append", **{"format-version": "2"})


def test_default_values_read_as_the_local_reader_reads_them(spark: Any, catalog: mor.Catalog) -> None:
    """A column added with a default: rows of older files read it, on every read path (a plain
    native read cannot give it: such files take the JVM path, which fills it)."""
    import datetime as dt

    table = catalog.create_table("db.defaults", SCHEMA, format_version=3)
    table.append(rows(range(0, 20)))
    with table.update_schema() as u:
        u.add_column("extra", pa.int32(), default=7)
        u.add_column("day", pa.date32(), default=dt.date(2025, 1, 2))
    table.append(rows(range(20, 25)))
    table.delete("id % 5 = 0")
    expected = canonical(table.scan().to_arrow())
    for path in ("auto", "jvm", "python"):
        assert canonical(read_table(spark, table, path=path).toArrow()) == expected, path
    assert {r["extra"] for r in table.scan().to_arrow().to_pylist()} == {7}
