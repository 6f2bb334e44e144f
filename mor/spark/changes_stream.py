"""A stream of changes: `spark.readStream.format("mor").option("read-changes", "true")` emits
every change of every snapshot exactly once, DELETEs, UPDATEs and MERGEs included, where the
stream of appends (mor/spark/stream.py) stops.

    spark.readStream.format("mor").option("warehouse", "wh").option("read-changes", "true").load("db.events")

Rows are the change feed's (mor/api/changes.py, mor/spark/changes.py): the table's columns (of
the schema current when the query started), `_change_type`, `_change_ordinal` (from 0 within
each micro-batch: the snapshots it covers, in commit order) and `_commit_snapshot_id`. Options:
`changes-on` (key columns that pair updates), `columns`, `filter`, `stream-from-timestamp`
(start with the first snapshot committed at or after it), and
`streaming-max-snapshots-per-micro-batch`.

Offsets are whole snapshots (`StreamOffset.done(snapshot)`, the stream of appends' offset
type): a micro-batch emits the changes of the snapshots after its start offset up to its end
offset, so a query restarted from its checkpoint neither repeats nor skips a snapshot. Each
snapshot is diffed against its parent by one Spark task, from the metadata file pinned when the
micro-batch was planned. `replace` snapshots emit nothing. A rollback, or snapshots expired
before the stream read them, stop it with StreamingChangeError naming the oldest snapshot left
(as the stream of appends); so does a `stream-from-timestamp` whose changes need an expired
snapshot. A new stream without a start on a table whose oldest snapshots were expired reads the
oldest one left as INSERTs of its live rows: the table's state when the stream began.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxFiles, SupportsTriggerAvailableNow
from pyspark.sql.types import StructType

from mor.api.table import Table
from mor.errors import InvalidArgumentError, StreamingChangeError
from mor.spark.changes import ChangesPart, ChangesPlan, plan_changes
from mor.spark.options import TableRef, int_option, positive_option
from mor.spark.stream import FROM_TIMESTAMP, NO_SNAPSHOT, TIME_TRAVEL_OPTIONS, StreamOffset, pending_steps
from mor.spark.types import spark_arrow_schema, to_spark_batch

READ_CHANGES = "read-changes"
MAX_SNAPSHOTS = "streaming-max-snapshots-per-micro-batch"


class MorChangesStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, ref: TableRef, options: Mapping[str, str], schema: StructType):
        for key in (*TIME_TRAVEL_OPTIONS, "start-snapshot-id", "end-snapshot-id", "net-changes"):
            if options.get(key):
                raise InvalidArgumentError(f"option {key!r} is for batch reads; a stream of changes starts with {FROM_TIMESTAMP!r}")
        self.ref = ref
        self.from_timestamp_ms = int_option(options, FROM_TIMESTAMP)
        self.max_snapshots = positive_option(options, MAX_SNAPSHOTS)
        # The columns, filter, keys and schema every micro-batch reads with (the range is set per batch).
        self.plan: ChangesPlan = plan_changes(ref, {**options, "end-snapshot-id": "", "start-snapshot-id": ""}, start_as_inserts=True)
        self._handle: Table | None = None
        self._target: int | None = None

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_handle": None}

    def initialOffset(self) -> dict:
        metadata = self._table().metadata
        steps = pending_steps(metadata, metadata.current_snapshot_id, StreamOffset.before_history())
        since = self.from_timestamp_ms
        if not steps or since is None:
            return StreamOffset.before_history().to_dict()
        index = next((i for i, s in enumerate(steps) if s.snapshot.timestamp_ms >= since), None)
        if index is None:
            return StreamOffset.done(steps[-1].snapshot).to_dict()
        if index == 0 and steps[0].scan_all_files:  # the changes from `since` on need a parent that was expired
            oldest = steps[0].snapshot
            raise StreamingChangeError(
                f"the snapshots of {self.ref.name} before {oldest.snapshot_id} (timestamp-ms {oldest.timestamp_ms}) were expired, so "
                f"its changes since {FROM_TIMESTAMP}={since} cannot be read: start from a time after {oldest.timestamp_ms}"
            )
        return StreamOffset.before_history().to_dict() if index == 0 else StreamOffset.done(steps[index - 1].snapshot).to_dict()

    def getDefaultReadLimit(self) -> ReadLimit:
        return ReadMaxFiles(self.max_snapshots) if self.max_snapshots else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        current = self._table().metadata.current_snapshot_id
        self._target = NO_SNAPSHOT if current is None else current

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        begin = StreamOffset.from_dict(start)
        table = self._table()
        head = self._target if self._target is not None else table.metadata.current_snapshot_id
        steps = pending_steps(table.metadata, head, begin)
        if isinstance(limit, ReadMaxFiles):
            steps = steps[: max(1, limit.max_files)]
        return StreamOffset.done(steps[-1].snapshot).to_dict() if steps else start

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        begin, finish = StreamOffset.from_dict(start), StreamOffset.from_dict(end)
        if begin == finish:
            return []
        table = self._table()
        steps = pending_steps(table.metadata, finish.snapshot_id, begin)
        parts: list[ChangesPart] = []
        parent = None if begin.snapshot_id == NO_SNAPSHOT else begin.snapshot_id
        for step in steps:
            snapshot = step.snapshot
            first = None if step.scan_all_files else parent
            if snapshot.operation != "replace" or step.scan_all_files:
                parts.append(ChangesPart(first, snapshot.snapshot_id, len(parts)))
            parent = snapshot.snapshot_id
        pinned = replace(self.plan, metadata_location=table.metadata_location)
        return [PinnedPart(pinned, p) for p in parts]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, PinnedPart)
        plan, part = partition.plan, partition.part
        target = spark_arrow_schema(plan.output)
        for batch in plan.scan(part.first, part.last, part.ordinal).to_batches():
            yield to_spark_batch(batch, target)

    def commit(self, end: dict) -> None:
        pass

    def _table(self) -> Table:
        if self._handle is None or self.ref.is_metadata_location:
            self._handle = self.ref.open()
        else:
            self._handle.refresh()
        return self._handle


class PinnedPart(InputPartition):
    """One snapshot's changes, with the plan (metadata file) of its micro-batch."""

    def __init__(self, plan: ChangesPlan, part: ChangesPart) -> None:
        super().__init__(None)
        self.plan, self.part = plan, part
