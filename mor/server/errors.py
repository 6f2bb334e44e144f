"""Errors as the REST spec answers them: an HTTP status and the `ErrorModel`
`{"error": {"message", "type", "code"}}`, whose `type` names the Iceberg exception a client
raises (clients choose their exception by the status code, and show the type and message).

A mor error says what happened in terms of tables; `error_response` translates it. Anything
else that escapes a handler is a bug of ours: it is logged with its traceback, and the client
gets a generic 500 naming a reference to find the log line, never the traceback itself.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from mor.errors import (
    CatalogUnavailableError,
    CommitConflictError,
    CommitStateUnknownError,
    ConstraintViolationError,
    CorruptMetadataError,
    ForbiddenError,
    InvalidArgumentError,
    InvalidFilterError,
    InvalidMetadataError,
    MaintenanceRefusedError,
    MorError,
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NoSuchNamespaceError,
    NoSuchTableError,
    NoSuchViewError,
    NotAuthorizedError,
    SchemaMismatchError,
    StorageError,
    TableAlreadyExistsError,
    UnsupportedFeatureError,
    ViewAlreadyExistsError,
)
from mor.format.requirements import CommitFailedError

log = logging.getLogger("mor.server")


class RestError(Exception):
    """An answer of the protocol's own (not a mor error): its status and ErrorModel type."""

    status = 500
    type = "InternalServerError"


class BadRequestError(RestError):
    status, type = 400, "BadRequestException"


class RouteNotFoundError(RestError):
    status, type = 404, "NotFoundException"


class MethodNotAllowedError(RestError):
    status, type = 405, "MethodNotAllowedException"


class PayloadTooLargeError(RestError):
    status, type = 413, "PayloadTooLargeException"


class UnprocessableEntityError(RestError):
    status, type = 422, "UnprocessableEntityException"


# Most specific first: the first class the error is an instance of decides.
_MOR_ERRORS: list[tuple[type[BaseException], int, str]] = [
    (NoSuchTableError, 404, "NoSuchTableException"),
    (NoSuchNamespaceError, 404, "NoSuchNamespaceException"),
    (NoSuchViewError, 404, "NoSuchViewException"),
    (ViewAlreadyExistsError, 409, "AlreadyExistsException"),
    (TableAlreadyExistsError, 409, "AlreadyExistsException"),
    (NamespaceAlreadyExistsError, 409, "AlreadyExistsException"),
    (NamespaceNotEmptyError, 409, "NamespaceNotEmptyException"),
    (CommitFailedError, 409, "CommitFailedException"),
    (CommitConflictError, 409, "CommitFailedException"),
    (MaintenanceRefusedError, 409, "MaintenanceRefusedException"),
    (NotAuthorizedError, 401, "NotAuthorizedException"),  # the library's own errors: one tree
    (ForbiddenError, 403, "ForbiddenException"),
    # The spec's answer for a commit whose outcome is unknown: the client must not clean up.
    (CommitStateUnknownError, 500, "CommitStateUnknownException"),
    (CatalogUnavailableError, 503, "ServiceUnavailableException"),
    (ConstraintViolationError, 400, "ConstraintViolationException"),
    (InvalidArgumentError, 400, "BadRequestException"),
    (InvalidFilterError, 400, "BadRequestException"),
    (SchemaMismatchError, 400, "BadRequestException"),
    (UnsupportedFeatureError, 406, "UnsupportedOperationException"),
    (CorruptMetadataError, 500, "CorruptMetadataException"),
    (StorageError, 500, "StorageException"),
]


def error_body(status: int, type_: str, message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": type_, "code": status}}


def error_response(error: BaseException) -> tuple[int, dict[str, Any]]:
    """(status, ErrorModel body) for an error a handler raised."""
    if isinstance(error, RestError):
        return error.status, error_body(error.status, error.type, str(error))
    if isinstance(error, InvalidMetadataError):  # the type Iceberg Java's metadata builder throws
        return 400, error_body(400, error.java_type, str(error))
    if isinstance(error, MorError):
        for cls, status, type_ in _MOR_ERRORS:
            if isinstance(error, cls):
                if status >= 500:
                    log.warning("%s: %s", type_, error)
                return status, error_body(status, type_, str(error))
    reference = uuid.uuid4().hex[:12]
    log.error("unexpected error (reference %s)", reference, exc_info=error)
    return 500, error_body(500, "InternalServerError", f"internal server error; the server log has the details (reference {reference})")
