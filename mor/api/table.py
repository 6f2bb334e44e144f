"""Table: the user's handle on one Iceberg table. Its rows are this module's: reads, appends,
overwrites and row-level DML (thin verbs over mor/dml). What changes its definition
(table_definition.py), its refs (snapshot_management.py) and its upkeep (table_maintenance.py)
are functions of those modules, made methods at the end of the class: one surface, no mixins."""

from __future__ import annotations

import datetime as dt
import functools
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Concatenate, ParamSpec, TypeVar, cast

import pyarrow as pa
import pyarrow.compute as pc
from pyiceberg.expressions import AlwaysTrue
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema

from mor.api import snapshot_management as refs_
from mor.api import table_definition as definition
from mor.api import table_maintenance as maintenance
from mor.api.inputs import Rows, as_table, as_tables, known_row_count
from mor.api.scan import Scan
from mor.api.snapshot_management import ref_snapshot_id
from mor.catalog.metadata_files import metadata_version, read_metadata
from mor.catalog.table_operations import refresh_same_table
from mor.commit.branch_ops import BranchOperations
from mor.commit.idempotency import Idempotency
from mor.dml.expressions import Assignments
from mor.dml.runner import commit, run_dml, write_mode
from mor.errors import InvalidArgumentError, MetadataFileNotFoundError, MorError
from mor.expr.filters import FilterLike, bind_filter, parse_filter
from mor.format.arrow_types import to_arrow_schema
from mor.format.metadata import Snapshot, TableMetadata
from mor.format.properties import (
    DELETE_MODE_PROPERTY,
    MERGE_MODE_PROPERTY,
    UPDATE_MODE_PROPERTY,
    WAP_ENABLED,
)
from mor.format.spec import Operation
from mor.io.fileio import FileIO
from mor.progress import Progress, ProgressArg

# The DML verbs, writers and commits are imported by the methods that use them
# ("on first use"): reading a table needs none of them, and importing them all added about
# 0.3 s to the start of every `mor scan` (issue 26).
if TYPE_CHECKING:
    from mor.api.changes import ChangeScan
    from mor.api.inspect import InspectTable
    from mor.catalog.table_operations import TableOperations
    from mor.dml.merge_clauses import MergeClauses
    from mor.maintenance.ownership import CatalogView


_R = TypeVar("_R")
_P = ParamSpec("_P")


