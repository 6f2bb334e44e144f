"""Namespace operations of the REST protocol over mor's SQL catalog.

mor's namespaces are flat strings ("a.b"); the protocol's are hierarchical: listing under
`parent=a` answers the next level (["a", "b"]), and a level that exists only because a
namespace below it does ("a" when only "a.b" was created) is listed, loads with no
properties, and cannot be dropped while "a.b" exists. A listing sees only the namespaces its
token may (`visible`): the levels shown, and whether the parent exists, are computed from
those alone, so namespaces outside a token's scope neither show nor make a level show.

The SQL catalog marks a namespace created without properties by a row `exists=true` (as
pyiceberg's SqlCatalog does); that marker is the catalog's own and is neither shown nor
changeable here.

Listings come a page at a time (pages.py): the store walks the catalog's distinct namespaces in
byte order from the page's start (mor/catalog/listings.py), and `children_page` folds them
into the next level until it is sure of the page. Whether a namespace exists is two indexed
lookups (itself, and the first namespace below it). Neither reads every table's row.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from mor.api.sql_catalog import SqlCatalog
from mor.errors import NamespaceNotEmptyError, NoSuchNamespaceError
from mor.server.errors import BadRequestError, UnprocessableEntityError
from mor.server.names import check_new_names, namespace_from_levels, namespace_levels
from mor.server.pages import PageRequest

MARKER = "exists"
Visible = Callable[[str], bool]


class NamespaceNames(Protocol):
    """What of the catalog's store namespaces are looked up with (SqlCatalogStore's)."""

    def namespace_exists(self, namespace: str) -> bool: ...

    def namespace_names(self, lo: str = "", inclusive: bool = True, hi: str | None = None) -> Iterable[str]: ...


def namespace_known(store: NamespaceNames, namespace: str, visible: Visible = lambda namespace: True) -> bool:
    """Is `namespace` created or holding tables, or a level above one that is (among the
    namespaces `visible`)?"""
    if visible(namespace) and store.namespace_exists(namespace):
        return True
    return any(visible(n) for n in store.namespace_names(namespace + ".", True, namespace + "/"))


def children_page(names: Iterable[str], prefix: str, after: str | None, limit: int | None, visible: Visible) -> tuple[list[str], bool]:
    """The next level under `prefix` ("" or a namespace and "."): the first `limit` (None: all)
    levels after `after`, in byte order, of the `visible` namespaces among `names` (those from
    `prefix + after` on, in byte order, all beginning with `prefix`); and whether more follow.

    Levels do not come in order: "a" (from "a.x") follows "a-b" in the walk, as "." sorts after
    "-". A level first seen later is a prefix of one seen, followed there by a byte below ".", so
    the walk goes on until it has passed every such prefix's namespaces ("a/" for "a")."""
    found: list[str] = []  # sorted, at most limit + 1: the rest cannot enter the page
    for name in names:
        level = name[len(prefix) :].split(".", 1)[0]
        if (after is None or level > after) and visible(name):
            at = bisect.bisect_left(found, level)
            if at == len(found) or found[at] != level:
                found.insert(at, level)
                if limit is not None:
                    del found[limit + 1 :]
        if limit is not None and len(found) > limit and name >= _passed_by(prefix, found[limit], after):
            break
    return (found if limit is None else found[:limit]), limit is not None and len(found) > limit


def _passed_by(prefix: str, level: str, after: str | None) -> str:
    """Where a walk must have reached before no unseen level can come before `level`: past the
    namespaces of each prefix of it that a byte below "." follows (module docstring)."""
    ends = [prefix + level[:i] + "/" for i in range(1, len(level)) if level[i] < "." and (after is None or level[:i] > after)]
    return max(ends, default="")


class Namespaces:
    def __init__(self, catalog: SqlCatalog):
        self.catalog = catalog
        self.store = catalog.store

    def list(self, parent: str | None, visible: Visible = lambda namespace: True, page: PageRequest | None = None) -> dict[str, Any]:
        """The namespaces one level under `parent` (None: the top) that `visible` namespaces
        make: all of them, or the page asked for."""
        if parent is not None and not namespace_known(self.store, parent, visible):
            raise NoSuchNamespaceError(f"namespace {parent!r} does not exist")
        prefix, end = ("", None) if parent is None else (parent + ".", parent + "/")
        after = None if page is None else page.after_name
        names = self.store.namespace_names(prefix, True, end) if after is None else self.store.namespace_names(prefix + after, False, end)
        levels, more = children_page(names, prefix, after, None if page is None else page.size, visible)
        listing = {"namespaces": [namespace_levels(prefix + level) for level in levels]}
        return listing if page is None else page.answer(listing, (prefix + levels[-1]).split(".") if more else None)

    def create(self, body: dict[str, Any]) -> dict[str, Any]:
        namespace = namespace_from_levels(body.get("namespace"))
        properties = _properties(body.get("properties"), "properties")
        if MARKER in properties:
            raise BadRequestError(f"namespace property {MARKER!r} is reserved by the catalog")
        check_new_names(namespace)
        self.store.create_namespace(namespace, properties)
        return {"namespace": namespace_levels(namespace), "properties": properties}

    def load(self, namespace: str) -> dict[str, Any]:
        try:
            stored = self.store.namespace_properties(namespace)
        except NoSuchNamespaceError:
            if not namespace_known(self.store, namespace):
                raise
            stored = {}
        return {"namespace": namespace_levels(namespace), "properties": {k: v for k, v in stored.items() if k != MARKER}}

    def exists(self, namespace: str) -> bool:
        return namespace_known(self.store, namespace)

    def drop(self, namespace: str) -> None:
        if next(iter(self.store.namespace_names(namespace + ".", True, namespace + "/")), None) is not None:
            raise NamespaceNotEmptyError(f"namespace {namespace!r} holds other namespaces")
        self.store.drop_namespace(namespace)

    def update_properties(self, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
        updates = _properties(body.get("updates"), "updates")
        removals = body.get("removals") or []
        if not isinstance(removals, list) or not all(isinstance(k, str) for k in removals):
            raise BadRequestError(f"removals is a list of property names, got {removals!r}")
        both = sorted(set(updates) & set(removals))
        if both:
            raise UnprocessableEntityError(f"properties {both} are both updated and removed")
        if MARKER in updates or MARKER in removals:
            raise BadRequestError(f"namespace property {MARKER!r} is reserved by the catalog")
        if not self.store.namespace_exists(namespace):
            if not namespace_known(self.store, namespace):
                raise NoSuchNamespaceError(f"namespace {namespace!r} does not exist")
            self.store.create_namespace_if_absent(namespace)  # a level above others: now its own
        removed, missing = self.store.update_namespace_properties(namespace, updates, list(dict.fromkeys(removals)))
        return {"updated": sorted(updates), "removed": removed, "missing": missing}


def _properties(value: Any, what: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise BadRequestError(f"{what} is an object of strings, got {value!r}")
    return dict(value)
