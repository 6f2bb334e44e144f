"""The change feed against Iceberg Java's changelog view, where Java has one: on append-only and
copy-on-write histories (Java's changelog scan refuses delete files), mor's `table.changes()`
equals `CALL system.create_changelog_view(...)`, row for row, with the same change types,
ordinals and commit snapshot ids, with and without update pairing by key.

The history mixes writers through one `mor serve` server: Java's INSERT, copy-on-write DELETE,
UPDATE and MERGE, a compaction (`rewrite_data_files`, a replace snapshot), and mor's append and
copy-on-write DELETE.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import pyarrow as pa
import pytest
from oracle_rest import JavaSql, java_sql

import mor
from tests.servers.rest import Served, running_rest_server

pytestmark = [pytest.mark.interop, pytest.mark.oracle]

TOKEN = "mor-client-token"
COPY_ON_WRITE = ", ".join(f"'write.{verb}.mode'='copy-on-write'" for verb in ("delete", "update", "merge"))
CHANGE_COLUMNS = ["_change_type", "_change_ordinal", "_commit_snapshot_id"]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("changes-java")
    (root / "tokens").write_text(f"{TOKEN}\n")
    with running_rest_server(root / "warehouse", token_file=root / "tokens") as server:
        yield Served(server, root / "warehouse", None, TOKEN)


@pytest.fixture(scope="module")
def java(served: Served, tmp_path_factory: pytest.TempPathFactory) -> Iterator[JavaSql]:
    with java_sql(served.url, tmp_path_factory.mktemp("java"), token=TOKEN) as session:
        session.sql("CREATE NAMESPACE IF NOT EXISTS rc.db")
        yield session


def bag(table: pa.Table, columns: list[str]) -> Counter[tuple]:
    return Counter(tuple(r[c] for c in columns) for r in table.to_pylist())


def test_changes_equal_javas_changelog_view(served: Served, java: JavaSql) -> None:
    client = mor.load_catalog(uri=served.url, token=TOKEN)
    java.sql(
        "CREATE TABLE rc.db.cf (id bigint, status string, amount double) USING iceberg "
        f"TBLPROPERTIES ('format-version'='2', {COPY_ON_WRITE})"
    )
    java.sql("INSERT INTO rc.db.cf VALUES (1, 'a', 1.0), (2, 'b', 2.0), (3, 'a', 3.0), (4, null, 4.0)")
    java.sql("INSERT INTO rc.db.cf VALUES (5, 'c', 5.0), (6, 'c', null)")
    java.sql("DELETE FROM rc.db.cf WHERE id IN (2, 5)")
    java.sql("UPDATE rc.db.cf SET amount = amount + 10 WHERE status = 'a'")
    java.sql(
        "MERGE INTO rc.db.cf t USING (SELECT 4 AS id, 'z' AS status, 40.0 AS amount UNION ALL SELECT 9, 'n', 9.0) s "
        "ON t.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
    )
    table = client.load_table("db.cf")
    table.append(pa.table({"id": pa.array([7, 8], pa.int64()), "status": ["m", "m"], "amount": [7.0, 8.0]}))
    table.delete("id = 7", mode="copy-on-write")
    java.sql("CALL rc.system.rewrite_data_files(table => 'db.cf', options => map('rewrite-all', 'true'))")
    java.sql("INSERT INTO rc.db.cf VALUES (10, 'x', 10.0)")

    table = client.load_table("db.cf")
    snapshots = [s.snapshot_id for s in table.metadata.ancestors(table.current_snapshot().snapshot_id)][::-1]
    assert any(s.operation == "replace" for s in table.snapshots())
    columns = ["id", "status", "amount", *CHANGE_COLUMNS]
    ranges = [(None, snapshots[-1]), (snapshots[1], snapshots[-1]), (snapshots[2], snapshots[5]), (snapshots[4], snapshots[7])]
    for n, (first, last) in enumerate(ranges):
        options = f"'end-snapshot-id', '{last}'" + ("" if first is None else f", 'start-snapshot-id', '{first}'")
        for keyed in (False, True):
            view = f"cf_changes_{n}_{int(keyed)}"
            keys = ", identifier_columns => array('id')" if keyed else ""
            java.sql(f"CALL rc.system.create_changelog_view(table => 'db.cf', options => map({options}){keys}, changelog_view => '{view}')")
            expected = java.rows(f"SELECT * FROM {view}")
            got = table.changes(from_snapshot_id=first, to_snapshot_id=last, on=["id"] if keyed else None).to_arrow()
            assert bag(got, columns) == bag(expected, columns), f"changes after {first} up to {last}, keyed={keyed}"
