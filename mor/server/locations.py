"""What lies inside the warehouse: the only place the server writes, and the only files it
adopts.

The server writes metadata files under a table's location, and a purging drop deletes files
there. A client that could choose any location (`create` with `location=/home/...`, a
`set-location` update, `register` of a metadata file naming another folder) could make the
server write or delete files anywhere its process may. So a location a client gives must lie
strictly inside the warehouse, in every spelling a file system or object store might read it
(mor/maintenance/ownership.py's forms: percent-escapes decoded and as written, `.` and `..`
collapsed, and locally with symbolic links resolved); otherwise ForbiddenError (403).
"""

from __future__ import annotations

import os

from mor.io.fileio import is_object_store, to_uri
from mor.maintenance.ownership import location_forms
from mor.server.errors import BadRequestError, ForbiddenError


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


def check_inside(warehouse: str, location: str, what: str) -> None:
    """ForbiddenError unless `location` lies strictly inside `warehouse` in every form."""
    outer, inner = location_forms(warehouse), location_forms(location)
    if len(outer) != len(inner) or not all(o.holds(i) and o != i for o, i in zip(outer, inner)):
        raise ForbiddenError(f"{what} {location} is not inside the warehouse {warehouse}: the server writes only there")


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
