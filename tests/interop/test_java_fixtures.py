"""We read tables written by Iceberg Java and must see exactly what Iceberg Java saw.

The fixtures (``shared/fixtures/iceberg-java``, see its README) hold, for every snapshot of every
table, the rows Iceberg Java 1.10.2 read back (``expected/<table>/<snapshot_id>.json``) and its
``planFiles()`` result (``expected/<table>/plan/<snapshot_id>.json``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from java_fixtures import (
    FIXTURE_TABLES,
    JAVA_SNAPSHOTS,
    SNAPSHOT_PARAMS,
    TABLE_PARAMS,
    JavaSnapshot,
    describe_row_differences,
    expected_rows_file,
    fixture_source,
    read_json_lines,
    row_sort_key,
    to_json_rows,
)

import mor

pytestmark = pytest.mark.interop

# The Arrow types the public API promises for each Iceberg primitive type.
ARROW_TYPE_OF = {
    "boolean": pa.bool_(),
    "long": pa.int64(),
    "int": pa.int32(),
    "float": pa.float32(),
    "string": pa.string(),
    "double": pa.float64(),
    "timestamptz": pa.timestamp("us", tz="UTC"),
    "timestamp": pa.timestamp("us"),
    "date": pa.date32(),
    "time": pa.time64("us"),
    "binary": pa.binary(),
    "uuid": pa.binary(16),
}


def arrow_type_of(iceberg_type: Any) -> pa.DataType:
    """The Arrow type of an Iceberg type as the metadata JSON spells it (nested types too)."""
    if isinstance(iceberg_type, str):
        if iceberg_type.startswith("decimal("):
            precision, scale = iceberg_type[len("decimal(") : -1].split(",")
            return pa.decimal128(int(precision), int(scale))
        if iceberg_type.startswith("fixed["):
            return pa.binary(int(iceberg_type[len("fixed[") : -1]))
        return ARROW_TYPE_OF[iceberg_type]
    kind = iceberg_type["type"]
    if kind == "struct":
        return pa.struct([(f["name"], arrow_type_of(f["type"])) for f in iceberg_type["fields"]])
    if kind == "list":
        return pa.list_(pa.field("element", arrow_type_of(iceberg_type["element"])))
    assert kind == "map", iceberg_type
    return pa.map_(arrow_type_of(iceberg_type["key"]), arrow_type_of(iceberg_type["value"]))


def assert_rows_equal_expected(actual: pa.Table, expected_file: Path, *, how: str) -> None:
    expected = read_json_lines(expected_file)
    if expected:
        assert actual.column_names == list(expected[0]), f"{how}: columns not in schema order"
    rows = to_json_rows(actual.to_pylist())
    assert sorted(rows, key=row_sort_key) == sorted(expected, key=row_sort_key), (
        f"{how} differs from {expected_file.name}:\n{describe_row_differences(expected, rows)}"
    )


def rows_from_batches(scan: Any, schema: pa.Schema) -> pa.Table:
    return pa.Table.from_batches(list(scan.to_batches()), schema=schema)


# ---------------------------------------------------------------------------------------------
# Rows: every snapshot, read two ways
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("snap", SNAPSHOT_PARAMS)
def test_rows_by_snapshot_id_match_java(java_fixtures: Path, snap: JavaSnapshot) -> None:
    table = mor.StaticTable.from_metadata(str(java_fixtures / snap.final_metadata_file))
    scan = table.scan(snapshot_id=snap.snapshot_id)
    result = scan.to_arrow()
    expected_file = expected_rows_file(java_fixtures, snap)
    assert_rows_equal_expected(result, expected_file, how="scan(snapshot_id).to_arrow()")
    assert_rows_equal_expected(rows_from_batches(scan, result.schema), expected_file, how="scan(snapshot_id).to_batches()")


@pytest.mark.parametrize("snap", SNAPSHOT_PARAMS)
def test_rows_of_snapshot_metadata_file_match_java(java_fixtures: Path, snap: JavaSnapshot) -> None:
    table = mor.StaticTable.from_metadata(str(java_fixtures / snap.metadata_file))
    assert table.current_snapshot().snapshot_id == snap.snapshot_id
    assert_rows_equal_expected(
        table.scan().to_arrow(),
        expected_rows_file(java_fixtures, snap),
        how=f"scan() of {snap.metadata_file}",
    )


LINEAGE_SNAPSHOTS = [
    pytest.param(snap, id=snap.test_id)
    for snap in JAVA_SNAPSHOTS
    if (fixture_source(snap.table) / "expected" / snap.table / f"{snap.snapshot_id}.lineage.json").is_file()
]


@pytest.mark.parametrize("snap", LINEAGE_SNAPSHOTS)
def test_row_lineage_matches_java(java_fixtures: Path, snap: JavaSnapshot) -> None:
    """`_row_id` and `_last_updated_sequence_number` of every live row, as Iceberg Java reads
    them (inherited from first_row_id and sequence numbers, or stored for moved rows)."""
    expected_file = java_fixtures / "expected" / snap.table / f"{snap.snapshot_id}.lineage.json"
    table = mor.StaticTable.from_metadata(str(java_fixtures / snap.final_metadata_file))
    columns = ["id", "_row_id", "_last_updated_sequence_number"]
    result = table.scan(snapshot_id=snap.snapshot_id, columns=columns).to_arrow()
    assert result.column_names == columns
    assert result.schema.field("_row_id").type == pa.int64()
    expected = read_json_lines(expected_file)
    assert sorted(result.to_pylist(), key=_lineage_key) == sorted(expected, key=_lineage_key)


def _lineage_key(row: dict[str, Any]) -> tuple:
    return tuple((v is None, v) for v in row.values())


# ---------------------------------------------------------------------------------------------
# Scan planning against Iceberg Java's planFiles()
# ---------------------------------------------------------------------------------------------


def planned_deletes_by_data_file(tasks: list[Any]) -> dict[str, set[str]]:
    """data file path -> paths of the delete files our plan applies to it."""
    planned: dict[str, set[str]] = {}
    for task in tasks:
        path = task.data_file.file_path
        deletes = {delete.file_path for delete in task.delete_files}
        assert planned.setdefault(path, deletes) == deletes, f"tasks of {path} disagree on deletes"
    return planned


def java_deletes_by_data_file(plan: dict[str, Any]) -> dict[str, set[str]]:
    return {task["data_file"]: {d["path"] for d in task["deletes"]} for task in plan["scan_plan"]}


def check_file_metadata(tasks: list[Any], live: dict[str, dict[str, Any]]) -> list[str]:
    """Sequence numbers and content of every planned file must match the live manifest entries."""
    problems = []
    for task in tasks:
        data = task.data_file
        entry = live.get(data.file_path)
        if entry is None:
            problems.append(f"planned data file is not live: {data.file_path}")
        elif data.data_sequence_number != entry["sequence_number"]:
            problems.append(f"{data.file_path}: data_sequence_number {data.data_sequence_number}, manifest says {entry['sequence_number']}")
        for delete in task.delete_files:
            entry = live.get(delete.file_path)
            if entry is None:
                problems.append(f"planned delete file is not live: {delete.file_path}")
                continue
            if not isinstance(delete.content, mor.FileContent):
                problems.append(f"{delete.file_path}: content {delete.content!r} is not a FileContent")
            if delete.content != entry["content"]:
                problems.append(f"{delete.file_path}: content {delete.content!r}, manifest says {entry['content']}")
            if delete.data_sequence_number != entry["sequence_number"]:
                problems.append(
                    f"{delete.file_path}: data_sequence_number {delete.data_sequence_number}, manifest says {entry['sequence_number']}"
                )
    return problems


def same_partition_scope(delete: dict[str, Any], data: dict[str, Any]) -> bool:
    """An equality delete applies to a data file of the same spec and partition, or globally."""
    if not delete["partition"]:
        return True
    return delete["spec_id"] == data["spec_id"] and delete["partition"] == data["partition"]


def compare_deletes_of_data_file(data_path: str, ours: set[str], java: set[str], live: dict[str, dict[str, Any]]) -> list[str]:
    """Position deletes must match exactly. Java also prunes equality deletes by column stats,
    so ours may hold more of them, each newer than the data file and in its partition scope."""

    def equality(paths: set[str]) -> set[str]:
        return {p for p in paths if live[p]["content"] == mor.FileContent.EQUALITY_DELETES}

    problems = []
    ours_positional, java_positional = ours - equality(ours), java - equality(java)
    if ours_positional != java_positional:
        problems.append(
            f"{data_path}: position deletes differ: missing {sorted(java_positional - ours_positional)}, "
            f"extra {sorted(ours_positional - java_positional)}"
        )
    missing_equality = equality(java) - equality(ours)
    if missing_equality:
        problems.append(f"{data_path}: equality deletes missing: {sorted(missing_equality)}")
    data = live[data_path]
    for path in sorted(equality(ours) - equality(java)):
        delete = live[path]
        if delete["sequence_number"] <= data["sequence_number"]:
            problems.append(
                f"{data_path} (seq {data['sequence_number']}): equality delete {path} has seq {delete['sequence_number']}, not greater"
            )
        if not same_partition_scope(delete, data):
            problems.append(f"{data_path}: equality delete {path} is from another partition")
    return problems


@pytest.mark.parametrize("snap", SNAPSHOT_PARAMS)
def test_plan_files_match_java(java_fixtures: Path, snap: JavaSnapshot) -> None:
    plan = json.loads((java_fixtures / "expected" / snap.table / "plan" / f"{snap.snapshot_id}.json").read_text())
    live = {f["file_path"]: f for f in plan["data_files"] + plan["delete_files"]}
    table = mor.StaticTable.from_metadata(str(java_fixtures / snap.final_metadata_file))
    tasks = table.scan(snapshot_id=snap.snapshot_id).plan_files()

    problems = check_file_metadata(tasks, live)
    ours, java = planned_deletes_by_data_file(tasks), java_deletes_by_data_file(plan)
    if set(ours) != set(java):
        problems.append(f"data files differ: missing {sorted(set(java) - set(ours))}, extra {sorted(set(ours) - set(java))}")
    for data_path in sorted(set(ours) & set(java)):
        problems += compare_deletes_of_data_file(data_path, ours[data_path], java[data_path], live)
    assert not problems, "plan differs from Iceberg Java's:\n" + "\n".join(problems)


# ---------------------------------------------------------------------------------------------
# Table-level metadata
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("table_name", TABLE_PARAMS)
def test_snapshot_log_matches_java(java_fixtures: Path, table_name: str) -> None:
    info = FIXTURE_TABLES[table_name]
    table = mor.StaticTable.from_metadata(str(java_fixtures / info["final_metadata_file"]))
    ours = [(s.snapshot_id, s.parent_snapshot_id, s.sequence_number, s.timestamp_ms, s.summary) for s in table.snapshots()]
    java = [
        (
            s["snapshot_id"],
            s["parent_snapshot_id"],
            s["sequence_number"],
            s["timestamp_ms"],
            {**s["summary"], "operation": s["operation"]},
        )
        for s in info["snapshots"]
    ]
    assert ours == java
    assert table.current_snapshot().snapshot_id == java[-1][0]


def arrow_schema_of(metadata_file: Path, schema_id: int | None = None) -> list[tuple[str, pa.DataType]]:
    """(name, Arrow type) of the columns of a schema (default: the current one), by the public
    API's type mapping."""
    metadata = json.loads(metadata_file.read_text())
    wanted = metadata["current-schema-id"] if schema_id is None else schema_id
    schema = next(s for s in metadata["schemas"] if s["schema-id"] == wanted)
    return [(field["name"], arrow_type_of(field["type"])) for field in schema["fields"]]


