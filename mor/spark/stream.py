"""Streaming reads: `spark.readStream.format("mor")` emits the rows each `append` snapshot added,
exactly once, with Spark's checkpoint.

    spark.readStream.format("mor").option("warehouse", "warehouse").load("db.events")

The stream follows the ancestry (parent chain) of the table's current snapshot, in commit order,
and emits, for each `append` snapshot, the rows of the data files that snapshot added, as they
were written: deletes committed later are not applied. It is a stream of appends, as Iceberg's
own Spark streaming source is; a row-level change cannot be expressed in it, so:

- `replace` snapshots (compaction: the same rows in new files) are passed over silently;
- `delete` and `overwrite` snapshots (DELETE, UPDATE, MERGE, UPSERT, delete_rows) stop the
  stream with `StreamingChangeError`, after the rows committed before them are emitted, unless
  `streaming-skip-delete-snapshots` / `streaming-skip-overwrite-snapshots` is `true`. A skipped
  overwrite is skipped whole: rows it added (an UPDATE's new versions, a MERGE's inserts) are
  not emitted either.

Options (Iceberg's names), besides the batch reader's `warehouse`, `uri`, `columns`, `filter`,
`partitions` and `metadata-columns`:

- `stream-from-timestamp` (ms since the epoch): start with the first snapshot committed at or
  after this time. Without it the stream starts at the beginning of the table's history; if
  the oldest snapshots were expired, the oldest one left stands for them and the stream first
  emits the table's live rows as of that snapshot (its deletes applied), then every later append.
  Read only when the query starts without a checkpoint: afterwards the checkpoint decides.
- `streaming-skip-delete-snapshots`, `streaming-skip-overwrite-snapshots`: true/false (false).
- `streaming-max-files-per-micro-batch`, `streaming-max-rows-per-micro-batch`: a micro-batch
  takes data files in commit order while both limits hold, and always at least one file, so a
  file larger than the row limit is still read (alone). A large snapshot is split across
  micro-batches at file boundaries. `trigger(availableNow=True)` honours the limits and reads
  exactly what was committed when the query started, then stops.

An offset (`StreamOffset`) names a snapshot of the chain and how many of its data files have
been emitted, or that all of them have (`SNAPSHOT_DONE`); it carries the snapshot's sequence
number too (the commit order, for people reading checkpoints). A stream whose snapshot is no
longer an ancestor of the current one (a rollback), or whose unread snapshots were expired,
fails with `StreamingChangeError` rather than guess.

Spark runs `latestOffset`/`partitions`/`commit` in one long-lived Python process per query and
pickles the reader again for the executors, which only call `read`: file lists are cached in the
first process and never pickled.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import pyarrow as pa
from pyiceberg.expressions import AlwaysTrue
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxBytes,
    ReadMaxFiles,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from mor.api.table import Table
from mor.errors import InvalidArgumentError, StreamingChangeError, UnsupportedFeatureError
from mor.format.content_file import DataFile
from mor.format.manifest import read_manifest
from mor.format.metadata import Snapshot, TableMetadata
from mor.format.spec import ManifestContent, ManifestEntryStatus, Operation
from mor.io.fileio import FileIO
from mor.planning.packing import pack_tasks
from mor.planning.planner import manifests_of, plan_files
from mor.planning.task import FileScanTask
from mor.spark.options import TableRef, bool_option, int_option, positive_option, read_options
from mor.spark.scan import TaskGroup, partition_target, plan_scan, read_group

FROM_TIMESTAMP = "stream-from-timestamp"
SKIP_DELETE = "streaming-skip-delete-snapshots"
SKIP_OVERWRITE = "streaming-skip-overwrite-snapshots"
MAX_FILES = "streaming-max-files-per-micro-batch"
MAX_ROWS = "streaming-max-rows-per-micro-batch"
TIME_TRAVEL_OPTIONS = ("snapshot-id", "as-of-timestamp")

NO_SNAPSHOT = -1  # an offset before the table's first snapshot
SNAPSHOT_DONE = -1  # an offset position: every data file of the snapshot has been emitted


@dataclass(frozen=True)
class StreamOptions:
    from_timestamp_ms: int | None = None
    skip_delete: bool = False
    skip_overwrite: bool = False
    max_files: int | None = None
    max_rows: int | None = None


def stream_options(options: Mapping[str, str]) -> StreamOptions:
    for key in TIME_TRAVEL_OPTIONS:
        if options.get(key):
            raise InvalidArgumentError(f"option {key!r} is for batch reads; a stream starts with {FROM_TIMESTAMP!r}")
    return StreamOptions(
        from_timestamp_ms=int_option(options, FROM_TIMESTAMP),
        skip_delete=bool_option(options, SKIP_DELETE),
        skip_overwrite=bool_option(options, SKIP_OVERWRITE),
        max_files=positive_option(options, MAX_FILES),
        max_rows=positive_option(options, MAX_ROWS),
    )


@dataclass(frozen=True)
class StreamOffset:
    """Where a stream is: file `position` of snapshot `snapshot_id` is the next to emit, or the
    whole snapshot is emitted (`position == SNAPSHOT_DONE`). `scan_all_files`: this snapshot
    stands for the expired history before it, so its files are all its live files."""

    sequence_number: int
    snapshot_id: int
    position: int
    scan_all_files: bool = False

    @classmethod
    def before_history(cls) -> StreamOffset:
        return cls(0, NO_SNAPSHOT, SNAPSHOT_DONE)

    @classmethod
    def at(cls, snapshot: Snapshot, position: int, scan_all_files: bool = False) -> StreamOffset:
        return cls(snapshot.sequence_number, snapshot.snapshot_id, position, scan_all_files)

    @classmethod
    def done(cls, snapshot: Snapshot) -> StreamOffset:
        return cls.at(snapshot, SNAPSHOT_DONE)

    def to_dict(self) -> dict[str, Any]:
        return {
            "sequence_number": self.sequence_number,
            "snapshot_id": self.snapshot_id,
            "position": self.position,
            "scan_all_files": self.scan_all_files,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> StreamOffset:
        try:
            return cls(int(d["sequence_number"]), int(d["snapshot_id"]), int(d["position"]), bool(d.get("scan_all_files")))
        except (KeyError, TypeError, ValueError):
            raise InvalidArgumentError(f"not a mor stream offset: {dict(d)!r} (was the checkpoint written by another source?)") from None


@dataclass(frozen=True)
class Step:
    """A snapshot still to emit, from data file `position` on."""

    snapshot: Snapshot
    position: int = 0
    scan_all_files: bool = False


def pending_steps(metadata: TableMetadata, head_id: int | None, offset: StreamOffset) -> list[Step]:
    """The snapshots after `offset` up to `head_id` (inclusive), oldest first."""
    chain = list(reversed(metadata.ancestors(head_id)))
    if head_id not in (None, NO_SNAPSHOT) and not chain:
        raise StreamingChangeError(f"snapshot {head_id} was expired while the stream was reading up to it")
    first = _resume(metadata, chain, offset)
    if first is None:
        return []
    index, position, scan_all_files = first
    return [Step(chain[index], position, scan_all_files), *(Step(s) for s in chain[index + 1 :])]


def _resume(metadata: TableMetadata, chain: list[Snapshot], offset: StreamOffset) -> tuple[int, int, bool] | None:
    """Where in `chain` the stream goes on: (index, file position, scan_all_files), or None
    when it has read the whole chain."""
    if offset.snapshot_id == NO_SNAPSHOT:
        # Everything is new; a parent the table no longer has means history was expired.
        return (0, 0, chain[0].parent_snapshot_id is not None) if chain else None
    ids = [s.snapshot_id for s in chain]
    if offset.snapshot_id in ids:
        index = ids.index(offset.snapshot_id)
        if offset.position != SNAPSHOT_DONE:
            return index, offset.position, offset.scan_all_files
        return (index + 1, 0, False) if index + 1 < len(chain) else None
    if any(s.snapshot_id == offset.snapshot_id for s in metadata.snapshots):
        raise StreamingChangeError(
            f"the stream is at snapshot {offset.snapshot_id}, which is not an ancestor of snapshot "
            f"{ids[-1] if ids else None} (the table was rolled back?): start a new stream (new checkpoint)"
        )
    parents = [s.parent_snapshot_id for s in chain]
    if offset.position == SNAPSHOT_DONE and offset.snapshot_id in parents:
        return parents.index(offset.snapshot_id), 0, False  # the snapshot we finished was expired since
    oldest = f"; the oldest snapshot the table still has is {chain[0].snapshot_id} (timestamp-ms {chain[0].timestamp_ms})" if chain else ""
    raise StreamingChangeError(
        f"snapshot {offset.snapshot_id} (sequence number {offset.sequence_number}) and maybe others were "
        f"expired before the stream read them{oldest}: start a new stream (new checkpoint, e.g. with "
        f"{FROM_TIMESTAMP!r} after that)"
    )


def refusal(snapshot: Snapshot, options: StreamOptions) -> StreamingChangeError | None:
    """The error a snapshot the stream cannot emit raises, unless an option skips it."""
    operation = snapshot.operation
    if operation in (Operation.APPEND, Operation.REPLACE):
        return None
    skip = {Operation.DELETE: (options.skip_delete, SKIP_DELETE), Operation.OVERWRITE: (options.skip_overwrite, SKIP_OVERWRITE)}
    if operation not in skip:
        return StreamingChangeError(f"snapshot {snapshot.snapshot_id} has operation {operation!r}, which a stream of appends cannot follow")
    skipped, option = skip[operation]
    if skipped:
        return None
    return StreamingChangeError(
        f"snapshot {snapshot.snapshot_id} (sequence number {snapshot.sequence_number}) is a {operation!r}: "
        f"a stream of appends cannot emit it; set option {option!r} to 'true' to pass over such snapshots"
    )


def added_data_files(io: FileIO, metadata: TableMetadata, snapshot: Snapshot) -> list[FileScanTask]:
    """The data files `snapshot` added, in manifest order, as tasks with no deletes."""
    specs, schema = metadata.specs(), metadata.schema()
    tasks = []
    for manifest in manifests_of(io, snapshot):
        # A file added by this snapshot is in a manifest this snapshot wrote.
        if manifest.content != ManifestContent.DATA or manifest.added_snapshot_id != snapshot.snapshot_id:
            continue
        for entry in read_manifest(io, manifest, specs, schema):
            if entry.status == ManifestEntryStatus.ADDED and entry.snapshot_id == snapshot.snapshot_id:
                assert isinstance(entry.file, DataFile)
                tasks.append(FileScanTask(entry.file, (), AlwaysTrue()))
    return tasks


@dataclass
class Budget:
    """What one micro-batch may still take; the first file is always taken."""

    max_files: int | None = None
    max_rows: int | None = None
    max_bytes: int | None = None
    files: int = 0
    rows: int = 0
    bytes: int = 0

    @classmethod
    def of(cls, limit: ReadLimit, options: StreamOptions) -> Budget:
        if isinstance(limit, ReadAllAvailable):
            return cls()  # Spark's call, whatever the options say
        budget = cls(options.max_files, options.max_rows)
        if isinstance(limit, ReadMaxFiles):
            budget.max_files = min(limit.max_files, budget.max_files or limit.max_files)
        elif isinstance(limit, ReadMaxRows):
            budget.max_rows = min(limit.max_rows, budget.max_rows or limit.max_rows)
        elif isinstance(limit, ReadMaxBytes):
            budget.max_bytes = limit.max_bytes
        else:
            raise UnsupportedFeatureError(f"read limit {limit!r} is not supported by the mor stream")
        return budget

    def take(self, tasks: Sequence[FileScanTask]) -> int:
        """How many of `tasks`, from the first, fit; counts them as taken."""
        taken = 0
        for task in tasks:
            rows, size = task.data_file.record_count, task.data_file.file_size_in_bytes
            if self.files and not self._fits(rows, size):
                break
            self.files += 1
            self.rows += rows
            self.bytes += size
            taken += 1
        return taken

    def _fits(self, rows: int, size: int) -> bool:
        return (
            (self.max_files is None or self.files + 1 <= self.max_files)
            and (self.max_rows is None or self.rows + rows <= self.max_rows)
            and (self.max_bytes is None or self.bytes + size <= self.max_bytes)
        )


class MorStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Plans micro-batches on the driver from the table's snapshots; executors read task groups
    with the batch reader's machinery (`read_group`)."""

    def __init__(self, ref: TableRef, options: Mapping[str, str], schema: StructType):
        self.ref = ref
        self.options = stream_options(options)
        plan = plan_scan(ref, read_options(options), requested=schema)
        self.plan = replace(plan, table=None)
        self._table_handle: Table | None = plan.table
        self._target: int | None = None  # availableNow: the last snapshot to read
        self._files_cache: dict[tuple[int, bool], list[FileScanTask]] = {}

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state.update(_table_handle=None, _files_cache={})
        return state

    # -- offsets (driver) -----------------------------------------------------------------------
    def initialOffset(self) -> dict:
        metadata = self._table().metadata
        steps = pending_steps(metadata, metadata.current_snapshot_id, StreamOffset.before_history())
        if not steps:
            return StreamOffset.before_history().to_dict()
        since = self.options.from_timestamp_ms
        if since is None:
            return StreamOffset.at(steps[0].snapshot, 0, steps[0].scan_all_files).to_dict()
        first = next((s.snapshot for s in steps if s.snapshot.timestamp_ms >= since), None)
        return (StreamOffset.at(first, 0) if first else StreamOffset.done(steps[-1].snapshot)).to_dict()

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.options.max_files is not None:
            return ReadMaxFiles(self.options.max_files)  # latestOffset applies the row limit too
        if self.options.max_rows is not None:
            return ReadMaxRows(self.options.max_rows)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        current = self._table().metadata.current_snapshot_id
        self._target = NO_SNAPSHOT if current is None else current

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        begin = StreamOffset.from_dict(start)
        table = self._table()
        head = self._target if self._target is not None else table.metadata.current_snapshot_id
        budget = Budget.of(limit, self.options)
        end = begin
        for step in pending_steps(table.metadata, head, begin):
            error = None if step.scan_all_files else refusal(step.snapshot, self.options)
            if error is not None:
                if budget.files:
                    break  # emit what came before it first; the next micro-batch raises
                raise error
            files = self._files(table, step)
            position = step.position + budget.take(files[step.position :])
            if position < len(files):
                end = StreamOffset.at(step.snapshot, position, step.scan_all_files)
                break
            end = StreamOffset.done(step.snapshot)
        return start if end == begin else end.to_dict()

    def commit(self, end: dict) -> None:
        # Offsets up to `end` are never planned again: forget their files.
        current = StreamOffset.from_dict(end).snapshot_id
        self._files_cache = {k: v for k, v in self._files_cache.items() if k[0] == current}

    # -- planning (driver) and reading (executors) -----------------------------------------------
    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        begin, finish = StreamOffset.from_dict(start), StreamOffset.from_dict(end)
        if begin == finish:
            return []
        table = self._table()
        tasks: list[FileScanTask] = []
        for step in pending_steps(table.metadata, finish.snapshot_id, begin):
            last = step.snapshot.snapshot_id == finish.snapshot_id
            stop = finish.position if last and finish.position != SNAPSHOT_DONE else None
            if stop is None or stop > step.position:
                tasks.extend(self._files(table, step)[step.position : stop])
        return [TaskGroup(group) for group in pack_tasks(tasks, partition_target(self.plan.options.partitions))]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, TaskGroup)
        return read_group(self.plan, partition.tasks)

    # -- helpers --------------------------------------------------------------------------------
    def _table(self) -> Table:
        if self._table_handle is None or self.ref.is_metadata_location:
            self._table_handle = self.ref.open()  # a metadata folder may hold a newer file
        else:
            self._table_handle.refresh()
        return self._table_handle

    def _files(self, table: Table, step: Step) -> list[FileScanTask]:
        """The data files a step emits, in a fixed order (offsets count positions in it)."""
        key = (step.snapshot.snapshot_id, step.scan_all_files)
        if key not in self._files_cache:
            self._files_cache[key] = self._list_files(table, step)
        return self._files_cache[key]

    def _list_files(self, table: Table, step: Step) -> list[FileScanTask]:
        snapshot = step.snapshot
        if step.scan_all_files:
            return plan_files(table.io, table.metadata, snapshot, AlwaysTrue())
        error = refusal(snapshot, self.options)
        if error is not None:
            raise error
        if snapshot.operation != Operation.APPEND:
            return []  # replace, or a skipped delete/overwrite
        return added_data_files(table.io, table.metadata, snapshot)
