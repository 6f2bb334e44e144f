"""The `mor` PySpark data source: `spark.read/write/readStream.format("mor")`.

Spark creates these objects in Python processes it starts itself (planner and executor
workers), so everything here is pickled by reference from the installed `mor` package, and
the objects hold only small, picklable state: a table reference, schemas and a row filter.
A MorError raised here is what the worker reports, alone (mor/spark/errors.py `reported_alone`):
Spark's message then reads `... Python data source instance: mor.errors.NoSuchTableError: ...`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from mor.spark.changes import ChangesReader, plan_changes, wants_changes
from mor.spark.errors import reported_alone, reported_alone_each
from mor.spark.options import bool_option, read_options, table_ref
from mor.spark.scan import ScanPlan, TaskGroup, partition_target, plan_scan, read_group

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql.datasource import DataSourceStreamReader, DataSourceStreamWriter, DataSourceWriter, Filter

FORMAT = "mor"
PUSHDOWN_ENV = "MOR_SPARK_FILTER_PUSHDOWN"  # "true" when the session enabled Python filter pushdown
# Up to pyspark 4.3, Spark keeps the reader planned by a filter pushdown on the DataFrame's
# relation and reuses it for the next query on that DataFrame that pushes no filter: a pruned
# read would then return too few rows (`df.filter("id > 3").count(); df.count()`). Spark scoped
# that reader to its scan when it added limit pushdown, so pushed filters prune only there.
PUSHDOWN_IS_SCOPED = hasattr(DataSourceReader, "pushLimit")


def wants_change_stream(options: Mapping[str, str]) -> bool:
    return bool_option(options, "read-changes")  # mor/spark/changes_stream.py


class MorDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> StructType:
        with reported_alone():
            return self._schema()

    def _schema(self) -> StructType:
        if wants_changes(self.options) or wants_change_stream(self.options):
            # A stream's range is set per micro-batch (mor/spark/changes_stream.py): its columns
            # are all this plan gives, whatever history is left.
            stream = wants_change_stream(self.options) and not wants_changes(self.options)
            return plan_changes(table_ref(self.options), self.options, start_as_inserts=stream).output
        plan = plan_scan(table_ref(self.options), read_options(self.options), requested=None)
        return plan.output

    def reader(self, schema: StructType) -> DataSourceReader:
        with reported_alone():
            return self._reader(schema)

    def _reader(self, schema: StructType) -> DataSourceReader:
        if wants_changes(self.options):  # the change feed (mor/spark/changes.py)
            return ChangesReader(plan_changes(table_ref(self.options), self.options))
        cls = MorFilteringReader if os.environ.get(PUSHDOWN_ENV) == "true" and PUSHDOWN_IS_SCOPED else MorReader
        return cls(plan_scan(table_ref(self.options), read_options(self.options), requested=schema))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        from mor.spark.write import MorWriter

        with reported_alone():
            return MorWriter(table_ref(self.options), self.options, schema, overwrite)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        from mor.spark.stream_write import MorStreamWriter

        return MorStreamWriter(table_ref(self.options), self.options, schema, overwrite)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        if wants_change_stream(self.options):
            from mor.spark.changes_stream import MorChangesStreamReader

            return MorChangesStreamReader(table_ref(self.options), self.options, schema)
        from mor.spark.stream import MorStreamReader

        return MorStreamReader(table_ref(self.options), self.options, schema)


class MorReader(DataSourceReader):
    """Plans on the driver; each executor task reads its group with the local reader."""

    def __init__(self, plan: ScanPlan):
        self.plan = plan

    def partitions(self) -> list[InputPartition]:
        with reported_alone():
            return self._partitions()

    def _partitions(self) -> list[InputPartition]:
        groups = self.plan.packed_tasks(partition_target(self.plan.options.partitions))
        return [TaskGroup(group) for group in groups] if groups else [TaskGroup([])]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, TaskGroup)
        return reported_alone_each(read_group(self.plan, partition.tasks))


class MorFilteringReader(MorReader):
    """Also takes Spark's pushed filters, to prune partitions, files and row groups. Used only
    when the session enables `spark.sql.python.filterPushdown.enabled` (Spark refuses a reader
    with pushFilters otherwise)."""

    def pushFilters(self, filters: list[Filter]) -> list[Filter]:
        with reported_alone():
            self.plan = self.plan.with_pushed(filters)
        return filters  # Spark still evaluates each one: pruning only ever keeps too much
