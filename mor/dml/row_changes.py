"""The shared core of row-level DML: find live target rows, then remove and add rows.

Every verb reduces to "remove these live rows (by file and position), add these rows":
DELETE adds nothing, UPDATE and MERGE add the rewritten rows. Merge-on-read removes rows with
position delete files, or in a v3 table with a deletion vector merged with the file's earlier
deletes (and drops a data file whose live rows all go); copy-on-write rewrites each touched
file without them. Either way it is one snapshot.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
from pyiceberg.expressions import AlwaysTrue, BooleanExpression
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table.sorting import UNSORTED_SORT_ORDER, SortOrder

from mor.commit.snapshot_producer import Changes, Validator
from mor.dml.conflict_rules import ReadScope, TouchedRows, dml_validator, isolation_level
from mor.dml.constraints import Constraint, ConstraintCheck, table_constraints
from mor.dml.handle import live_tasks
from mor.errors import UnsupportedFeatureError
from mor.expr.filters import FileFilter, filter_field_ids
from mor.format.content_file import ContentFile, DataFile, DeleteFile, referenced_path
from mor.format.lineage import LINEAGE_FIELDS, with_lineage
from mor.format.properties import MERGE_ON_READ
from mor.format.spec import ROW_ID_NAME, Operation
from mor.io.fileio import WHOLE_OBJECT_BYTES, FileIO, is_object_store
from mor.planning.task import FileScanTask
from mor.progress import Progress
from mor.read.equality_deletes import EqualityDeleteCache, EqualityKeySet
from mor.read.position_deletes import DeleteFileCache, deleted_positions, merge_sorted_runs
from mor.read.scan_reader import parallel_map
from mor.read.task_reader import TaskReader
from mor.write.deletion_vectors import replaced_by_vector, write_deletion_vectors
from mor.write.parquet_files import WriteOptions, write_data_files, write_position_delete_file

if TYPE_CHECKING:
    from mor.dml.handle import TableHandle


@dataclass
class FileMatch:
    """Live rows of one data file that an operation targets."""

    task: FileScanTask
    positions: np.ndarray  # sorted positions of the targeted live rows
    live_rows: int  # live rows in the file; -1 when unknown (equality deletes apply)
    rows: pa.Table | None = None  # the targeted rows, in position order, when asked for

    @property
    def all_live_rows_match(self) -> bool:
        return len(self.positions) == self.live_rows


def live_row_count(task: FileScanTask, cache: DeleteFileCache) -> int:
    if task.equality_deletes:
        return -1  # unknown without a read: then a delete file is written, never a whole-file drop
    # Only positions inside the file count (deleted_positions refuses others): a position past
    # the end subtracted here would make a partial match look like a whole-file one.
    rows = task.data_file.record_count
    deleted = deleted_positions(task.data_file.file_path, task.position_deletes, cache, rows)
    return rows - int(np.searchsorted(deleted, rows) - np.searchsorted(deleted, 0))


class RowMatcher:
    """Finds the live rows of one task that match a row filter. Built from plain values
    wherever tasks are read: the local thread pool shares one, a Spark task builds its own.
    Rows are found on the predicate's columns alone; with `with_rows` the other columns are
    read afterwards for the matched rows only, so a row group without a match is never decoded
    in full (an UPDATE matching nothing in a wide table reads what a DELETE reads)."""

    def __init__(
        self,
        io: FileIO,
        schema: Schema,
        specs: Mapping[int, PartitionSpec],
        row_filter: BooleanExpression,
        with_rows: bool = False,
        lineage: bool = False,
    ):
        """`lineage` (v3 tables): the rows carry their `_row_id`, which an UPDATE keeps."""
        self.cache = DeleteFileCache(io)
        self.strict = FileFilter(schema, dict(specs), row_filter)
        self.predicate_ids = set() if isinstance(row_filter, AlwaysTrue) else filter_field_ids(schema, row_filter)
        projection = schema.select(*[schema.find_column_name(i) for i in sorted(self.predicate_ids)])
        self.reader = TaskReader(io, schema, projection, row_filter, self.cache, with_positions=True)
        self.rows_reader: TaskReader | None = None
        self.one_pass_reader: TaskReader | None = None  # filter and every column: see _fetched_whole
        if with_rows:
            full = lineage_projection(schema, ROW_ID_NAME) if lineage else schema
            shared = self.reader.equality_cache
            self.rows_reader = TaskReader(io, schema, full, AlwaysTrue(), self.cache, with_positions=True, equality_cache=shared)
            self.one_pass_reader = TaskReader(io, schema, full, row_filter, self.cache, with_positions=True, equality_cache=shared)

    def match(self, task: FileScanTask) -> FileMatch | None:
        if self.one_pass_reader is not None and _fetched_whole(task):
            return self._match_in_one_pass(self.one_pass_reader, task)
        if not task.delete_files and self.strict.every_row_matches(task.data_file):
            # Column metrics prove every row matches: no need to read the predicate's columns.
            positions = np.arange(task.data_file.record_count, dtype=np.int64)
            live = task.data_file.record_count
        else:
            positions = read_positions(self.reader, task)
            if not positions.size:
                return None
            live = live_row_count(task, self.cache)
        if self.rows_reader is None:
            return FileMatch(task, positions, live)
        rows, positions = rows_at(self.rows_reader, task, positions)
        return FileMatch(task, positions, live, rows)

    def _match_in_one_pass(self, reader: TaskReader, task: FileScanTask) -> FileMatch | None:
        """Every column of the rows matching the filter, in one read: for an object that one
        GET fetches whole, a second pass would fetch it again."""
        rows = pa.Table.from_batches(list(reader.read(task)), schema=reader.output_schema)
        if not rows.num_rows:
            return None
        positions = rows.column(reader.position_column).to_numpy()
        return FileMatch(task, positions, live_row_count(task, self.cache), rows.drop_columns([reader.position_column]))


def _fetched_whole(task: FileScanTask) -> bool:
    return is_object_store(task.data_file.file_path) and task.data_file.file_size_in_bytes <= WHOLE_OBJECT_BYTES


def read_positions(reader: TaskReader, task: FileScanTask) -> np.ndarray:
    """The positions of the rows `reader` yields for `task` (it reads with positions)."""
    runs = [b.column(reader.position_column).to_numpy() for b in reader.read(task)]
    return np.concatenate(runs) if runs else np.empty(0, dtype=np.int64)


def rows_at(reader: TaskReader, task: FileScanTask, positions: np.ndarray) -> tuple[pa.Table, np.ndarray]:
    """(the live rows of `task` at `positions` (sorted) without their position column, their
    positions): only the row groups holding one of them are decoded."""
    rows = pa.Table.from_batches(list(reader.read(task, positions=positions)), schema=reader.output_schema)
    return rows.drop_columns([reader.position_column]), rows.column(reader.position_column).to_numpy()


def lineage_projection(schema: Schema, *names: str) -> Schema:
    """`schema` (the table's) with the row lineage columns `names` (all when none)."""
    check_lineage_names(schema)
    return with_lineage(schema, *names)


def check_lineage_names(schema: Schema) -> None:
    """UnsupportedFeatureError when a column of a v3 table (another engine's: mor refuses the
    names) has the name of a row lineage column: moved rows could not carry both."""
    taken = [f.name for f in schema.fields if f.name in LINEAGE_FIELDS]
    if taken:
        raise UnsupportedFeatureError(
            f"the table's column {taken[0]!r} has the name of a row lineage column of this format-version 3 "
            "table; rename it (update_schema().rename_column) to change rows with DML"
        )


def find_matches(table: TableHandle, row_filter: BooleanExpression, progress: Progress, with_rows: bool = False) -> list[FileMatch]:
    """Live rows matching `row_filter`, per data file that has any."""
    metadata = table.metadata
    matcher = RowMatcher(table.io, metadata.schema(), metadata.specs(), row_filter, with_rows, metadata.format_version >= 3)
    tasks = live_tasks(table, row_filter)
    matcher.reader.equality_cache.prepare(d for t in tasks for d in t.equality_deletes)
    return scan_files(tasks, matcher.match, progress)


def scan_files(tasks: Sequence[FileScanTask], match: Callable[[FileScanTask], FileMatch | None], progress: Progress) -> list[FileMatch]:
    """`match` on every task, in threads: the matches found, in task order. Progress: stage
    "scan files", each file counted (with its size) once it is scanned."""
    with progress.stage("scan files", len(tasks), with_bytes=True) as step:

        def scanned(task: FileScanTask) -> FileMatch | None:
            found = match(task)
            step.advance(1, bytes=task.data_file.file_size_in_bytes)
            return found

        return [m for m in parallel_map(scanned, tasks) if m is not None]


def find_key_matches(
    table: TableHandle, keys: EqualityKeySet, key_range: BooleanExpression, progress: Progress, all_columns: bool = True
) -> list[FileMatch]:
    """Live rows whose key tuple is in `keys` (null-safe): all their columns, or only the key
    columns (and `_row_id` in a v3 table). `key_range` is a filter every such row satisfies; it
    prunes files and row groups. Rows are found on the key columns; the other columns are read
    afterwards for the matched rows only."""
    schema = table.metadata.schema()
    lineage = table.metadata.format_version >= 3
    cache = DeleteFileCache(table.io)
    key_columns = schema.select(*keys.names)
    # The key set selects rows exactly; the range only skips files and row groups.
    # Equality deletes matter only for rows holding one of the keys: index just those deleted
    # keys, once for all tasks, whatever the number of delete files.
    equality_cache = EqualityDeleteCache(table.io, schema, within=keys)
    if lineage:
        check_lineage_names(schema)
    first = with_lineage(key_columns, ROW_ID_NAME) if lineage and not all_columns else key_columns
    reader = TaskReader(table.io, schema, first, key_range, cache, with_positions=True, filter_rows=False, equality_cache=equality_cache)
    rows_reader = None
    if all_columns:
        full = lineage_projection(schema, ROW_ID_NAME) if lineage else schema
        rows_reader = TaskReader(table.io, schema, full, AlwaysTrue(), cache, with_positions=True, equality_cache=equality_cache)
    tasks = live_tasks(table, key_range)
    reader.equality_cache.prepare(d for t in tasks for d in t.equality_deletes)

    def match(task: FileScanTask) -> FileMatch | None:
        hits = [batch.filter(pa.array(keys.deleted_mask(batch))) for batch in reader.read(task)]
        rows = pa.Table.from_batches([h for h in hits if h.num_rows], schema=reader.output_schema)
        if not rows.num_rows:
            return None
        positions = rows.column(reader.position_column).to_numpy()
        if rows_reader is None:
            rows = rows.drop_columns([reader.position_column])
        else:
            rows, positions = rows_at(rows_reader, task, positions)
        return FileMatch(task, positions, live_row_count(task, cache), rows)

    return scan_files(tasks, match, progress)


@dataclass(frozen=True)
class DmlTarget:
    """Where and how a DML operation writes its files. Plain, picklable values: a Spark job
    ships it to the executors that write."""

    location: str
    schema: Schema
    specs: Mapping[int, PartitionSpec]
    spec: PartitionSpec  # new rows go into the table's default spec
    options: WriteOptions
    mode: str
    format_version: int = 2  # v3 removes rows with deletion vectors
    io: FileIO = field(default_factory=FileIO, compare=False)  # the table's: pickles as its properties
    constraints: tuple[Constraint, ...] = ()  # checked on new rows (mor/dml/constraints.py)
    sort_order: SortOrder = UNSORTED_SORT_ORDER  # the table's default: each file written sorted by it

    @classmethod
    def of(cls, table: TableHandle, mode: str) -> DmlTarget:
        metadata = table.metadata
        return cls(
            metadata.location, metadata.schema(), metadata.specs(), metadata.spec(), WriteOptions(metadata.properties), mode,
            metadata.format_version, table.io, table_constraints(metadata.properties), metadata.sort_order,
        )  # fmt: skip

    def write_rows(self, io: FileIO, rows: pa.Table) -> list[DataFile]:
        """New rows (conformed to the schema) as data files, one per partition value. Rows moved
        from another file may carry their lineage columns (v3), which are stored with them."""
        if not rows.num_rows:
            return []
        if self.constraints:
            ConstraintCheck(self.constraints, self.schema).check(rows)
        return write_data_files(io, self.location, self.write_schema(rows), self.spec, rows, self.options, sort_order=self.sort_order)

    def write_schema(self, rows: pa.Table) -> Schema:
        lineage = [n for n in LINEAGE_FIELDS if n in rows.column_names] if self.format_version >= 3 else []
        return with_lineage(self.schema, *lineage) if lineage else self.schema


@dataclass(frozen=True)
class Removal:
    """How the targeted rows of one data file leave the table: a position delete file or
    deletion vector (merge-on-read), or the data file goes, replaced by its surviving rows
    (copy-on-write; none when every live row was targeted)."""

    task: FileScanTask
    delete_file: DeleteFile | None
    rewritten: tuple[DataFile, ...] = ()
    # The removed rows' positions, or None for a rewrite (whose result depends on every row).
    positions: np.ndarray | None = field(default=None, compare=False)
    # The deletes a new deletion vector takes the place of (the commit removes them).
    replaced: tuple[DeleteFile, ...] = ()
    # v3: the positions of the file's new deletion vector, until `RowRemover.finish` writes it.
    vector: np.ndarray | None = field(default=None, compare=False)

    @property
    def written(self) -> list[str]:
        """Paths of the files this removal wrote."""
        return [f.file_path for f in self._files()]

    @property
    def written_bytes(self) -> int:
        """Bytes of the files this removal wrote (a deletion vector's Puffin file: see `vector_bytes`)."""
        return sum(f.file_size_in_bytes for f in self._files())

    def _files(self) -> list[ContentFile]:
        return [*self.rewritten, *([self.delete_file] if self.delete_file is not None else [])]


class RowRemover:
    """Writes the files that remove matched rows, one data file at a time (in threads locally,
    in a Spark task when distributed). Deletion vectors (v3) are collected and written together,
    one Puffin file for all of them, by `finish`."""

    def __init__(self, io: FileIO, target: DmlTarget):
        self.io = io
        self.target = target
        self.cache = DeleteFileCache(io)

    @cached_property
    def reader(self) -> TaskReader:
        """Copy-on-write reads whole files; one reader shares the delete caches between them.
        In a v3 table the surviving rows keep their lineage (unchanged rows: both columns).
        Made on first use: merge-on-read never reads rows here."""
        schema = self.target.schema
        projection = lineage_projection(schema) if self.target.format_version >= 3 else schema
        return TaskReader(self.io, schema, projection, AlwaysTrue(), self.cache, with_positions=True)

    def remove(self, match: FileMatch) -> Removal:
        if match.all_live_rows_match:
            return Removal(match.task, None, positions=match.positions)
        t = self.target
        data_file = match.task.data_file
        if t.mode == MERGE_ON_READ and t.format_version >= 3:
            return self._vector(match)
        if t.mode == MERGE_ON_READ:
            # A position delete lives in its data file's spec and partition, whatever the default.
            spec = t.specs[data_file.spec_id]
            delete_file = write_position_delete_file(self.io, t.location, t.schema, spec, data_file, match.positions, t.options)
            return Removal(match.task, delete_file, positions=match.positions)
        live = pa.Table.from_batches(list(self.reader.read(match.task)), schema=self.reader.output_schema)
        position = self.reader.position_column
        keep = ~np.isin(live.column(position).to_numpy(), match.positions, assume_unique=True)
        survivors = live.drop_columns([position]).filter(pa.array(keep))
        # Rewritten rows are new rows: they go into the default spec, as Iceberg's writers do.
        rewritten = write_data_files(self.io, t.location, t.write_schema(survivors), t.spec, survivors, t.options, sort_order=t.sort_order)
        return Removal(match.task, None, tuple(rewritten))

    def _vector(self, match: FileMatch) -> Removal:
        """The file's one deletion vector, to write: its earlier deletes and the matched rows."""
        task = match.task
        earlier = deleted_positions(task.data_file.file_path, task.position_deletes, self.cache, task.data_file.record_count)
        merged = merge_sorted_runs([earlier, np.asarray(match.positions, dtype=np.int64)])
        replaced = replaced_by_vector(task.data_file, task.position_deletes)
        return Removal(task, None, positions=match.positions, replaced=replaced, vector=merged)

    def finish(self, removals: Sequence[Removal], written: list[str] | None = None) -> list[Removal]:
        """`removals` with their deletion vectors written, all in one Puffin file (whose path
        is added to `written`)."""
        pending = [r for r in removals if r.vector is not None and r.delete_file is None]
        if not pending:
            return list(removals)
        vectors = write_deletion_vectors(
            self.io, self.target.location, [(r.task.data_file, r.vector) for r in pending if r.vector is not None]
        )
        if written is not None:
            written.append(vectors[0].file_path)
        done = {id(r): replace(r, delete_file=v) for r, v in zip(pending, vectors)}
        return [done.get(id(r), r) for r in removals]


def build_changes(
    table: TableHandle,
    matches: list[FileMatch],
    new_rows: pa.Table | None,
    mode: str,
    progress: Progress,
    added: Sequence[DataFile] = (),
) -> tuple[Changes, list[Removal]]:
    """Write the files that remove the matched rows and add `new_rows`; describe the commit,
    which also adds the data files `added` (written before, by the caller). When a write
    fails, the files already written are deleted (the commit deletes them when it fails,
    commit, mor/dml/runner.py). Progress: stage "write files" counts the matched data files as
    their removal is written (a delete file, deletion vector or rewrite; a whole file dropped
    writes nothing), "write rows" the new rows; both with the bytes written."""
    target = DmlTarget.of(table, mode)
    remover = RowRemover(table.io, target)
    written = WrittenFiles()

    with written.deleted_on_error(table.io):
        removals: list[Removal] = []
        if matches:
            with progress.stage("write files", len(matches), with_bytes=True) as step:

                def remove(match: FileMatch) -> Removal:
                    removal = written.note(remover.remove(match))
                    step.advance(1, bytes=removal.written_bytes)
                    return removal

                # pool.map cancels the queued removals and waits for the running ones before it
                # raises, so every file written is noted by then.
                removals = remover.finish(parallel_map(remove, matches), written.paths)
                step.advance(0, bytes=vector_bytes(removals))
        new_files: list[DataFile] = []
        if new_rows is not None and new_rows.num_rows:
            with progress.stage("write rows", new_rows.num_rows, "rows", with_bytes=True) as step:
                new_files = target.write_rows(table.io, new_rows)
                written.paths += [f.file_path for f in new_files]
                step.advance(new_rows.num_rows, bytes=sum(f.file_size_in_bytes for f in new_files))
        return changes_for(removals, [*added, *new_files]), removals


def vector_bytes(removals: Sequence[Removal]) -> int:
    """The bytes of the Puffin files `RowRemover.finish` wrote for `removals` (each once)."""
    vectors = [r.delete_file for r in removals if r.vector is not None and r.delete_file is not None]
    return sum({f.file_path: f.file_size_in_bytes for f in vectors}.values())


class WrittenFiles:
    """Paths of the files a DML operation has written so far (added to from several threads)."""

    def __init__(self) -> None:
        self.paths: list[str] = []
        self._lock = threading.Lock()

    def note(self, removal: Removal) -> Removal:
        with self._lock:
            self.paths += removal.written
        return removal

    @contextmanager
    def deleted_on_error(self, io: FileIO) -> Iterator[None]:
        try:
            yield
        except BaseException:
            for path in dict.fromkeys(self.paths):  # a Puffin file may be noted for several vectors
                io.delete_quietly(path)
            raise


def changes_for(removals: Sequence[Removal], added: Sequence[DataFile]) -> Changes:
    """The commit of removals and added rows: `delete`, `overwrite` or `append`."""
    added_data: list[DataFile] = []
    added_deletes: list[DeleteFile] = []
    removed_data: list[DataFile] = []
    removed_deletes: list[DeleteFile] = []
    for r in removals:
        if r.vector is not None and r.delete_file is None:
            raise AssertionError("a deletion vector was not written (RowRemover.finish)")
        if r.delete_file is not None:
            added_deletes.append(r.delete_file)
            removed_deletes += [d for d in r.replaced if d not in removed_deletes]
        else:
            # the data file goes, and the position delete files that can only apply to it
            removed_data.append(r.task.data_file)
            path = r.task.data_file.file_path
            removed_deletes += [d for d in r.task.position_deletes if referenced_path(d) == path and d not in removed_deletes]
            added_data += r.rewritten
    added_data += added
    removes = bool(removed_data or added_deletes or removed_deletes)
    operation = Operation.OVERWRITE if added_data and removes else Operation.APPEND if added_data else Operation.DELETE
    return Changes(operation, added_data, added_deletes, removed_data, removed_deletes)


def rows_validator(
    table: TableHandle, kind: str, row_filter: BooleanExpression, removals: Sequence[Removal], keys: EqualityKeySet | None = None
) -> Validator:
    """Conflict checks for DML of `kind` ("delete", "update", "merge") that read `table.metadata`
    and made `removals` (see api/conflict_rules.py)."""
    isolation = isolation_level(table.metadata.properties, kind)
    touched = [TouchedRows(r.task.data_file, r.positions) for r in removals]
    vectors = frozenset(r.task.data_file.file_path for r in removals if r.delete_file is not None and r.delete_file.is_deletion_vector)
    return dml_validator(table.io, table.metadata.schema(), ReadScope(row_filter, touched, keys, vectors), isolation)


def with_row_ids(new_rows: pa.Table, old_rows: pa.Table) -> pa.Table:
    """New versions of `old_rows` (row for row) keeping the old rows' `_row_id` when they carry
    one (v3): an updated row is the same row. Its `_last_updated_sequence_number` is left out,
    so it reads as the sequence number of the commit that wrote it."""
    if ROW_ID_NAME not in old_rows.column_names or ROW_ID_NAME in new_rows.column_names:
        return new_rows  # no lineage, or `_row_id` is a column of the (v2) table itself
    return new_rows.append_column(old_rows.schema.field(ROW_ID_NAME), old_rows.column(ROW_ID_NAME))
