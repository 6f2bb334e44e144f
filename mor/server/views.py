"""View operations of the REST protocol over mor's SQL catalog (mor/catalog/views.py): list, create,
load, commit (replace), rename, drop. A view's metadata is returned as stored, and its
location, like a table's, must lie inside the warehouse, clear of the catalog's own files, and
be able to become a folder (locations.py)."""

from __future__ import annotations

from typing import Any

from pyiceberg.schema import Schema
from pyiceberg.view.metadata import ViewVersion

from mor.api.sql_catalog import SqlCatalog
from mor.catalog.views import View, commit_view_changes, create_view_in_catalog, read_view_metadata
from mor.errors import InvalidArgumentError, NoSuchNamespaceError, NoSuchViewError, ViewAlreadyExistsError
from mor.format.view_metadata import create_view_metadata, view_metadata_dict
from mor.server.errors import BadRequestError
from mor.server.locations import check_inside, normal_location
from mor.server.names import check_new_names, identifier_from_json
from mor.server.pages import PageRequest
from mor.server.tables import name_listing, new_name


class Views:
    def __init__(self, catalog: SqlCatalog):
        self.catalog = catalog
        self.store = catalog.store

    def list(self, namespace: str, page: PageRequest | None = None) -> dict[str, Any]:
        return name_listing(self.store, namespace, page, views=True)

    def exists(self, namespace: str, name: str) -> bool:
        try:
            self.store.view_metadata_location(namespace, name)
        except NoSuchViewError:
            return False
        return True

    def load(self, namespace: str, name: str) -> dict[str, Any]:
        location = self.store.view_metadata_location(namespace, name)
        return self.result(View(f"{namespace}.{name}", location, read_view_metadata(self.catalog.io, location)))

    def create(self, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
        name = new_name(self.store, namespace, body, "view")
        if self.exists(namespace, name) or self.catalog.table_exists(f"{namespace}.{name}"):
            raise ViewAlreadyExistsError(f"a view or table named {namespace}.{name} already exists")
        properties = body.get("properties") or {}
        if not isinstance(properties, dict) or not all(isinstance(v, str) for v in properties.values()):
            raise BadRequestError(f"properties is an object of strings, got {properties!r}")
        given = body.get("location")
        location = self.catalog.default_location(f"{namespace}.{name}") if given is None else normal_location(given, "view location")
        check_inside(self.catalog.warehouse, location, "view location")
        self.catalog.check_location(location)
        try:
            schema = Schema.model_validate(body["schema"])
            version = ViewVersion.model_validate(body["view-version"])
        except KeyError as e:
            raise BadRequestError(f"a view needs {e.args[0]!r}") from None
        except ValueError as e:  # pydantic's ValidationError
            raise InvalidArgumentError(f"invalid view schema or version: {' '.join(str(e).split())[:300]}") from None
        metadata = create_view_metadata(location, schema, version, dict(properties))
        return self.result(create_view_in_catalog(self.catalog.io, self.catalog.store, namespace, name, metadata))

    def commit(self, namespace: str, name: str, body: dict[str, Any]) -> dict[str, Any]:
        if body.get("identifier") is not None and identifier_from_json(body["identifier"], "identifier") != (namespace, name):
            raise BadRequestError("the body's identifier is not the view of the path")
        requirements, updates = body.get("requirements") or [], body.get("updates") or []
        if not isinstance(requirements, list) or not isinstance(updates, list):
            raise BadRequestError("requirements and updates are lists")
        for update in updates:
            if isinstance(update, dict) and update.get("action") == "set-location":
                location = normal_location(update.get("location"), "view location")
                check_inside(self.catalog.warehouse, location, "view location")
                self.catalog.check_location(location)
        return self.result(commit_view_changes(self.catalog.io, self.catalog.store, namespace, name, requirements, updates))

    def rename(self, body: dict[str, Any]) -> None:
        source = identifier_from_json(body.get("source"), "source")
        namespace, name = identifier_from_json(body.get("destination"), "destination")
        check_new_names(namespace, name)
        if not self.store.namespace_exists(namespace):
            raise NoSuchNamespaceError(f"namespace {namespace!r} does not exist")
        if self.catalog.table_exists(f"{namespace}.{name}"):
            raise ViewAlreadyExistsError(f"a table named {namespace}.{name} already exists")
        self.store.rename_view_row(*source, namespace, name)

    def drop(self, namespace: str, name: str) -> None:
        self.store.drop_view_row(namespace, name)

    @staticmethod
    def result(view: View) -> dict[str, Any]:
        return {"metadata-location": view.metadata_location, "metadata": view_metadata_dict(view.metadata), "config": {}}
