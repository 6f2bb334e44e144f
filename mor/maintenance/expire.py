"""Expiring snapshots: drop old snapshots from the metadata, then delete what only they read.

Retained: the head of every ref (branch or tag); for each branch, the newest `retain_last`
ancestors and every ancestor at or after the cutoff; any snapshot on no branch at or after the
cutoff. A ref's own `min-snapshots-to-keep` / `max-snapshot-age-ms` win over the table's, and a
ref other than main whose head is older than its `max-ref-age-ms` (or the table's
`history.expire.max-ref-age-ms`) is removed, as in Iceberg. Defaults come from
`history.expire.max-snapshot-age-ms` (5 days) and `history.expire.min-snapshots-to-keep` (1).
Like Delta's VACUUM check, a cutoff closer to now than `history.expire.max-snapshot-age-ms` is
refused unless the caller overrides it: a reader or writer still working from a younger
snapshot would lose its files.

Order matters for safety: the files to delete are worked out from the metadata the commit
replaces (on a lost race, from the fresh metadata again), the metadata is swapped in, and only
then are files deleted; after an unknown outcome nothing is. A crash in between leaves orphans
for `remove_orphan_files`, never a snapshot without its files. Deleted: the manifest lists of
expired snapshots; manifests no retained snapshot lists; content files named by those manifests
(any status) that no retained snapshot reads (by path: a Puffin file stays while a retained
snapshot reads any of its deletion vectors), which needs every manifest of every retained
snapshot read (one that cannot be read stops it: it could hide live files). A retained manifest
may still name such a file in a DELETED entry (a tombstone no reader opens), so after a crash
`remove_orphan_files` leaves it: it is named. Also deleted: statistics files of
expired snapshots; metadata JSON files under `<location>/metadata` older than the oldest the
metadata log keeps (`write.metadata.previous-versions-max`). Locations are compared in one
normalised form, since writers spell one file several ways (`file:///a`, `file:/a`, `/a`, `//`).
Only files the table owns are deleted (mor/maintenance/ownership.py: under its location, not
through a symbolic link, not another table's): a file outside it that an expired manifest names
is left and reported (`skipped_paths`), and a table sharing its location with another refuses.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from mor.catalog import steps
from mor.catalog.metadata_files import is_versioned_metadata_file, metadata_version
from mor.catalog.table_operations import TableOperations, refresh_same_table
from mor.commit.retry import RetryPolicy, commit_with_retry
from mor.commit.table_commits import expire_commit
from mor.errors import CorruptMetadataError, InvalidArgumentError, RetentionTooShortError, UnsupportedFeatureError
from mor.format.apply import apply_updates
from mor.format.content_file import DataFile
from mor.format.manifest import ManifestFile
from mor.format.manifest_list import read_manifest_list
from mor.format.metadata import Snapshot, TableMetadata, now_ms, with_previous_file
from mor.format.properties import MAX_REF_AGE_MS, MAX_SNAPSHOT_AGE_MS, MIN_SNAPSHOTS_TO_KEEP
from mor.format.spec import MAIN_BRANCH, STATISTICS_KEYS, FileContent
from mor.io.fileio import FileIO
from mor.maintenance.ownership import Ownership, keys
from mor.planning.manifest_cache import read_entries
from mor.progress import Progress

DEFAULT_MAX_SNAPSHOT_AGE_MS = 5 * 24 * 3600 * 1000  # Iceberg's defaults
DEFAULT_MIN_SNAPSHOTS_TO_KEEP = 1


@dataclass(frozen=True)
class ExpireResult:
    """What `expire_snapshots` removed (with `dry_run`: would remove). Paths are file system
    paths. `missing_paths`: manifest lists and manifests of expired snapshots that were already
    gone, so the content files they named (if any are left) are for `remove_orphan_files`.
    Deletion vectors (v3) are counted by Puffin file among the position delete files, with the
    file's size: one goes once no retained snapshot reads any of the vectors in it.
    `skipped_paths`: files only expired snapshots read that the table does not own (outside its
    location, through a symbolic link, another table's): left where they are, not counted."""

    expired_snapshot_ids: tuple[int, ...] = ()
    removed_refs: tuple[str, ...] = ()
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
    missing_paths: tuple[str, ...] = ()
    skipped_paths: tuple[str, ...] = ()
    dry_run: bool = False

    @property
    def expired_snapshots(self) -> int:
        return len(self.expired_snapshot_ids)

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {k: getattr(self, k) for k in self.__dataclass_fields__}
        for k, v in out.items():
            if isinstance(v, tuple):
                out[k] = list(v)
        out["expired_snapshots"] = self.expired_snapshots
        return out


@dataclass
class Doomed:
    """Files to delete, by kind: location -> size in bytes (after `keep_foreign`, the path to
    delete it by)."""

    data: dict[str, int] = field(default_factory=dict)
    position: dict[str, int] = field(default_factory=dict)
    equality: dict[str, int] = field(default_factory=dict)
    statistics: dict[str, int] = field(default_factory=dict)
    manifests: dict[str, int] = field(default_factory=dict)
    manifest_lists: dict[str, int] = field(default_factory=dict)
    metadata: dict[str, int] = field(default_factory=dict)
    missing: set[str] = field(default_factory=set)
    skipped: set[str] = field(default_factory=set)

    def keep_foreign(self, ownership: Ownership) -> None:
        """Keep only the files the table owns, by the path to delete them by; the rest are skipped."""
        for kind in (self.data, self.position, self.equality, self.statistics, self.manifests, self.manifest_lists, self.metadata):
            owned, skipped = ownership.select(list(kind))
            self.skipped.update(skipped)
            sizes = {owned[location]: size for location, size in kind.items() if location in owned}
            kind.clear()
            kind.update(sizes)

    def all(self) -> dict[str, int]:
        """Content files first, then what names them: a crash midway leaves no manifest
        naming a file already gone (none of them is reachable anyway)."""
        out: dict[str, int] = {}
        for kind in (self.data, self.position, self.equality, self.statistics, self.manifests, self.manifest_lists, self.metadata):
            out.update(kind)
        return out

    def result(self, expired: set[int], removed_refs: set[str], dry_run: bool) -> ExpireResult:
        everything = self.all()
        return ExpireResult(
            expired_snapshot_ids=tuple(sorted(expired)),
            removed_refs=tuple(sorted(removed_refs)),
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
            missing_paths=tuple(sorted(self.missing)),
            skipped_paths=tuple(sorted(self.skipped)),
            dry_run=dry_run,
        )


@dataclass(frozen=True)
class Retention:
    """The table-wide rule, resolved: snapshots older than `cutoff_ms` may go, beyond the newest
    `retain_last` of each branch; refs older than `max_ref_age_ms` (None: never) may go."""

    now_ms: int
    cutoff_ms: int
    retain_last: int
    max_ref_age_ms: int | None


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
    ownership: Ownership,
) -> tuple[ExpireResult, TableMetadata, str]:
    """Expire on the freshest metadata (worked out again after a lost swap); returns the result
    and the metadata and location now current. Only files `ownership` allows are deleted."""

    def attempt(_: int) -> tuple[ExpireResult, TableMetadata, str]:
        rule = retention(metadata.properties, older_than, retain_last, allow_short_retention, now_ms())
        refs = retained_refs(metadata, rule)
        expired = {s.snapshot_id for s in metadata.snapshots} - retained_snapshots(metadata, refs, rule)
        removed_refs = set(metadata.refs) - set(refs)
        if not expired and not removed_refs:
            return ExpireResult(dry_run=dry_run), metadata, metadata_location
        change = expire_commit(metadata, expired, removed_refs)
        new = apply_updates(metadata, change.updates)
        doomed = files_only_expired_read(io, metadata, expired, progress)
        doomed.keep_foreign(ownership)
        if dry_run:  # the metadata log the commit would write decides which metadata files go
            logged = with_previous_file(new, metadata_location, metadata)
            doomed.metadata = old_metadata_files(io, logged, metadata_version(metadata_location) + 1, ownership)
            return doomed.result(expired, removed_refs, dry_run), metadata, metadata_location
        ownership.referenced_by_others()  # read now: failing after the commit would leave it half done
        committed, location = ops.commit(metadata, metadata_location, change)
        steps.reached("expire-committed")
        doomed.metadata = old_metadata_files(io, committed, metadata_version(location), ownership)
        everything = doomed.all()
        with progress.stage("delete files", len(everything)) as step:
            for i, path in enumerate(everything):
                io.delete(path)
                step.advance()
                if i == 0:
                    steps.reached("expire-deleting")
        return doomed.result(expired, removed_refs, dry_run), committed, location

    def refresh() -> None:
        nonlocal metadata, metadata_location
        metadata, metadata_location = refresh_same_table(ops, metadata)

    return commit_with_retry(RetryPolicy.of(metadata.properties), attempt, "expire snapshots", before_retry=refresh)


