"""Damaged tables: every file a table references (metadata JSON, manifest list, manifest, data
file, position and equality delete file), deleted, truncated, emptied, overwritten with garbage,
replaced by a folder or by another file of the table. Reads and DML raise CorruptMetadataError
whose message names the file (never a bare pyarrow/fastavro error), and a failed operation
leaves the table as it was.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from unit_helpers import (
    SCHEMA,
    files_under,
    live_data_paths,
    live_delete_entries,
    local,
    make_rows,
    read_avro,
)

import mor
from mor.errors import StorageError
from mor.io.fileio import unreadable


@pytest.fixture
def table(catalog: mor.Catalog) -> mor.Table:
    """One data file, one position delete file (id 3), one equality delete file (id 5)."""
    t = catalog.create_table("db.t", schema=SCHEMA)
    t.append(make_rows(range(30)))
    t.delete("id = 3")
    t.delete_rows(pa.table({"id": [5]}))
    return t


def table_file(table: mor.Table, kind: str) -> str:
    """The location of one file of the table's current snapshot, by kind."""
    snapshot = table.current_snapshot()
    assert snapshot is not None
    _, manifests = read_avro(snapshot.manifest_list)
    deletes = live_delete_entries(table)
    return {
        "metadata": lambda: table.metadata_location,
        "manifest-list": lambda: snapshot.manifest_list,
        "data-manifest": lambda: next(m["manifest_path"] for m in manifests if m["content"] == 0),
        "delete-manifest": lambda: next(m["manifest_path"] for m in manifests if m["content"] == 1),
        "data-file": lambda: min(live_data_paths(table)),
        "position-delete-file": lambda: next(e.path for e in deletes if e.content == 1),
        "equality-delete-file": lambda: next(e.path for e in deletes if e.content == 2),
    }[kind]()


