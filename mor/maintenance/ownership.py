"""What maintenance may delete: the table's own files, and nothing else.

Expiry, orphan removal and a purging drop delete a file only when all of these hold:
- it lies under the table's location. Locations are compared in one normalised form (`place`):
  `file:/a`, `file:///a`, `file://localhost/a` and `/a` are one path; `//`, `.`, `..` and a
  trailing slash collapse; object storage locations take their store's one spelling
  (mor/io/stores.py: `s3a://` and `s3n://` are `s3://`, `gcs://` is `gs://`, `wasbs://c@a.blob.*`
  is `abfss://c@a.dfs.*`, Azure hosts lowercased). Percent-escapes are decoded for
  the comparison, but the file system does not decode them, so the spelling as written must
  lie under the location too;
- no symbolic link lies between the location and the file (the file included): a link may
  point anywhere, at another table or the user's home;
- it is not the catalog database (`catalog.db` and its `-wal`, `-journal`, `-shm` files);
- it lies under no other table's location (as spelled, or with links resolved), and no other
  table of the catalog references it.
Two tables at one location share every file: expiry and orphan removal of either refuse
(MaintenanceRefusedError) rather than guess whose a file is. A table whose folder holds
another's refuses orphan removal (the listing would take in the inner table's files, its
commits in flight among them); its expiry goes on, and never deletes under the inner
table's location. The inner table is maintained as usual: the outer one's files are not in its
folder, except those it references, which are never deleted. A local file is deleted by its
normalised path, never by a spelling the file system would read another way (`file://host/a`
is the relative path `host/a` to it).

Where another table's folder is (whether a new or registered table may take a location,
`overlaps` and `same_file`; which folders maintenance protects or refuses to run beside) is
judged on the spellings storage reads (`storage_forms`): percent-escapes as written, so
`a%2Eb.db/t` and `a.b.db/t` are two folders, two tables, each maintained on its own. A file this
table would delete must still lie under its location both decoded and as written.
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from urllib.parse import unquote

from mor.catalog.metadata_files import read_metadata
from mor.errors import MaintenanceRefusedError, MorError
from mor.format.metadata import TableMetadata
from mor.io.fileio import FileIO
from mor.io.stores import object_prefix
from mor.maintenance.reachable import referenced_locations

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):(.*)$", re.DOTALL)
DATABASE_SUFFIXES = ("", "-wal", "-journal", "-shm")  # SQLite's files beside its database
DATABASE_NAME = "catalog.db"  # the SQL catalog's database in its warehouse, unless told otherwise


@dataclass(frozen=True)
class Place:
    """A location to compare: `prefix` is '' for a local path, an object store's canonical
    bucket or container (`s3://bucket`, `gs://bucket`, `abfss://container@host`), or a scheme
    and authority mor does not read (`file://host`, `hdfs://nn`); `path` is normalised."""

    prefix: str
    path: str

    def holds(self, other: Place) -> bool:
        """Is `other` this place or under it?"""
        if self.prefix != other.prefix:
            return False
        return other.path == self.path or other.path.startswith(self.path.rstrip("/") + "/")

    def __str__(self) -> str:
        return self.prefix + self.path


def place(location: str, decode: bool = True) -> Place:
    """`location` in the one form locations are compared in (module docstring)."""
    prefix, path = _split(location)
    if decode:
        path = unquote(path)
    path = posixpath.normpath(re.sub("/+", "/", path)) if path else "/"
    return Place(prefix, path)


def _split(location: str) -> tuple[str, str]:
    match = _SCHEME.match(location)
    if match is None:
        return "", location
    scheme, rest = match.group(1).lower(), match.group(2)
    if not rest.startswith("//"):  # file:/a, Hadoop's spelling
        return ("" if scheme == "file" else f"{scheme}:"), rest
    authority, slash, path = rest[2:].partition("/")
    if scheme == "file" and authority.lower() in ("", "localhost"):
        return "", slash + path
    store_prefix = object_prefix(scheme, authority)
    if store_prefix is not None:
        return store_prefix, slash + path
    return f"{scheme}://{authority}", slash + path


def keys(location: str) -> set[str]:
    """The spellings a file is matched by: decoded and as written, both normalised."""
    return {str(place(location)), str(place(location, decode=False))}


def location_forms(location: str) -> list[Place]:
    """A folder's places: decoded, as written, and (local) with symbolic links resolved."""
    forms = [place(location), place(location, decode=False)]
    if forms[1].prefix == "" and forms[1].path.startswith("/"):
        forms.append(Place("", os.path.realpath(forms[1].path)))
    return forms