def on_branch(verb: Callable[Concatenate[Table, _P], _R]) -> Callable[Concatenate[Table, _P], _R]:
    """A write verb that takes `branch=` (pyiceberg's convention): given a branch, the verb runs
    on a handle of that branch (its commit moves the branch), and the table it was called on
    then sees the table as it is after it. The verb itself never sees `branch`. The one place
    `branch=` is handled."""

    @functools.wraps(verb)
    def dispatch(table: Table, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        name = kwargs.pop("branch", None)
        if name is None:
            return verb(table, *args, **kwargs)
        result = verb(table.branch(cast(str, name)), *args, **kwargs)  # as given: no coercion to text
        table.refresh()
        return result

    return dispatch


@dataclass(frozen=True)
class HistoryEntry:
    made_current_at_ms: int
    snapshot_id: int
    parent_snapshot_id: int | None
    is_current_ancestor: bool


class Table:
    """One Iceberg table: its rows (read, append, overwrite, delete, update, upsert, merge,
    changes, inspect) here; what changes its definition, its refs and its upkeep are verbs of
    their own modules, listed at the end of this class."""

    # The rest of the catalog, for maintenance that deletes files (set by the catalog that
    # opens the table): the files other tables own must stay.
    catalog_view: CatalogView | None = None

    def __init__(self, identifier: str, metadata: TableMetadata, metadata_location: str, io: FileIO, ops: TableOperations | None):
        self.identifier = identifier
        self.metadata = metadata
        self.metadata_location = metadata_location
        self.io = io
        self._ops = ops

    def __repr__(self) -> str:
        snapshot_id = self.metadata.current_snapshot_id
        return (
            f"{type(self).__name__}({self.identifier!r}, format_version={self.metadata.format_version}, current_snapshot_id={snapshot_id})"
        )

    # -- reading ---------------------------------------------------------------------------
    def schema(self) -> Schema:
        return self.metadata.schema()

    def arrow_schema(self) -> pa.Schema:
        return to_arrow_schema(self.schema())

    def spec(self) -> PartitionSpec:
        return self.metadata.spec()

    @property
    def properties(self) -> dict[str, str]:
        return dict(self.metadata.properties)

    @property
    def location(self) -> str:
        return self.metadata.location

    def current_snapshot(self) -> Snapshot | None:
        return self.metadata.current_snapshot()

    def snapshots(self) -> list[Snapshot]:
        return list(self.metadata.snapshots)

    def history(self) -> list[HistoryEntry]:
        ancestors = {s.snapshot_id for s in self.metadata.ancestors(self.metadata.current_snapshot_id)}
        by_id = {s.snapshot_id: s for s in self.metadata.snapshots}
        return [
            HistoryEntry(ts, sid, by_id[sid].parent_snapshot_id if sid in by_id else None, sid in ancestors)
            for ts, sid in self.metadata.snapshot_log
        ]

    @property
    def inspect(self) -> InspectTable:
        """The metadata tables (snapshots, history, refs, files, entries, manifests, partitions,
        position_deletes, ... and the all_ forms) as Arrow tables with Iceberg Java's columns:
        `table.inspect.files()` (mor/api/inspect.py)."""
        from mor.api.inspect import InspectTable  # imported on first use: a read needs none

        return InspectTable(self)

    def scan(
        self,
        filter: FilterLike = None,
        columns: Sequence[str] | None = None,
        snapshot_id: int | None = None,
        as_of: dt.datetime | dt.date | str | int | None = None,
        case_sensitive: bool = True,
        limit: int | None = None,
        progress: ProgressArg = None,
        branch: str | None = None,
    ) -> Scan:
        """What to read; nothing is read until `to_arrow()`, `to_batches()`, `count()`... (see
        mor/api/scan.py). `limit`: at most this many rows, reading only the files they need.
        `progress`: files read, stage "read files" (mor/progress.py; a bar after 2 s).
        `branch`: the head of a branch, or a tag's snapshot (by name), instead of main's."""
        if branch is not None:
            if snapshot_id is not None or as_of is not None:
                raise InvalidArgumentError("give branch, snapshot_id or as_of, not two of them")
            snapshot_id = ref_snapshot_id(self.metadata, branch)
        return Scan(self, filter, columns, snapshot_id, as_of, case_sensitive, limit, progress)

    def changes(
        self,
        from_snapshot_id: int | None = None,
        to_snapshot_id: int | None = None,
        columns: Sequence[str] | None = None,
        filter: FilterLike = None,
        from_timestamp: dt.datetime | int | None = None,
        to_timestamp: dt.datetime | int | None = None,
        on: Sequence[str] | None = None,
        net_changes: bool = False,
        case_sensitive: bool = True,
    ) -> ChangeScan:
        """The rows each snapshot after `from` (None: the empty table) up to `to` (None: the
        current one) inserted, deleted and updated, with `_change_type`, `_change_ordinal` and
        `_commit_snapshot_id` (mor/api/changes.py). Snapshots by id or by timestamp (ms or a
        datetime: the snapshot current then); `on`: the key that pairs a delete and an insert
        into an update (default: the identifier fields, or `_row_id` on format v3)."""
        from mor.api.changes import ChangeScan  # imported on first use: a plain read needs no change scan

        return ChangeScan(
            self, from_snapshot_id, to_snapshot_id, columns, filter, from_timestamp, to_timestamp, on, net_changes, case_sensitive
        )

    def refresh(self) -> Table:
        """The table's current metadata; TableReplacedError when the catalog now holds another
        table (another table-uuid) under this name, as Iceberg's refresh does."""
        self.metadata, self.metadata_location = refresh_same_table(self.operations(), self.metadata)
        return self

    # -- writing ---------------------------------------------------------------------------
    @on_branch
    def append(
        self, data: Rows, schema_mode: str | None = None, *, progress: ProgressArg = None, idempotency: tuple[str, int] | None = None,
        branch: str | None = None,
    ) -> Snapshot | None:  # fmt: skip
        """Add rows in one `append` snapshot: a pyarrow Table, RecordBatch, RecordBatchReader or
        iterable of batches, a pandas or polars DataFrame, or any Arrow stream
        (`__arrow_c_stream__`); see mor/api/inputs.py. A reader, stream or iterator of batches
        is streamed: memory stays at a few row groups per open partition, and files roll at
        `write.target-file-size-bytes`. Values are fitted to the table's types as Spark's store
        assignment does: narrowing only when every value fits (mor/write/safe_casts.py), numbers
        into decimal columns by value, rounded HALF_UP to the column's scale
        (mor/write/decimals.py).
        `schema_mode="merge"` adds the data's new columns and
        struct fields to the schema (optional), widens a column the data holds a promotion of
        (int64 data for an int column makes it long) and writes missing optional columns as
        nulls, in the same commit; by default ("strict") data that does not fit the schema is a
        SchemaMismatchError. See prepare_append in mor/dml/append_schema.py.
        `progress`: rows and bytes written, stage "write rows" (mor/progress.py).
        `branch`: commit to that branch instead of main (as every write verb takes it)."""
        from mor.dml.insert import append_rows  # imported on first use: a read needs no writer

        self.operations()
        reporter = Progress.delayed("append", progress)
        tables = as_tables(data, "the data to append")
        return append_rows(self, tables, schema_mode, reporter, Idempotency.of(idempotency), known_row_count(data))

    def add_files(self, paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]], *, check_partitions: bool = True) -> Snapshot:
        """Adopt existing Parquet files without rewriting them, in one `append` snapshot: a
        file path or URI, a folder (its `.parquet` files), or a list of them. Only footers are
        read (and a partitioned table's source columns): each file must fit the schema, by
        field ids or, for files without, by name through the table's name mapping (written
        first when missing, or extended with columns added or renamed since), and all its
        rows must fall in one partition (`check_partitions=False`: proved from the footer's
        bounds instead), and its rows must keep the table's CHECK constraints (proved from
        its statistics where they can, else read: ConstraintViolationError). A file already in
        the table, a path given twice, a file that does not fit or spans partitions is refused
        with nothing committed. The files stay where they
        are; no failed commit deletes them, and maintenance deletes only files under the
        table's location. See mor/api/add_files.py."""
        from mor.api.add_files import adoption_paths, plan_adoption, read_footer  # only when used
        from mor.commit.snapshot_producer import Changes
        from mor.dml.constraints import check_files

        self.operations()
        planned = self.metadata
        adoption = plan_adoption(self.io, planned, [read_footer(self.io, p) for p in adoption_paths(self.io, paths)], check_partitions)
        check_files(self.io, planned, adoption.files, "adopted file", adoption.name_mapping)  # CHECK constraints and NOT NULL
        if adoption.name_mapping is not None:
            definition.commit_metadata(self, adoption.mapping_commit, "write the name mapping")
            if self.metadata.current_snapshot_id != planned.current_snapshot_id:  # it refreshed past other commits
                adoption.validate(self.io)(planned, self.metadata)
        changes = Changes(Operation.APPEND, added_data=adoption.files)
        snapshot = commit(self, changes, adoption.validate(self.io), kept=adoption.files, rows_checked_on=planned)
        assert snapshot is not None  # not idempotent: a commit that returns made a snapshot
        return snapshot

    @on_branch
    def delete(
        self, where: FilterLike, mode: str | None = None, *, progress: ProgressArg = None, idempotency: tuple[str, int] | None = None,
        branch: str | None = None,
    ) -> Snapshot | None:  # fmt: skip
        """Delete the rows matching `where` (every row: `"true"` or `truncate()`). Returns the
        new snapshot, or None if none matched. `progress`: stages "scan files" and "write
        files" (mor/progress.py), as for update, upsert, merge and delete_rows."""
        from mor.dml.delete import delete_where  # imported on first use: a read needs no DML

        self.operations()
        reporter = Progress.delayed("delete", progress)
        if where is None:
            raise InvalidArgumentError("delete needs a predicate; to delete every row, pass 'true' or call truncate()")
        mode = write_mode(self, mode, DELETE_MODE_PROPERTY)
        row_filter = parse_filter(where)
        bind_filter(self.schema(), row_filter)
        return run_dml(self, "delete", lambda: delete_where(self, row_filter, mode, reporter), idempotency=idempotency)

    @on_branch
    def overwrite(
        self,
        data: Rows,
        where: FilterLike | bool = True,
        mode: str | None = None,
        *,
        progress: ProgressArg = None,
        idempotency: tuple[str, int] | None = None,
        allow_rows_outside_where: bool = False,
        branch: str | None = None,
    ) -> Snapshot | None:
        """Replace the rows matching `where` (every row by default) with `data`, in one
        `overwrite` snapshot. `data` is any input `append` takes, written (streamed) and fitted
        to the schema as `append` does. Every row of `data` must match `where` (TRUE for it):
        otherwise RowsOutsideWhereError and nothing is written, since a rerun of the same
        overwrite would keep such rows twice; `allow_rows_outside_where=True` writes them
        anyway. The old rows go as `delete`
        removes them: whole files dropped by their metadata, the rest by position deletes or
        rewrites (`mode`, default `write.delete.mode`). None when nothing matched and `data` is
        empty. `progress`: "write rows" as `append`'s, then "scan files" and "write files" as
        `delete`'s."""
        from mor.dml.insert import overwrite_rows  # imported on first use: a read needs no DML

        self.operations()
        reporter = Progress.delayed("overwrite", progress)
        if where is None:
            raise InvalidArgumentError("overwrite's where is a predicate; to replace every row, leave it out or pass True")
        mode = write_mode(self, mode, DELETE_MODE_PROPERTY)
        row_filter = AlwaysTrue() if where is True else parse_filter(where)
        bind_filter(self.schema(), row_filter)
        if not isinstance(allow_rows_outside_where, bool):
            raise InvalidArgumentError(f"allow_rows_outside_where is True or False, got {allow_rows_outside_where!r}")
        tables = as_tables(data, "the data to overwrite with")
        idem = Idempotency.of(idempotency)
        return overwrite_rows(self, tables, row_filter, where, mode, reporter, idem, allow_rows_outside_where, known_row_count(data))

    def truncate(self, *, idempotency: tuple[str, int] | None = None, branch: str | None = None) -> Snapshot | None:
        """Delete every row: the live data files leave the table, nothing is read or written
        but metadata. None when the table holds no rows."""
        return self.delete(AlwaysTrue(), idempotency=idempotency, branch=branch)

    @on_branch
    def delete_rows(
        self, keys: Rows, *, progress: ProgressArg = None, idempotency: tuple[str, int] | None = None, branch: str | None = None
    ) -> Snapshot | None:
        """Blind delete by value: an equality delete file on `keys`' columns (any input
        `append` takes); reads no data.
        With `mor.write.equality-deletes.enabled=false`: the rows holding the keys are found
        and removed as `delete` removes them (position deletes). None if nothing went."""
        from mor.dml.delete_rows import delete_rows_changes  # imported on first use: a read needs no DML

        self.operations()
        reporter = Progress.delayed("delete_rows", progress)
        key_rows = as_table(keys, "the keys to delete")
        return run_dml(self, "delete", lambda: delete_rows_changes(self, key_rows, reporter), idempotency=idempotency)

    @on_branch
    def update(
        self,
        set: Assignments,
        where: FilterLike | bool = None,
        mode: str | None = None,
        *,
        progress: ProgressArg = None,
        idempotency: tuple[str, int] | None = None,
        branch: str | None = None,
    ) -> Snapshot | None:
        """Set columns where `where` matches; `where` is required (every row: `"true"` or
        `True`), as `delete`'s predicate is. A value is SQL text over the old row (a `str`:
        `"qty + 1"`, `"'closed'"`, `"'2025-01-15 12:00'"`), a `pyarrow.compute` expression, or a
        literal (any other Python value, or `mor.lit(...)`): mor/expr/values.py. Returns the new
        snapshot, or None if no row matched."""
        from mor.dml.update import update_where  # imported on first use: a read needs no DML

        self.operations()
        reporter = Progress.delayed("update", progress)
        if where is None:
            raise InvalidArgumentError("update needs where=...; to update every row, pass where='true'")
        mode = write_mode(self, mode, UPDATE_MODE_PROPERTY)  # fixed for every re-plan
        row_filter = AlwaysTrue() if where is True else parse_filter(where)
        bind_filter(self.schema(), row_filter)
        return run_dml(self, "update", lambda: update_where(self, set, row_filter, mode, reporter), idempotency=idempotency)

    @on_branch
    def upsert(
        self,
        rows: Rows,
        on: Sequence[str],
        mode: str | None = None,
        strategy: str = "position",
        *,
        progress: ProgressArg = None,
        idempotency: tuple[str, int] | None = None,
        branch: str | None = None,
    ) -> Snapshot | None:
        """Replace the rows whose key (`on`) exists, insert the others, in one snapshot (`rows`:
        any input `append` takes).
        Merge-on-read strategies: "position" (join, position deletes) or "equality"
        (equality deletes on the keys, no scan)."""
        from mor.dml.merge import upsert_rows  # imported on first use: a read needs no DML

        self.operations()
        reporter = Progress.delayed("upsert", progress)
        mode = write_mode(self, mode, MERGE_MODE_PROPERTY)  # fixed for every re-plan
        table = as_table(rows, "UPSERT rows")
        return run_dml(self, "merge", lambda: upsert_rows(self, table, on, mode, strategy, reporter), idempotency=idempotency)

    @on_branch
    def merge(
        self,
        source: Rows,
        on: Sequence[str],
        when_matched_update: Assignments | str | None = None,
        when_matched_delete: bool | str | pc.Expression = False,
        when_not_matched_insert: Assignments | str | None = None,
        when_matched_update_if: str | pc.Expression | None = None,
        when_not_matched_insert_if: str | pc.Expression | None = None,
        mode: str | None = None,
        *,
        clauses: MergeClauses | None = None,
        progress: ProgressArg = None,
        idempotency: tuple[str, int] | None = None,
        branch: str | None = None,
    ) -> Snapshot | None:
        """MERGE INTO on the key columns `on` (matched as SQL's `=`: a key with a null matches no row; a key once in the source):
        see mor/dml/merge.py. The keyword clauses are one of each kind, the delete tried first;
        `"*"` means all columns from the source; values are as `update`'s, source columns
        `source.<name>` in SQL text and `pc.field("source.<name>")` in expressions; conditions
        are filter text (`"source.ts > target.ts"`) or pyarrow expressions. Or
        `clauses=`: a `MergeClauses` built in order, any number of each kind
        (mor/dml/merge_clauses.py). `source`: any input `append` takes."""
        from mor.dml.merge import check_keyword_clauses, merge_rows  # imported on first use: a read needs no DML
        from mor.dml.merge_clauses import MergeClauses

        self.operations()
        reporter = Progress.delayed("merge", progress)
        keywords = (when_matched_delete, when_matched_update, when_matched_update_if, when_not_matched_insert, when_not_matched_insert_if)
        if clauses is None:
            check_keyword_clauses(*keywords)  # in the local API's terms: pyarrow expressions
        chosen = MergeClauses.of_call(clauses, *keywords)
        source_rows = as_table(source, "the MERGE source")
        mode = write_mode(self, mode, MERGE_MODE_PROPERTY)  # fixed for every re-plan
        return run_dml(self, "merge", lambda: merge_rows(self, source_rows, on, chosen, mode, reporter), idempotency=idempotency)

    # -- handles on a branch, or for staged writes ------------------------------------------
    def branch(self, name: str) -> Table:
        """A handle on branch `name`: it reads the branch's head, and every write verb on it
        (append, delete, update, upsert, merge, overwrite, compact...) commits to the branch,
        with the conflict checks main's writes have. Schema and properties are the table's."""
        return self._handle(BranchOperations(self.operations(), branch=name))

    def staged(self, wap_id: str) -> Table:
        """Write-audit-publish: a handle whose writes are staged, not published: each adds a
        snapshot with `wap.id` = `wap_id` on top of main's head but moves no branch (read it by
        its snapshot id; `publish(wap_id)` puts it on main). The table must have
        `write.wap.enabled=true`, as Iceberg requires."""
        if self.metadata.properties.get(WAP_ENABLED, "false").lower() != "true":
            raise InvalidArgumentError(f"staged writes need the table property {WAP_ENABLED}=true (set_properties)")
        if not isinstance(wap_id, str) or not wap_id:
            raise InvalidArgumentError(f"a wap.id is a non-empty string, not {wap_id!r}")
        return self._handle(BranchOperations(self.operations(), wap_id=wap_id))

    def _handle(self, ops: BranchOperations) -> Table:
        handle = Table(self.identifier, ops.view(self.metadata, self.metadata_location), self.metadata_location, self.io, ops)
        handle.catalog_view = self.catalog_view
        return handle

    @property
    def read_only(self) -> bool:
        """Opened from a metadata file, without a catalog to commit to."""
        return self._ops is None

    def operations(self) -> TableOperations:
        """The catalog's operations on this table, which commits go through; MorError when the
        table is read-only."""
        if self._ops is None:
            raise MorError(f"{self.identifier} is read-only (opened from a metadata file)")
        return self._ops

    # -- its definition: schema, partition spec, sort order, properties, constraints, format
    # (mor/api/table_definition.py; each a metadata-only commit) ---------------------------
    update_schema = definition.update_schema
    add_column = definition.add_column
    rename_column = definition.rename_column
    drop_column = definition.drop_column
    update_spec = definition.update_spec
    replace_sort_order = definition.replace_sort_order
    sort_order = definition.sort_order
    set_properties = definition.set_properties
    add_constraint = definition.add_constraint
    drop_constraint = definition.drop_constraint
    set_not_null = definition.set_not_null
    constraints = definition.constraints
    upgrade = definition.upgrade

    # -- its refs: branches, tags, undo, write-audit-publish (mor/api/snapshot_management.py;
    # each flat verb is one commit of the manage_snapshots() builder; handles above) -------
    manage_snapshots = refs_.manage_snapshots
    refs = refs_.refs
    create_branch = refs_.create_branch
    create_tag = refs_.create_tag
    replace_branch = refs_.replace_branch
    replace_tag = refs_.replace_tag
    fast_forward = refs_.fast_forward
    rename_branch = refs_.rename_branch
    remove_branch = refs_.remove_branch
    remove_tag = refs_.remove_tag
    rollback_to = refs_.rollback_to
    rollback_to_time = refs_.rollback_to_time
    set_current_snapshot = refs_.set_current_snapshot
    restore = refs_.restore
    cherrypick = refs_.cherrypick
    publish = refs_.publish

    # -- its upkeep (mor/api/table_maintenance.py; the work is mor/maintenance's) -----------
    compact = on_branch(maintenance.compact)
    rewrite_position_deletes = maintenance.rewrite_position_deletes
    expire_snapshots = maintenance.expire_snapshots
    remove_orphan_files = maintenance.remove_orphan_files
    maintain = maintenance.maintain


class StaticTable(Table):
    """A read-only table opened from one metadata file, without a catalog."""

    @classmethod
    def from_metadata(cls, metadata_location: str, properties: Mapping[str, str] | None = None) -> StaticTable:
        """`properties`: file access, as `load_catalog`'s (`s3.endpoint`, ...)."""
        io = FileIO(properties)
        location = _resolve_metadata_file(io, metadata_location)
        return cls(location, read_metadata(io, location), location, io, None)


def _resolve_metadata_file(io: FileIO, location: str) -> str:
    """A metadata file as given; for a table or metadata folder, its newest metadata file."""
    if location.endswith(".metadata.json"):
        return location
    folder = location.rstrip("/")
    if not folder.endswith("/metadata"):
        folder += "/metadata"
    hint = f"{folder}/version-hint.text"
    if io.exists(hint):
        version = io.read_bytes(hint).decode().strip()
        return f"{folder}/v{version}.metadata.json"
    files = [i.path for i in io.list_files(folder) if i.path.endswith(".metadata.json")]
    if not files:
        raise MetadataFileNotFoundError(f"no table metadata file under {location}")
    return max(files, key=metadata_version)
