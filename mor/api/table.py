"""Table: the user's handle on one Iceberg table (reads, appends, row-level DML)."""

from __future__ import annotations

import datetime as dt
import time
from dataclasses import dataclass
from typing import Sequence

import pyarrow as pa
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema

from mor.api.delete import COPY_ON_WRITE, DELETE_MODE_PROPERTY, MERGE_ON_READ, delete_validator, delete_where
from mor.api.scan import Scan
from mor.commit.snapshot_producer import Changes, TableOperations, commit_changes
from mor.commit.table_ops import CommitFailedError, read_metadata
from mor.errors import CommitConflictError, CommitStateUnknownError, MorError, SchemaMismatchError
from mor.format.metadata import Snapshot, TableMetadata, with_properties
from mor.format.spec import Operation
from mor.io.fileio import FileIO
from mor.planning.filters import FilterLike, bind_filter, parse_filter
from mor.write.arrow_schema import conform, to_arrow_schema
from mor.write.parquet_files import WriteOptions, write_data_files


@dataclass(frozen=True)
class HistoryEntry:
    made_current_at_ms: int
    snapshot_id: int
    parent_snapshot_id: int | None
    is_current_ancestor: bool


class Table:
    def __init__(self, identifier: str, metadata: TableMetadata, metadata_location: str, io: FileIO, ops: TableOperations | None):
        self.identifier = identifier
        self.metadata = metadata
        self.metadata_location = metadata_location
        self.io = io
        self._ops = ops

    def __repr__(self) -> str:
        return f"Table({self.identifier!r}, {self.metadata_location!r})"

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

    def scan(
        self,
        filter: FilterLike = None,
        columns: Sequence[str] | None = None,
        snapshot_id: int | None = None,
        as_of: dt.datetime | int | None = None,
        case_sensitive: bool = True,
    ) -> Scan:
        return Scan(self, filter, columns, snapshot_id, as_of, case_sensitive)

    def refresh(self) -> Table:
        self.metadata, self.metadata_location = self._writable().refresh()
        return self

    # -- writing ---------------------------------------------------------------------------
    def append(self, data: pa.Table | pa.RecordBatchReader) -> Snapshot:
        """Add rows: one Parquet file per partition value, one `append` snapshot."""
        if isinstance(data, pa.RecordBatchReader):
            data = data.read_all()
        if not isinstance(data, pa.Table):
            raise SchemaMismatchError(f"append takes a pyarrow Table or RecordBatchReader, got {type(data).__name__}")
        self._writable()
        schema = self.schema()
        rows = conform(data, schema)
        files = write_data_files(self.io, self.location, schema, self.spec(), rows, WriteOptions(self.metadata.properties))
        return self._commit(Changes(Operation.APPEND, added_data=files))

    def delete(self, where: FilterLike, mode: str | None = None) -> Snapshot | None:
        """Delete the rows matching `where`. Returns the new snapshot, or None if none matched."""
        self._writable()
        mode = mode or self.metadata.properties.get(DELETE_MODE_PROPERTY, MERGE_ON_READ)
        if mode not in (MERGE_ON_READ, COPY_ON_WRITE):
            raise ValueError(f"mode must be {MERGE_ON_READ!r} or {COPY_ON_WRITE!r}, got {mode!r}")
        row_filter = parse_filter(where)
        bind_filter(self.schema(), row_filter)
        changes = delete_where(self, row_filter, mode)
        if changes is None:
            return None
        return self._commit(changes, delete_validator(self, row_filter, changes))

    def set_properties(self, **updates: str) -> None:
        ops = self._writable()
        for _ in range(5):
            new = with_properties(self.metadata, {k.replace("_", "."): str(v) for k, v in updates.items()})
            try:
                self.metadata_location = ops.commit(self.metadata, self.metadata_location, new)
                self.metadata = new
                return
            except CommitFailedError:
                self.refresh()
                time.sleep(0.05)
        raise CommitConflictError("could not set properties: the table kept changing")

    def _commit(self, changes: Changes, validate=None) -> Snapshot:  # type: ignore[no-untyped-def]
        ops = self._writable()
        try:
            self.metadata, self.metadata_location = commit_changes(
                self.io, ops, self.metadata, self.metadata_location, changes, validate
            )
        except CommitStateUnknownError:
            raise  # the files may be referenced by a commit that landed: leave them
        except BaseException:
            for f in [*changes.added_data, *changes.added_deletes]:
                self.io.delete(f.file_path)
            raise
        snapshot = self.metadata.current_snapshot()
        assert snapshot is not None
        return snapshot

    def _writable(self) -> TableOperations:
        if self._ops is None:
            raise MorError(f"{self.identifier} is read-only (opened from a metadata file)")
        return self._ops


class StaticTable(Table):
    """A read-only table opened from one metadata file, without a catalog."""

    @classmethod
    def from_metadata(cls, metadata_location: str) -> StaticTable:
        io = FileIO()
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
    from mor.commit.table_ops import metadata_version

    files = [i.path for i in io.list_files(folder) if i.path.endswith(".metadata.json")]
    if not files:
        raise MorError(f"no metadata file under {location}")
    return max(files, key=metadata_version)