def storage_forms(location: str) -> list[Place]:
    """The places storage reads a location as: as written (normalised: `//`, `.`, `..` and the
    `file:` spellings), and locally with symbolic links resolved, after collapsing `..` (as
    Hadoop's Path does) and as the operating system walks it (a link, then `..` out of where it
    points). Percent-escapes stay: no file system or object store decodes them, so `a%2Eb` and
    `a.b` are two folders."""
    literal, walked = place(location, decode=False), walked_place(location)
    if walked is None:
        return [literal]
    return list(dict.fromkeys([literal, Place("", os.path.realpath(literal.path)), walked]))


def walked_place(location: str) -> Place | None:
    """A local absolute location as the operating system walks it: each symbolic link resolved
    where it stands, so `link/..` is the folder above the link's target. None for any other."""
    path = system_path(location)
    return None if path is None else Place("", os.path.realpath(path))


def system_path(location: str) -> str | None:
    """A local absolute location as the path the system is given (`.` and `..` left for it to
    walk); None for any other."""
    prefix, path = _split(location)
    if prefix or not path.startswith("/"):
        return None
    return re.sub("/+", "/", path)


def overlaps(a: str, b: str) -> bool:
    """Are table locations `a` and `b` the same folder, or one inside the other, as storage
    reads them? (Whether two tables may be created or registered there; maintenance compares
    decoded spellings too, `_relation`.)"""
    return any(p.holds(q) or q.holds(p) for p in storage_forms(a) for q in storage_forms(b))


def same_file(a: str, b: str) -> bool:
    """Do locations `a` and `b` name one file, as storage reads them?"""
    return not set(storage_forms(a)).isdisjoint(storage_forms(b))


def database_files(database: str) -> list[str]:
    """A SQLite database and the files SQLite keeps beside it."""
    return [database + suffix for suffix in DATABASE_SUFFIXES]


def touched(location: str, files: Iterable[str], holding: bool = True) -> str | None:
    """The first of `files` that the folder `location` is, or a path through, or (with
    `holding`) a folder holding, in any spelling (decoded ones too): a folder made there would
    replace the file, fail, or take the file in. None when it touches none."""
    ours = location_forms(location) + storage_forms(location)  # once for every file
    for file in files:
        theirs = location_forms(file) + storage_forms(file)
        if any(q.holds(p) or (holding and p.holds(q)) for p in ours for q in theirs):
            return file
    return None


def _relation(ours: str, theirs: str) -> tuple[bool, bool, bool]:
    """(same folder, theirs inside ours, ours inside theirs), in any of the spellings storage
    reads the locations in."""
    pairs = [(p, q) for p in storage_forms(ours) for q in storage_forms(theirs)]
    same = any(p.holds(q) and q.holds(p) for p, q in pairs)
    inner = not same and any(p.holds(q) for p, q in pairs)
    outer = not same and any(q.holds(p) for p, q in pairs)
    return same, inner, outer


def table_place(location: str, refusal: Callable[[str], MaintenanceRefusedError]) -> Place:
    """The table location, normalised; refused when mor cannot list it."""
    where = place(location)
    if where.prefix and object_prefix(*where.prefix.split("://", 1)) == where.prefix:
        return where
    if where.prefix or not where.path.startswith("/"):
        raise refusal(f"its location {location!r} is neither an absolute local path nor object storage (s3://, gs://, abfss://)")
    return where


@dataclass(frozen=True)
class OtherTable:
    """Another table of the catalog: its name and current metadata file."""

    name: str
    metadata_location: str


@dataclass(frozen=True)
class CatalogView:
    """What maintenance of one table must know of the rest of its catalog, read when it runs:
    `others()` lists the other tables; `database` is the catalog's SQLite file, if any."""

    others: Callable[[], list[OtherTable]]
    database: str | None = None


# What a maintenance operation refuses to run beside (Ownership's `refuse`).
REFUSE_SAME = "same"  # another table at this location
REFUSE_SAME_OR_INNER = "same-or-inner"  # ... or inside it
REFUSE_NONE = "none"  # a purge: only skips the files that are not the table's own


