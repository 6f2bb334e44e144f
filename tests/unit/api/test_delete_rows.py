"""delete_rows: blind deletes by value. Equality delete files (content 2) in DELETES manifests,
no data read, applicability by sequence number, null-safe and whole-tuple matching, partition
scoping (or a table-wide file under an unpartitioned spec), and errors that change nothing."""

from __future__ import annotations

import json
from collections.abc import Callable

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from unit_helpers import (
    RawEntry,
    RecordingFileIO,
    TableState,
    assert_no_orphans,
    assert_rows_are,
    avro_file,
    live_data_paths,
    live_delete_entries,
    live_raw_entries,
    local,
    make_rows,
    rows_of,
    scan_ids,
    sorted_rows,
)

import mor

MakeTable = Callable[..., mor.Table]
FIELD_ID = b"PARQUET:field_id"


def _equality_entries(table: mor.Table) -> list[RawEntry]:
    entries = live_delete_entries(table)
    assert all(e.content == 2 for e in entries), [e.content for e in entries]
    return entries


def _field_id(table: mor.Table, name: str) -> int:
    return table.schema().find_field(name).field_id


def _avro_field(avro_type: object, field_id: int) -> dict | None:
    """The Avro record field with this Iceberg field id, anywhere in a schema."""
    if isinstance(avro_type, list):
        for t in avro_type:
            if (found := _avro_field(t, field_id)) is not None:
                return found
    elif isinstance(avro_type, dict):
        for f in avro_type.get("fields", []):
            if f.get("field-id") == field_id:
                return f
            if (found := _avro_field(f["type"], field_id)) is not None:
                return found
        if "items" in avro_type:
            return _avro_field(avro_type["items"], field_id)
    return None


def _metadata_json(table: mor.Table) -> dict:
    with open(local(table.metadata_location)) as f:
        return json.load(f)


# -- what is written ---------------------------------------------------------------------------


def test_delete_rows_writes_an_equality_delete_file_in_a_deletes_manifest(make_table: MakeTable) -> None:
    table = make_table(range(0, 30))
    data_before = live_data_paths(table)

    snapshot = table.delete_rows(pa.table({"id": [7, 3]}))

    assert snapshot is not None and snapshot == table.current_snapshot()
    assert live_data_paths(table) == data_before  # no data file touched
    (entry,) = _equality_entries(table)
    assert entry.content == 2
    assert entry.data_file["equality_ids"] == [_field_id(table, "id")] == [1]
    assert all(type(i) is int for i in entry.data_file["equality_ids"])
    assert entry.data_file["file_format"] == "PARQUET"
    assert entry.data_file["record_count"] == 2
    assert entry.data_file["referenced_data_file"] is None
    assert entry.data_sequence_number == snapshot.sequence_number
    assert entry.snapshot_id == snapshot.snapshot_id
    assert entry.manifest["content"] == 1  # a DELETES manifest
    header, avro_schema, _ = avro_file(entry.manifest["manifest_path"])
    assert header["content"] == "deletes"
    equality_ids = _avro_field(avro_schema, 135)
    assert equality_ids is not None
    assert equality_ids["type"] == ["null", {"type": "array", "items": "int", "element-id": 136}]  # int, not long

    keys = pq.read_table(local(entry.path))
    assert keys.column_names == ["id"]
    assert sorted(keys.column("id").to_pylist()) == [3, 7]
    assert keys.schema.field("id").metadata[FIELD_ID] == b"1"
    assert_rows_are(table.scan().to_arrow(), set(range(30)) - {3, 7})
    assert_no_orphans(table)


def test_multi_column_keys_record_every_key_field_id_in_order(make_table: MakeTable) -> None:
    table = make_table(range(0, 30))
    table.delete_rows(pa.table({"name": ["n5"], "category": ["a"]}))
    (entry,) = _equality_entries(table)
    assert entry.data_file["equality_ids"] == [_field_id(table, "name"), _field_id(table, "category")] == [3, 2]
    keys = pq.read_table(local(entry.path))
    assert {keys.schema.field(n).metadata[FIELD_ID] for n in keys.column_names} == {b"2", b"3"}
    assert keys.to_pylist() in ([{"name": "n5", "category": "a"}], [{"category": "a", "name": "n5"}])
    assert_rows_are(table.scan().to_arrow(), set(range(30)) - {5})


