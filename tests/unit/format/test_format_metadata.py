"""Table metadata JSON: round trips (ours and Iceberg Java's) and the v2 fields we must write."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from unit_helpers import JAVA_FIXTURES, V2_FIXTURE_TABLES, local, make_rows

import mor
from mor.format.metadata import TableMetadata

V2_METADATA_FILES = sorted(p for table in V2_FIXTURE_TABLES for p in (JAVA_FIXTURES / "db" / table / "metadata").glob("v*.metadata.json"))
V3_METADATA_FILES = sorted((JAVA_FIXTURES / "db" / "v3_dv" / "metadata").glob("v*.metadata.json"))

REQUIRED_V2_KEYS = {
    "format-version",
    "table-uuid",
    "location",
    "last-sequence-number",
    "last-updated-ms",
    "last-column-id",
    "schemas",
    "current-schema-id",
    "partition-specs",
    "default-spec-id",
    "last-partition-id",
    "sort-orders",
    "default-sort-order-id",
}


def _fixture_id(p: Path) -> str:
    return f"{p.parents[1].name}/{p.name}"


def _normalized(d: dict[str, Any]) -> dict[str, Any]:
    """The spellings a faithful round trip may change: -1 for 'no current snapshot' and an
    empty identifier-field-ids list."""
    d = json.loads(json.dumps(d))
    if d.get("current-snapshot-id") == -1:
        del d["current-snapshot-id"]
    for s in d["schemas"]:
        if s.get("identifier-field-ids") == []:
            del s["identifier-field-ids"]
    return d


def test_fixture_files_are_found() -> None:
    """Guard against a glob that silently finds nothing."""
    assert {p.parents[1].name for p in V2_METADATA_FILES} == set(V2_FIXTURE_TABLES)
    assert len(V3_METADATA_FILES) >= 1


@pytest.mark.parametrize("path", V2_METADATA_FILES, ids=_fixture_id)
def test_java_metadata_round_trips(path: Path) -> None:
    text = path.read_text()
    metadata = TableMetadata.from_json(text)
    again = TableMetadata.from_json(metadata.to_json())
    assert again == metadata
    # Nothing Iceberg Java wrote is dropped or changed, unmodelled keys included.
    assert _normalized(json.loads(metadata.to_json())) == _normalized(json.loads(text))


@pytest.mark.parametrize("path", V2_METADATA_FILES, ids=_fixture_id)
def test_java_metadata_is_read_into_the_model(path: Path) -> None:
    raw = json.loads(path.read_text())
    metadata = TableMetadata.from_json(path.read_bytes())
    assert metadata.format_version == 2
    assert metadata.table_uuid == raw["table-uuid"]
    assert metadata.last_sequence_number == raw["last-sequence-number"]
    current = raw.get("current-snapshot-id", -1)
    assert metadata.current_snapshot_id == (None if current == -1 else current)
    assert [s.snapshot_id for s in metadata.snapshots] == [s["snapshot-id"] for s in raw.get("snapshots", [])]
    assert [s.sequence_number for s in metadata.snapshots] == [s["sequence-number"] for s in raw.get("snapshots", [])]
    assert [s.operation for s in metadata.snapshots] == [s["summary"]["operation"] for s in raw.get("snapshots", [])]
    assert metadata.snapshot_log == tuple((e["timestamp-ms"], e["snapshot-id"]) for e in raw.get("snapshot-log", []))
    assert metadata.schema().schema_id == raw["current-schema-id"]
    assert [f.name for f in metadata.schema().fields] == [
        f["name"] for f in next(s for s in raw["schemas"] if s["schema-id"] == raw["current-schema-id"])["fields"]
    ]


@pytest.mark.parametrize("path", V3_METADATA_FILES, ids=_fixture_id)
def test_v3_metadata_keeps_row_lineage(path: Path) -> None:
    raw = json.loads(path.read_text())
    metadata = TableMetadata.from_json(path.read_text())
    assert metadata.format_version == 3
    assert metadata.next_row_id == raw["next-row-id"]
    assert [(s.first_row_id, s.added_rows) for s in metadata.snapshots] == [
        (s["first-row-id"], s["added-rows"]) for s in raw.get("snapshots", [])
    ]
    assert json.loads(metadata.to_json())["next-row-id"] == raw["next-row-id"]


@pytest.mark.parametrize("version", [0, 4])
def test_other_format_versions_are_unsupported(version: int) -> None:
    raw = json.loads(V2_METADATA_FILES[0].read_text())
    raw["format-version"] = version
    with pytest.raises(mor.UnsupportedFeatureError, match=f"format-version {version}"):
        TableMetadata.from_json(json.dumps(raw))


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("{not json", id="not-json"),
        pytest.param(json.dumps({"format-version": 2}), id="missing-required-keys"),
    ],
)
def test_broken_metadata_is_corrupt(text: str) -> None:
    with pytest.raises(mor.CorruptMetadataError):
        TableMetadata.from_json(text)


def test_missing_required_key_is_corrupt() -> None:
    raw = json.loads(V2_METADATA_FILES[-1].read_text())
    del raw["last-column-id"]
    with pytest.raises(mor.CorruptMetadataError):
        TableMetadata.from_json(json.dumps(raw))


# -- what we write ------------------------------------------------------------------------


def _read(location: str) -> dict[str, Any]:
    return json.loads(Path(local(location)).read_text())  # type: ignore[no-any-return]


def _metadata_chain(table: mor.Table) -> list[dict[str, Any]]:
    """Every metadata file the current one's metadata-log names, then itself: oldest first."""
    current = _read(table.metadata_location)
    return [_read(e["metadata-file"]) for e in current["metadata-log"]] + [current]


