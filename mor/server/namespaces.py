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
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import Any

from mor.api.sql_catalog import SqlCatalog
from mor.errors import NamespaceNotEmptyError, NoSuchNamespaceError
from mor.server.errors import BadRequestError, UnprocessableEntityError
from mor.server.names import check_new_names, namespace_from_levels, namespace_levels

MARKER = "exists"


class Namespaces:
    def __init__(self, catalog: SqlCatalog):
        self.catalog = catalog
        self.store = catalog.store

    def list(self, parent: str | None, visible: Callable[[str], bool] = lambda namespace: True) -> dict[str, Any]:
        names = [n for n in self.store.list_namespaces() if visible(n)]
        if parent is not None and not self._known(parent, names):
            raise NoSuchNamespaceError(f"namespace {parent!r} does not exist")
        depth = 0 if parent is None else len(namespace_levels(parent))
        prefix = [] if parent is None else namespace_levels(parent)
        children = {
            tuple(levels[: depth + 1]) for levels in map(namespace_levels, names) if len(levels) > depth and levels[:depth] == prefix
        }
        return {"namespaces": [list(c) for c in sorted(children)]}

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
            if not self._known(namespace, self.store.list_namespaces()):
                raise
            stored = {}
        return {"namespace": namespace_levels(namespace), "properties": {k: v for k, v in stored.items() if k != MARKER}}

    def exists(self, namespace: str) -> bool:
        return self._known(namespace, self.store.list_namespaces())

    def drop(self, namespace: str) -> None:
        names = self.store.list_namespaces()
        if any(n.startswith(namespace + ".") for n in names):
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
            if not self._known(namespace, self.store.list_namespaces()):
                raise NoSuchNamespaceError(f"namespace {namespace!r} does not exist")
            self.store.create_namespace_if_absent(namespace)  # a level above others: now its own
        removed, missing = self.store.update_namespace_properties(namespace, updates, list(dict.fromkeys(removals)))
        return {"updated": sorted(updates), "removed": removed, "missing": missing}

    @staticmethod
    def _known(namespace: str, names: builtins.list[str]) -> bool:  # `list` here is the method above
        """Created, holding tables, or a level above one that is."""
        return any(n == namespace or n.startswith(namespace + ".") for n in names)


def _properties(value: Any, what: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise BadRequestError(f"{what} is an object of strings, got {value!r}")
    return dict(value)
