"""`mor serve` validates the metadata every commit would make before writing anything (issue 52):
what Iceberg Java's metadata builder refuses is a 400 with Java's exception type and a message
naming the field; an added snapshot's manifest list must be a manifest list inside the table, and
a file outside answers exactly as a missing one does. Each refused commit leaves the table byte
for byte as it was, and the server goes on serving. Raw HTTP, as a buggy or hostile client sends it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import requests
from servers.rest import Served, unique

import mor
from mor.io.fileio import to_local_path

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("s", pa.string())])


def post(served: Served, path: str, body: Any) -> requests.Response:
    return requests.post(served.url + path, data=json.dumps(body), headers=served.headers(), timeout=60)


def state(table: mor.Table) -> tuple[str, bytes, list[str]]:
    """The table as stored: its metadata location, that file's bytes, its metadata folder."""
    folder = Path(to_local_path(table.location)) / "metadata"
    return table.metadata_location, Path(to_local_path(table.metadata_location)).read_bytes(), sorted(p.name for p in folder.iterdir())


@pytest.fixture
def table(served_sqlite: Served) -> mor.Table:
    catalog = served_sqlite.mor()
    t = catalog.create_table(f"{unique('val')}.t", schema=SCHEMA)
    t.append(pa.table({"id": [1, 2], "s": ["a", "b"]}, schema=SCHEMA))
    return t.refresh()


def refused(served: Served, table: mor.Table, updates: list[dict[str, Any]], status: int = 400) -> dict[str, Any]:
    """Send the commit; check it is refused with `status` and changed nothing; the ErrorModel."""
    before = state(table)
    namespace = table.identifier.rsplit(".", 1)[0]
    response = post(served, f"/v1/namespaces/{namespace}/tables/t", {"requirements": [], "updates": updates})
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert "Traceback" not in response.text
    catalog = served.mor()
    assert state(catalog.load_table(table.identifier)) == before
    # the server goes on serving: another table is created, written and read through it
    other = catalog.create_table(f"{namespace}.{unique('other')}", schema=SCHEMA)
    other.append(pa.table({"id": [9], "s": ["z"]}, schema=SCHEMA))
    assert served.rest().load_table((namespace, other.identifier.rsplit(".", 1)[1])).scan().to_arrow().num_rows == 1
    return error


def schema_json(table: mor.Table, *extra: dict[str, Any]) -> dict[str, Any]:
    current = json.loads(table.metadata.to_json())
    schema = next(s for s in current["schemas"] if s["schema-id"] == table.metadata.current_schema_id)
    return {**schema, "fields": [*schema["fields"], *extra]}


def snapshot_json(table: mor.Table, **fields: Any) -> dict[str, Any]:
    m = table.metadata
    return {
        "snapshot-id": 4242,
        "parent-snapshot-id": m.current_snapshot_id,
        "sequence-number": m.last_sequence_number + 1,
        "timestamp-ms": m.last_updated_ms + 1,
        "manifest-list": m.current_snapshot().manifest_list,  # type: ignore[union-attr]
        "summary": {"operation": "append"},
        "schema-id": m.current_schema_id,
        **fields,
    }


def test_a_schema_with_a_field_id_used_twice_is_refused(served_sqlite: Served, table: mor.Table) -> None:
    twice = schema_json(table, {"id": 1, "name": "shadow", "type": "string", "required": False})
    error = refused(served_sqlite, table, [{"action": "add-schema", "schema": twice}, {"action": "set-current-schema", "schema-id": -1}])
    assert error["type"] == "IllegalArgumentException" and "field id 1 is used twice" in error["message"]


@pytest.mark.parametrize(
    ("update", "match"),
    [
        ({"action": "add-spec", "spec": {"spec-id": 1, "fields": [
            {"source-id": 99, "field-id": 1000, "name": "x", "transform": "identity"}]}},
         "cannot find source column 99"),
        ({"action": "add-spec", "spec": {"spec-id": 1, "fields": [{"source-id": 2, "field-id": 1000, "name": "d", "transform": "day"}]}},
         "invalid source type string"),
        ({"action": "add-sort-order", "sort-order": {"order-id": 1, "fields": [
            {"source-id": 99, "transform": "identity", "direction": "asc", "null-order": "nulls-first"}]}},
         "sort order 1: cannot find source column 99"),
    ],
)  # fmt: skip
def test_a_spec_or_sort_order_on_no_column_is_refused(served_sqlite: Served, table: mor.Table, update: dict[str, Any], match: str) -> None:
    error = refused(served_sqlite, table, [update])
    assert error["type"] == "ValidationException" and match in error["message"]


def test_a_schema_dropping_the_partition_column_is_refused(served_sqlite: Served) -> None:
    catalog = served_sqlite.mor()
    t = catalog.create_table(f"{unique('val')}.t", schema=SCHEMA, partition_by=["s"])
    without_s = {**schema_json(t), "fields": [f for f in schema_json(t)["fields"] if f["name"] != "s"]}
    error = refused(served_sqlite, t, [{"action": "add-schema", "schema": without_s}, {"action": "set-current-schema", "schema-id": -1}])
    assert "default partition spec 0: cannot find source column 2" in error["message"]