def names_and_types(schema: pa.Schema) -> list[tuple[str, pa.DataType]]:
    """Field names and types, nested ones included, without field metadata (ids)."""

    def plain(t: pa.DataType) -> pa.DataType:
        if pa.types.is_struct(t):
            return pa.struct([(f.name, plain(f.type)) for f in t])
        if pa.types.is_map(t):
            return pa.map_(plain(t.key_type), plain(t.item_type))
        if pa.types.is_list(t):
            return pa.list_(pa.field("element", plain(t.value_type)))
        return t

    return [(f.name, plain(f.type)) for f in schema]


@pytest.mark.parametrize("table_name", TABLE_PARAMS)
def test_arrow_types_follow_the_type_mapping(java_fixtures: Path, table_name: str) -> None:
    """Time travel reads with the snapshot's own schema; a plain scan with the current one."""
    info = FIXTURE_TABLES[table_name]
    metadata_file = java_fixtures / info["final_metadata_file"]
    table = mor.StaticTable.from_metadata(str(metadata_file))
    metadata = json.loads(metadata_file.read_text())
    schema_ids = {s["snapshot-id"]: s.get("schema-id") for s in metadata["snapshots"]}
    for snap in info["snapshots"]:
        result = table.scan(snapshot_id=snap["snapshot_id"]).to_arrow()
        assert names_and_types(result.schema) == arrow_schema_of(metadata_file, schema_ids[snap["snapshot_id"]])
    assert names_and_types(table.scan().to_arrow().schema) == arrow_schema_of(metadata_file)


