"""Views in the SQL catalog (mor/catalog/views.py) and the view spec's rules for their metadata
(mor/format/view_metadata.py): versions and schemas reused when equal, ids -1 for the one added
last, the version log, the history limit, requirements in Iceberg Java's words, and names shared
with tables refused; pyiceberg's view model reads every metadata file written."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from pyiceberg.view.metadata import ViewMetadata

import mor
from mor.errors import InvalidArgumentError, NamespaceNotEmptyError, NoSuchViewError, ViewAlreadyExistsError
from mor.format.requirements import CommitFailedError
from mor.format.view_metadata import apply_view_updates, check_view_requirements

ID = pa.schema([("id", pa.int64())])
ID_NAME = pa.schema([("id", pa.int64()), ("name", pa.string())])


def test_create_load_replace_rename_drop(catalog: mor.Catalog) -> None:
    catalog.create_table("db.t", schema=ID_NAME)
    view = catalog.create_view("db.v", "SELECT id FROM t", ID, properties={"comment": "ids"})
    assert view.sql() == view.sql("SPARK") == "SELECT id FROM t" and view.properties == {"comment": "ids"}
    assert list(view.version.default_namespace) == ["db"] and view.schema.column_names == ["id"]
    assert catalog.list_views("db") == ["db.v"] and catalog.list_tables("db") == ["db.t"]
    assert catalog.view_exists("db.v") and not catalog.view_exists("db.t") and not catalog.table_exists("db.v")
    with pytest.raises(InvalidArgumentError, match="trino"):
        view.sql("trino")

    replaced = catalog.replace_view("db.v", "SELECT id, name FROM t", ID_NAME)
    assert replaced.sql() == "SELECT id, name FROM t" and replaced.schema.column_names == ["id", "name"]
    assert [v.version_id for v in replaced.metadata.versions] == [1, 2]
    again = catalog.replace_view("db.v", "SELECT id FROM t", ID)  # the first definition again: its version reused
    assert [v.version_id for v in again.metadata.versions] == [1, 2] and again.metadata.current_version_id == 1
    assert [e.version_id for e in again.metadata.version_log] == [1, 2, 1]
    assert len(again.metadata.schemas) == 2
    for path in sorted((Path(view.metadata.location.removeprefix("file://")) / "metadata").iterdir()):
        ViewMetadata.model_validate_json(path.read_text())  # every file in the spec's form

    with pytest.raises(ViewAlreadyExistsError):
        catalog.create_view("db.t", "SELECT 1", ID)
    with pytest.raises(ViewAlreadyExistsError):
        catalog.create_view("db.v", "SELECT 1", ID)
    with pytest.raises(mor.TableAlreadyExistsError):
        catalog.create_table("db.v", schema=ID)
    with pytest.raises(NamespaceNotEmptyError):
        catalog.drop_table("db.t") or catalog.drop_namespace("db")
    moved = catalog.rename_view("db.v", "other.v2")
    assert moved.sql() == "SELECT id FROM t" and catalog.list_views("db") == []
    catalog.drop_view("other.v2")
    with pytest.raises(NoSuchViewError):
        catalog.load_view("other.v2")
    with pytest.raises(InvalidArgumentError, match="sql"):
        catalog.create_view("db.empty", " ", ID)


def test_history_is_bounded_and_keeps_the_current_version(catalog: mor.Catalog) -> None:
    catalog.create_view("db.h", "SELECT 0", ID, properties={"version.history.num-entries": "3"})
    for i in range(1, 6):
        view = catalog.replace_view("db.h", f"SELECT {i}", ID)
    assert [v.version_id for v in view.metadata.versions] == [4, 5, 6]
    assert [e.version_id for e in view.metadata.version_log] == [4, 5, 6]
    assert view.sql() == "SELECT 5"


def test_updates_and_requirements_follow_the_spec(catalog: mor.Catalog) -> None:
    view = catalog.create_view("db.u", "SELECT 1", ID)
    with pytest.raises(CommitFailedError, match="^Requirement failed: view UUID does not match: expected .* != nope$"):
        check_view_requirements([{"type": "assert-view-uuid", "uuid": "nope"}], view.metadata)
    check_view_requirements([{"type": "assert-view-uuid", "uuid": view.metadata.view_uuid.upper()}], view.metadata)
    with pytest.raises(InvalidArgumentError, match="-1"):
        apply_view_updates(view.metadata, [{"action": "set-current-view-version", "view-version-id": -1}])
    with pytest.raises(InvalidArgumentError, match="no schema 7"):
        version = {"version-id": 1, "schema-id": 7, "timestamp-ms": 1, "representations": [], "default-namespace": []}
        apply_view_updates(view.metadata, [{"action": "add-view-version", "view-version": version}])
    with pytest.raises(InvalidArgumentError, match="one SQL text per dialect"):
        sql = [{"type": "sql", "sql": "SELECT 1", "dialect": "spark"}, {"type": "sql", "sql": "SELECT 2", "dialect": "Spark"}]
        version = {"version-id": 1, "schema-id": 0, "timestamp-ms": 1, "representations": sql, "default-namespace": []}
        apply_view_updates(view.metadata, [{"action": "add-view-version", "view-version": version}])
    with pytest.raises(InvalidArgumentError, match="uuid cannot change"):
        apply_view_updates(view.metadata, [{"action": "assign-uuid", "uuid": "other"}])
    changed = apply_view_updates(
        view.metadata, [{"action": "set-properties", "updates": {"a": "1", "b": "2"}}, {"action": "remove-properties", "removals": ["a"]}]
    )
    assert changed.properties == {"b": "2"} and changed.current_version_id == view.metadata.current_version_id
