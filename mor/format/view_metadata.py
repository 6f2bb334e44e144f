"""View metadata (Iceberg's view spec, format version 1): a view is a SQL text per dialect, the
schema it produces and the namespace its names resolve in, kept as a list of versions with one
current; stored as a JSON metadata file per change (`NNNNN-<uuid>.metadata.json` under the view's
`metadata/` folder), the catalog pointing at the current one as it does for a table.

pyiceberg's models (`ViewMetadata`, `ViewVersion`, `Schema`) hold the data; this module makes new
metadata and applies the REST protocol's view updates and requirements to it, with the rules of
the spec: a schema or version equal to a known one is reused rather than added again (ids -1 name
the one added last), `version-log` records every change of the current version, and only the
newest `version.history.num-entries` versions (10 by default) are kept, the current one always.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from pyiceberg.schema import Schema
from pyiceberg.view.metadata import ViewHistoryEntry, ViewMetadata, ViewVersion

from mor.errors import InvalidArgumentError
from mor.format.requirements import CommitFailedError

VIEW_FORMAT_VERSION = 1
HISTORY_ENTRIES = "version.history.num-entries"  # how many versions a view keeps
DEFAULT_HISTORY_ENTRIES = 10
LAST_ADDED = -1  # a schema or version id naming the one added last in the same change


def parse_view_metadata(text: str | bytes) -> ViewMetadata:
    """View metadata from its JSON; InvalidArgumentError saying what is wrong."""
    try:
        return ViewMetadata.model_validate_json(text)
    except ValueError as e:
        raise InvalidArgumentError(f"invalid view metadata: {' '.join(str(e).split())[:300]}") from None


def view_metadata_json(metadata: ViewMetadata) -> str:
    return metadata.model_dump_json(by_alias=True, exclude_none=True)


def view_metadata_dict(metadata: ViewMetadata) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(view_metadata_json(metadata))
    return result


def create_view_metadata(
    location: str, schema: Schema, version: ViewVersion, properties: dict[str, str], view_uuid: str | None = None
) -> ViewMetadata:
    """A new view: `schema` (its id set) and `version` (on that schema) made current."""
    updates: list[dict[str, Any]] = [
        {"action": "assign-uuid", "uuid": view_uuid or str(uuid.uuid4())},
        {"action": "upgrade-format-version", "format-version": VIEW_FORMAT_VERSION},
        {"action": "set-location", "location": location},
        {"action": "set-properties", "updates": properties},
        {"action": "add-schema", "schema": json.loads(schema.model_dump_json(by_alias=True))},
        {"action": "add-view-version", "view-version": {**_version_dict(version), "schema-id": LAST_ADDED}},
        {"action": "set-current-view-version", "view-version-id": LAST_ADDED},
    ]
    return apply_view_updates(None, updates)


def check_view_requirements(requirements: list[Any], metadata: ViewMetadata) -> None:
    """CommitFailedError (in Iceberg Java's words) unless every requirement holds."""
    for requirement in requirements:
        if not isinstance(requirement, dict) or requirement.get("type") != "assert-view-uuid":
            raise InvalidArgumentError(f"a view commit's requirement is assert-view-uuid, got {requirement!r}")
        expected = requirement.get("uuid")
        if not isinstance(expected, str) or expected.lower() != metadata.view_uuid.lower():
            raise CommitFailedError(f"Requirement failed: view UUID does not match: expected {metadata.view_uuid} != {expected}")


def apply_view_updates(metadata: ViewMetadata | None, updates: list[Any]) -> ViewMetadata:
    """`metadata` (None: a view being created) with the REST view updates applied in order;
    InvalidArgumentError for an update that is malformed or breaks the spec's rules."""
    state = _State(metadata)
    for update in updates:
        if not isinstance(update, dict) or not isinstance(update.get("action"), str):
            raise InvalidArgumentError(f"a view update is an object with an 'action', got {update!r}")
        try:
            state.apply(update)
        except (KeyError, TypeError, ValueError) as e:
            raise InvalidArgumentError(f"view update {update.get('action')}: {e}") from None
    return state.result()


class _State:
    def __init__(self, metadata: ViewMetadata | None):
        base = view_metadata_dict(metadata) if metadata is not None else {}
        self.uuid: str | None = base.get("view-uuid")
        self.format_version: int = base.get("format-version", VIEW_FORMAT_VERSION)
        self.location: str | None = base.get("location")
        self.properties: dict[str, str] = dict(base.get("properties", {}))
        self.schemas: list[dict[str, Any]] = list(base.get("schemas", []))
        self.versions: list[dict[str, Any]] = list(base.get("versions", []))
        self.log: list[dict[str, Any]] = list(base.get("version-log", []))
        self.current: int | None = base.get("current-version-id")
        self.last_schema: int | None = None
        self.last_version: int | None = None

    def apply(self, update: dict[str, Any]) -> None:
        action = update["action"]
        if action == "assign-uuid":
            if self.uuid is not None and self.uuid != update["uuid"]:
                raise ValueError("a view's uuid cannot change")
            self.uuid = str(update["uuid"])
        elif action == "upgrade-format-version":
            if int(update["format-version"]) != VIEW_FORMAT_VERSION:
                raise ValueError(f"the view format version is {VIEW_FORMAT_VERSION}, got {update['format-version']}")
        elif action == "set-location":
            self.location = str(update["location"]).rstrip("/")
        elif action == "set-properties":
            self.properties.update({str(k): str(v) for k, v in dict(update["updates"]).items()})
        elif action == "remove-properties":
            for key in update["removals"]:
                self.properties.pop(key, None)
        elif action == "add-schema":
            self.last_schema = self._add_schema(dict(update["schema"]))
        elif action == "add-view-version":
            self.last_version = self._add_version(dict(update["view-version"]))
        elif action == "set-current-view-version":
            self._set_current(int(update["view-version-id"]))
        else:
            raise ValueError(f"unknown view update {action!r}")

    def _add_schema(self, schema: dict[str, Any]) -> int:
        fields = schema.get("fields", [])
        for known in self.schemas:
            if known.get("fields", []) == fields and known.get("identifier-field-ids", []) == schema.get("identifier-field-ids", []):
                return int(known["schema-id"])
        schema_id = max((int(s["schema-id"]) for s in self.schemas), default=-1) + 1
        Schema.model_validate({**schema, "schema-id": schema_id})  # a schema pyiceberg can model
        self.schemas.append({**schema, "schema-id": schema_id})
        return schema_id

    def _add_version(self, version: dict[str, Any]) -> int:
        if int(version.get("schema-id", LAST_ADDED)) == LAST_ADDED:
            if self.last_schema is None:
                raise ValueError("schema-id -1 names the schema added last, and this change adds none")
            version["schema-id"] = self.last_schema
        if not any(int(s["schema-id"]) == int(version["schema-id"]) for s in self.schemas):
            raise ValueError(f"the view has no schema {version['schema-id']}")
        dialects = [r.get("dialect", "").lower() for r in version.get("representations", [])]
        if len(dialects) != len(set(dialects)):
            raise ValueError("a view version has one SQL text per dialect")
        same = next((v for v in self.versions if _definition(v) == _definition(version)), None)
        if same is not None:
            return int(same["version-id"])
        version_id = max((int(v["version-id"]) for v in self.versions), default=0) + 1
        ViewVersion.model_validate({**version, "version-id": version_id})  # a version pyiceberg can model
        self.versions.append({**version, "version-id": version_id})
        return version_id

    def _set_current(self, version_id: int) -> None:
        if version_id == LAST_ADDED:
            if self.last_version is None:
                raise ValueError("view-version-id -1 names the version added last, and this change adds none")
            version_id = self.last_version
        version = next((v for v in self.versions if int(v["version-id"]) == version_id), None)
        if version is None:
            raise ValueError(f"the view has no version {version_id}")
        if version_id != self.current:
            self.current = version_id
            self.log.append({"timestamp-ms": int(version["timestamp-ms"]), "version-id": version_id})

    def result(self) -> ViewMetadata:
        if self.uuid is None or self.location is None or self.current is None:
            raise InvalidArgumentError(
                "a view needs a uuid, a location and a current version (assign-uuid, set-location, set-current-view-version)"
            )
        keep = max(1, int(self.properties.get(HISTORY_ENTRIES, DEFAULT_HISTORY_ENTRIES)))
        kept = sorted(self.versions, key=lambda v: int(v["version-id"]))[-keep:]
        if not any(int(v["version-id"]) == self.current for v in kept):
            kept = [*kept[1:], next(v for v in self.versions if int(v["version-id"]) == self.current)]
        kept_ids = {int(v["version-id"]) for v in kept}
        document = {
            "view-uuid": self.uuid,
            "format-version": self.format_version,
            "location": self.location,
            "schemas": self.schemas,
            "current-version-id": self.current,
            "versions": kept,
            "version-log": [e for e in self.log if int(e["version-id"]) in kept_ids],
            "properties": self.properties,
        }
        return ViewMetadata.model_validate(document)


def _version_dict(version: ViewVersion) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(version.model_dump_json(by_alias=True, exclude_none=True))
    return result


def _definition(version: dict[str, Any]) -> tuple[Any, ...]:
    """What makes two versions the same view definition (not their ids, times or summaries)."""
    return (
        int(version["schema-id"]),
        json.dumps(version.get("representations", []), sort_keys=True),
        version.get("default-catalog"),
        tuple(version.get("default-namespace", [])),
    )


__all__ = [
    "ViewHistoryEntry",
    "apply_view_updates",
    "check_view_requirements",
    "create_view_metadata",
    "parse_view_metadata",
    "view_metadata_json",
]
