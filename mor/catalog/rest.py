"""The client side of an Iceberg REST catalog (Polaris, Lakekeeper, Glue, Unity, Nessie, `mor
serve`, ...).

pyiceberg's `RestCatalog` does the HTTP: configuration, OAuth2 and bearer tokens, SigV4,
namespace and identifier encoding. Table metadata is taken from the responses as raw JSON and
parsed by mor, so the keys mor does not model (refs' retention, statistics, keys of newer
specs) survive every commit. A commit is sent as mor's requirements + updates
(mor/format/updates.py); the server applies them on the table as it is then.

Errors, as the spec defines them: 409 on a commit is a lost race or failed requirement
(`CommitFailedError`: refresh, re-plan, retry); 500, 502, 503, 504, a timeout or a connection
lost after the request was sent are `CommitStateUnknownError` (never clean up); a connection
that could not be opened is `CatalogUnavailableError` (certainly not committed); 401 is
`NotAuthorizedError` (the credentials), 403 `ForbiddenError` (the server's permissions or policy).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import requests
from pyiceberg import exceptions as rest_errors
from pyiceberg.catalog.rest import Endpoints
from pyiceberg.catalog.rest import RestCatalog as PyIcebergRestCatalog
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table.sorting import SortOrder

from mor.catalog.listeners import committed
from mor.catalog.pyiceberg_rest import http_session, identifier_path, namespace_path
from mor.errors import (
    CatalogUnavailableError,
    CommitStateUnknownError,
    ConstraintViolationError,
    CorruptMetadataError,
    ForbiddenError,
    InvalidArgumentError,
    MorError,
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NoSuchNamespaceError,
    NoSuchTableError,
    NoSuchViewError,
    NotAuthorizedError,
    TableAlreadyExistsError,
    UnsupportedFeatureError,
    ViewAlreadyExistsError,
)
from mor.format.metadata import TableMetadata
from mor.format.requirements import CommitFailedError
from mor.format.updates import TableCommit

CONNECT_TIMEOUT_S = 10
READ_TIMEOUT_S = 120  # a commit on a busy server may wait for its database lock
_UNKNOWN_OUTCOME = {500, 502, 503, 504}


@dataclass(frozen=True)
class LoadedTable:
    """A table as the catalog answers for it: metadata, its file, and the storage
    configuration (vended credentials) to read and write it with."""

    metadata: TableMetadata
    metadata_location: str
    config: dict[str, str]


_PYICEBERG_ERRORS: dict[type[Exception], type[MorError]] = {
    rest_errors.NoSuchTableError: NoSuchTableError,
    rest_errors.NoSuchNamespaceError: NoSuchNamespaceError,
    rest_errors.NoSuchIdentifierError: NoSuchTableError,
    rest_errors.TableAlreadyExistsError: TableAlreadyExistsError,
    rest_errors.NamespaceAlreadyExistsError: NamespaceAlreadyExistsError,
    rest_errors.NamespaceNotEmptyError: NamespaceNotEmptyError,
    rest_errors.UnauthorizedError: NotAuthorizedError,
    rest_errors.ForbiddenError: ForbiddenError,
    rest_errors.OAuthError: NotAuthorizedError,
    rest_errors.AuthorizationExpiredError: NotAuthorizedError,
    rest_errors.BadRequestError: InvalidArgumentError,
    rest_errors.ServiceUnavailableError: CatalogUnavailableError,
    rest_errors.ServerError: CatalogUnavailableError,
    NotImplementedError: UnsupportedFeatureError,
}


@contextmanager
def _translated(what: str) -> Iterator[None]:
    """pyiceberg's and requests' errors as mor's, naming the operation."""
    try:
        yield
    except MorError:
        raise
    except requests.exceptions.RequestException as e:
        raise CatalogUnavailableError(f"{what}: the REST catalog could not be reached: {_reason(e)}") from None
    except Exception as e:
        for theirs, ours in _PYICEBERG_ERRORS.items():
            if isinstance(e, theirs):
                raise ours(f"{what}: {e}") from None
        if isinstance(e, rest_errors.RESTError):
            raise CatalogUnavailableError(f"{what}: {e}") from None
        raise