# -- which snapshots stay ----------------------------------------------------------------------


def retention(
    properties: Mapping[str, str],
    older_than: dt.timedelta | dt.datetime | None,
    retain_last: int | None,
    allow_short_retention: bool,
    now: int,
) -> Retention:
    """The caller's arguments over the table's properties; RetentionTooShortError for a cutoff
    younger than the table's retention without `allow_short_retention`."""
    if retain_last is not None and (isinstance(retain_last, bool) or not isinstance(retain_last, int) or retain_last < 1):
        raise InvalidArgumentError(f"retain_last must be a whole number >= 1 (the current snapshot stays), got {retain_last!r}")
    max_age_ms = _table_number(properties, MAX_SNAPSHOT_AGE_MS, 0)
    max_age_ms = DEFAULT_MAX_SNAPSHOT_AGE_MS if max_age_ms is None else max_age_ms
    if older_than is None:
        cutoff = now - max_age_ms
    elif isinstance(older_than, dt.timedelta):
        cutoff = now - int(older_than.total_seconds() * 1000)
    elif isinstance(older_than, dt.datetime):
        cutoff = int(older_than.timestamp() * 1000)  # a naive datetime is local time, as everywhere in Python
    else:
        raise InvalidArgumentError(f"older_than must be a timedelta (an age) or a datetime, got {older_than!r}")
    if cutoff > now - max_age_ms and not allow_short_retention:
        raise RetentionTooShortError(
            f"expiring snapshots younger than the table's {MAX_SNAPSHOT_AGE_MS} ({max_age_ms} ms) is refused: "
            f"readers and writers still working from them would lose their files; pass "
            f"allow_short_retention=True if none can be, or lower the table property"
        )
    if retain_last is None:
        configured = _table_number(properties, MIN_SNAPSHOTS_TO_KEEP, 1)
        retain_last = DEFAULT_MIN_SNAPSHOTS_TO_KEEP if configured is None else configured
    return Retention(now, cutoff, retain_last, _table_number(properties, MAX_REF_AGE_MS, 0))


