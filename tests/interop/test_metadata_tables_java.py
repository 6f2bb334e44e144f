"""mor's metadata tables (`table.inspect.*`, mor/api/inspect.py) against Iceberg Java's: for every
fixture table Iceberg Java wrote, each metadata table has the same columns (names, and types up to
Arrow's names for list and map children) and the same rows. One JVM reads all of them."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from arrow_rows import row_texts
from fixture_copies import relocate_fixture
from java_fixtures import FIXTURE_TABLES
from oracle_support import java_metadata_tables

import mor
from mor.api.inspect import METADATA_TABLES

pytestmark = [pytest.mark.interop, pytest.mark.oracle]

# Iceberg Java 1.10.2 fails to read these itself (an error inside its position_deletes scan of a
# table whose schema evolved), so there is nothing to compare with.
JAVA_FAILS = {("evolve_schema", "position_deletes")}


def canonical_type(t: pa.DataType) -> str:
    """The type without the names Arrow and Spark give list items and map entries."""
    if pa.types.is_map(t):
        return f"map<{canonical_type(t.key_type)},{canonical_type(t.item_type)}>"
    if pa.types.is_list(t):
        return f"list<{canonical_type(t.value_type)}>"
    if pa.types.is_struct(t):
        return "struct<" + ",".join(f"{f.name}:{canonical_type(f.type)}" for f in t) + ">"
    return str(t)


@pytest.fixture(scope="module")
def compared(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, str, pa.Table, pa.Table]]:
    """(fixture, metadata table, mor's, Java's) for every pair Java can read."""
    root = tmp_path_factory.mktemp("metadata-tables")
    metadata = {name: relocate_fixture(name, root) for name in FIXTURE_TABLES}
    pairs = [(name, t) for name in metadata for t in METADATA_TABLES if (name, t) not in JAVA_FAILS]
    java = java_metadata_tables([(metadata[name], t) for name, t in pairs], root)
    tables = {name: mor.StaticTable.from_metadata(location) for name, location in metadata.items()}
    return [(name, t, METADATA_TABLES[t](tables[name].inspect), j) for (name, t), j in zip(pairs, java)]


def test_every_metadata_table_of_every_fixture_equals_iceberg_javas(compared: list[tuple[str, str, pa.Table, pa.Table]]) -> None:
    assert len(compared) >= len(FIXTURE_TABLES) * len(METADATA_TABLES) - len(JAVA_FAILS)
    differences = []
    for fixture, name, mine, java in compared:
        if mine.column_names != java.column_names:
            differences.append(f"{fixture}#{name}: columns {mine.column_names} != {java.column_names}")
            continue
        types = [c for c in java.column_names if canonical_type(mine.schema.field(c).type) != canonical_type(java.schema.field(c).type)]
        if types:
            differences.append(f"{fixture}#{name}: types of {types} differ")
        if row_texts(mine) != row_texts(java):
            differences.append(f"{fixture}#{name}: {mine.num_rows} rows, Java {java.num_rows}, or their values differ")
    assert not differences, "\n".join(differences)
    kinds = {(name, mine.num_rows > 0) for _, name, mine, _ in compared}
    assert all((name, True) in kinds for name in METADATA_TABLES), "every metadata table has rows in some fixture"


def test_a_metadata_table_of_an_old_snapshot(compared: list[tuple[str, str, pa.Table, pa.Table]], tmp_path: Path) -> None:
    """files/manifests/partitions take a snapshot id (Java's option snapshot-id)."""
    fixture = next(name for name in FIXTURE_TABLES if "v2" in name)
    table = mor.StaticTable.from_metadata(relocate_fixture(fixture, tmp_path))
    first = table.snapshots()[0].snapshot_id
    files = table.inspect.files(first)
    assert set(files["file_path"].to_pylist()) == {t.data_file.file_path for t in table.scan(snapshot_id=first).plan_files()}
    with pytest.raises(mor.NoSuchSnapshotError):
        table.inspect.files(12345)
