"""Compaction: rewrite data files that carry deletes (and small files) with their deletes applied.

Which files: in the snapshot read (optionally only files that may hold rows matching `where`),
a data file with deletes is rewritten when its deleted share reaches `min_delete_ratio` (or it
has `min_delete_files` delete files); small files (under 75% of the target size, as Iceberg's
default) join them, and on their own a partition's small files are rewritten once there are
`min_input_files` of them. Rows are written in the table's default spec, as Iceberg's
rewrite_data_files does, so compaction also moves rows out of older specs. Files are grouped
by the default-spec partition their rows fall in (known from the file's own partition when its
spec has every default-spec field, by field id; the other files of older specs form one group
of their own), packed into bins of about `target_file_size` input bytes, and each bin is
streamed through its own rolling writer (bins in parallel). The plan (`plan_compaction`), the
rewrite of one bin (`BinRewriter`) and the commit's changes and validator (`finish_compaction`)
are separate steps, so Spark can run the middle one on its executors (mor/spark/maintenance.py).

Clustering (mor/maintenance/clustering.py): with `sort_by` or `zorder_by`, every file in scope
is rewritten (as Iceberg's rewrite_data_files with strategy sort or zorder), one bin per output
partition, its live rows ordered as a whole and cut into files of the target size. Otherwise
each output file is sorted by the table's default sort order, when it has one.

The commit (operation `replace`) swaps the files and drops every delete file that then applies
to no live data file. The new files keep the data sequence number of the snapshot read, so a
delete committed meanwhile still applies to their rows. In a v3 table the rows keep their
lineage (`_row_id`, `_last_updated_sequence_number` are written into the new files), and the
deletion vector of a rewritten file leaves (its Puffin file may hold vectors that stay).
Conflicts, checked against what landed meanwhile (the caller re-plans on CommitConflictError):
  - a position delete or deletion vector added for a rewritten file (its rows would come back);
  - a data file added with a data sequence number older than an equality delete this commit
    drops (another compaction's output, which that delete must still reach);
  - when rows move to another spec: an equality delete scoped to a partition of a spec they
    leave or enter (it would stop reaching them, or start to);
  - a rewritten data file or dropped delete file removed meanwhile (checked by the commit).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import cast

import pyarrow as pa
from pyiceberg.expressions import AlwaysTrue, BooleanExpression
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table.sorting import SortOrder

from mor.commit.snapshot_producer import Changes, Validator
from mor.errors import InvalidArgumentError
from mor.expr.filters import FilterLike
from mor.format.content_file import DataFile, DeleteFile
from mor.format.lineage import with_lineage
from mor.format.metadata import TableMetadata
from mor.format.properties import TARGET_FILE_SIZE_BYTES
from mor.format.spec import FileContent, ManifestContent, Operation
from mor.io.fileio import FileIO
from mor.maintenance.clustering import Clustering
from mor.maintenance.sizes import total_bytes
from mor.planning.conflicts import commits_since
from mor.planning.delete_index import applies_to, partition_key
from mor.planning.planner import live_entries, plan_files, unpartitioned_spec_ids
from mor.planning.task import FileScanTask
from mor.progress import Progress
from mor.read.position_deletes import DeleteFileCache, deleted_positions
from mor.read.scan_reader import parallel_map, prepared_reader
from mor.read.task_reader import TaskReader
from mor.write.options import WriteOptions
from mor.write.rolling import RollingDataWriter, write_rows

SMALL_FILE_SHARE = 0.75  # Iceberg's min-file-size-bytes default: 75% of the target


@dataclass(frozen=True)
class CompactionOptions:
    """What a compaction is asked to do: the one set of options `Table.compact`,
    `mor.spark.compact` and `mor compact` take (Table.compact's docstring says what each does).
    Checked when made; what depends on the table (the default target size, the clustering's
    columns) when planned."""

    where: FilterLike = None
    target_file_size: int | None = None  # None: the table's write.target-file-size-bytes
    min_delete_ratio: float = 0.0
    min_input_files: int = 5
    min_delete_files: int | None = None
    sort_by: list[str] | None = None
    zorder_by: list[str] | None = None
    dry_run: bool = False

    def __post_init__(self) -> None:
        target, ratio, inputs, deletes = self.target_file_size, self.min_delete_ratio, self.min_input_files, self.min_delete_files
        if target is not None and (isinstance(target, bool) or not isinstance(target, int) or target <= 0):
            raise InvalidArgumentError(f"target_file_size must be a positive number of bytes, got {target!r}")
        if isinstance(ratio, bool) or not isinstance(ratio, (int, float)) or not 0 <= ratio <= 1:
            raise InvalidArgumentError(f"min_delete_ratio must be between 0 and 1, got {ratio!r}")
        if isinstance(inputs, bool) or not isinstance(inputs, int) or inputs < 1:
            raise InvalidArgumentError(f"min_input_files must be a positive integer, got {inputs!r}")
        if deletes is not None and (isinstance(deletes, bool) or not isinstance(deletes, int) or deletes < 1):
            raise InvalidArgumentError(f"min_delete_files must be a positive integer or None, got {deletes!r}")

    def target_bytes(self, metadata: TableMetadata) -> int:
        """The target file size: as given, else the table's write.target-file-size-bytes."""
        target = self.target_file_size if self.target_file_size is not None else WriteOptions(metadata.properties).target_file_bytes
        if isinstance(target, bool) or not isinstance(target, int) or target <= 0:
            raise InvalidArgumentError(f"target_file_size must be a positive number of bytes, got {target!r}")
        return target

    def clustering(self, metadata: TableMetadata) -> Clustering | None:
        """sort_by / zorder_by as an order of the table's columns: every file in scope is rewritten, ordered."""
        return Clustering.of(metadata, self.sort_by, self.zorder_by)


@dataclass(frozen=True)
class CompactionResult:
    """What `compact` did (with `dry_run`, would do: nothing is written, so nothing added).
    Deletion vectors (v3) count among the position deletes, each vector once, with its blob's
    size as bytes (several may share one Puffin file, which expiry deletes later)."""

    rewritten_data_files: int
    rewritten_data_bytes: int
    added_data_files: int
    added_data_bytes: int
    removed_position_delete_files: int
    removed_position_delete_bytes: int
    removed_equality_delete_files: int
    removed_equality_delete_bytes: int
    rewritten_rows: int  # rows the rewritten files held, deleted ones included
    written_rows: int  # rows written: the live ones
    snapshot_id: int | None = None  # None: nothing to do (or a dry run)
    dry_run: bool = False

    @property
    def removed_delete_files(self) -> int:
        return self.removed_position_delete_files + self.removed_equality_delete_files

    def to_dict(self) -> dict[str, object]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@dataclass
class CompactionPlan:
    snapshot_sequence_number: int
    groups: list[list[FileScanTask]]  # bins: files of one output partition, written together
    dropped_deletes: list[DeleteFile]  # apply to no data file the commit leaves live
    spec_id: int = 0  # the spec the rows are written in: the table's default when planned
    target_file_size: int = 0  # the options' target, resolved on the table planned
    clustering: Clustering | None = None
    changes: Changes = field(default_factory=lambda: Changes(Operation.REPLACE))

    @property
    def rewritten(self) -> list[DataFile]:
        return [t.data_file for g in self.groups for t in g]

    @property
    def empty(self) -> bool:
        return not self.groups and not self.dropped_deletes

    def result(self, snapshot_id: int | None, dry_run: bool = False) -> CompactionResult:
        rewritten, added = self.rewritten, self.changes.added_data
        position = [f for f in self.dropped_deletes if f.content == FileContent.POSITION_DELETES]
        equality = [f for f in self.dropped_deletes if f.content == FileContent.EQUALITY_DELETES]
        return CompactionResult(
            rewritten_data_files=len(rewritten),
            rewritten_data_bytes=sum(f.file_size_in_bytes for f in rewritten),
            added_data_files=len(added),
            added_data_bytes=sum(f.file_size_in_bytes for f in added),
            removed_position_delete_files=len(position),
            removed_position_delete_bytes=total_bytes(position),
            removed_equality_delete_files=len(equality),
            removed_equality_delete_bytes=total_bytes(equality),
            rewritten_rows=sum(f.record_count for f in rewritten),
            written_rows=sum(f.record_count for f in added),
            snapshot_id=snapshot_id,
            dry_run=dry_run,
        )


def plan_compaction(io: FileIO, metadata: TableMetadata, where: BooleanExpression, options: CompactionOptions) -> CompactionPlan:
    """Choose the files to rewrite and the delete files that then apply to nothing (`where`:
    the options' filter, bound to the table's schema)."""
    target, clustering = options.target_bytes(metadata), options.clustering(metadata)
    snapshot = metadata.current_snapshot()
    if snapshot is None:
        return CompactionPlan(0, [], [], metadata.default_spec_id, target, clustering)
    every_task = plan_files(io, metadata, snapshot, AlwaysTrue())
    in_scope = every_task if isinstance(where, AlwaysTrue) else plan_files(io, metadata, snapshot, where)
    group_of = _OutputPartition(metadata)
    if clustering is not None:
        chosen = in_scope  # every file: the rows are ordered across them
        groups = _partition_groups(chosen, group_of)
    else:
        chosen = _choose(io, in_scope, options, target, group_of)
        groups = _bins(chosen, target, group_of)
    rewritten = {t.data_file.file_path for t in chosen}
    # By entry, not path: one Puffin file holds the deletion vectors of several data files, and
    # the vector of a rewritten file goes though its neighbours' stay.
    still_applied = {d.key for t in every_task if t.data_file.file_path not in rewritten for d in t.delete_files}
    live_deletes = [e.file for e in live_entries(io, metadata, snapshot, ManifestContent.DELETES)]
    dropped = cast(list[DeleteFile], [f for f in live_deletes if f.key not in still_applied])  # a delete manifest's files
    return CompactionPlan(snapshot.sequence_number, groups, dropped, metadata.default_spec_id, target, clustering)


class _OutputPartition:
    """The default-spec partition a data file's rows fall in, as a group key: from the file's
    own partition values when its spec has every default-spec field (same field id, source and
    transform); files of other specs may hold rows of many partitions and share one group
    (Iceberg's planner groups them as unpartitioned)."""

    MIXED = ("mixed",)

    def __init__(self, metadata: TableMetadata):
        self.spec = metadata.spec()
        self.specs = metadata.specs()
        self._positions: dict[int, list[int] | None] = {}  # file spec id -> where each output field is

    def __call__(self, data_file: DataFile) -> tuple:
        if data_file.spec_id == self.spec.spec_id:
            return ("in", partition_key(data_file.partition))
        if data_file.spec_id not in self._positions:
            self._positions[data_file.spec_id] = self._map(self.specs[data_file.spec_id])
        positions = self._positions[data_file.spec_id]
        if positions is None:
            return self.MIXED
        return ("in", partition_key(tuple(data_file.partition[i] for i in positions)))

    def _map(self, spec: PartitionSpec) -> list[int] | None:
        index = {f.field_id: (i, f) for i, f in enumerate(spec.fields)}
        positions = []
        for f in self.spec.fields:
            found = index.get(f.field_id)
            if found is None or (found[1].source_id, str(found[1].transform)) != (f.source_id, str(f.transform)):
                return None
            positions.append(found[0])
        return positions


def _choose(
    io: FileIO, tasks: list[FileScanTask], options: CompactionOptions, target: int, group_of: Callable[[DataFile], tuple]
) -> list[FileScanTask]:
    small_below = SMALL_FILE_SHARE * target
    cache = DeleteFileCache(io)
    by_partition: dict[tuple, tuple[list[FileScanTask], list[FileScanTask]]] = defaultdict(lambda: ([], []))
    for task in tasks:
        with_deletes, small = by_partition[group_of(task.data_file)]
        if task.delete_files and _enough_deletes(task, options, cache):
            with_deletes.append(task)
        elif task.data_file.file_size_in_bytes < small_below:
            small.append(task)
    out = []
    for with_deletes, small in by_partition.values():
        if with_deletes:
            out += with_deletes + small  # small files of the partition ride along
        elif len(small) >= max(options.min_input_files, 2):
            out += small
    return out


def _enough_deletes(task: FileScanTask, options: CompactionOptions, cache: DeleteFileCache) -> bool:
    if options.min_delete_files is not None and len(task.delete_files) >= options.min_delete_files:
        return True
    if options.min_delete_ratio == 0:
        return True
    rows = max(task.data_file.record_count, 1)
    # Position deletes are counted exactly; an equality delete file's rows are an upper bound
    # of what it removes here (knowing more would mean reading the data).
    deleted = len(deleted_positions(task.data_file.file_path, task.position_deletes, cache, task.data_file.record_count))
    deleted += sum(f.record_count for f in task.equality_deletes)
    return min(deleted, rows) / rows >= options.min_delete_ratio


def _bins(tasks: list[FileScanTask], target: int, group_of: Callable[[DataFile], tuple]) -> list[list[FileScanTask]]:
    """Files of one output partition, packed in path order into bins of about `target`
    input bytes; bins are written in parallel, each into files rolled at the target."""
    groups: dict[tuple, list[FileScanTask]] = defaultdict(list)
    for task in tasks:
        groups[group_of(task.data_file)].append(task)
    bins: list[list[FileScanTask]] = []
    for group in groups.values():
        size = target  # start a new bin with the first file
        for task in sorted(group, key=lambda t: t.data_file.file_path):
            if size + task.data_file.file_size_in_bytes > target and size > 0:
                bins.append([])
                size = 0
            bins[-1].append(task)
            size += task.data_file.file_size_in_bytes
    return bins


def _partition_groups(tasks: list[FileScanTask], group_of: Callable[[DataFile], tuple]) -> list[list[FileScanTask]]:
    """One bin per output partition, files in path order."""
    groups: dict[tuple, list[FileScanTask]] = defaultdict(list)
    for task in sorted(tasks, key=lambda t: t.data_file.file_path):
        groups[group_of(task.data_file)].append(task)
    return list(groups.values())


@dataclass(frozen=True)
class BinRewriter:
    """What rewriting one bin needs, apart from the files: picklable, so Spark can ship it
    to executors (mor/spark/maintenance.py) as the local verb hands it to its threads."""

    table_location: str
    schema: Schema
    write_schema: Schema  # v3: with the row lineage columns, so rows keep their lineage
    spec: PartitionSpec
    write_options: WriteOptions
    sort_order: SortOrder  # the table's default: each output file sorted by it
    clustering: Clustering | None = None  # or: each bin's rows ordered as a whole

    @classmethod
    def of(cls, metadata: TableMetadata, plan: CompactionPlan) -> BinRewriter:
        schema = metadata.schema()
        write_options = WriteOptions({**metadata.properties, TARGET_FILE_SIZE_BYTES: str(plan.target_file_size)})
        write_schema = with_lineage(schema) if metadata.format_version >= 3 else schema
        return cls(
            metadata.location, schema, write_schema, metadata.specs()[plan.spec_id], write_options, metadata.sort_order, plan.clustering
        )  # fmt: skip

    def reader(self, io: FileIO, tasks: list[FileScanTask]) -> TaskReader:
        """One reader for every task it will rewrite (delete files shared by tasks read once)."""
        return prepared_reader(io, tasks, self.schema, self.write_schema, AlwaysTrue(), True)

    def rewrite(
        self, io: FileIO, reader: TaskReader, group: list[FileScanTask], written: list[str], advance: Callable[[int], None]
    ) -> list[DataFile]:
        """Stream the live rows of a bin's files into new files rolled at the target size.
        Every file started is added to `written`, for the caller's cleanup should another bin fail.
        `advance(n)`: n more bytes of input files rewritten (each file's size in all, spread
        over its batches by rows as they are written)."""

        def rows() -> Iterator[pa.RecordBatch]:
            for task in group:
                size, rows_in_file = task.data_file.file_size_in_bytes, max(task.data_file.record_count, 1)
                rows_done = reported = 0
                for batch in reader.read(task):
                    yield batch  # back here once the writer has taken it
                    rows_done += batch.num_rows
                    share = min(size * rows_done // rows_in_file, size)
                    if share > reported:
                        advance(share - reported)
                        reported = share
                reader.cache.done(task)
                advance(size - reported)

        if self.clustering is not None:
            return self._rewrite_ordered(io, group, rows(), written)
        writer = RollingDataWriter(io, self.table_location, self.write_schema, self.spec, self.write_options, sort_order=self.sort_order)
        try:
            return write_rows(writer, rows())
        finally:
            written += writer.started

    def _rewrite_ordered(self, io: FileIO, group: list[FileScanTask], rows: Iterator[pa.RecordBatch], written: list[str]) -> list[DataFile]:
        """The bin's rows ordered as a whole (all held, as a Spark shuffle would hold them),
        then cut into files of about the target size: as many rows per file as the input files
        held per target size (a writer only rolls a file at a row group's end)."""
        batches = list(rows)
        if not batches or self.clustering is None:
            return []
        ordered = self.clustering.order(pa.Table.from_batches(batches), self.write_schema)
        input_bytes = sum(t.data_file.file_size_in_bytes for t in group)
        input_rows = max(sum(t.data_file.record_count for t in group), 1)
        per_file = max(int(self.write_options.target_file_bytes * input_rows / max(input_bytes, 1)), 1)
        files: list[DataFile] = []
        for start in range(0, ordered.num_rows, per_file):
            writer = RollingDataWriter(
                io, self.table_location, self.write_schema, self.spec, self.write_options, sort_order_id=self.clustering.recorded_order_id
            )  # fmt: skip
            try:
                files += write_rows(writer, ordered.slice(start, per_file).to_batches(max_chunksize=self.write_options.row_group_rows))
            finally:
                written += writer.started
        return files


def write_compaction(io: FileIO, metadata: TableMetadata, plan: CompactionPlan, progress: Progress) -> Validator:
    """Write the groups' live rows into new files (filling `plan.changes`); the validator for the commit."""
    rewriter = BinRewriter.of(metadata, plan)
    tasks = [t for g in plan.groups for t in g]
    reader = rewriter.reader(io, tasks)
    written: list[str] = []
    with progress.stage("rewrite data files", total_input_bytes(plan), "bytes") as step:
        try:
            files = parallel_map(lambda group: rewriter.rewrite(io, reader, group, written, step.advance), plan.groups)
        except BaseException:
            for location in written:
                io.delete_quietly(location)
            raise
    return finish_compaction(io, plan, [f for group in files for f in group])


def total_input_bytes(plan: CompactionPlan) -> int:
    """The bytes of the data files a plan rewrites: what its progress counts."""
    return total_bytes(t.data_file for group in plan.groups for t in group)


def finish_compaction(io: FileIO, plan: CompactionPlan, added: list[DataFile]) -> Validator:
    """Fill `plan.changes` with the files the bins were rewritten into; the commit's validator."""
    plan.changes = Changes(
        Operation.REPLACE,
        added_data=added,
        removed_data=plan.rewritten,
        removed_deletes=list(plan.dropped_deletes),
        data_sequence_number=plan.snapshot_sequence_number,
    )
    return _validator(io, plan)


def _validator(io: FileIO, plan: CompactionPlan) -> Validator:
    rewritten = plan.rewritten
    dropped_equality = [f for f in plan.dropped_deletes if f.content == FileContent.EQUALITY_DELETES]
    moved = [f for f in rewritten if f.spec_id != plan.spec_id]  # rows that change spec
    added_partitions = {partition_key(f.partition) for f in plan.changes.added_data}

    def validate(read_base: TableMetadata, current: TableMetadata) -> None:
        unpartitioned = unpartitioned_spec_ids(current)
        for c in commits_since(io, read_base, current):
            hits = [
                d.file_path
                for d in c.added_deletes
                if d.content == FileContent.POSITION_DELETES and any(applies_to(d, f, unpartitioned) for f in rewritten)
            ]
            if hits:
                raise c.conflict("added position deletes for data files this compaction rewrites", hits)
            reached = [
                f.file_path for f in c.added_data if any(applies_to(d, f, unpartitioned) for d in dropped_equality)
            ]  # fmt: skip
            if reached:
                raise c.conflict("added data files that equality deletes this compaction drops still apply to", reached)
            if moved:
                scoped = [
                    d for d in c.added_deletes if d.content == FileContent.EQUALITY_DELETES and d.spec_id not in unpartitioned
                ]  # fmt: skip
                hits = [
                    d.file_path
                    for d in scoped
                    if any(applies_to(d, f, unpartitioned) for f in moved)
                    or (d.spec_id == plan.spec_id and partition_key(d.partition) in added_partitions)
                ]
                if hits:
                    raise c.conflict("added equality deletes scoped to a spec that rows this compaction moves leave or enter", hits)

    return validate