def _whole_number(raw: Any, minimum: int, what: str, error: type[Exception]) -> int | None:
    """`raw` (a JSON number or a property string) as an int >= `minimum`; None when absent."""
    if raw is None:
        return None
    try:
        value = int(raw) if isinstance(raw, (str, int)) and not isinstance(raw, bool) else None
    except ValueError:
        value = None
    if value is None or value < minimum:
        raise error(f"{what} must be a whole number >= {minimum}, got {raw!r}")
    return value


def _table_number(properties: Mapping[str, str], name: str, minimum: int) -> int | None:
    return _whole_number(properties.get(name), minimum, f"table property {name}", InvalidArgumentError)


def _ref_number(name: str, ref: Mapping[str, Any], key: str, minimum: int) -> int | None:
    return _whole_number(ref.get(key), minimum, f"ref {name!r}: {key}", CorruptMetadataError)


def retained_refs(metadata: TableMetadata, rule: Retention) -> dict[str, dict[str, Any]]:
    """The refs that stay: all but those (never main) whose head is older than their maximum
    age. A ref naming a snapshot the table lacks is left as it is: not ours to repair."""
    by_id: dict[object, Snapshot] = {s.snapshot_id: s for s in metadata.snapshots}  # looked up by whatever a ref holds
    out = {}
    for name, ref in metadata.refs.items():
        head = by_id.get(ref.get("snapshot-id"))
        max_age = _ref_number(name, ref, "max-ref-age-ms", 0)
        max_age = rule.max_ref_age_ms if max_age is None else max_age
        if name != MAIN_BRANCH and head is not None and max_age is not None and head.timestamp_ms < rule.now_ms - max_age:
            continue
        out[name] = ref
    return out


