"""The batch writer of format "mor": `df.write.format("mor").mode("append" | "overwrite").save("db.t")`.

Spark runs it in three places, each a Python process of its own, and pickles the writer between
them: `MorWriter(...)` on the driver (resolve the table, check the schema, before any file
exists), `write` in every task (Arrow batches in, Parquet data files out, through the same
`write_data_files` as `Table.append`), then `commit` or `abort` on the driver. The driver commits
exactly one snapshot through `commit_changes`, so retries and conflict checks are those of the
local API: `append` adds the files; `overwrite` removes every live data and delete file of the
table as it was when the job was planned and adds the new ones, failing with CommitConflictError
if a concurrent commit added or removed files meanwhile. A table that does not exist is created
from the DataFrame's schema (option `partition-by`, e.g. `"category, day(ts), bucket(16, id)"`)
by the commit itself, so it appears with its first snapshot or not at all.

Options: `warehouse` and/or `uri` (the catalog, as for reading); `partition-by` and
`format-version` (2 or 3; new tables);
`target-file-size-bytes` (default: table property `write.target-file-size-bytes`, else 512 MB);
`check-nullability` (default false: a nullable DataFrame column may go into a required table
column, and a null met there is a SchemaMismatchError naming the column, raised by the task
that meets it, so nothing is committed; with true, the nullable column itself is refused);
`time-zone` (the session time zone, for TIMESTAMP_NTZ columns written into `timestamptz`
columns; default: environment variable MOR_SESSION_TIME_ZONE, which `mor.spark.register` sets);
`txn-app-id` and `txn-version` (both or neither: an idempotent write, as Delta Lake names them;
a job whose app id already committed that version or a later one commits nothing and deletes
the files it wrote: mor/commit/idempotency.py); `branch` (commit to that branch, not main) or
`wap-id` (write-audit-publish on a table with `write.wap.enabled=true`: the snapshot is staged
with that `wap.id`, no branch moves; `Table.publish` publishes it): mor/commit/branch_ops.py.

Column types convert as Iceberg-Spark's store assignment does (mor/spark/store_assignment.py):
a TIMESTAMP into a `timestamp` column as its wall clock in the session time zone, TIMESTAMP_NTZ
into `timestamptz` as a wall clock in that zone, integers and floats into wider ones, decimals
into wider ones; unsafe casts (long into int, string into int) are a SchemaMismatchError before
any file is written.

Save modes: Spark hands a Python data source only append or overwrite. `mode("error")` (also the
default when no mode is given) and `mode("ignore")` fail in Spark's analysis with
UNSUPPORTED_DATA_SOURCE_SAVE_MODE before this writer exists, and `.partitionBy(...)` fails there
too (the source reports no partitioning): use option `partition-by`.

Memory: a task buffers conformed Arrow batches and writes them once they reach the target size
(counted in Arrow bytes, so files on disk come out smaller, being compressed), one file per
partition value present in the buffer. A task holds one target size of rows at a time, twice
that while splitting it by partition. Repartition by the partition columns first for fewer,
larger files on partitioned tables.

Failures: a task whose writer fails deletes the files it wrote. `abort` deletes the files of
the job: those in the successful tasks' messages and, found by the job's file-name prefix, those
of failed tasks, since a task failing upstream of its writer (in a UDF, say) ends the writer's
input as if complete and Spark drops its message. A commit that fails deletes the job's files,
except after CommitStateUnknownError (the commit may have landed); Spark then calls `abort` too,
with every message present, and abort leaves the files alone. Files can still be left behind,
never referenced, when Spark kills a task's Python process mid-write or a task still running
writes after abort (orphan-file removal, a later issue, is what finds those).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace

import pyarrow as pa
from pyiceberg.expressions import AlwaysTrue
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table.sorting import UNSORTED_SORT_ORDER
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage
from pyspark.sql.pandas.types import to_arrow_schema as spark_to_arrow_schema
from pyspark.sql.types import StructType

from mor.api.catalog import DEFAULT_PROPERTIES, Catalog
from mor.catalog.metadata_files import read_metadata
from mor.catalog.table_operations import TableOperations
from mor.commit.branch_ops import BranchOperations, branch_head
from mor.commit.idempotency import AlreadyCommitted, Idempotency
from mor.commit.snapshot_producer import Changes, Validator, commit_changes
from mor.dml.constraints import ConstraintCheck, added_rows_rules, table_constraints
from mor.errors import (
    CommitConflictError,
    CommitStateUnknownError,
    InvalidArgumentError,
    SchemaMismatchError,
    TableAlreadyExistsError,
    TableReplacedError,
)
from mor.format.arrow_types import from_arrow_schema
from mor.format.content_file import DataFile, DeleteFile
from mor.format.metadata import TableMetadata, new_table_metadata, parse_format_version
from mor.format.properties import TARGET_FILE_SIZE_BYTES, WAP_ENABLED
from mor.format.spec import FORMAT_VERSION, MAIN_BRANCH, ManifestContent, Operation
from mor.io.fileio import FileIO
from mor.planning.conflicts import validate_no_new_deletes_for, validate_no_new_matching_data
from mor.planning.planner import live_entries
from mor.spark.options import TableRef, bool_option
from mor.spark.store_assignment import SESSION_ZONE_ENV, assign, check_assignable, needs_zone
from mor.spark.types import check_no_duplicates
from mor.write.arrow_schema import conform
from mor.write.parquet_files import WriteOptions, write_data_files
from mor.write.partitioning import parse_partition_by, split_partition_terms

DEFAULT_TARGET_FILE_SIZE = 512 * 1024 * 1024


@dataclass(frozen=True)
class MorCommitMessage(WriterCommitMessage):
    """What one task wrote."""

    files: tuple[DataFile, ...]


@dataclass(frozen=True)
class WriteTarget:
    """The table as the job was planned: what tasks need to write files and what the commit
    checks. Plain values only; the writer is pickled to every task."""

    identifier: str
    location: str
    schema: Schema
    spec: PartitionSpec
    properties: Mapping[str, str]
    renames: Mapping[str, str]  # DataFrame column -> table column, where only the case differs
    base_location: str | None  # the table's metadata file then; None: the commit creates the table
    table_uuid: str | None
    format_version: int = FORMAT_VERSION  # of a table the commit creates
    io_properties: tuple[tuple[str, str], ...] = ()  # file access the catalog gave the table (vended credentials)
    session_zone: str | None = None  # for wall-clock values going into timestamptz columns


class MorWriter(DataSourceArrowWriter):
    def __init__(self, ref: TableRef, options: Mapping[str, str], schema: StructType, overwrite: bool):
        if ref.is_metadata_location:
            raise InvalidArgumentError(
                f"{ref.name!r} is a metadata location, which is read-only: save to 'namespace.table' with option 'warehouse' (or 'uri')"
            )
        check_no_duplicates(schema)
        self.overwrite = overwrite
        self.target = plan_target(ref, options, schema)
        self.ref = ref.with_io(dict(self.target.io_properties))  # executors write with what the catalog vended
        self.target_file_bytes = _target_file_bytes(options, self.target.properties)
        self.file_prefix = f"{uuid.uuid4().hex}-"  # names this job's files, so abort can find them all
        self.idempotency = idempotency_option(options)
        self.branch, self.wap_id = _line_options(options, self.target)
        if self.branch is not None and self.target.base_location is not None:  # a tag or no such branch: refused before any task
            branch_head(read_metadata(ref.catalog().io, self.target.base_location), self.branch)

    # -- executors -------------------------------------------------------------------------
    def write(self, iterator: Iterator[pa.RecordBatch]) -> MorCommitMessage:
        io, t = self.ref.file_io(), self.target
        options = WriteOptions(dict(t.properties))
        files: list[DataFile] = []
        try:
            for rows in self._chunks(iterator):
                files += write_data_files(io, t.location, t.schema, t.spec, rows, options, self.file_prefix)
        except BaseException:
            delete_written(io, files)
            raise
        return MorCommitMessage(tuple(files))

    def _chunks(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.Table]:
        """The rows conformed to the table schema and checked against its constraints, in
        tables of about the target file size."""
        check = ConstraintCheck(table_constraints(self.target.properties), self.target.schema)
        pending: list[pa.Table] = []
        size = 0
        for batch in batches:
            if batch.num_rows == 0:
                continue
            rows = pa.Table.from_batches([batch])
            rows = rows.rename_columns([self.target.renames.get(n, n) for n in rows.column_names])
            rows = conform(assign(rows, self.target.schema, self.target.session_zone), self.target.schema)
            check.check(rows)
            pending.append(rows)
            size += rows.nbytes
            if size >= self.target_file_bytes:
                yield pa.concat_tables(pending)
                pending, size = [], 0
        if pending:
            yield pa.concat_tables(pending)

    # -- driver ----------------------------------------------------------------------------
    def commit(self, messages: Sequence[WriterCommitMessage | None]) -> None:
        files = committed_files(messages)
        io = self.ref.file_io()
        try:
            ops, base, base_location = self._base()
            changes = replace(self._changes(io, base, files), idempotency=self.idempotency)
            if files:  # checked on executors against the target's rules: again if they changed since
                changes = replace(changes, row_rules=added_rows_rules(io, self.target.schema.schema_id, self.target.properties, files))
            commit_changes(io, ops, base, base_location, changes, self._validator(io, changes))
        except CommitStateUnknownError:
            raise  # the commit may have landed and made the files live: never delete them
        except AlreadyCommitted:
            delete_written(io, files)  # this version is in the table already: the job is a repeat
        except BaseException:
            delete_written(io, files)
            raise

    def abort(self, messages: Sequence[WriterCommitMessage | None]) -> None:
        # Spark calls abort when a task failed (its message is None: commit never ran) and also
        # after a commit that raised (every message present). The commit has then removed the
        # files itself unless it ended in CommitStateUnknownError, when they must stay.
        if all(m is not None for m in messages):
            return
        io = self.ref.file_io()
        delete_written(io, committed_files(messages))
        # A task that failed upstream of its writer (in a UDF, say) can end the writer's input
        # as if complete: the writer returns, Spark drops its message. Its files carry our prefix.
        for info in io.list_files(f"{self.target.location.rstrip('/')}/data"):
            if os.path.basename(info.path).startswith(self.file_prefix):
                io.delete_quietly(info.path)

    def _base(self) -> tuple[TableOperations, TableMetadata, str]:
        """Operations, read base and its location for the commit."""
        t = self.target
        catalog = self.ref.catalog()
        if t.base_location is None:
            metadata = new_table_metadata(t.schema, t.spec, UNSORTED_SORT_ORDER, t.location, dict(t.properties), t.format_version)
            return catalog.new_table_operations(t.identifier), metadata, ""
        ops: TableOperations = catalog.table_operations(t.identifier)
        if self.branch is not None or self.wap_id is not None:
            ops = BranchOperations(ops, branch=self.branch or MAIN_BRANCH, wap_id=self.wap_id)
        if self.overwrite:
            # Replace what the job saw; the validator refuses what others committed since.
            seen = read_metadata(catalog.io, t.base_location)
            return ops, ops.view(seen, t.base_location) if isinstance(ops, BranchOperations) else seen, t.base_location
        base, location = ops.refresh()
        self._check_same_table(base)
        return ops, base, location

    def _changes(self, io: FileIO, base: TableMetadata, files: list[DataFile]) -> Changes:
        if not self.overwrite:
            return Changes(Operation.APPEND, added_data=files)
        snapshot = base.current_snapshot()
        data = [] if snapshot is None else live_entries(io, base, snapshot, ManifestContent.DATA)
        deletes = [] if snapshot is None else live_entries(io, base, snapshot, ManifestContent.DELETES)
        return Changes(
            Operation.OVERWRITE,
            added_data=files,
            removed_data=[e.file for e in data if isinstance(e.file, DataFile)],
            removed_deletes=[e.file for e in deletes if isinstance(e.file, DeleteFile)],
        )

    def _validator(self, io: FileIO, changes: Changes) -> Validator:
        """Checks a newer base before retrying on it. Files removed concurrently make
        commit_changes itself fail with CommitConflictError."""

        def validate(read_base: TableMetadata, current: TableMetadata) -> None:
            self._check_same_table(current)
            if self.overwrite:  # "replace everything" would keep what others added since
                validate_no_new_matching_data(io, read_base, current, AlwaysTrue())
                validate_no_new_deletes_for(io, read_base, current, changes.removed_data)

        return validate

    def _check_same_table(self, current: TableMetadata) -> None:
        t = self.target
        if t.table_uuid is not None and current.table_uuid != t.table_uuid:
            # Not a conflict: nothing may re-plan this write into the other table.
            raise TableReplacedError(
                f"table {t.identifier} was replaced by another table (table-uuid {current.table_uuid}, not "
                f"{t.table_uuid}) during this write; nothing was committed"
            )
        if current.current_schema_id != t.schema.schema_id:
            raise CommitConflictError(f"the schema of {t.identifier} changed during this write")


def plan_target(ref: TableRef, options: Mapping[str, str], schema: StructType) -> WriteTarget:
    """The table to write (or to create), after checking that `schema` fits it."""
    terms = split_partition_terms(options.get("partition-by") or "")
    nullable_ok = not bool_option(options, "check-nullability", False)
    version = parse_format_version(options["format-version"]) if options.get("format-version") else None
    catalog = ref.catalog()
    if not catalog.table_exists(ref.name):
        if catalog.creates_tables_with_first_commit:
            return _new_table(catalog, ref.name, schema, terms, version or FORMAT_VERSION)
        # A REST catalog's server creates tables: the table appears (empty) before the job
        # commits, as Iceberg-Spark's CREATE ... AS SELECT on a non-staging catalog does.
        try:
            catalog.create_table(ref.name, _arrow_schema(schema), partition_by=terms or None, format_version=version)
        except TableAlreadyExistsError:
            pass  # created meanwhile: write into it, as into any existing table
        terms = []
    table = catalog.load_table(ref.name)
    if version is not None and version != table.metadata.format_version:
        raise InvalidArgumentError(
            f"option format-version {version} differs from the format version of {ref.name} "
            f"({table.metadata.format_version}); it only applies when the write creates the table "
            "(table.upgrade(format_version=3) upgrades a table)"
        )
    if terms and _spec_key(parse_partition_by(table.schema(), terms)) != _spec_key(table.spec()):
        raise InvalidArgumentError(
            f"option partition-by {terms} differs from the partitioning of {ref.name} ({table.spec()}); "
            "it only applies when the write creates the table"
        )
    renames = _column_renames(schema, table.schema())
    arrow = pa.schema([f.with_name(renames.get(f.name, f.name)) for f in _arrow_schema(schema)])
    zone = options.get("time-zone") or os.environ.get(SESSION_ZONE_ENV) or None
    try:
        check_assignable(arrow, table.schema(), nullable_into_required=nullable_ok)
        wall_clocks = needs_zone(arrow, table.schema())
        if wall_clocks and zone is None:
            raise SchemaMismatchError(
                f"TIMESTAMP_NTZ columns {wall_clocks} go into timestamptz columns: give option 'time-zone' "
                "(the session time zone their wall-clock values are in)"
            )
    except SchemaMismatchError as e:
        raise SchemaMismatchError(f"the DataFrame does not fit table {ref.name}: {e}") from e
    return WriteTarget(
        ref.name, table.location, table.schema(), table.spec(), table.properties, renames,
        table.metadata_location, table.metadata.table_uuid, io_properties=tuple(sorted(table.io.properties.items())),
        session_zone=zone,
    )  # fmt: skip


def _new_table(catalog: Catalog, identifier: str, schema: StructType, terms: list[str], format_version: int) -> WriteTarget:
    iceberg_schema = from_arrow_schema(_arrow_schema(schema))
    spec = parse_partition_by(iceberg_schema, terms)
    return WriteTarget(
        identifier, catalog.default_location(identifier), iceberg_schema, spec, dict(DEFAULT_PROPERTIES), {}, None, None,
        format_version,
    )  # fmt: skip


def _arrow_schema(schema: StructType) -> pa.Schema:
    """The Arrow schema of the batches Spark hands the tasks (timestamps in UTC)."""
    try:
        return spark_to_arrow_schema(schema, timezone="UTC")
    except (TypeError, NotImplementedError) as e:  # a Spark type with no Arrow form
        raise SchemaMismatchError(f"cannot write {schema.simpleString()}: {e}") from e


def _spec_key(spec: PartitionSpec) -> list[tuple[int, str]]:
    return [(f.source_id, str(f.transform)) for f in spec.fields]


def _column_renames(schema: StructType, table_schema: Schema) -> dict[str, str]:
    """DataFrame columns that name a table column in another case (Spark resolves names
    case-insensitively); exact matches and unknown names are left for check_fits."""
    exact = {f.name for f in table_schema.fields}
    by_lower = {f.name.lower(): f.name for f in table_schema.fields}
    return {f.name: by_lower[f.name.lower()] for f in schema.fields if f.name not in exact and f.name.lower() in by_lower}


def _line_options(options: Mapping[str, str], target: WriteTarget) -> tuple[str | None, str | None]:
    """The `branch` to commit to and the `wap-id` to stage the write with (write-audit-publish:
    the table must have write.wap.enabled=true), checked before any task writes a file."""
    branch, wap_id = options.get("branch") or None, options.get("wap-id") or None
    if branch is not None and wap_id is not None:
        raise InvalidArgumentError("give the branch option or the wap-id option, not both")
    if (branch or wap_id) and target.base_location is None:
        raise InvalidArgumentError(f"table {target.identifier} does not exist yet: create it before writing to a branch or staging")
    if wap_id is not None and target.properties.get(WAP_ENABLED, "false").lower() != "true":
        raise InvalidArgumentError(f"option wap-id stages the write only on a table with {WAP_ENABLED}=true")
    return branch, wap_id


def idempotency_option(options: Mapping[str, str]) -> Idempotency | None:
    """Options `txn-app-id` and `txn-version` as an Idempotency; both or neither."""
    app_id, version = options.get("txn-app-id"), options.get("txn-version")
    if app_id is None and version is None:
        return None
    if app_id is None or version is None:
        raise InvalidArgumentError("an idempotent write takes both options 'txn-app-id' and 'txn-version'")
    try:
        number = int(version)
    except ValueError:
        raise InvalidArgumentError(f"option 'txn-version' is an integer >= 0, got {version!r}") from None
    return Idempotency.of((app_id, number))


def _target_file_bytes(options: Mapping[str, str], properties: Mapping[str, str]) -> int:
    raw = options.get("target-file-size-bytes") or properties.get(TARGET_FILE_SIZE_BYTES)
    if raw is None:
        return DEFAULT_TARGET_FILE_SIZE
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise InvalidArgumentError(f"target-file-size-bytes must be a positive integer, got {raw!r}")
    return value


def committed_files(messages: Sequence[WriterCommitMessage | None]) -> list[DataFile]:
    return [f for m in messages if isinstance(m, MorCommitMessage) for f in m.files]


def delete_written(io: FileIO, files: Sequence[DataFile]) -> None:
    for f in files:
        io.delete_quietly(f.file_path)