class Ownership:
    """Which files maintenance of the table at `location` may delete (module docstring).
    `refuse`: which other tables make it MaintenanceRefusedError (the REFUSE_* constants)."""

    def __init__(self, io: FileIO, identifier: str, location: str, view: CatalogView | None, what: str, refuse: str = REFUSE_SAME):
        self.io, self.identifier, self.what = io, identifier, what
        self.location = table_place(location, self.refusal)
        self.literal = place(location, decode=False)
        self.local = self.location.prefix == ""
        self.real = os.path.realpath(self.literal.path) if self.local else None
        self._others = _read_others(io, view, self.refusal)
        self.protected: list[Place] = []  # folders and files that are not ours
        for name, metadata, _ in self._others:
            same, inner, outer = _relation(location, metadata.location)
            if (same and refuse != REFUSE_NONE) or (inner and refuse == REFUSE_SAME_OR_INNER):
                where = "is the same as" if same else "holds"
                raise self.refusal(
                    f"its location {location} {where} table {name}'s location {metadata.location}, so their files "
                    f"cannot be told apart; give each table a folder of its own (or drop one of them)"
                )
            if not outer:  # a folder holding ours is not protected whole: its references are
                self.protected += storage_forms(metadata.location)
        if view is not None and view.database:
            for suffix in DATABASE_SUFFIXES:
                self.protected += [place(view.database + suffix), Place("", os.path.realpath(view.database + suffix))]
        self._referenced: set[str] | None = None

    def refusal(self, reason: str) -> MaintenanceRefusedError:
        return MaintenanceRefusedError(f"{self.what} of {self.identifier} refused, nothing was deleted: {reason}")

    def target(self, location: str) -> str | None:
        """The path to delete `location` by, when the rules of location make it the table's
        own (references by other tables aside: `select`); None when it is not."""
        decoded, literal = place(location), place(location, decode=False)
        if not (self.location.holds(decoded) and self.literal.holds(literal)):
            return None
        forms = [decoded, literal]
        if self.local:
            if _through_link(self.literal.path, literal.path):
                return None
            forms.append(Place("", os.path.normpath(os.path.join(self.real or "", os.path.relpath(literal.path, self.literal.path)))))
        if any(p.holds(f) for p in self.protected for f in forms[1:]):  # as storage reads it (`storage_forms`)
            return None
        return literal.path if self.local else self.io.path(location)

    def select(self, locations: Iterable[str]) -> tuple[dict[str, str], list[str]]:
        """The files of `locations` this table owns (location as given -> path to delete) and
        the rest (skipped), other tables' references read only when something could go."""
        owned: dict[str, str] = {}
        skipped: list[str] = []
        for location in locations:
            target = self.target(location)
            if target is None:
                skipped.append(location)
            else:
                owned[location] = target
        if owned:
            referenced = self.referenced_by_others()
            for location in [loc for loc, target in owned.items() if (keys(loc) | keys(target)) & referenced]:
                skipped.append(location)
                del owned[location]
        return owned, skipped

    def referenced_by_others(self) -> set[str]:
        """The keys of every file another table of the catalog references."""
        if self._referenced is None:
            found: set[str] = set()
            for name, metadata, metadata_location in self._others:
                try:
                    spelled = referenced_locations(self.io, metadata, metadata_location)
                except (MorError, OSError) as e:
                    raise self.refusal(f"cannot read the files table {name} references ({e}); repair or drop it first") from e
                for location in spelled:
                    found |= keys(location)
            self._referenced = found
        return self._referenced


def _read_others(
    io: FileIO, view: CatalogView | None, refusal: Callable[[str], MaintenanceRefusedError]
) -> list[tuple[str, TableMetadata, str]]:
    """(name, metadata, metadata location) of the other tables; refused when one cannot be read,
    as its files could not be told from ours."""
    out: list[tuple[str, TableMetadata, str]] = []
    for other in view.others() if view is not None else []:
        try:
            out.append((other.name, read_metadata(io, other.metadata_location), other.metadata_location))
        except (MorError, OSError) as e:
            raise refusal(f"cannot read table {other.name}'s metadata to tell its files from ours ({e}); repair or drop it first") from e
    return out


def _through_link(folder: str, path: str) -> bool:
    """Is any part of `path` below `folder` (the file itself included) a symbolic link?"""
    current = folder
    for part in os.path.relpath(path, folder).split(os.sep):
        current = os.path.join(current, part)
        if os.path.islink(current):
            return True
    return False