def retained_snapshots(metadata: TableMetadata, refs: Mapping[str, Mapping[str, Any]], rule: Retention) -> set[int]:
    by_id = {s.snapshot_id: s for s in metadata.snapshots}
    branches = dict(refs)
    if metadata.current_snapshot_id is not None:  # main is the current snapshot, whatever refs say
        branches[MAIN_BRANCH] = {**branches.get(MAIN_BRANCH, {}), "snapshot-id": metadata.current_snapshot_id, "type": "branch"}
    retained: set[int] = set()
    on_a_branch: set[int] = set()
    for name, ref in branches.items():
        head = ref.get("snapshot-id")
        if head not in by_id:
            continue
        retained.add(head)
        if ref.get("type", "branch") != "branch":
            continue  # a tag keeps its one snapshot
        keep = _ref_number(name, ref, "min-snapshots-to-keep", 1) or rule.retain_last
        max_age = _ref_number(name, ref, "max-snapshot-age-ms", 0)
        cutoff = rule.cutoff_ms if max_age is None else rule.now_ms - max_age
        for depth, snapshot in enumerate(metadata.ancestors(head)):
            on_a_branch.add(snapshot.snapshot_id)
            if depth < keep or snapshot.timestamp_ms >= cutoff:
                retained.add(snapshot.snapshot_id)
    retained |= {s.snapshot_id for s in metadata.snapshots if s.snapshot_id not in on_a_branch and s.timestamp_ms >= rule.cutoff_ms}
    return retained


# -- which files go ----------------------------------------------------------------------------


def files_only_expired_read(io: FileIO, metadata: TableMetadata, expired: set[int], progress: Progress) -> Doomed:
    """The files of `expired` snapshots that no other snapshot of `metadata` reads, by location
    as the metadata spells it (one spelling per file), compared in normalised form (`keys`)."""
    doomed = Doomed()
    retained = [s for s in metadata.snapshots if s.snapshot_id not in expired]
    kept_lists = _keys(s.manifest_list for s in retained)
    gone = _unique([s for s in metadata.snapshots if s.snapshot_id in expired and not keys(s.manifest_list) & kept_lists])
    kept_manifests = _manifests(io, retained, doomed, must_exist=True)
    gone_manifests = _manifests(io, gone, doomed, must_exist=False)
    kept_manifest_keys = _keys(kept_manifests)
    doomed_manifests = {path: m for path, m in gone_manifests.items() if not keys(path) & kept_manifest_keys}
    for path in [p for p, m in doomed_manifests.items() if not io.exists(m.manifest_path)]:
        doomed.missing.add(io.path(path))
        del doomed_manifests[path]
    # Content files are only ever candidates from doomed manifests; when there are none, the
    # retained manifests need not be read at all.
    to_check = list(kept_manifests.values()) if doomed_manifests else []
    specs, schema = metadata.specs(), metadata.schema()
    with progress.stage("read manifests", len(to_check) + len(doomed_manifests)) as step:
        live: set[str] = set()
        for entries in read_entries(io, to_check, specs, schema):
            for e in entries:
                if e.is_live:
                    live |= keys(e.file.file_path)
            step.advance()
        seen: set[str] = set()
        for entries in read_entries(io, list(doomed_manifests.values()), specs, schema):
            for e in entries:
                found = keys(e.file.file_path)
                if not found & live and not found & seen:
                    seen |= found
                    _kind(doomed, e.file)[e.file.file_path] = e.file.file_size_in_bytes
            step.advance()
    doomed.manifests = {path: m.manifest_length for path, m in doomed_manifests.items()}
    missing = _keys(doomed.missing)
    doomed.manifest_lists = {s.manifest_list: _size(io, s.manifest_list) for s in gone if not keys(s.manifest_list) & missing}
    doomed.statistics = _statistics_only_expired_use(io, metadata, expired)
    return doomed