def test_delete_rows_summary(make_table: MakeTable) -> None:
    table = make_table(range(0, 30))
    before = table.current_snapshot()
    assert before is not None

    first = table.delete_rows(pa.table({"id": [1, 2]}))
    assert first is not None
    assert first.operation == "delete"
    assert first.parent_snapshot_id == before.snapshot_id
    assert first.sequence_number == before.sequence_number + 1
    s = first.summary
    assert s["added-delete-files"] == "1"
    assert s["added-equality-delete-files"] == "1"
    assert s["added-equality-deletes"] == "2"
    assert s.get("added-position-delete-files", "0") == "0"
    assert s.get("added-data-files", "0") == "0"
    assert s.get("added-records", "0") == "0"
    assert s.get("deleted-data-files", "0") == "0"
    assert s["total-equality-deletes"] == "2"
    assert s["total-position-deletes"] == "0"
    assert s["total-delete-files"] == "1"
    assert s["total-records"] == "30"  # data file records: equality deletes are counted apart
    (entry,) = _equality_entries(table)
    assert s["added-files-size"] == str(entry.data_file["file_size_in_bytes"])

    second = table.delete_rows(pa.table({"id": [3, 4, 5]}))
    assert second is not None
    assert second.summary["added-equality-deletes"] == "3"
    assert second.summary["total-equality-deletes"] == "5"
    assert second.summary["total-delete-files"] == "2"


def test_delete_rows_reads_no_data_file(make_table: MakeTable) -> None:
    table = make_table(range(0, 30), range(30, 60), partition_by=["category"])
    table.delete("id = 4")  # a position delete file too: it must not be read either
    data_files = live_data_paths(table)
    recording = RecordingFileIO()
    table.io = recording

    assert table.delete_rows(pa.table({"id": [5, 45]})) is not None
    assert table.delete_rows(pa.table({"id": [6], "category": ["a"]})) is not None

    parquet_opened = [p for p in recording.opened if p.endswith(".parquet")]
    assert parquet_opened == []
    assert data_files.isdisjoint(recording.opened)
    # The fake sees reads: a scan through it opens the data files.
    assert_rows_are(table.scan().to_arrow(), set(range(60)) - {4, 5, 45, 6})
    assert data_files <= set(recording.opened)


# -- what it deletes -------------------------------------------------------------------------


def test_delete_applies_only_to_rows_written_before_it(make_table: MakeTable) -> None:
    table = make_table(range(0, 10))
    deleted = table.delete_rows(pa.table({"id": [3, 4]}))
    assert deleted is not None
    table.append(make_rows([3]))  # the same key, written later: survives

    assert_rows_are(table.scan().to_arrow(), set(range(10)) - {4})
    assert scan_ids(table, snapshot_id=deleted.snapshot_id) == [0, 1, 2, 5, 6, 7, 8, 9]
    (task_old, task_new) = sorted(table.scan().plan_files(), key=lambda t: t.data_file.record_count, reverse=True)
    assert len(task_old.equality_deletes) == 1
    assert len(task_new.equality_deletes) == 0

    table.delete_rows(pa.table({"id": [3]}))  # a new delete reaches the new row
    assert_rows_are(table.scan().to_arrow(), set(range(10)) - {3, 4})


def test_a_null_key_matches_null_values(make_table: MakeTable) -> None:
    table = make_table()
    table.append(
        rows_of(
            [
                {"id": 1, "category": None, "name": "n1"},
                {"id": 2, "category": "a", "name": "n2"},
                {"id": 3, "category": None, "name": None},
                {"id": 4, "category": "b", "name": None},
                {"id": 5, "category": "", "name": "n5"},  # empty is not null
            ]
        )
    )
    table.delete_rows(pa.table({"category": pa.array([None], pa.string())}))
    assert scan_ids(table) == [2, 4, 5]

    table.delete_rows(pa.table({"category": pa.array(["b"]), "name": pa.array([None], pa.string())}))
    assert scan_ids(table) == [2, 5]