class RestCatalogClient:
    """One REST catalog, by its URI and properties as pyiceberg's `load_catalog` takes them
    (`warehouse`, `token`, `credential`, `scope`, `prefix`, `header.*`, ...)."""

    def __init__(self, name: str, uri: str, properties: dict[str, str]):
        properties = {**properties, "uri": uri}
        if ("token" in properties or "credential" in properties) and "oauth2-server-uri" not in properties:
            properties["oauth2-server-uri"] = f"{uri.rstrip('/')}/v1/{Endpoints.get_token}"
        with _translated(f"connecting to the REST catalog at {uri}"):
            self.rest = PyIcebergRestCatalog(name, **properties)
        self.uri = uri

    @property
    def properties(self) -> dict[str, str]:
        """The catalog's properties after the server's configuration (defaults and overrides)."""
        return {k: v for k, v in self.rest.properties.items() if isinstance(v, str)}

    # -- namespaces -------------------------------------------------------------------------
    def create_namespace(self, namespace: str, properties: dict[str, str] | None = None) -> None:
        with _translated(f"creating namespace {namespace}"):
            self.rest.create_namespace(_levels(namespace), properties or {})

    def namespace_exists(self, namespace: str) -> bool:
        with _translated(f"looking up namespace {namespace}"):
            return bool(self.rest.namespace_exists(_levels(namespace)))

    def list_namespaces(self) -> list[str]:
        """Every namespace, nested ones included."""
        found, todo = [], [()]
        with _translated("listing namespaces"):
            while todo:
                parent = todo.pop()
                for child in self.rest.list_namespaces(parent):
                    found.append(".".join(child))
                    todo.append(tuple(child))
        return sorted(found)

    def namespace_properties(self, namespace: str) -> dict[str, str]:
        with _translated(f"loading namespace {namespace}"):
            return dict(self.rest.load_namespace_properties(_levels(namespace)))

    def drop_namespace(self, namespace: str) -> None:
        with _translated(f"dropping namespace {namespace}"):
            self.rest.drop_namespace(_levels(namespace))

    # -- tables -----------------------------------------------------------------------------
    def list_tables(self, namespace: str) -> list[str]:
        with _translated(f"listing the tables of {namespace}"):
            return sorted(t[-1] for t in self.rest.list_tables(_levels(namespace)))

    def table_exists(self, namespace: str, name: str) -> bool:
        with _translated(f"looking up table {namespace}.{name}"):
            return bool(self.rest.table_exists((*_levels(namespace), name)))

    def load(self, namespace: str, name: str) -> LoadedTable:
        what = f"loading table {namespace}.{name}"
        response = self._send("GET", Endpoints.load_table, namespace, name, what=what, missing=NoSuchTableError)
        return _loaded(response, what)

    def create(
        self,
        namespace: str,
        name: str,
        schema: Schema,
        spec: PartitionSpec,
        sort_order: SortOrder,
        properties: dict[str, str],
        location: str | None,
    ) -> LoadedTable:
        what = f"creating table {namespace}.{name}"
        body = {
            "name": name,
            "schema": json.loads(schema.model_dump_json()),
            "partition-spec": json.loads(spec.model_dump_json()),
            "write-order": json.loads(sort_order.model_dump_json()),
            "properties": properties,
            "stage-create": False,
        }
        if location is not None:
            body["location"] = location
        response = self._send(
            "POST", Endpoints.create_table, namespace, body=body, what=what,
            missing=NoSuchNamespaceError, conflict=TableAlreadyExistsError,
        )  # fmt: skip
        return _loaded(response, what)

    def register(self, namespace: str, name: str, metadata_location: str) -> LoadedTable:
        what = f"registering table {namespace}.{name}"
        body = {"name": name, "metadata-location": metadata_location}
        response = self._send(
            "POST", Endpoints.register_table, namespace, body=body, what=what,
            missing=NoSuchNamespaceError, conflict=TableAlreadyExistsError,
        )  # fmt: skip
        return _loaded(response, what)

    def rename(self, source: tuple[str, str], destination: tuple[str, str]) -> None:
        with _translated(f"renaming table {'.'.join(source)} to {'.'.join(destination)}"):
            self.rest.rename_table((*_levels(source[0]), source[1]), (*_levels(destination[0]), destination[1]))

    def drop(self, namespace: str, name: str, purge: bool) -> None:
        with _translated(f"dropping table {namespace}.{name}"):
            self.rest.drop_table((*_levels(namespace), name), purge_requested=purge)

    def commit(self, namespace: str, name: str, change: TableCommit) -> tuple[TableMetadata, str]:
        """Send one commit; the metadata the server made and its location."""
        what = f"committing to table {namespace}.{name}"
        body = {"identifier": {"namespace": list(_levels(namespace)), "name": name}, **change.to_dict()}
        response = self._send("POST", Endpoints.update_table, namespace, name, body=body, what=what, is_commit=True)
        loaded = _loaded(response, what)
        return loaded.metadata, loaded.metadata_location

    # -- views ------------------------------------------------------------------------------
    # Answers as the protocol's LoadViewResult ({"metadata-location", "metadata", ...}).
    def list_views(self, namespace: str) -> list[str]:
        with _translated(f"listing the views of {namespace}"):
            return sorted(v[-1] for v in self.rest.list_views(_levels(namespace)))

    def load_view(self, namespace: str, name: str) -> dict[str, Any]:
        what = f"loading view {namespace}.{name}"
        return self._send("GET", Endpoints.load_view, namespace, name, what=what, missing=NoSuchViewError, kind="view")

    def create_view(self, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
        what = f"creating view {namespace}.{body.get('name')}"
        return self._send(
            "POST", Endpoints.create_view, namespace, body=body, what=what, missing=NoSuchNamespaceError, conflict=ViewAlreadyExistsError
        )

    def commit_view(self, namespace: str, name: str, body: dict[str, Any]) -> dict[str, Any]:
        what = f"committing to view {namespace}.{name}"
        return self._send("POST", Endpoints.load_view, namespace, name, body=body, what=what, missing=NoSuchViewError, kind="view")

    def rename_view(self, source: tuple[str, str], destination: tuple[str, str]) -> None:
        what = f"renaming view {'.'.join(source)} to {'.'.join(destination)}"
        body = {
            "source": {"namespace": list(_levels(source[0])), "name": source[1]},
            "destination": {"namespace": list(_levels(destination[0])), "name": destination[1]},
        }
        self._send("POST", "views/rename", None, body=body, what=what, missing=NoSuchViewError, conflict=ViewAlreadyExistsError)

    def drop_view(self, namespace: str, name: str) -> None:
        what = f"dropping view {namespace}.{name}"
        self._send("DELETE", Endpoints.drop_view, namespace, name, what=what, missing=NoSuchViewError, kind="view")

    # -- HTTP -------------------------------------------------------------------------------
    def _send(
        self,
        method: str,
        endpoint: str,
        namespace: str | None,
        name: str | None = None,
        *,
        body: dict[str, Any] | None = None,
        what: str,
        missing: type[MorError] = NoSuchTableError,
        conflict: type[MorError] | None = None,
        is_commit: bool = False,
        kind: str = "table",
    ) -> dict[str, Any]:
        rest = self.rest
        path = {} if namespace is None else namespace_path(rest, _levels(namespace))
        if namespace is not None and name is not None:
            path = identifier_path(rest, (*_levels(namespace), name), kind)
        url = rest.url(endpoint, prefixed=True, **path)
        data = None if body is None else json.dumps(body).encode()
        try:
            response = http_session(rest).request(method, url, data=data, timeout=(CONNECT_TIMEOUT_S, READ_TIMEOUT_S))
        except (requests.exceptions.ConnectTimeout, requests.exceptions.SSLError) as e:
            raise CatalogUnavailableError(f"{what}: the REST catalog at {self.uri} could not be reached: {_reason(e)}") from None
        except requests.exceptions.ConnectionError as e:
            if is_commit and not _never_connected(e):
                raise CommitStateUnknownError(f"{what}: the connection was lost after the commit was sent: {_reason(e)}") from None
            raise CatalogUnavailableError(f"{what}: the REST catalog at {self.uri} could not be reached: {_reason(e)}") from None
        except requests.exceptions.RequestException as e:  # a read timeout: the server may have committed
            if is_commit:
                raise CommitStateUnknownError(f"{what}: no answer in {READ_TIMEOUT_S} s: {_reason(e)}") from None
            raise CatalogUnavailableError(f"{what}: the REST catalog at {self.uri} did not answer: {_reason(e)}") from None
        if response.ok:
            if response.status_code == 204:
                return {}
            try:
                return dict(response.json())
            except ValueError:
                raise CorruptMetadataError(f"{what}: the REST catalog answered {response.status_code} with no JSON") from None
        message = _error_message(response)
        code = response.status_code
        if is_commit and code == 409:
            raise CommitFailedError(f"{what}: {message}")
        if is_commit and code in _UNKNOWN_OUTCOME:
            raise CommitStateUnknownError(f"{what}: the catalog answered {code}, the commit may or may not have happened: {message}")
        if code == 403:
            raise ForbiddenError(f"{what}: {message}")
        if code in (401, 419):
            raise NotAuthorizedError(f"{what}: {code} {message}")
        if code == 404:
            raise missing(f"{what}: {message}")
        if code == 409 and conflict is not None:
            raise conflict(f"{what}: {message}")
        if code == 400 and message.startswith("ConstraintViolationException:"):  # mor serve checked the rows
            raise ConstraintViolationError(f"{what}: {message}")
        if code in (400, 406, 422):
            raise InvalidArgumentError(f"{what}: {message}")
        raise CatalogUnavailableError(f"{what}: the REST catalog answered {code}: {message}")


def _levels(namespace: str) -> tuple[str, ...]:
    return tuple(namespace.split("."))


def _loaded(response: dict[str, Any], what: str) -> LoadedTable:
    location, metadata = response.get("metadata-location"), response.get("metadata")
    if not isinstance(location, str) or not isinstance(metadata, dict):
        raise CorruptMetadataError(f"{what}: the REST catalog's answer lacks metadata-location or metadata")
    try:
        parsed = TableMetadata.from_dict(metadata)
    except (CorruptMetadataError, UnsupportedFeatureError) as e:
        raise type(e)(f"{what}: the REST catalog sent table metadata mor cannot use: {e}") from None
    config = {k: v for k, v in (response.get("config") or {}).items() if isinstance(v, str)}
    for credential in response.get("storage-credentials") or ():  # the spec's newer form of vended credentials
        if isinstance(credential, dict) and str(location).startswith(str(credential.get("prefix", ""))):
            config.update({k: v for k, v in (credential.get("config") or {}).items() if isinstance(v, str)})
    return LoadedTable(parsed, location, config)


def _error_message(response: requests.Response) -> str:
    try:
        error = response.json().get("error") or {}
        return f"{error.get('type', 'error')}: {error.get('message', '')}".strip()
    except (ValueError, AttributeError):
        return response.text[:300] or response.reason


def _never_connected(e: requests.exceptions.ConnectionError) -> bool:
    """The connection was refused or never opened: the request was not sent."""
    text = repr(e)
    return any(marker in text for marker in ("NewConnectionError", "Connection refused", "Name or service not known", "ConnectTimeout"))


def _reason(e: BaseException) -> str:
    return " ".join(str(e).split())[:300]


@dataclass
class RestTableOperations:
    """TableOperations of one table of a REST catalog: a refresh is a loadTable, a commit sends
    the change and the server applies it."""

    client: RestCatalogClient
    namespace: str
    name: str

    def refresh(self) -> tuple[TableMetadata, str]:
        loaded = self.client.load(self.namespace, self.name)
        return loaded.metadata, loaded.metadata_location

    def commit(self, base: TableMetadata, base_location: str, change: TableCommit) -> tuple[TableMetadata, str]:
        metadata, location = self.client.commit(self.namespace, self.name, change)
        committed(metadata)
        return metadata, location