@pytest.mark.parametrize(
    ("fields", "match"),
    [
        ({"snapshot-id": "4242"}, "snapshot-id must be a long"),
        ({"manifest-list": 7}, "manifest-list must be a non-empty string"),
        ({"timestamp-ms": "yesterday"}, "timestamp-ms must be a long"),
        ({"summary": {"operation": "append", "added-records": 3}}, "summary must be an object of strings"),
        ({"summary": {"operation": "merge"}}, "summary operation must be one of"),
        ({"schema-id": 17}, "schema-id 17 names no schema"),
    ],
)
def test_snapshot_fields_of_the_wrong_type_are_refused(served_sqlite: Served, table: mor.Table, fields: dict[str, Any], match: str) -> None:
    error = refused(served_sqlite, table, [{"action": "add-snapshot", "snapshot": snapshot_json(table, **fields)}])
    assert match in error["message"]


def test_a_manifest_list_outside_the_table_answers_as_a_missing_one(served_sqlite: Served, table: mor.Table, tmp_path: Path) -> None:
    elsewhere = tmp_path / "x.avro"
    elsewhere.write_bytes(Path(to_local_path(table.metadata.current_snapshot().manifest_list)).read_bytes())  # type: ignore[union-attr]
    answers = {}
    for name, location in {
        "system file": "file:///etc/hostname",
        "outside the warehouse, a real manifest list": elsewhere.as_uri(),
        "outside, missing": "file:///nonexistent/snap.avro",
        "inside, missing": f"{table.location}/metadata/snap-missing.avro",
        "inside, not a manifest list": table.metadata_location,
    }.items():
        error = refused(served_sqlite, table, [{"action": "add-snapshot", "snapshot": snapshot_json(table, **{"manifest-list": location})}])
        answers[name] = (error["type"], error["message"].replace(location, "<manifest-list>"))
    assert len(set(answers.values())) == 1, answers  # no answer says what exists where
    assert "is not a manifest list inside the table location" in answers["system file"][1]


def test_a_ref_to_no_snapshot_a_tag_as_main_and_a_downgrade_are_refused(served_sqlite: Served, table: mor.Table) -> None:
    head = table.metadata.current_snapshot_id
    assert (
        "no such snapshot"
        in refused(served_sqlite, table, [{"action": "set-snapshot-ref", "ref-name": "b", "type": "branch", "snapshot-id": 1}])["message"]
    )
    assert (
        "main is a branch"
        in refused(served_sqlite, table, [{"action": "set-snapshot-ref", "ref-name": "main", "type": "tag", "snapshot-id": head}])[
            "message"
        ]
    )
    tag = {"action": "set-snapshot-ref", "ref-name": "t", "type": "tag", "snapshot-id": head, "min-snapshots-to-keep": 3}
    assert "a tag does not support" in refused(served_sqlite, table, [tag])["message"]
    assert "downgrade" in refused(served_sqlite, table, [{"action": "upgrade-format-version", "format-version": 1}])["message"]


def test_a_valid_client_commit_still_lands(served_sqlite: Served, table: mor.Table) -> None:
    client = served_sqlite.rest().load_table(tuple(table.identifier.rsplit(".", 1)))
    client.append(pa.table({"id": [3], "s": ["c"]}, schema=SCHEMA))
    assert sorted(served_sqlite.mor().load_table(table.identifier).scan().to_arrow().column("id").to_pylist()) == [1, 2, 3]


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (
            lambda m: m["snapshots"][-1].update({"manifest-list": "file:///etc/hostname"}),
            "is not a manifest list inside the table location",
        ),
        (
            lambda m: m["schemas"][-1]["fields"].append({"id": 1, "name": "twin", "type": "long", "required": False}),
            "field id 1 is used twice",
        ),
    ],
)
def test_register_holds_the_table_to_what_a_commit_may_make(served_sqlite: Served, table: mor.Table, change: Any, match: str) -> None:
    metadata = json.loads(Path(to_local_path(table.metadata_location)).read_text())
    metadata["location"] = f"{served_sqlite.warehouse.as_uri()}/{unique('adopted')}"
    change(metadata)
    copy = Path(to_local_path(metadata["location"])) / "metadata" / "v1.metadata.json"
    copy.parent.mkdir(parents=True)
    copy.write_text(json.dumps(metadata))
    namespace = table.identifier.rsplit(".", 1)[0]
    response = post(served_sqlite, f"/v1/namespaces/{namespace}/register", {"name": "adopted", "metadata-location": copy.as_uri()})
    assert response.status_code == 400 and match in response.json()["error"]["message"], response.text
    assert not served_sqlite.mor().table_exists(f"{namespace}.adopted")