def _assert_valid_v2(d: dict[str, Any]) -> None:
    assert REQUIRED_V2_KEYS <= set(d)
    assert d["format-version"] == 2
    assert all("schema-id" in s for s in d["schemas"])
    assert d["current-schema-id"] in {s["schema-id"] for s in d["schemas"]}
    assert d["default-spec-id"] in {s["spec-id"] for s in d["partition-specs"]}
    assert d["default-sort-order-id"] in {o["order-id"] for o in d["sort-orders"]}
    assert {"order-id": 0, "fields": []} in d["sort-orders"]
    field_ids = [f["field-id"] for s in d["partition-specs"] for f in s["fields"]]
    if field_ids:
        assert min(field_ids) >= 1000
        assert d["last-partition-id"] == max(field_ids)
    else:
        assert d["last-partition-id"] == 999
    assert d["last-column-id"] == max(f["id"] for s in d["schemas"] for f in s["fields"])
    snapshots = d.get("snapshots", [])
    if snapshots:
        current = d["current-snapshot-id"]
        assert d["refs"]["main"] == {"snapshot-id": current, "type": "branch"}
        by_id = {s["snapshot-id"]: s for s in snapshots}
        assert d["last-sequence-number"] == by_id[current]["sequence-number"]
        assert d["snapshot-log"][-1]["snapshot-id"] == current
        assert d["last-updated-ms"] >= by_id[current]["timestamp-ms"]
        for s in snapshots:
            assert {"snapshot-id", "sequence-number", "timestamp-ms", "manifest-list", "summary"} <= set(s)
            assert s["snapshot-id"] > 0
            assert s["summary"]["operation"] in {"append", "delete", "overwrite", "replace"}
            assert all(isinstance(v, str) for v in s["summary"].values())
    else:
        assert d.get("current-snapshot-id", -1) == -1
        assert "main" not in d.get("refs", {})
        assert d["last-sequence-number"] == 0


@pytest.mark.parametrize(
    ("partition_by", "last_partition_id"),
    [(None, 999), (["category"], 1000), (["category", "bucket(4, id)"], 1001)],
)
def test_written_metadata_has_the_required_v2_fields(catalog: mor.Catalog, partition_by: list[str] | None, last_partition_id: int) -> None:
    table = catalog.create_table("db.t", schema=make_rows([]).schema, partition_by=partition_by)
    written = [table.metadata_location]
    for commit in [
        lambda: table.append(make_rows(range(0, 30))),
        lambda: table.append(make_rows(range(30, 60))),
        lambda: table.delete("id in (3, 40)"),
        lambda: table.set_properties(**{"owner": "someone"}),
        lambda: table.delete("id < 15", mode="copy-on-write"),
    ]:
        commit()
        written.append(table.metadata_location)

    chain = [_read(loc) for loc in written]
    for d in chain:
        _assert_valid_v2(d)
        assert d["last-partition-id"] == last_partition_id
        assert d["table-uuid"] == chain[0]["table-uuid"]
        assert d["location"] == table.location
    final = chain[-1]
    # Each snapshot's sequence number is one more than its parent's.
    assert [s["sequence-number"] for s in final["snapshots"]] == [1, 2, 3, 4]
    parents = [s.get("parent-snapshot-id") for s in final["snapshots"]]
    assert parents == [None] + [s["snapshot-id"] for s in final["snapshots"][:-1]]
    assert [e["snapshot-id"] for e in final["snapshot-log"]] == [s["snapshot-id"] for s in final["snapshots"]]
    assert [s["summary"]["operation"] for s in final["snapshots"]] == ["append", "append", "delete", "overwrite"]
    # last-updated-ms never goes back.
    updated = [d["last-updated-ms"] for d in chain]
    assert updated == sorted(updated)
    assert final["properties"]["owner"] == "someone"


