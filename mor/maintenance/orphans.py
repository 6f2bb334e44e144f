"""Orphan files: files under a table's location that no metadata references.

A writer killed mid-commit (or a Spark task whose result was discarded) leaves files no
snapshot names. They are found by listing the table location and subtracting everything the
table can still reach (mor/maintenance/reachable.py), both compared in one normalised form
(mor/maintenance/ownership.py). Only files older than a threshold are removed, so the files of
a commit in flight (which are new) are never touched, and only files the table owns: the
listing never enters a symbolic link, and the catalog database, other tables' folders and files
other tables reference stay (`skipped_paths`). If any metadata cannot be read, nothing is
removed: an unreadable manifest would hide live files. A file the metadata names with another
scheme or authority than the listing found it under (Iceberg's prefix mismatch) is an error, as
in Iceberg's DeleteOrphanFiles by default: the table would otherwise lose its live files.
"""

from __future__ import annotations

import datetime as dt
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass

import pyarrow.fs as pafs

from mor.errors import InvalidArgumentError
from mor.format.metadata import TableMetadata
from mor.io.fileio import FileIO, listed_location
from mor.io.stores import parse_object_location
from mor.maintenance.ownership import Ownership, Place, keys, place
from mor.maintenance.reachable import referenced_locations
from mor.progress import Progress

DEFAULT_MIN_AGE = dt.timedelta(days=3)  # as Iceberg's remove_orphan_files
VERSION_HINT = "version-hint.text"  # Hadoop tables' pointer: named by no metadata, yet live


def reachable_files(io: FileIO, metadata: TableMetadata, metadata_location: str) -> set[str]:
    """Every file the table's metadata references, as local paths (or s3://bucket/key)."""
    return {io.path(f) for f in referenced_locations(io, metadata, metadata_location)}


@dataclass(frozen=True)
class ListedFile:
    path: str
    size: int
    mtime_ns: int | None


def list_files(io: FileIO, where: Place) -> tuple[list[ListedFile], list[str]]:
    """The regular files under `where`, and the symbolic links met there: never followed, as a
    link may point anywhere (another table, the user's home)."""
    if where.prefix:  # object storage has no links
        return [ListedFile(i.path, i.size or 0, i.mtime_ns) for i in io.list_files(str(where))], []
    files: list[ListedFile] = []
    links: list[str] = []
    for root, folders, names in os.walk(where.path, followlinks=False):
        links += [os.path.join(root, f) for f in folders if os.path.islink(os.path.join(root, f))]
        for name in names:
            path = os.path.join(root, name)
            try:
                info = os.lstat(path)
            except FileNotFoundError:  # removed meanwhile
                continue
            if stat.S_ISLNK(info.st_mode):
                links.append(path)
            elif stat.S_ISREG(info.st_mode):
                files.append(ListedFile(path, info.st_size, info.st_mtime_ns))
    return files, links


def list_top(io: FileIO, where: Place, max_depth: int, min_folders: int) -> tuple[list[ListedFile], list[str], list[Place]]:
    """The top of the listing of `where`, level by level until it meets `min_folders` folders
    (or `max_depth` levels, or no folder): the files and symbolic links met, and the folders of
    the last level, whose own listings (`list_files`) complete it. A distributed caller lists
    those folders in parallel."""
    files: list[ListedFile] = []
    links: list[str] = []
    folders = [where]
    for _ in range(max_depth):
        below: list[Place] = []
        for folder in folders:
            found, linked, inner = _list_one_level(io, folder)
            files += found
            links += linked
            below += inner
        folders = below
        if len(folders) >= min_folders or not folders:
            break
    return files, links, folders


def _list_one_level(io: FileIO, where: Place) -> tuple[list[ListedFile], list[str], list[Place]]:
    if where.prefix:  # object storage: the keys directly under a prefix, and its sub-prefixes
        fs, path = io.resolve(str(where))
        selector = pafs.FileSelector(path.rstrip("/"), recursive=False, allow_not_found=True)
        infos = fs.get_file_info(selector)
        root = parse_object_location(str(where))
        bucket_path = lambda i: listed_location(root, i.path)  # noqa: E731
        files = [ListedFile(bucket_path(i), i.size or 0, i.mtime_ns) for i in infos if i.type == pafs.FileType.File]
        inner = [Place(where.prefix, where.path.rstrip("/") + "/" + i.base_name) for i in infos if i.type == pafs.FileType.Directory]
        return files, [], inner
    files, links, inner = [], [], []
    try:
        entries = list(os.scandir(where.path))
    except FileNotFoundError:  # removed meanwhile
        return [], [], []
    for entry in entries:
        try:
            info = entry.stat(follow_symlinks=False)
        except FileNotFoundError:
            continue
        if stat.S_ISLNK(info.st_mode):
            links.append(entry.path)
        elif stat.S_ISDIR(info.st_mode):
            inner.append(Place("", entry.path))
        elif stat.S_ISREG(info.st_mode):
            files.append(ListedFile(entry.path, info.st_size, info.st_mtime_ns))
    return files, links, inner