# Our fixtures (tests/fixtures) also record a plain read of the final metadata.
PLAIN_READ_TABLES = [n for n in FIXTURE_TABLES if (fixture_source(n) / "expected" / n / "current.json").is_file()]


@pytest.mark.parametrize("table_name", PLAIN_READ_TABLES)
def test_plain_scan_reads_with_the_current_schema(java_fixtures: Path, table_name: str) -> None:
    """evolve_schema adds a column after its last snapshot: a plain scan shows it (as nulls),
    time travel to that snapshot does not."""
    current_file = fixture_source(table_name) / "expected" / table_name / "current.json"
    table = mor.StaticTable.from_metadata(str(java_fixtures / FIXTURE_TABLES[table_name]["final_metadata_file"]))
    assert_rows_equal_expected(table.scan().to_arrow(), current_file, how="scan().to_arrow()")


@pytest.mark.parametrize(
    "spelling",
    [
        pytest.param(lambda path: str(path), id="plain-path"),
        pytest.param(lambda path: path.as_uri(), id="file-uri-three-slashes"),
        pytest.param(lambda path: f"file:{path}", id="file-uri-one-slash"),
    ],
)
def test_from_metadata_accepts_paths_and_file_uris(java_fixtures: Path, spelling: Any) -> None:
    info = FIXTURE_TABLES["unpart_v2_mor"]
    table = mor.StaticTable.from_metadata(spelling(java_fixtures / info["final_metadata_file"]))
    final = info["snapshots"][-1]
    assert table.current_snapshot().snapshot_id == final["snapshot_id"]
    assert table.scan().to_arrow().num_rows == final["row_count"]
