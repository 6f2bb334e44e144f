"""The change feed in Spark: `spark.read.format("mor").option("changes", "true")`.

    spark.read.format("mor").option("warehouse", "wh").option("changes", "true")
        .option("start-snapshot-id", a).option("end-snapshot-id", b).load("db.events")

Options (Iceberg's changelog names): `start-snapshot-id` (changes after it; default: from the
empty table) or `start-timestamp` (ms: after the snapshot current then), `end-snapshot-id` or
`end-timestamp` (default: the current snapshot), `changes-on` (comma-separated key columns that
pair updates), `net-changes`, and `columns`, `filter` as for reads. The columns and change types
are the local API's (`table.changes()`, mor/api/changes.py): the table's columns, then
`_change_type`, `_change_ordinal`, `_commit_snapshot_id`.

The driver resolves the range once and pins the table's metadata file; each Spark task computes
the changes of one snapshot against its parent with the local code, on an executor (a
`net_changes` read is one task: it cancels across the whole range).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import pyarrow as pa
from pyiceberg.schema import Schema
from pyspark.sql.datasource import DataSourceReader, InputPartition
from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

from mor.api.changes import CHANGE_ORDINAL, CHANGE_TYPE, COMMIT_SNAPSHOT_ID, ChangeScan
from mor.api.table import StaticTable
from mor.errors import InvalidArgumentError
from mor.spark.options import TableRef, bool_option, int_option
from mor.spark.scan import CASE_SENSITIVE
from mor.spark.types import spark_arrow_schema, spark_schema, to_spark_batch

CHANGE_SPARK_FIELDS = [
    StructField(CHANGE_TYPE, StringType(), False),
    StructField(CHANGE_ORDINAL, IntegerType(), False),
    StructField(COMMIT_SNAPSHOT_ID, LongType(), False),
]
RANGE_OPTIONS = ("start-snapshot-id", "end-snapshot-id", "start-timestamp", "end-timestamp", "changes-on", "net-changes")


def wants_changes(options: Mapping[str, str]) -> bool:
    return bool_option(options, "changes")


@dataclass(frozen=True)
class ChangesPlan:
    """The range, resolved on the driver; small and picklable."""

    ref: TableRef
    metadata_location: str  # pinned: every task reads the metadata the driver planned from
    parts: tuple[tuple[int | None, int, int], ...]  # (parent or None, snapshot, ordinal) per task
    columns: tuple[str, ...] | None
    filter: str | None
    on: tuple[str, ...] | None
    net_changes: bool
    schema: Schema
    output: StructType
    start_as_inserts: bool = False  # a stream's first part: see ChangeScan

    def scan(self, first: int | None, last: int, ordinal: int) -> ChangeScan:
        table = StaticTable.from_metadata(self.metadata_location, dict(self.ref.properties))
        return ChangeScan(
            table, first, last, list(self.columns) if self.columns else None, self.filter,
            on=list(self.on) if self.on else None, net_changes=self.net_changes,
            case_sensitive=CASE_SENSITIVE, schema=self.schema, first_ordinal=ordinal, start_as_inserts=self.start_as_inserts,
        )  # fmt: skip


def plan_changes(ref: TableRef, options: Mapping[str, str], start_as_inserts: bool = False) -> ChangesPlan:
    if options.get("snapshot-id") or options.get("as-of-timestamp"):
        raise InvalidArgumentError("a changes read takes start-/end-snapshot-id (or -timestamp), not snapshot-id / as-of-timestamp")
    table = ref.open()
    columns = options.get("columns")
    on = options.get("changes-on")

    def split(text: str) -> tuple[str, ...]:  # called only with non-empty text
        return tuple(c.strip() for c in text.split(",") if c.strip())

    scan = ChangeScan(
        table,
        from_snapshot_id=int_option(options, "start-snapshot-id"),
        to_snapshot_id=int_option(options, "end-snapshot-id"),
        columns=list(split(columns)) if columns else None,
        filter=options.get("filter") or None,
        from_timestamp=int_option(options, "start-timestamp"),
        to_timestamp=int_option(options, "end-timestamp"),
        on=list(split(on)) if on else None,
        net_changes=bool_option(options, "net-changes"),
        case_sensitive=CASE_SENSITIVE,
        start_as_inserts=start_as_inserts,
    )
    first = scan.from_snapshot.snapshot_id if scan.from_snapshot else None
    parts: tuple[tuple[int | None, int, int], ...]
    if scan.net_changes:
        parts = ((first, scan.to_snapshot.snapshot_id, 0),) if scan.snapshots and scan.to_snapshot else ()
    else:
        parents = [first, *(s.snapshot_id for s in scan.snapshots[:-1])]
        changing = [(p, s.snapshot_id) for p, s in zip(parents, scan.snapshots) if s.operation != "replace"]
        parts = tuple((p, s, i) for i, (p, s) in enumerate(changing))
    return ChangesPlan(
        ref=ref.with_io_of(table),
        metadata_location=table.metadata_location,
        parts=parts,
        columns=split(columns) if columns else None,
        filter=options.get("filter") or None,
        on=split(on) if on else None,
        net_changes=scan.net_changes,
        schema=scan.schema,
        output=StructType([*spark_schema(scan.projection).fields, *CHANGE_SPARK_FIELDS]),
        start_as_inserts=start_as_inserts,
    )


class ChangesPart(InputPartition):
    def __init__(self, first: int | None, last: int, ordinal: int) -> None:
        super().__init__(None)
        self.first, self.last, self.ordinal = first, last, ordinal

    def __repr__(self) -> str:
        return f"ChangesPart({self.first} -> {self.last})"


class ChangesReader(DataSourceReader):
    """One task per snapshot of the range (one for net changes)."""

    def __init__(self, plan: ChangesPlan):
        self.plan = plan

    def partitions(self) -> list[InputPartition]:
        return [ChangesPart(*p) for p in self.plan.parts] or [ChangesPart(None, 0, -1)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, ChangesPart)
        if partition.ordinal < 0:  # an empty range: Spark still wants one partition
            return
        target = spark_arrow_schema(self.plan.output)
        scan = self.plan.scan(partition.first, partition.last, partition.ordinal)
        for batch in scan.to_batches():
            yield to_spark_batch(batch, target)