@dataclass(frozen=True)
class Orphans:
    """Orphans the table owns (path -> size), and unreferenced files it does not own."""

    owned: dict[str, int]
    skipped: list[str]


def orphan_files(io: FileIO, metadata: TableMetadata, metadata_location: str, older_than: dt.datetime, ownership: Ownership) -> Orphans:
    """Unreferenced files under the table location last modified before `older_than`: those the
    table owns, with their sizes, and those it does not."""
    referenced = referenced_locations(io, metadata, metadata_location)
    listed, links = list_files(io, ownership.literal)
    return select_orphans(referenced, listed, links, older_than, ownership)


def select_orphans(
    referenced: set[str], listed: list[ListedFile], links: list[str], older_than: dt.datetime, ownership: Ownership
) -> Orphans:
    """The orphans among the `listed` files (and the `links` met listing), given every location
    the metadata `referenced`: however they were found, on one machine or many."""
    live = set().union(*(keys(f) for f in referenced))
    unreferenced = [f for f in listed if not keys(f.path) & live and os.path.basename(f.path) != VERSION_HINT]
    _check_prefixes(referenced, unreferenced, ownership)
    cutoff_ns = int(older_than.timestamp() * 1e9)  # a naive datetime is local time, as everywhere in Python
    old = {f.path: f.size for f in unreferenced if f.mtime_ns is not None and f.mtime_ns < cutoff_ns}
    owned, skipped = ownership.select(sorted(old))
    return Orphans({target: old[path] for path, target in sorted(owned.items())}, sorted(skipped + links))


def _check_prefixes(referenced: Iterable[str], unreferenced: list[ListedFile], ownership: Ownership) -> None:
    """MaintenanceRefusedError when a listed file is one the metadata names under another scheme
    or authority (`file://host/...` for a local file, another bucket): the spellings differ, so
    the file looks unreferenced, yet it is the table's (Iceberg's PrefixMismatchMode.ERROR)."""
    foreign: dict[str, str] = {}
    for location in referenced:
        where = place(location)
        if where.prefix != ownership.location.prefix:
            foreign.setdefault(where.path, location)
    for f in unreferenced:
        spelled = foreign.get(place(f.path).path)
        if spelled is not None:
            raise ownership.refusal(
                f"{f.path} lies under the table location, but the metadata names it {spelled}, with another scheme or "
                "authority (a prefix mismatch): repair the metadata's locations first"
            )


class OrphanResult(list):
    """The paths `remove_orphan_files` removed (with `dry_run`, would remove), sorted: a list,
    as this call returned before it had a result object, plus what it adds up to.
    `skipped_paths`: unreferenced files old enough that were left because the table does not
    own them (symbolic links, the catalog database, files of other tables)."""

    def __init__(self, paths: Iterable[str], removed_bytes: int, dry_run: bool = False, skipped_paths: Iterable[str] = ()):
        super().__init__(paths)
        self.removed_bytes = removed_bytes
        self.dry_run = dry_run
        self.skipped_paths = tuple(skipped_paths)

    @property
    def removed_files(self) -> int:
        return len(self)

    def to_dict(self) -> dict[str, object]:
        return {
            "removed_files": len(self),
            "removed_bytes": self.removed_bytes,
            "dry_run": self.dry_run,
            "paths": list(self),
            "skipped_paths": list(self.skipped_paths),
        }


def remove_orphans(
    io: FileIO,
    metadata: TableMetadata,
    metadata_location: str,
    older_than: dt.timedelta | dt.datetime,
    dry_run: bool,
    progress: Progress,
    ownership: Ownership,
) -> OrphanResult:
    """Find the orphans older than `older_than` (an age or a time) and delete them unless `dry_run`."""
    orphans = orphan_files(io, metadata, metadata_location, cutoff_time(older_than), ownership)
    if not dry_run:
        with progress.stage("delete orphan files", len(orphans.owned)) as step:
            for path in orphans.owned:
                io.delete(path)
                step.advance()
    return OrphanResult(orphans.owned, sum(orphans.owned.values()), dry_run, orphans.skipped)


def cutoff_time(older_than: dt.timedelta | dt.datetime) -> dt.datetime:
    """The time before which a file must have last changed to go: `older_than` ago, or it."""
    cutoff = dt.datetime.now(dt.UTC) - older_than if isinstance(older_than, dt.timedelta) else older_than
    if not isinstance(cutoff, dt.datetime):
        raise InvalidArgumentError(f"older_than must be a timedelta or a datetime, got {older_than!r}")
    return cutoff