def test_metadata_log_names_every_earlier_file_in_order(catalog: mor.Catalog) -> None:
    table = catalog.create_table("db.t", schema=make_rows([]).schema, partition_by=["category"])
    written = [table.metadata_location]
    for commit in [
        lambda: table.append(make_rows(range(0, 30))),
        lambda: table.delete("id in (3, 4)"),
        lambda: table.set_properties(**{"owner": "someone"}),
        lambda: table.delete("id < 15", mode="copy-on-write"),
    ]:
        commit()
        written.append(table.metadata_location)
    for i, location in enumerate(written):
        assert [e["metadata-file"] for e in _read(location)["metadata-log"]] == written[:i]
    assert len(_metadata_chain(table)) == len(written)


def test_metadata_file_names_count_versions(catalog: mor.Catalog) -> None:
    table = catalog.create_table("db.t", schema=make_rows([]).schema)
    names = [Path(local(table.metadata_location)).name]
    for i in range(3):
        table.append(make_rows([i]))
        names.append(Path(local(table.metadata_location)).name)
    assert [n[:6] for n in names] == ["00000-", "00001-", "00002-", "00003-"]
    assert all(n.endswith(".metadata.json") for n in names)


def test_metadata_log_is_bounded_by_previous_versions_max(catalog: mor.Catalog) -> None:
    table = catalog.create_table("db.t", schema=make_rows([]).schema, properties={"write.metadata.previous-versions-max": "2"})
    seen = [table.metadata_location]
    for i in range(4):
        table.append(make_rows([i]))
        seen.append(table.metadata_location)
    on_disk = _read(table.metadata_location)
    assert [e["metadata-file"] for e in on_disk["metadata-log"]] == seen[-3:-1]


def test_metadata_log_grows_by_one_per_commit_through_one_table_object(catalog: mor.Catalog) -> None:
    table = catalog.create_table("db.t", schema=make_rows([]).schema)
    seen = [table.metadata_location]
    for i in range(3):
        table.append(make_rows([i]))
        assert [e["metadata-file"] for e in _read(table.metadata_location)["metadata-log"]] == seen
        seen.append(table.metadata_location)


def test_metadata_log_grows_across_table_objects(catalog: mor.Catalog) -> None:
    catalog.create_table("db.t", schema=make_rows([]).schema)
    seen = [catalog.load_table("db.t").metadata_location]
    for i in range(3):
        table = catalog.load_table("db.t")  # a fresh object each time
        table.append(make_rows([i]))
        assert [e["metadata-file"] for e in _read(table.metadata_location)["metadata-log"]] == seen
        seen.append(table.metadata_location)


def test_table_metadata_in_memory_is_what_was_written(catalog: mor.Catalog) -> None:
    table = catalog.create_table("db.t", schema=make_rows([]).schema)
    table.append(make_rows([1, 2]))
    table.set_properties(**{"owner": "me"})
    table.append(make_rows([3]))
    assert TableMetadata.from_json(Path(local(table.metadata_location)).read_text()) == table.metadata
    assert catalog.load_table("db.t").metadata == table.metadata


def test_our_metadata_round_trips(catalog: mor.Catalog) -> None:
    table = catalog.create_table("db.t", schema=make_rows([]).schema, partition_by=["category", "truncate(2, name)"])
    table.append(make_rows(range(25)))
    table.delete("id = 4")
    table.append(make_rows([30]))
    text = Path(local(table.metadata_location)).read_text()
    metadata = TableMetadata.from_json(text)
    assert TableMetadata.from_json(metadata.to_json()) == metadata
    assert json.loads(metadata.to_json()) == json.loads(text)
