"""What lies inside the warehouse: the only place the server writes, and the only files it
adopts.

The server writes metadata files under a table's location, and a purging drop deletes files
there. A client that could choose any location (`create` with `location=/home/...`, a
`set-location` update, `register` of a metadata file naming another folder) could make the
server write or delete files anywhere its process may. So a location a client gives must lie
strictly inside the warehouse, in every spelling a file system or object store might read it
(mor/maintenance/ownership.py's forms: percent-escapes decoded and as written, `.` and `..`
collapsed, and locally with symbolic links resolved, before and after `..`); otherwise
ForbiddenError (403).

The warehouse also holds the server's own state: the SQLite catalog database `catalog.db` and
the files SQLite makes beside it while it writes (`-journal`, `-wal`, `-shm`). A folder made at
one of those names (a table's `metadata/`) stops SQLite from writing, for every client, until
someone removes it by hand; a location through the database file cannot be made at all. So no
location may be, hold or lie in one of them (403; the catalog refuses its actual database file
wherever it is, `Catalog.check_location`). A table or view location must also be able to become
a folder: one that is, or passes through, a file (a data file, another table's metadata file)
is refused (400) before anything is made.
"""

from __future__ import annotations

import os

from mor.errors import ForbiddenError
from mor.io.fileio import is_object_store, to_uri
from mor.maintenance.ownership import DATABASE_NAME, database_files, location_forms, place, system_path, touched, walked_place
from mor.server.errors import BadRequestError


def normal_location(location: object, what: str) -> str:
    """A location as a client gave it, in the spelling mor writes: URIs as given (no trailing
    slash), an absolute local path as a `file:///` URI; a relative path is refused."""
    if not isinstance(location, str) or not location.strip():
        raise BadRequestError(f"{what} is a folder URI, got {location!r}")
    location = location.rstrip("/")
    if is_object_store(location) or location.startswith("file:"):
        return location
    if "://" in location:
        raise ForbiddenError(
            f"{what} {location} is neither a local path nor object storage (s3://, gs://, abfss://): "
            "the server writes only inside its warehouse"
        )
    if not os.path.isabs(location):
        raise BadRequestError(f"{what} is an absolute path or URI, got {location!r}")
    return to_uri(location)


def check_inside(warehouse: str, location: str, what: str, folder: bool = True) -> None:
    """ForbiddenError unless `location` lies strictly inside `warehouse` in every form, clear of
    the catalog database's files; with `folder` (a table or view location, not a file),
    BadRequestError unless it can be a folder."""
    outer, inner = location_forms(warehouse), location_forms(location)
    walked, walked_warehouse = walked_place(location), walked_place(warehouse)
    if walked is not None and walked_warehouse is not None:  # `link/..` is the folder above the link's target
        outer, inner = [*outer, walked_warehouse], [*inner, walked]
    if len(outer) != len(inner) or not all(o.holds(i) and o != i for o, i in zip(outer, inner)):
        raise ForbiddenError(f"{what} {location} is not inside the warehouse {warehouse}: the server writes only there")
    file = touched(location, server_files(warehouse))
    if file is not None:
        raise ForbiddenError(f"{what} {location} is, holds or lies in the catalog's own file {file}: the server keeps its state there")
    if folder:
        check_can_be_folder(location, what)


def server_files(warehouse: str) -> list[str]:
    """The server's own files in the warehouse: the SQLite catalog database at its usual name,
    when there is one, and SQLite's files beside it (present only while it writes)."""
    where = place(warehouse, decode=False)
    if where.prefix or not os.path.lexists(os.path.join(where.path, DATABASE_NAME)):
        return []  # object storage, or a catalog database elsewhere (the catalog refuses its own)
    return database_files(os.path.join(where.path, DATABASE_NAME))


def check_can_be_folder(location: str, what: str) -> None:
    """BadRequestError when the local `location` is, or passes through, something other than a
    folder (a data file, a metadata file, a link leading nowhere): making its folder would fail."""
    path = system_path(location)
    if path is None:
        return  # object storage has no folders
    while not os.path.lexists(path):  # the nearest part that exists, as the system walks it
        path = os.path.dirname(path)
    if not os.path.isdir(path):
        raise BadRequestError(f"{what} {location} cannot be a folder: {path} is not one")


def warehouse_name(warehouse: str) -> str:
    """The short name of a warehouse: the last folder of its location."""
    return warehouse.rstrip("/").rsplit("/", 1)[-1]


def warehouse_names(warehouse: str, prefix: str | None) -> list[str]:
    """The names a client may give the served warehouse (`?warehouse=` of /v1/config): its
    location as a URI or, locally, as a path, the last folder of that location, and the
    server's prefix when it has one."""
    location = warehouse.rstrip("/")
    names = [location, warehouse_name(location)]
    if location.startswith("file://"):
        names.append(location.removeprefix("file://"))
    if prefix:
        names.append(prefix)
    return list(dict.fromkeys(names))


def check_warehouse(asked: str, warehouse: str, prefix: str | None) -> None:
    """BadRequestError unless `asked` names the served warehouse: a mistyped name must not
    silently reach another warehouse's tables (or this one's, thought to be another's)."""
    names = warehouse_names(warehouse, prefix)
    spelled = asked.rstrip("/")
    if spelled in names or (not is_object_store(spelled) and "://" not in spelled and os.path.isabs(spelled) and to_uri(spelled) in names):
        return
    raise BadRequestError(f"this server does not serve warehouse {asked!r}; it serves {names[0]}, named any of {names}")
