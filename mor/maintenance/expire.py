"""Expiring snapshots: drop old snapshots from the metadata, then delete what only they read.

Retained: the head of every ref (branch or tag); for each branch, the newest `retain_last`
ancestors and every ancestor younger than the cutoff (a ref's own `min-snapshots-to-keep` /
`max-snapshot-age-ms` win over the table's, as in Iceberg); any other snapshot younger than
the cutoff. Defaults come from Iceberg's `history.expire.max-snapshot-age-ms` (5 days) and
`history.expire.min-snapshots-to-keep` (1). Like Delta's VACUUM check, a cutoff closer to now
than `history.expire.max-snapshot-age-ms` is refused unless the caller overrides it.

Order matters for safety: the files to delete are worked out from the metadata before the
commit (every manifest of every retained snapshot is read: one that cannot be read stops it,
since it could hide live files), the metadata is swapped in, and only then are files deleted.
A crash in between leaves orphans, never a snapshot without its files. Deleted: the manifest
lists of expired snapshots, manifests no retained snapshot lists, content files named by those
manifests that no retained snapshot reads (a retained snapshot may list a DELETED entry for a
file; that file goes), statistics files of expired snapshots, and metadata JSON files older
than the oldest the metadata log keeps (`write.metadata.previous-versions-max`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, replace

from mor.commit import faults
from mor.commit.retry import RetryPolicy
from mor.commit.snapshot_producer import TableOperations
from mor.commit.table_ops import CommitFailedError, is_versioned_metadata_file, metadata_version
from mor.errors import CommitConflictError, InvalidArgumentError, RetentionTooShortError
from mor.format.content_file import DataFile
from mor.format.manifest import ManifestFile
from mor.format.manifest_list import read_manifest_list
from mor.format.metadata import TableMetadata, now_ms
from mor.format.spec import FileContent
from mor.io.fileio import FileIO
from mor.maintenance.progress import Progress
from mor.planning.manifest_cache import read_entries

MAX_SNAPSHOT_AGE = "history.expire.max-snapshot-age-ms"
MIN_SNAPSHOTS_TO_KEEP = "history.expire.min-snapshots-to-keep"
DEFAULT_MAX_SNAPSHOT_AGE_MS = 5 * 24 * 3600 * 1000  # Iceberg's default
STATISTICS_KEYS = ("statistics", "partition-statistics")


@dataclass(frozen=True)
class ExpireResult:
    """What `expire_snapshots` removed (with `dry_run`: would remove)."""

    expired_snapshot_ids: tuple[int, ...] = ()
    deleted_data_files: int = 0
    deleted_data_bytes: int = 0
    deleted_position_delete_files: int = 0
    deleted_position_delete_bytes: int = 0
    deleted_equality_delete_files: int = 0
    deleted_equality_delete_bytes: int = 0
    deleted_manifests: int = 0
    deleted_manifest_lists: int = 0
    deleted_metadata_files: int = 0
    deleted_statistics_files: int = 0
    deleted_bytes: int = 0  # all kinds
    deleted_paths: tuple[str, ...] = ()
    dry_run: bool = False

    @property
    def expired_snapshots(self) -> int:
        return len(self.expired_snapshot_ids)

    def to_dict(self) -> dict[str, object]:
        out = {k: getattr(self, k) for k in self.__dataclass_fields__}
        out["expired_snapshot_ids"] = list(self.expired_snapshot_ids)
        out["deleted_paths"] = list(self.deleted_paths)
        return out


@dataclass
class _Doomed:
    """Files to delete, by kind: path -> size in bytes."""

    data: dict[str, int]
    position: dict[str, int]
    equality: dict[str, int]
    manifests: dict[str, int]
    manifest_lists: dict[str, int]
    statistics: dict[str, int]
    metadata: dict[str, int]

    def all(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for kind in (self.data, self.position, self.equality, self.statistics, self.manifests, self.manifest_lists, self.metadata):
            out.update(kind)
        return out

    def result(self, expired: set[int], dry_run: bool) -> ExpireResult:
        everything = self.all()
        return ExpireResult(
            expired_snapshot_ids=tuple(sorted(expired)),
            deleted_data_files=len(self.data),
            deleted_data_bytes=sum(self.data.values()),
            deleted_position_delete_files=len(self.position),
            deleted_position_delete_bytes=sum(self.position.values()),
            deleted_equality_delete_files=len(self.equality),
            deleted_equality_delete_bytes=sum(self.equality.values()),
            deleted_manifests=len(self.manifests),
            deleted_manifest_lists=len(self.manifest_lists),
            deleted_metadata_files=len(self.metadata),
            deleted_statistics_files=len(self.statistics),
            deleted_bytes=sum(everything.values()),
            deleted_paths=tuple(sorted(everything)),
            dry_run=dry_run,
        )


def expire_snapshots(
    io: FileIO,
    ops: TableOperations,
    metadata: TableMetadata,
    metadata_location: str,
    *,
    older_than: dt.timedelta | dt.datetime | None,
    retain_last: int | None,
    allow_short_retention: bool,
    dry_run: bool,
    progress: Progress,
) -> tuple[ExpireResult, TableMetadata, str]:
    """Expire on the freshest metadata (recomputed after a lost swap); returns the result and
    the metadata and location now current."""
    attempts = RetryPolicy.of(metadata.properties).start()
    while True:
        now = now_ms()
        cutoff_ms, keep = retention(metadata.properties, older_than, retain_last, allow_short_retention, now)
        expired = {s.snapshot_id for s in metadata.snapshots} - retained_snapshots(metadata, cutoff_ms, keep, now)
        if not expired:
            return ExpireResult(dry_run=dry_run), metadata, metadata_location
        new = without_snapshots(metadata, expired)
        doomed = files_only_expired_read(io, metadata, expired, progress)
        if dry_run:
            doomed.metadata = old_metadata_files(io, metadata, metadata_location)
            return doomed.result(expired, dry_run), metadata, metadata_location
        try:
            committed, location = ops.commit(metadata, metadata_location, new)
        except CommitFailedError:
            if not attempts.retry():
                raise CommitConflictError("could not expire snapshots: the table kept changing") from None
            metadata, metadata_location = ops.refresh()
            continue
        faults.reached("expire-committed")
        doomed.metadata = old_metadata_files(io, committed, location)
        with progress.stage("delete files", len(doomed.all())) as step:
            for i, path in enumerate(doomed.all()):
                io.delete(path)
                step.advance()
                if i == 0:
                    faults.reached("expire-deleting")
        return doomed.result(expired, dry_run), committed, location


def retention(
    properties: Mapping[str, str],
    older_than: dt.timedelta | dt.datetime | None,
    retain_last: int | None,
    allow_short_retention: bool,
    now: int,
) -> tuple[int, int]:
    """(cutoff in ms: snapshots older may go, snapshots to keep per branch)."""
    max_age_ms = _property(properties, MAX_SNAPSHOT_AGE, DEFAULT_MAX_SNAPSHOT_AGE_MS, minimum=0)
    if older_than is None:
        cutoff = now - max_age_ms
    elif isinstance(older_than, dt.timedelta):
        cutoff = now - int(older_than.total_seconds() * 1000)
    elif isinstance(older_than, dt.datetime):
        cutoff = int(older_than.timestamp() * 1000)  # a naive datetime is local time
    else:
        raise InvalidArgumentError(f"older_than must be a timedelta (an age) or a datetime, got {older_than!r}")
    if cutoff > now - max_age_ms and not allow_short_retention:
        raise RetentionTooShortError(
            f"expiring snapshots younger than {MAX_SNAPSHOT_AGE} ({max_age_ms} ms) is refused: readers and "
            f"writers working from those snapshots would lose their files; pass allow_short_retention=True "
            f"if none can be, or lower the table property"
        )
    if retain_last is None:
        keep = _property(properties, MIN_SNAPSHOTS_TO_KEEP, 1, minimum=1)
    elif isinstance(retain_last, bool) or not isinstance(retain_last, int) or retain_last < 1:
        raise InvalidArgumentError(f"retain_last must be a whole number >= 1 (the current snapshot stays), got {retain_last!r}")
    else:
        keep = retain_last
    return cutoff, keep


def _property(properties: Mapping[str, str], name: str, default: int, minimum: int) -> int:
    raw = properties.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = minimum - 1
    if value < minimum:
        raise InvalidArgumentError(f"table property {name} must be a whole number >= {minimum}, got {raw!r}")
    return value


def retained_snapshots(metadata: TableMetadata, cutoff_ms: int, keep: int, now: int) -> set[int]:
    by_id = {s.snapshot_id: s for s in metadata.snapshots}
    refs = dict(metadata.refs)
    if metadata.current_snapshot_id is not None:
        refs.setdefault("main", {"snapshot-id": metadata.current_snapshot_id, "type": "branch"})
    retained: set[int] = set()
    on_branches: set[int] = set()
    for ref in refs.values():
        head = ref.get("snapshot-id")
        if head not in by_id:
            continue
        retained.add(head)
        if ref.get("type", "branch") != "branch":
            continue  # a tag keeps its one snapshot
        ref_keep = int(ref.get("min-snapshots-to-keep", keep))
        ref_cutoff = now - int(ref["max-snapshot-age-ms"]) if "max-snapshot-age-ms" in ref else cutoff_ms
        for depth, snapshot in enumerate(metadata.ancestors(head)):
            on_branches.add(snapshot.snapshot_id)
            if depth < ref_keep or snapshot.timestamp_ms >= ref_cutoff:
                retained.add(snapshot.snapshot_id)
    retained |= {s.snapshot_id for s in metadata.snapshots if s.snapshot_id not in on_branches and s.timestamp_ms >= cutoff_ms}
    return retained


def without_snapshots(metadata: TableMetadata, expired: set[int]) -> TableMetadata:
    kept = tuple(s for s in metadata.snapshots if s.snapshot_id not in expired)
    kept_ids = {s.snapshot_id for s in kept}
    log: list[tuple[int, int]] = []
    for entry in metadata.snapshot_log:
        if entry[1] in kept_ids:
            log.append(entry)
        else:  # the log must not claim a state that can no longer be read: drop what came before
            log.clear()
    extra = dict(metadata.extra)
    for key in STATISTICS_KEYS:
        if key in extra:
            extra[key] = [s for s in extra[key] or () if s.get("snapshot-id") not in expired]
    return replace(metadata, snapshots=kept, snapshot_log=tuple(log), extra=extra, last_updated_ms=max(now_ms(), metadata.last_updated_ms + 1))


def files_only_expired_read(io: FileIO, metadata: TableMetadata, expired: set[int], progress: Progress) -> _Doomed:
    retained = [s for s in metadata.snapshots if s.snapshot_id not in expired]
    gone = [s for s in metadata.snapshots if s.snapshot_id in expired]
    kept_manifests = _manifests(io, [s.manifest_list for s in retained])
    gone_manifests = _manifests(io, [s.manifest_list for s in gone])
    doomed_manifests = [m for path, m in gone_manifests.items() if path not in kept_manifests]
    specs, schema = metadata.specs(), metadata.schema()
    to_read = list(kept_manifests.values()) + doomed_manifests
    with progress.stage("read manifests", len(to_read)) as step:
        live: set[str] = set()
        for entries in read_entries(io, list(kept_manifests.values()), specs, schema):
            live.update(e.file.file_path for e in entries if e.is_live)
            step.advance()
        doomed = _Doomed({}, {}, {}, {}, {}, {}, {})
        for entries in read_entries(io, doomed_manifests, specs, schema):
            for e in entries:
                f = e.file
                if f.file_path in live:
                    continue
                kind = doomed.data if isinstance(f, DataFile) else doomed.position if f.content == FileContent.POSITION_DELETES else doomed.equality
                kind[f.file_path] = f.file_size_in_bytes
            step.advance()
    doomed.manifests = {m.manifest_path: m.manifest_length for m in doomed_manifests}
    doomed.manifest_lists = {s.manifest_list: _size(io, s.manifest_list) for s in gone}
    kept_statistics = {s["statistics-path"] for key in STATISTICS_KEYS for s in _statistics(metadata, key) if s.get("snapshot-id") not in expired}
    doomed.statistics = {
        s["statistics-path"]: int(s.get("file-size-in-bytes") or 0)
        for key in STATISTICS_KEYS
        for s in _statistics(metadata, key)
        if s.get("snapshot-id") in expired and s.get("statistics-path") and s["statistics-path"] not in kept_statistics
    }
    return doomed


def _manifests(io: FileIO, manifest_lists: list[str]) -> dict[str, ManifestFile]:
    out: dict[str, ManifestFile] = {}
    for location in manifest_lists:
        for m in read_manifest_list(io, location):
            out.setdefault(m.manifest_path, m)
    return out


def _statistics(metadata: TableMetadata, key: str) -> list[dict]:
    return [s for s in metadata.extra.get(key) or () if isinstance(s, dict) and "statistics-path" in s]


def old_metadata_files(io: FileIO, metadata: TableMetadata, metadata_location: str) -> dict[str, int]:
    """Metadata JSON files of this table older than the oldest its metadata log keeps."""
    logged = [metadata_location, *(path for _, path in metadata.metadata_log)]
    oldest = min(metadata_version(path) for path in logged)
    keep = {io.path(path) for path in logged}
    folder = metadata.location.rstrip("/") + "/metadata"
    return {
        info.path: info.size or 0
        for info in io.list_files(folder)
        if is_versioned_metadata_file(info.path) and info.path not in keep and metadata_version(info.path) < oldest
    }


def _size(io: FileIO, location: str) -> int:
    try:
        return io.size(location)
    except (OSError, TypeError):  # already gone
        return 0
