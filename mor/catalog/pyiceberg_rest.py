"""What mor takes from pyiceberg's REST client beyond its public API: the HTTP session it keeps
signed in (OAuth2 tokens refreshed, `header.*` sent) and its way of writing a namespace or an
identifier into a URL path. mor sends the requests pyiceberg has no method for (commits with
their own timeouts, views) through that session, so these private names are read here alone
and pinned by tests/unit/catalog/test_pyiceberg_rest.py: a pyiceberg release that renames one
breaks this module, not the client."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import requests
    from pyiceberg.catalog.rest import RestCatalog


def http_session(rest: RestCatalog) -> requests.Session:
    """The signed-in session pyiceberg's client sends its own requests with."""
    session: requests.Session = rest._session
    return session


def namespace_path(rest: RestCatalog, levels: tuple[str, ...]) -> dict[str, Any]:
    """A namespace as the `{namespace}` of an endpoint's path."""
    return {"namespace": rest._encode_namespace_path(levels)}


def identifier_path(rest: RestCatalog, identifier: tuple[str, ...], kind: str) -> dict[str, Any]:
    """A table's or a view's identifier as the `{namespace}` and `{table}`/`{view}` of a path."""
    from pyiceberg.catalog.rest import IdentifierKind

    return dict(rest._split_identifier_for_path(identifier, IdentifierKind(kind)))
