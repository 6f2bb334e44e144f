"""The catalog's routes: each REST operation as a plain function of the request's parts
(`Call`) returning a status and a JSON body, bound to one catalog (`Service`).

They hold no HTTP machinery (app.py reads bodies, checks tokens and turns errors into the
ErrorModel) and block freely: app.py runs them in a thread pool. /v1/config announces the
endpoints from the same table the routes are served from, so the list clients check before
calling (pyiceberg does) is exactly what is served.

Each operation also says what a token needs for it (auth.py's `Grant`), checked by app.py
before the handler runs: whether it writes (refused to a read-only token), and which
namespaces it touches (each must be in the token's scope): the path's, a rename's source and
destination, every table of a transaction, the namespace a create names. Every POST and DELETE
writes, except a metrics report (kept nowhere, it changes nothing). The decision rests on the
names in the request only, never on what exists, so a 403 says nothing about the catalog.
Listing namespaces is the one operation on a namespace a token may not hold: a token for `a.b`
may list under `a` (and the top), to find its own; every listing shows only namespaces in
scope and the levels that lead to them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mor.api.catalog import DEFAULT_PROPERTIES
from mor.api.sql_catalog import SqlCatalog
from mor.format.updates import TableCommit
from mor.server.auth import Grant
from mor.server.commits import Committer, TableChange
from mor.server.errors import BadRequestError
from mor.server.locations import check_warehouse
from mor.server.names import identifier_from_json, namespace_from_levels, namespace_from_path, table_from_path
from mor.server.namespaces import Namespaces
from mor.server.pages import page_request
from mor.server.tables import Tables
from mor.server.views import Views


@dataclass
class Call:
    """What a handler sees of a request."""

    params: dict[str, str]
    query: dict[str, str]
    headers: dict[str, str]
    grant: Grant  # what the request's token may do
    body: Any = None

    def namespace(self) -> str:
        return namespace_from_path(self.params["namespace"])

    def table(self) -> str:
        return table_from_path(self.params["table"])

    def view(self) -> str:
        return table_from_path(self.params["view"])

    def vend(self) -> bool:
        """Did the client ask for credentials with the table (`X-Iceberg-Access-Delegation`)?"""
        asked = self.headers.get("x-iceberg-access-delegation", "")
        return "vended-credentials" in [a.strip() for a in asked.split(",")]


TABLE_DEFAULT_PREFIX = "table-default."  # a catalog's properties for new tables, clients apply them
Answer = tuple[int, Any]
Handler = Callable[[Call], Answer]


def path_namespace(call: Call) -> list[str]:
    return [call.namespace()]


@dataclass
class Op:
    handler: Handler
    body: bool = False  # reads a JSON object body
    # Refused to a read-only token. True unless said otherwise, so an operation added without
    # thought is refused rather than let through.
    writes: bool = True
    # The namespaces the request reads or changes, each checked against the token's; None for
    # an operation on no namespace (config; listing namespaces filters by itself).
    touches: Callable[[Call], list[str]] | None = path_namespace


@dataclass
class Service:
    """The handlers, bound to one catalog."""

    catalog: SqlCatalog
    prefix: str | None = None
    namespaces: Namespaces = field(init=False)
    tables: Tables = field(init=False)
    reading_tables: Tables = field(init=False)  # what read-only tokens load tables with
    views: Views = field(init=False)
    committer: Committer = field(init=False)

    def __post_init__(self) -> None:
        self.namespaces = Namespaces(self.catalog)
        self.tables = Tables(self.catalog)
        # The same tables, vending credentials that only read (credentials.py): a read-only
        # token must not leave with keys that write.
        self.reading_tables = Tables(self.catalog)
        self.reading_tables.vendor = self.tables.vendor.read_only()
        self.views = Views(self.catalog)
        self.committer = Committer(
            self.catalog.store, self.catalog.io, self.catalog.warehouse, self.tables.default_location, self.catalog.check_unshared
        )

    def routes(self) -> dict[str, dict[str, Op]]:
        """Paths under `/v1/` (or `/v1/<prefix>/`) -> method -> operation."""
        return {
            "namespaces": {
                "GET": Op(self.list_namespaces, writes=False, touches=None),
                "POST": Op(self.create_namespace, body=True, touches=created_namespace),
            },
            "namespaces/{namespace}": {
                "GET": Op(self.load_namespace, writes=False),
                "HEAD": Op(self.namespace_exists, writes=False),
                "DELETE": Op(self.drop_namespace),
            },
            "namespaces/{namespace}/properties": {"POST": Op(self.update_namespace, body=True)},
            "namespaces/{namespace}/tables": {"GET": Op(self.list_tables, writes=False), "POST": Op(self.create_table, body=True)},
            "namespaces/{namespace}/tables/{table}": {
                "GET": Op(self.load_table, writes=False),
                "HEAD": Op(self.table_exists, writes=False),
                "POST": Op(self.commit_table, body=True),
                "DELETE": Op(self.drop_table),
            },
            "namespaces/{namespace}/tables/{table}/metrics": {"POST": Op(self.report_metrics, body=True, writes=False)},
            "namespaces/{namespace}/tables/{table}/credentials": {"GET": Op(self.load_credentials, writes=False)},
            "namespaces/{namespace}/register": {"POST": Op(self.register_table, body=True)},
            "tables/rename": {"POST": Op(self.rename_table, body=True, touches=renamed)},
            "namespaces/{namespace}/views": {"GET": Op(self.list_views, writes=False), "POST": Op(self.create_view, body=True)},
            "namespaces/{namespace}/views/{view}": {
                "GET": Op(self.load_view, writes=False),
                "HEAD": Op(self.view_exists, writes=False),
                "POST": Op(self.commit_view, body=True),
                "DELETE": Op(self.drop_view),
            },
            "views/rename": {"POST": Op(self.rename_view, body=True, touches=renamed)},
            "transactions/commit": {"POST": Op(self.commit_transaction, body=True, touches=transaction_namespaces)},
        }

    def endpoints(self) -> list[str]:
        """The served endpoints, as the spec spells them (`"GET /v1/{prefix}/namespaces"`)."""
        return [f"{method} /v1/{{prefix}}/{path}" for path, ops in self.routes().items() for method in ops]

    def config(self, call: Call) -> Answer:
        """Clients apply `defaults` under their own settings: mor's preferences for new tables
        as `table-default.*` (merge-on-read deletes), which the server never adds itself. A
        `warehouse` the client names must be the one served (locations.check_warehouse)."""
        asked = call.query.get("warehouse")
        if asked:  # none, or empty (DuckDB's ATTACH ''): the one warehouse served
            check_warehouse(asked, self.catalog.warehouse, self.prefix)
        overrides = {"prefix": self.prefix} if self.prefix else {}
        defaults = {f"{TABLE_DEFAULT_PREFIX}{k}": v for k, v in DEFAULT_PROPERTIES.items()}
        return 200, {"defaults": defaults, "overrides": overrides, "endpoints": self.endpoints()}

    # -- namespaces ----------------------------------------------------------------------------
    def list_namespaces(self, call: Call) -> Answer:
        parent = call.query.get("parent") or None  # the spec: an empty parent is no parent
        under = None if parent is None else namespace_from_path(parent)
        if under is not None:
            call.grant.check_listing(under)
        return 200, self.namespaces.list(under, call.grant.covers, page_request(call.query))

    def create_namespace(self, call: Call) -> Answer:
        return 200, self.namespaces.create(call.body)

    def load_namespace(self, call: Call) -> Answer:
        return 200, self.namespaces.load(call.namespace())

    def namespace_exists(self, call: Call) -> Answer:
        if not self.namespaces.exists(call.namespace()):
            return 404, None
        return 204, None

    def drop_namespace(self, call: Call) -> Answer:
        self.namespaces.drop(call.namespace())
        return 204, None

    def update_namespace(self, call: Call) -> Answer:
        return 200, self.namespaces.update_properties(call.namespace(), call.body)

    # -- tables --------------------------------------------------------------------------------
    def list_tables(self, call: Call) -> Answer:
        return 200, self.tables.list(call.namespace(), page_request(call.query))

    def create_table(self, call: Call) -> Answer:
        return 200, self.tables.create(call.namespace(), call.body, call.vend())

    def load_table(self, call: Call) -> Answer:
        return 200, self.tables_for(call).load(call.namespace(), call.table(), call.vend())

    def load_credentials(self, call: Call) -> Answer:
        return 200, self.tables_for(call).credentials(call.namespace(), call.table())

    def tables_for(self, call: Call) -> Tables:
        return self.reading_tables if call.grant.read_only else self.tables

    def table_exists(self, call: Call) -> Answer:
        return (204 if self.tables.exists(call.namespace(), call.table()) else 404), None

    def drop_table(self, call: Call) -> Answer:
        purge = call.query.get("purgeRequested", "false").lower()
        if purge not in ("true", "false"):
            raise BadRequestError(f"purgeRequested is true or false, got {purge!r}")
        self.tables.drop(call.namespace(), call.table(), purge == "true")
        return 204, None

    def register_table(self, call: Call) -> Answer:
        return 200, self.tables.register(call.namespace(), call.body, call.vend())

    def rename_table(self, call: Call) -> Answer:
        self.tables.rename(call.body)
        return 204, None

    def report_metrics(self, call: Call) -> Answer:
        return 204, None  # accepted and not kept: the server has no metrics store

    # -- views ---------------------------------------------------------------------------------
    def list_views(self, call: Call) -> Answer:
        return 200, self.views.list(call.namespace(), page_request(call.query))

    def create_view(self, call: Call) -> Answer:
        return 200, self.views.create(call.namespace(), call.body)

    def load_view(self, call: Call) -> Answer:
        return 200, self.views.load(call.namespace(), call.view())

    def view_exists(self, call: Call) -> Answer:
        return (204 if self.views.exists(call.namespace(), call.view()) else 404), None

    def commit_view(self, call: Call) -> Answer:
        return 200, self.views.commit(call.namespace(), call.view(), call.body)

    def drop_view(self, call: Call) -> Answer:
        self.views.drop(call.namespace(), call.view())
        return 204, None

    def rename_view(self, call: Call) -> Answer:
        self.views.rename(call.body)
        return 204, None

    # -- commits -------------------------------------------------------------------------------
    def commit_table(self, call: Call) -> Answer:
        namespace, name = call.namespace(), call.table()
        if call.body.get("identifier") is not None and identifier_from_json(call.body["identifier"], "identifier") != (namespace, name):
            raise BadRequestError("the body's identifier is not the table of the path")
        (done,) = self.committer.commit([TableChange(namespace, name, TableCommit.from_dict(call.body))])
        return 200, {"metadata-location": done.metadata_location, "metadata": done.metadata}

    def commit_transaction(self, call: Call) -> Answer:
        changes = table_changes(call.body)
        self.committer.commit([TableChange(namespace, name, TableCommit.from_dict(change)) for namespace, name, change in changes])
        return 204, None


def table_changes(body: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """A transaction's `table-changes`: (namespace, name, the change as sent) of each."""
    changes = body.get("table-changes")
    if not isinstance(changes, list) or not changes:
        raise BadRequestError("table-changes is a non-empty list of table commits")
    parsed = []
    for change in changes:
        if not isinstance(change, dict) or change.get("identifier") is None:
            raise BadRequestError("each table change has an identifier")
        parsed.append((*identifier_from_json(change["identifier"], "identifier"), change))
    return parsed


# -- the namespaces an operation touches (Op.touches), beyond the path's -------------------------
def created_namespace(call: Call) -> list[str]:
    return [namespace_from_levels(call.body.get("namespace"))]


def renamed(call: Call) -> list[str]:
    return [identifier_from_json(call.body.get(end), end)[0] for end in ("source", "destination")]


def transaction_namespaces(call: Call) -> list[str]:
    return [namespace for namespace, _, _ in table_changes(call.body)]


def paged(listing: dict[str, Any], key: str, query: dict[str, str]) -> dict[str, Any]:
    """One page of a whole listing `listing[key]` when the client asks for pages, as the
    listings above get theirs from the store (pages.py): the items after the token's, in name
    order, and `next-page-token` when more follow."""
    page = page_request(query)
    if page is None:
        return listing
    items = sorted(listing[key], key=_sort_key)
    if page.after is not None:
        items = [item for item in items if _sort_key(item) > page.after]
    return page.answer({**listing, key: items[: page.size]}, _sort_key(items[page.size - 1]) if len(items) > page.size else None)


def _sort_key(item: Any) -> list[str]:
    """A namespace's levels, or a table identifier's levels and name."""
    return [*item["namespace"], item["name"]] if isinstance(item, dict) else list(item)