def damage(location: str, how: str) -> None:
    path = local(location)
    data = Path(path).read_bytes()
    if how == "deleted":
        os.remove(path)
    elif how == "truncated":
        Path(path).write_bytes(data[: len(data) // 2])
    elif how == "emptied":
        Path(path).write_bytes(b"")
    elif how == "garbage":
        Path(path).write_bytes(b"this is not the file you are looking for\n" * 20)
    elif how == "a-folder":
        os.remove(path)
        os.mkdir(path)
    else:
        raise AssertionError(how)


DAMAGES = ["deleted", "truncated", "emptied", "garbage", "a-folder"]
FILES_READ_BY_A_SCAN = ["manifest-list", "data-manifest", "delete-manifest", "data-file", "position-delete-file", "equality-delete-file"]
KIND_IN_MESSAGE = {
    "manifest-list": "manifest list",
    "data-manifest": "manifest",
    "delete-manifest": "manifest",
    "data-file": "data file",
    "position-delete-file": "position delete file",
    "equality-delete-file": "equality delete file",
}


def assert_corrupt(call: Callable[[], Any], location: str, kind: str, error: type[Exception] = mor.CorruptMetadataError) -> None:
    with pytest.raises(error) as info:
        call()
    message = str(info.value)
    assert location in message, message
    assert KIND_IN_MESSAGE.get(kind, "table metadata file") in message, message


@pytest.mark.parametrize("how", DAMAGES)
@pytest.mark.parametrize("kind", FILES_READ_BY_A_SCAN)
def test_a_damaged_file_fails_reads_and_dml_naming_it(catalog: mor.Catalog, table: mor.Table, kind: str, how: str) -> None:
    location = table_file(table, kind)
    metadata_location = table.metadata_location
    damage(location, how)
    files = files_under(table.location)

    assert_corrupt(lambda: table.scan().to_arrow(), location, kind)
    assert_corrupt(lambda: list(table.scan().to_batches()), location, kind)
    assert_corrupt(lambda: table.scan(columns=[]).count(), location, kind)
    assert_corrupt(lambda: table.delete("id = 7"), location, kind)
    assert_corrupt(lambda: table.update({"name": "'x'"}, where="id = 7"), location, kind)
    assert_corrupt(lambda: table.upsert(make_rows([7]), on=["id"]), location, kind)

    # Nothing was committed and nothing was left behind.
    assert catalog.load_table("db.t").metadata_location == metadata_location
    assert table.metadata_location == metadata_location
    assert files_under(table.location) == files


@pytest.mark.parametrize("how", DAMAGES)
def test_a_damaged_metadata_file_fails_the_load_naming_it(catalog: mor.Catalog, table: mor.Table, how: str) -> None:
    location = table.metadata_location
    damage(location, how)
    files = files_under(table.location)
    # A missing file is not a damaged one: the table is not there (also a StorageError).
    error = mor.MetadataFileNotFoundError if how == "deleted" else mor.CorruptMetadataError
    assert_corrupt(lambda: catalog.load_table("db.t"), location, "metadata", error)
    assert_corrupt(lambda: mor.StaticTable.from_metadata(location), location, "metadata", error)
    assert_corrupt(lambda: catalog.register_table("db.copy", location), location, "metadata", error)
    assert not catalog.table_exists("db.copy")
    assert files_under(table.location) == files


@pytest.mark.parametrize(
    ("edit", "fragment"),
    [
        pytest.param(lambda d: d.pop("schemas"), "'schemas' is missing", id="field-missing"),
        pytest.param(lambda d: d.pop("format-version"), "'format-version' is missing", id="no-format-version"),
        pytest.param(lambda d: d.update({"current-snapshot-id": 42}), "current-snapshot-id 42", id="unknown-current-snapshot"),
        pytest.param(lambda d: d.update({"current-schema-id": 7}), "current-schema-id 7", id="unknown-current-schema"),
        pytest.param(lambda d: d.update({"default-spec-id": 9}), "default-spec-id 9", id="unknown-default-spec"),
        pytest.param(lambda d: d.update({"schemas": "x"}), "invalid table metadata", id="schemas-not-a-list"),
        pytest.param(lambda d: d.update({"snapshots": 5}), "invalid table metadata", id="snapshots-not-a-list"),
    ],
)
def test_metadata_that_breaks_the_spec_names_the_file(
    catalog: mor.Catalog, table: mor.Table, edit: Callable[[dict[str, Any]], Any], fragment: str
) -> None:
    path = local(table.metadata_location)
    document = json.loads(Path(path).read_text())
    edit(document)
    Path(path).write_text(json.dumps(document))
    with pytest.raises(mor.CorruptMetadataError) as info:
        catalog.load_table("db.t")
    assert table.metadata_location in str(info.value) and fragment in str(info.value), str(info.value)


def test_metadata_that_is_json_but_not_an_object(catalog: mor.Catalog, table: mor.Table) -> None:
    Path(local(table.metadata_location)).write_text("[1, 2, 3]")
    with pytest.raises(mor.CorruptMetadataError, match="a JSON list"):
        catalog.load_table("db.t")


def test_metadata_of_another_format_version_is_unsupported_naming_the_file(catalog: mor.Catalog, table: mor.Table) -> None:
    path = local(table.metadata_location)
    document = json.loads(Path(path).read_text())
    document["format-version"] = 4  # a version from the future
    Path(path).write_text(json.dumps(document))
    with pytest.raises(mor.UnsupportedFeatureError) as info:
        catalog.load_table("db.t")
    assert table.metadata_location in str(info.value) and "format-version 4" in str(info.value)


@pytest.mark.parametrize(
    ("kind", "replacement", "fragment"),
    [
        pytest.param("manifest-list", "data-manifest", "not a manifest-list row", id="manifest-list-is-a-manifest"),
        pytest.param("data-manifest", "manifest-list", "not a manifest entry", id="manifest-is-a-manifest-list"),
        pytest.param("position-delete-file", "data-file", "file_path", id="position-deletes-are-data"),
        pytest.param("equality-delete-file", "position-delete-file", "id", id="equality-deletes-are-position-deletes"),
        pytest.param("data-file", "position-delete-file", "has 1 rows, its manifest says 30", id="data-is-a-delete-file"),
    ],
)
def test_a_file_replaced_by_another_file_of_the_table(table: mor.Table, kind: str, replacement: str, fragment: str) -> None:
    """Valid Avro or Parquet, but not what the table says is there."""
    location, source = table_file(table, kind), table_file(table, replacement)
    metadata_location = table.metadata_location
    shutil.copy(local(source), local(location))
    with pytest.raises(mor.CorruptMetadataError) as info:
        table.scan().to_arrow()
    assert location in str(info.value) and fragment in str(info.value), str(info.value)
    assert table.refresh().metadata_location == metadata_location


def test_a_data_file_swapped_for_a_valid_one_with_other_rows(table: mor.Table) -> None:
    """Position deletes would silently remove the wrong rows: the row count gives it away."""
    location = table_file(table, "data-file")
    table.append(make_rows(range(100, 105)))
    other = next(p for p in live_data_paths(table) if p != location)
    shutil.copy(local(other), local(location))
    with pytest.raises(mor.CorruptMetadataError, match="has 5 rows, its manifest says 30") as info:
        table.scan().to_arrow()
    assert location in str(info.value)


def test_a_data_page_that_does_not_decode(table: mor.Table) -> None:
    location = table_file(table, "data-file")
    path = Path(local(location))
    data = bytearray(path.read_bytes())
    data[4:204] = b"\xff" * 200  # the first page header, right after the magic bytes
    path.write_bytes(bytes(data))
    with pytest.raises(mor.CorruptMetadataError) as info:
        table.scan().to_arrow()
    assert location in str(info.value) and "data file" in str(info.value)


def test_a_commit_on_top_of_a_damaged_manifest_is_refused(catalog: mor.Catalog, table: mor.Table) -> None:
    location = table_file(table, "data-manifest")
    metadata_location = table.metadata_location
    damage(location, "truncated")
    with pytest.raises(mor.CorruptMetadataError) as info:
        table.append(make_rows([100]))
    assert location in str(info.value)
    assert catalog.load_table("db.t").metadata_location == metadata_location


def test_read_errors_map_to_typed_errors_naming_the_file() -> None:
    """Permission errors cannot be provoked as root, so the mapping is checked directly."""
    denied = unreadable("manifest", "file:///t/m.avro", PermissionError(13, "Permission denied"))
    assert isinstance(denied, StorageError) and isinstance(denied, OSError) and "file:///t/m.avro" in str(denied)
    missing = unreadable("data file", "file:///t/d.parquet", FileNotFoundError(2, "No such file"))
    assert isinstance(missing, mor.CorruptMetadataError) and str(missing) == "data file file:///t/d.parquet is missing"
    damaged = unreadable("data file", "file:///t/d.parquet", pa.ArrowInvalid("Parquet magic bytes not found\nmore"))
    assert isinstance(damaged, mor.CorruptMetadataError)
    assert "file:///t/d.parquet" in str(damaged) and "magic bytes" in str(damaged) and "more" not in str(damaged)