def test_a_null_key_tuple_matches_only_with_every_column(make_table: MakeTable) -> None:
    table = make_table()
    table.append(
        rows_of(
            [
                {"id": 1, "category": None, "name": "n1"},
                {"id": 2, "category": None, "name": "n2"},
                {"id": 3, "category": "a", "name": "n1"},
                {"id": 4, "category": None, "name": None},
            ]
        )
    )
    table.delete_rows(pa.table({"category": pa.array([None], pa.string()), "name": ["n1"]}))
    assert scan_ids(table) == [2, 3, 4]


def test_multi_column_keys_match_only_whole_tuples(make_table: MakeTable) -> None:
    # Row i has category "abc"[(i // 10) % 3] and name f"n{i}": id 1 is (a, n1), id 11 is (b, n11).
    table = make_table(range(0, 30))
    keys = pa.table({"category": ["a", "b", "a"], "name": ["n11", "n1", "n2"]})  # only (a, n2) is a row
    table.delete_rows(keys)
    assert_rows_are(table.scan().to_arrow(), set(range(30)) - {2})


def test_absent_keys_are_harmless(make_table: MakeTable) -> None:
    table = make_table(range(0, 20))
    snapshot = table.delete_rows(pa.table({"id": [100, 5, -1]}))
    assert snapshot is not None  # blind: it commits without knowing what matches
    assert_rows_are(table.scan().to_arrow(), set(range(20)) - {5})

    nothing = table.delete_rows(pa.table({"id": [1000]}))
    assert nothing is not None and nothing.operation == "delete"
    assert_rows_are(table.scan().to_arrow(), set(range(20)) - {5})


def test_delete_rows_on_an_empty_table(make_table: MakeTable) -> None:
    table = make_table()
    assert table.delete_rows(pa.table({"id": [1]})) is not None
    table.append(make_rows([1, 2]))
    assert scan_ids(table) == [1, 2]


def test_duplicate_keys_are_written_once(make_table: MakeTable) -> None:
    table = make_table(range(0, 30))
    snapshot = table.delete_rows(pa.table({"id": [4, 6, 4, 4, 6]}))
    assert snapshot is not None
    assert snapshot.summary["added-equality-deletes"] == "2"
    (entry,) = _equality_entries(table)
    assert entry.data_file["record_count"] == 2
    assert sorted(pq.read_table(local(entry.path)).column("id").to_pylist()) == [4, 6]
    assert_rows_are(table.scan().to_arrow(), set(range(30)) - {4, 6})


def test_duplicate_keys_with_nulls_are_written_once(make_table: MakeTable) -> None:
    table = make_table(range(0, 30))
    keys = pa.table({"category": pa.array([None, None, "a", "a"], pa.string()), "name": ["n1", "n1", "n1", "n1"]})
    snapshot = table.delete_rows(keys)
    assert snapshot is not None
    assert snapshot.summary["added-equality-deletes"] == "2"
    (entry,) = _equality_entries(table)
    written = pq.read_table(local(entry.path)).select(["category", "name"]).to_pylist()
    assert sorted(written, key=lambda r: r["category"] or "") == [
        {"category": None, "name": "n1"},
        {"category": "a", "name": "n1"},
    ]
    assert_rows_are(table.scan().to_arrow(), set(range(30)) - {1})


def test_keys_are_conformed_to_the_table_types(make_table: MakeTable) -> None:
    table = make_table(range(0, 10))
    table.delete_rows(pa.table({"id": pa.array([2, 3], pa.int32())}))
    (entry,) = _equality_entries(table)
    assert pq.read_schema(local(entry.path)).field("id").type == pa.int64()
    assert_rows_are(table.scan().to_arrow(), set(range(10)) - {2, 3})


# -- partitioned tables ------------------------------------------------------------------------