def _keys(locations: Iterable[str]) -> set[str]:
    return set().union(*(keys(location) for location in locations))


def _unique(snapshots: list[Snapshot]) -> list[Snapshot]:
    """One snapshot per manifest list (by normalised location)."""
    seen: set[str] = set()
    out = []
    for s in snapshots:
        if not keys(s.manifest_list) & seen:
            seen |= keys(s.manifest_list)
            out.append(s)
    return out


def _kind(doomed: Doomed, f: Any) -> dict[str, int]:
    if isinstance(f, DataFile):
        return doomed.data
    return doomed.position if f.content == FileContent.POSITION_DELETES else doomed.equality


def _manifests(io: FileIO, snapshots: list[Snapshot], doomed: Doomed, must_exist: bool) -> dict[str, ManifestFile]:
    """The manifests the snapshots list, by location (one spelling per file). A manifest list
    of a snapshot that stays must be read; one of an expired snapshot that is already gone is
    noted and skipped (expiring is the way out of a history whose files were lost)."""
    out: dict[str, ManifestFile] = {}
    seen: set[str] = set()
    for snapshot in snapshots:
        if not must_exist and not io.exists(snapshot.manifest_list):
            doomed.missing.add(io.path(snapshot.manifest_list))
            continue
        for m in read_manifest_list(io, snapshot.manifest_list):
            if not keys(m.manifest_path) & seen:
                seen |= keys(m.manifest_path)
                out[m.manifest_path] = m
    return out


def _statistics_only_expired_use(io: FileIO, metadata: TableMetadata, expired: set[int]) -> dict[str, int]:
    entries = [s for key in STATISTICS_KEYS for s in metadata.extra.get(key) or () if isinstance(s, dict) and s.get("statistics-path")]
    kept = _keys(s["statistics-path"] for s in entries if s.get("snapshot-id") not in expired)
    out: dict[str, int] = {}
    for s in entries:
        path = s["statistics-path"]
        if s.get("snapshot-id") in expired and not keys(path) & kept:
            kept |= keys(path)  # once
            size = s.get("file-size-in-bytes")
            out[path] = size if isinstance(size, int) and not isinstance(size, bool) else _size(io, path)
    return out


def old_metadata_files(io: FileIO, metadata: TableMetadata, current_version: int, ownership: Ownership) -> dict[str, int]:
    """Metadata JSON files under the table's metadata folder older than the oldest that
    `metadata` (current at `current_version`) logs: beyond `write.metadata.previous-versions-max`.
    Never the current file or a newer one (a concurrent writer's), nor one the table does not
    own. By the path to delete them by."""
    logged = _keys(path for _, path in metadata.metadata_log)
    oldest = min([current_version, *(metadata_version(path) for _, path in metadata.metadata_log)])
    folder = str(ownership.literal).rstrip("/") + "/metadata"
    found = {
        info.path: info.size or 0
        for info in io.list_files(folder)
        if is_versioned_metadata_file(info.path) and not keys(info.path) & logged and metadata_version(info.path) < oldest
    }
    owned, _ = ownership.select(sorted(found))
    return {target: found[path] for path, target in owned.items()}


def _size(io: FileIO, location: str) -> int:
    try:
        return io.size(location)
    except (OSError, TypeError, UnsupportedFeatureError):  # already gone (pyarrow reports no size for a missing file), or unreadable here
        return 0
