"""A handle, or a commit in flight, never writes into another table that took its name.

Every commit asserts the table-uuid it started from (Iceberg's `assert-table-uuid`): after
`drop_table` + `create_table` of the same name, the stale handle's swap fails (the catalog row
points at another metadata file) and the refreshed metadata has another uuid, which is
TableReplacedError (a NoSuchTableError, never a CommitConflictError: DML re-plans on those).
Nothing is committed, and the files the failed operation wrote are gone.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pytest
from unit_helpers import SCHEMA, files_under, make_rows, reachable_files, scan_ids

import mor
from mor.catalog.table_operations import TableOperations
from mor.format.metadata import TableMetadata
from mor.format.updates import TableCommit

# The table that takes the name: other columns under the same field ids (1, 2).
OTHER = pa.schema([pa.field("x", pa.int64(), nullable=False), pa.field("y", pa.string())])


def old_table(catalog: mor.Catalog) -> mor.Table:
    """db.t with rows 0..9 in two files, position deletes (two for one file) and an equality delete."""
    table = catalog.create_table("db.t", schema=SCHEMA, properties={"format-version": "2"})
    table.append(make_rows(range(5)))
    table.append(make_rows(range(5, 10)))
    table.delete("id = 1")
    table.delete("id = 2")
    table.delete("id = 6")
    table.delete_rows(pa.table({"id": pa.array([7], pa.int64())}))
    return table


def replace_table(catalog: mor.Catalog) -> mor.Table:
    catalog.drop_table("db.t")
    new = catalog.create_table("db.t", schema=OTHER)
    new.append(pa.table({"x": [100, 101], "y": ["a", "b"]}, schema=OTHER))
    return new


OPERATIONS: dict[str, Callable[[mor.Table], Any]] = {
    "append": lambda t: t.append(make_rows([20, 21])),
    "append-merge-schema": lambda t: t.append(make_rows([20]).append_column("extra", pa.array([1])), schema_mode="merge"),
    "delete": lambda t: t.delete("id < 4"),
    "delete-cow": lambda t: t.delete("id < 4", mode="copy-on-write"),
    "update": lambda t: t.update({"name": "'changed'"}, where="id = 3"),
    "upsert": lambda t: t.upsert(make_rows([3, 30]), on=["id"]),
    "merge": lambda t: t.merge(make_rows([3, 31]), on=["id"], when_matched_update="*", when_not_matched_insert="*"),
    "delete_rows": lambda t: t.delete_rows(pa.table({"id": pa.array([3], pa.int64())})),
    "truncate": lambda t: t.delete("true"),
    "update_schema": lambda t: t.update_schema().add_column("extra", pa.int32()).commit(),
    "update_spec": lambda t: t.update_spec().add_field("category").commit(),
    "set_properties": lambda t: t.set_properties(**{"write.delete.mode": "copy-on-write"}),
    "upgrade": lambda t: t.upgrade(3),
    "expire_snapshots": lambda t: t.expire_snapshots(older_than=dt.timedelta(0), allow_short_retention=True),
    "compact": lambda t: t.compact(min_input_files=1),
    "rewrite_position_deletes": lambda t: t.rewrite_position_deletes(),
    "remove_orphan_files": lambda t: t.remove_orphan_files(older_than=dt.timedelta(0)),
    "maintain": lambda t: t.maintain(),
    "refresh": lambda t: t.refresh(),
}


def assert_new_table_untouched(catalog: mor.Catalog, new: mor.Table, files_before: set[str]) -> None:
    reloaded = catalog.load_table("db.t")
    assert reloaded.metadata_location == new.metadata_location
    assert reloaded.metadata == new.metadata
    assert reloaded.scan().to_arrow().sort_by("x").to_pylist() == [{"x": 100, "y": "a"}, {"x": 101, "y": "b"}]
    assert files_under(new.location) == files_before  # what the failed operation wrote is gone


@pytest.mark.parametrize("operation", OPERATIONS.values(), ids=OPERATIONS.keys())
def test_a_stale_handle_never_commits_into_the_table_that_replaced_it(catalog: mor.Catalog, operation: Callable[[mor.Table], Any]) -> None:
    stale = old_table(catalog)
    new = replace_table(catalog)
    files_before = files_under(new.location)  # both tables live in the default folder db.db/t
    with pytest.raises(mor.TableReplacedError, match="table-uuid") as error:
        operation(stale)
    assert isinstance(error.value, mor.NoSuchTableError)
    assert not isinstance(error.value, mor.CommitConflictError)
    assert new.metadata.table_uuid in str(error.value) and stale.metadata.table_uuid in str(error.value)
    assert_new_table_untouched(catalog, new, files_before)


class ReplacedBeforeSwap:
    """TableOperations (a fake, not a mock) that drop the table and create another under its
    name just before the first swap: the commit is in flight, its files are written."""

    def __init__(self, catalog: mor.Catalog, ops: TableOperations):
        self.catalog, self.ops, self.new = catalog, ops, None

    def refresh(self) -> tuple[TableMetadata, str]:
        return self.ops.refresh()

    def commit(self, base: TableMetadata, base_location: str, change: TableCommit) -> tuple[TableMetadata, str]:
        if self.new is None:
            self.new = replace_table(self.catalog)
        return self.ops.commit(base, base_location, change)


IN_FLIGHT = {
    name: OPERATIONS[name]
    for name in ("append", "delete", "update", "upsert", "delete_rows", "update_schema", "update_spec", "set_properties",
                 "upgrade", "expire_snapshots", "compact", "rewrite_position_deletes")
}  # fmt: skip


@pytest.mark.parametrize("operation", IN_FLIGHT.values(), ids=IN_FLIGHT.keys())
def test_a_commit_in_flight_when_the_table_is_replaced_fails_and_cleans_up(
    catalog: mor.Catalog, operation: Callable[[mor.Table], Any]
) -> None:
    table = old_table(catalog)
    ops = ReplacedBeforeSwap(catalog, table._ops)  # type: ignore[arg-type]
    table._ops = ops  # type: ignore[assignment]
    files_before = files_under(table.location)
    with pytest.raises(mor.TableReplacedError):
        operation(table)
    assert ops.new is not None
    # The old table's files stay (drop_table leaves them), the new table's are its own, and
    # nothing of the failed operation is left.
    assert_new_table_untouched(catalog, ops.new, files_before | reachable_files(ops.new))


def test_a_dropped_table_is_no_such_table_for_a_stale_handle(catalog: mor.Catalog) -> None:
    stale = old_table(catalog)
    files_before = files_under(stale.location)
    catalog.drop_table("db.t")
    with pytest.raises(mor.NoSuchTableError) as error:
        stale.append(make_rows([20]))
    assert not isinstance(error.value, mor.TableReplacedError)
    assert files_under(stale.location) == files_before


def test_the_same_table_registered_again_stays_writable(catalog: mor.Catalog) -> None:
    """Identity is the table-uuid, not the catalog row: drop + register of its own metadata
    file is the same table."""
    table = old_table(catalog)
    catalog.drop_table("db.t")
    catalog.register_table("db.t", table.metadata_location)
    table.append(make_rows([20]))
    assert scan_ids(catalog.load_table("db.t")) == [0, 3, 4, 5, 8, 9, 20]


def test_a_replaced_table_is_not_a_conflict_to_replan(catalog: mor.Catalog) -> None:
    """DML re-plans on CommitConflictError: with the table replaced between plan and commit, a
    re-plan would run the predicate on the other table and delete its rows."""
    table = catalog.create_table("db.t", schema=OTHER)
    table.append(pa.table({"x": [1, 2], "y": ["a", "b"]}, schema=OTHER))
    table._ops = ReplacedBeforeSwap(catalog, table._ops)  # type: ignore[arg-type,assignment]
    with pytest.raises(mor.TableReplacedError):
        table.delete("x >= 0")
    assert catalog.load_table("db.t").scan().to_arrow().sort_by("x").column("x").to_pylist() == [100, 101]


@pytest.mark.parametrize("overwrite", [False, True], ids=["append", "overwrite"])
def test_a_spark_job_planned_on_the_old_table_commits_nothing(catalog: mor.Catalog, warehouse: Any, overwrite: bool) -> None:
    """The driver-side commit of a Spark write (no SparkSession: the writer's own calls)."""
    pytest.importorskip("pyspark.sql.datasource")
    from pyspark.sql.types import DoubleType, LongType, StringType, StructField, StructType

    from mor.spark.options import TableRef
    from mor.spark.write import MorWriter

    old_table(catalog)
    spark_schema = StructType(
        [StructField("id", LongType(), False), StructField("category", StringType()), StructField("name", StringType()),
         StructField("value", DoubleType())]
    )  # fmt: skip
    writer = MorWriter(TableRef("db.t", warehouse=str(warehouse)), {}, spark_schema, overwrite)
    message = writer.write(iter(make_rows([40, 41]).to_batches()))
    new = replace_table(catalog)
    files_before = files_under(new.location) - {f.file_path.removeprefix("file://") for f in message.files}
    with pytest.raises(mor.TableReplacedError):
        writer.commit([message])
    assert_new_table_untouched(catalog, new, files_before)
