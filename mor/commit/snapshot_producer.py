"""Snapshot production: validate -> write manifests -> write manifest list -> swap; retry.

New files go into new manifests once (ADDED entries inherit their sequence number, so those
manifests stay valid across retries). On each attempt the base snapshot's manifests are
carried over, those holding removed files are rewritten with the files marked DELETED, and
small carried manifests are merged once there are many (mor/commit/manifest_merge.py).
Only a lost race is retried (mor/commit/retry.py); after an unknown outcome nothing is cleaned
up. Each step is announced (mor/catalog/steps.py), for crash tests.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema

from mor.catalog import steps
from mor.catalog.table_operations import CommitFailedError, TableOperations, refresh_same_table
from mor.commit.idempotency import Idempotency, check_not_committed
from mor.commit.manifest_merge import merge_carried
from mor.commit.retry import RetryPolicy, commit_with_retry
from mor.commit.row_rules import RowRules
from mor.commit.summary import build_summary
from mor.commit.table_commits import snapshot_commit
from mor.errors import CatalogUnavailableError, CommitConflictError, CommitStateUnknownError, CorruptMetadataError, UnsupportedFeatureError
from mor.format.content_file import ContentFile, DataFile, DeleteFile
from mor.format.manifest import EntryToWrite, ManifestFile, read_manifests, write_manifest
from mor.format.manifest_list import read_manifest_list, write_manifest_list
from mor.format.metadata import Snapshot, TableMetadata, now_ms, same_schema, with_schema, with_spec
from mor.format.spec import INITIAL_SEQUENCE_NUMBER, FileContent, ManifestContent, ManifestEntryStatus
from mor.io.fileio import FileIO, is_object_store
from mor.io.threads import IO_POOL


@dataclass(frozen=True)
class Changes:
    """What one commit does to the table: a value, made whole by the layer that plans it (a
    later layer adds to it with `dataclasses.replace`). File lists given as lists are kept as
    tuples."""

    operation: str
    added_data: Sequence[DataFile] = ()
    added_deletes: Sequence[DeleteFile] = ()
    removed_data: Sequence[DataFile] = ()
    removed_deletes: Sequence[DeleteFile] = ()
    added_spec: PartitionSpec | None = None  # a spec the added files use that the table lacks
    # Compaction: the added data files keep the data sequence number of the snapshot it read,
    # so deletes committed after that snapshot still apply to the rewritten rows.
    data_sequence_number: int | None = None
    # append(schema_mode="merge"): the schema the added files were written with, made current
    # (with last-column-id raised) in the same metadata as the snapshot. Its new field ids were
    # handed out on the read base, so a base whose schema changed meanwhile is a conflict.
    schema: Schema | None = None
    # An idempotent write (mor/commit/idempotency.py): recorded in the summary, and checked
    # against every base the commit is attempted on.
    idempotency: Idempotency | None = None
    # The rules (required columns, CHECK constraints) the added rows were checked against
    # (mor/commit/row_rules.py): checked again on a base where they changed.
    row_rules: RowRules | None = None
    # Summary properties the operation adds (a cherry-pick's `source-snapshot-id`).
    summary: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("added_data", "added_deletes", "removed_data", "removed_deletes"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        object.__setattr__(self, "summary", dict(self.summary))  # a copy: the caller's dict may change


# validate(base the operation read, current base) raises CommitConflictError when our changes
# no longer make sense on top of what others committed since.
Validator = Callable[[TableMetadata, TableMetadata], None]


def new_snapshot_id() -> int:
    return uuid.uuid4().int & ((1 << 63) - 1) or 1


def commit_changes(
    io: FileIO,
    ops: TableOperations,
    read_base: TableMetadata,
    read_base_location: str,
    changes: Changes,
    validate: Validator | None = None,
    policy: RetryPolicy | None = None,
) -> tuple[TableMetadata, str]:
    """Commit `changes` made against `read_base`; returns the new metadata and its location.
    A lost race is retried as `policy` allows (default: the read base's table properties)."""
    snapshot_id = new_snapshot_id()
    schema = changes.schema or read_base.schema()
    planned_on = read_base
    read_base = _with_new_schema(_with_added_spec(read_base, changes), planned_on, changes)
    steps.reached("files-written")
    new_manifests = _write_new_file_manifests(io, read_base, schema, snapshot_id, changes)
    steps.reached("manifests-written")
    # `catalog_base` is the table as the catalog has it; `base` is it with our schema and spec
    # added, which the manifests are written against.
    catalog_base, base, base_location = planned_on, read_base, read_base_location
    validated = read_base  # commits up to this base have been checked against ours

    def attempt(n: int) -> tuple[TableMetadata, str]:
        nonlocal catalog_base, base, base_location, validated
        if n:
            catalog_base, base_location = refresh_same_table(ops, planned_on)  # never commit into another table
            base = _with_new_schema(_with_added_spec(catalog_base, changes), planned_on, changes)
            _check_format_version(base, planned_on, changes)
        _check_no_v1_deletes(base, changes)
        check_not_committed(base, changes.idempotency)
        if changes.row_rules is not None:
            changes.row_rules.hold_on(catalog_base, base)
        if validate is not None and base.current_snapshot_id != validated.current_snapshot_id:
            validate(validated, base)
            validated = base
        carried, rewritten = _carry_manifests(io, base, schema, snapshot_id, changes)
        carried, merged = merge_carried(
            io, base, schema, snapshot_id, new_manifests + rewritten, carried,
            _merged_manifest_location(base, snapshot_id),
        )  # fmt: skip
        # Format v1 has no sequence numbers: every snapshot and file is at 0.
        sequence_number = base.last_sequence_number + 1 if base.format_version > 1 else INITIAL_SEQUENCE_NUMBER
        manifest_list = f"{base.location.rstrip('/')}/metadata/snap-{snapshot_id}-{n + 1}-{uuid.uuid4()}.avro"
        parent = base.current_snapshot()
        _, added_rows = write_manifest_list(
            io,
            manifest_list,
            snapshot_id=snapshot_id,
            parent_snapshot_id=parent.snapshot_id if parent else None,
            sequence_number=sequence_number,
            manifests=new_manifests + rewritten + carried,
            format_version=base.format_version,
            first_row_id=base.next_row_id,
        )
        steps.reached("manifest-list-written")
        summary = build_summary(
            changes.operation,
            [*changes.added_data, *changes.added_deletes],
            [*changes.removed_data, *changes.removed_deletes],
            parent.summary if parent else None,
            {**changes.summary, **(changes.idempotency.summary() if changes.idempotency else {})},
        )
        snapshot = Snapshot(
            snapshot_id=snapshot_id,
            parent_snapshot_id=parent.snapshot_id if parent else None,
            sequence_number=sequence_number,
            timestamp_ms=max(now_ms(), base.last_updated_ms + 1),
            manifest_list=manifest_list,
            summary=summary,
            schema_id=base.current_schema_id,
            first_row_id=base.next_row_id if base.format_version >= 3 else None,
            added_rows=added_rows if base.format_version >= 3 else None,
        )
        change = snapshot_commit(
            catalog_base, snapshot, spec=changes.added_spec, schema=changes.schema, idempotency=changes.idempotency,
            assert_schema=changes.row_rules is not None,
        )  # fmt: skip
        try:
            committed = ops.commit(catalog_base, base_location, change)
            steps.reached("committed")
            return committed
        except (CatalogUnavailableError, CommitFailedError):
            # The commit certainly did not happen (a lost race is tried again by commit_with_retry):
            # nothing of this attempt is referenced.
            for path in [manifest_list, *(m.manifest_path for m in rewritten + merged)]:
                io.delete_quietly(path)
            raise

    try:
        return commit_with_retry(policy or RetryPolicy.of(read_base.properties), attempt, f"commit the {changes.operation}")
    except CommitStateUnknownError:
        raise
    except BaseException:
        for m in new_manifests:
            io.delete_quietly(m.manifest_path)
        raise


def _with_added_spec(base: TableMetadata, changes: Changes) -> TableMetadata:
    if changes.added_spec is None:
        return base
    try:
        return with_spec(base, changes.added_spec)
    except CorruptMetadataError as e:
        raise CommitConflictError(f"a concurrent commit added partition spec {changes.added_spec.spec_id}: {e}") from e


def _with_new_schema(base: TableMetadata, planned_on: TableMetadata, changes: Changes) -> TableMetadata:
    if changes.schema is None:
        return base
    if base.last_column_id != planned_on.last_column_id or not same_schema(base.schema(), planned_on.schema()):
        raise CommitConflictError(
            f"a concurrent commit changed the table schema (schema {base.current_schema_id} is current, last-column-id "
            f"{base.last_column_id}); this write added columns to schema {planned_on.current_schema_id}"
        )
    return with_schema(base, changes.schema)


def _check_no_v1_deletes(base: TableMetadata, changes: Changes) -> None:
    if base.format_version == 1 and changes.added_deletes:
        raise UnsupportedFeatureError(
            "format v1 tables have no delete files: rewrite the rows instead (copy-on-write), or upgrade the table first "
            "with table.upgrade(format_version=2)"
        )


def _check_format_version(base: TableMetadata, planned_on: TableMetadata, changes: Changes) -> None:
    """Position delete files may not be added to a v3 table: a concurrent upgrade is a conflict."""
    if base.format_version != planned_on.format_version and any(
        f.content == FileContent.POSITION_DELETES and not f.is_deletion_vector for f in changes.added_deletes
    ):
        raise CommitConflictError(
            f"the table was upgraded to format v{base.format_version} concurrently; this write made v2 position delete files"
        )


def _manifest_location(metadata: TableMetadata, snapshot_id: int, index: int) -> str:
    return f"{metadata.location.rstrip('/')}/metadata/{uuid.uuid4()}-{snapshot_id}-m{index}.avro"


def _merged_manifest_location(metadata: TableMetadata, snapshot_id: int) -> Callable[[int], str]:
    """Where the i-th manifest merged on `metadata` goes (numbered from m1000)."""
    return lambda i: _manifest_location(metadata, snapshot_id, 1000 + i)


def _write_new_file_manifests(
    io: FileIO, metadata: TableMetadata, schema: Schema, snapshot_id: int, changes: Changes
) -> list[ManifestFile]:
    specs = metadata.specs()
    out: list[ManifestFile] = []
    groups: dict[tuple[ManifestContent, int], list[ContentFile]] = {}
    for f in [*changes.added_data, *changes.added_deletes]:
        content = ManifestContent.DELETES if f.is_delete else ManifestContent.DATA
        groups.setdefault((content, f.spec_id), []).append(f)
    for (content, spec_id), files in groups.items():
        keep = None if content == ManifestContent.DELETES else changes.data_sequence_number
        entries = [EntryToWrite(ManifestEntryStatus.ADDED, snapshot_id, f, keep) for f in files]
        location = _manifest_location(metadata, snapshot_id, len(out))
        out.append(
            write_manifest(
                io,
                location,
                spec=specs[spec_id],
                schema=schema,
                content=content,
                snapshot_id=snapshot_id,
                entries=entries,
                format_version=metadata.format_version,
            )  # fmt: skip
        )
    return out


def _carry_manifests(
    io: FileIO, base: TableMetadata, schema: Schema, snapshot_id: int, changes: Changes
) -> tuple[list[ManifestFile], list[ManifestFile]]:
    """(manifests kept as they are, manifests rewritten to mark removed files DELETED)."""
    parent = base.current_snapshot()
    if parent is None:
        if changes.removed_data or changes.removed_deletes:
            raise CommitConflictError("the table has no snapshot any more; files to remove are gone")
        return [], []
    # By entry key: one Puffin file holds the deletion vectors of several data files.
    to_remove = {f.key for f in [*changes.removed_data, *changes.removed_deletes]}
    found: set[tuple[str, int | None]] = set()
    specs = base.specs()
    carried: list[ManifestFile] = []
    rewritten: list[ManifestFile] = []
    manifests = read_manifest_list(io, parent.manifest_list)
    entries_of = read_manifests(io, manifests, specs, schema) if to_remove else [[] for _ in manifests]
    for manifest, entries in zip(manifests, entries_of):
        hits = {e.file.key for e in entries if e.is_live and e.file.key in to_remove}
        if not hits:
            if manifest.has_live_files:
                carried.append(manifest)
            continue
        found |= hits
        kept = [
            EntryToWrite(
                ManifestEntryStatus.DELETED if e.file.key in hits else ManifestEntryStatus.EXISTING,
                snapshot_id if e.file.key in hits else e.snapshot_id,
                e.file,
                e.data_sequence_number,
                e.file_sequence_number,
            )
            for e in entries
            if e.is_live
        ]
        rewritten.append(
            write_manifest(
                io,
                _manifest_location(base, snapshot_id, 100 + len(rewritten)),
                spec=specs[manifest.partition_spec_id],
                schema=schema,
                content=manifest.content,
                snapshot_id=snapshot_id,
                entries=kept,
                format_version=base.format_version,
            )
        )
    _check_intact(io, carried)
    missing = to_remove - found
    if missing:
        for m in rewritten:
            io.delete_quietly(m.manifest_path)
        raise CommitConflictError(
            f"files to remove are no longer in the table (removed concurrently?): {sorted(p for p, _ in missing)[:3]}"
        )
    return carried, rewritten


# Object-store manifests this process found whole. An object is never truncated or replaced in
# place (mor/io/fileio.py), so one is looked at once per process, not once per commit: a HEAD
# request for every manifest of the table on every commit would grow with the table's history.
_SEEN_WHOLE: set[tuple[str, int]] = set()
_SEEN_WHOLE_MAX = 100_000


def _check_intact(io: FileIO, manifests: list[ManifestFile]) -> None:
    """Refuse to build on a manifest that is gone or truncated: the new snapshot would carry
    it, and no reader could read that snapshot either. On object storage the sizes are looked
    up concurrently."""
    todo = [m for m in manifests if (m.manifest_path, m.manifest_length) not in _SEEN_WHOLE]

    def size(manifest: ManifestFile) -> int | None:
        try:
            return io.size(manifest.manifest_path)
        except (OSError, TypeError):
            return None

    remote = len(todo) > 1 and is_object_store(todo[0].manifest_path)  # a local stat is quicker than a thread hand-off
    sizes = list(IO_POOL.get().map(size, todo)) if remote else [size(m) for m in todo]
    for manifest, found in zip(todo, sizes):
        if found != manifest.manifest_length:
            what = "missing" if found is None else f"{found} bytes, the manifest list says {manifest.manifest_length}"
            raise CorruptMetadataError(f"manifest {manifest.manifest_path} is {what}: refusing to commit on top of it")
    if len(_SEEN_WHOLE) > _SEEN_WHOLE_MAX:
        _SEEN_WHOLE.clear()
    _SEEN_WHOLE.update((m.manifest_path, m.manifest_length) for m in todo if is_object_store(m.manifest_path))
