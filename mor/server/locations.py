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