def _partitioned_with_id_5_twice(make_table: MakeTable) -> mor.Table:
    """Partitioned by category: a holds 0-9, b 10-19, c 20-29, and b holds id 5 too."""
    table = make_table(range(0, 30), partition_by=["category"])
    table.append(rows_of([{"id": 5, "category": "b", "name": "b5", "value": 0.0}]))
    return table


def test_keys_with_every_partition_column_write_partition_scoped_files(make_table: MakeTable) -> None:
    table = _partitioned_with_id_5_twice(make_table)
    specs_before = table.metadata.partition_specs
    spec_id = table.spec().spec_id

    snapshot = table.delete_rows(pa.table({"id": [5, 12, 15], "category": ["a", "b", "b"]}))

    assert snapshot is not None
    assert table.metadata.partition_specs == specs_before  # no spec added
    entries = _equality_entries(table)
    by_partition = {e.data_file["partition"]["category"]: e for e in entries}
    assert set(by_partition) == {"a", "b"}
    assert len(entries) == 2
    for category, entry in by_partition.items():
        assert entry.manifest["partition_spec_id"] == spec_id
        assert entry.manifest["content"] == 1
        assert entry.data_file["equality_ids"] == [1, 2]
        assert f"/data/category={category}/" in entry.path
        keys = pq.read_table(local(entry.path))
        assert set(keys.column("category").to_pylist()) == {category}
    assert sorted(pq.read_table(local(by_partition["a"].path)).column("id").to_pylist()) == [5]
    assert sorted(pq.read_table(local(by_partition["b"].path)).column("id").to_pylist()) == [12, 15]

    got = table.scan().to_arrow()
    assert sorted_rows(got.filter(pc.equal(got.column("id"), 5))) == sorted_rows(
        [{"id": 5, "category": "b", "name": "b5", "value": 0.0}]
    )  # (a, 5) is gone; (b, 5) is another key and stays
    assert scan_ids(table) == sorted([*set(range(30)) - {5, 12, 15}, 5])
    # Each file applies in its own partition only.
    for task in table.scan().plan_files():
        applies = {d.file_path for d in task.equality_deletes}
        expected = {e.path for c, e in by_partition.items() if f"/category={c}/" in task.data_file.file_path}
        assert applies == expected, task.data_file.file_path
    assert_no_orphans(table)


def test_partition_scoped_keys_with_a_null_partition_value(make_table: MakeTable) -> None:
    table = make_table(partition_by=["category"])
    table.append(
        rows_of(
            [
                {"id": 1, "category": None, "name": "x"},
                {"id": 2, "category": None, "name": "y"},
                {"id": 1, "category": "a", "name": "z"},
            ]
        )
    )
    table.delete_rows(pa.table({"id": [1], "category": pa.array([None], pa.string())}))
    (entry,) = _equality_entries(table)
    assert entry.data_file["partition"] == {"category": None}
    assert entry.manifest["partition_spec_id"] == table.spec().spec_id
    assert sorted((r["id"], r["name"]) for r in table.scan().to_arrow().to_pylist()) == [(1, "z"), (2, "y")]


def test_keys_without_the_partition_column_delete_table_wide_under_an_unpartitioned_spec(make_table: MakeTable) -> None:
    table = _partitioned_with_id_5_twice(make_table)
    default_spec = table.spec()
    assert len(table.metadata.partition_specs) == 1

    first = table.delete_rows(pa.table({"id": [5, 21]}))

    assert first is not None
    specs = {s.spec_id: s for s in table.metadata.partition_specs}
    assert len(specs) == 2
    (added,) = [s for s in specs.values() if s.spec_id != default_spec.spec_id]
    assert list(added.fields) == []
    assert table.metadata.default_spec_id == default_spec.spec_id  # the default spec is unchanged
    assert table.spec() == default_spec
    on_disk = _metadata_json(table)
    assert on_disk["default-spec-id"] == default_spec.spec_id
    assert {"spec-id": added.spec_id, "fields": []} in on_disk["partition-specs"]
    assert on_disk["last-partition-id"] == 1000

    (entry,) = _equality_entries(table)
    assert entry.manifest["partition_spec_id"] == added.spec_id
    assert entry.data_file["partition"] == {}
    assert entry.data_file["equality_ids"] == [1]
    assert "category=" not in entry.path
    assert scan_ids(table) == sorted(set(range(30)) - {5, 21})  # both id 5 rows, in a and in b

    # Reused, not added again.
    second = table.delete_rows(pa.table({"id": [22]}))
    assert second is not None
    assert [s.spec_id for s in table.metadata.partition_specs] == list(specs)
    assert {e.manifest["partition_spec_id"] for e in _equality_entries(table)} == {added.spec_id}
    assert scan_ids(table) == sorted(set(range(30)) - {5, 21, 22})

    # Appends still use the table's partitioning.
    table.append(make_rows([5]))
    new_file = live_data_paths(table) - {e.path for e in live_raw_entries(table, first.snapshot_id)}
    (new_entry,) = [e for e in live_raw_entries(table) if e.path in new_file]
    assert new_entry.manifest["partition_spec_id"] == default_spec.spec_id
    assert new_entry.data_file["partition"] == {"category": "a"}
    assert 5 in scan_ids(table)
    assert_no_orphans(table)


def test_an_unpartitioned_table_needs_no_new_spec(make_table: MakeTable) -> None:
    table = make_table(range(0, 10))
    specs = table.metadata.partition_specs
    table.delete_rows(pa.table({"id": [1]}))
    assert table.metadata.partition_specs == specs
    (entry,) = _equality_entries(table)
    assert entry.manifest["partition_spec_id"] == table.spec().spec_id


# -- errors change nothing ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "keys",
    [
        pytest.param(pa.table({"nope": [1]}), id="unknown-column"),
        pytest.param(pa.table({"id": [1], "nope": [1]}), id="unknown-among-known"),
        pytest.param(pa.table({"ID": [1]}), id="wrong-case"),
        pytest.param(pa.table({"value": [0.5]}), id="double-key"),
        pytest.param(pa.table({"id": [1], "value": [0.5]}), id="double-among-keys"),
        pytest.param(pa.table({"id": ["x"]}), id="string-into-long"),
        pytest.param(pa.table({"id": pa.array([None], pa.int64())}), id="null-in-required-key"),
    ],
)
def test_a_bad_key_column_is_refused_and_changes_nothing(make_table: MakeTable, keys: pa.Table) -> None:
    table = make_table(range(0, 30), partition_by=["category"])
    state = TableState(table)
    with pytest.raises(mor.SchemaMismatchError):
        table.delete_rows(keys)
    state.assert_unchanged()
    assert len(table.metadata.partition_specs) == 1


def test_a_float_key_column_is_refused(catalog: mor.Catalog) -> None:
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("f", pa.float32())])
    table = catalog.create_table("db.floats", schema=schema)
    table.append(pa.table({"id": [1, 2], "f": pa.array([0.5, 1.5], pa.float32())}, schema=schema))
    state = TableState(table)
    with pytest.raises(mor.SchemaMismatchError, match="f"):
        table.delete_rows(pa.table({"f": pa.array([0.5], pa.float32())}))
    state.assert_unchanged()


def test_no_keys_commit_nothing(make_table: MakeTable) -> None:
    table = make_table(range(0, 30), partition_by=["category"])
    state = TableState(table)
    assert table.delete_rows(make_rows([]).select(["id"])) is None
    assert table.delete_rows(pa.table({"id": pa.array([], pa.int64())})) is None
    state.assert_unchanged()
    assert len(table.metadata.partition_specs) == 1  # no spec added for nothing


def test_key_types_are_checked_before_writing_even_when_no_keys(make_table: MakeTable) -> None:
    table = make_table(range(0, 10))
    state = TableState(table)
    with pytest.raises(mor.SchemaMismatchError):
        table.delete_rows(pa.table({"nope": pa.array([], pa.int64())}))
    state.assert_unchanged()
