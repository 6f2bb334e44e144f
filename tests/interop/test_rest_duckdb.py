"""DuckDB's iceberg extension and mor on the same tables, through one `mor serve` server.

DuckDB is an Iceberg REST client no one here wrote: it stages creates and commits them with
`assert-create`, writes its own manifests and picks its own snapshot ids and sequence numbers,
commits through `POST /v1/transactions/commit`, and reads older metadata files from the
`metadata-log` for snapshot isolation. Its DELETE and UPDATE are merge-on-read (position delete
files on v2, deletion vectors on v3). So every direction is checked on the rows: what DuckDB
writes, mor's REST client and pyiceberg's RestCatalog read; what mor writes (position deletes,
equality deletes, deletion vectors), DuckDB reads, and writes on top of, and mor reads again.

DuckDB 1.5.5 with the extension wheels of the same version, loaded from their files: a binary
loads only into the DuckDB it was built for, and the machine has no network to install one.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import mor
from mor.format.spec import FileContent
from tests.servers.rest import Served, running_rest_server, unique

duckdb = pytest.importorskip("duckdb")

pytestmark = pytest.mark.interop

TOKEN = "duckdb-interop-token"
SCHEMA = pa.schema([("id", pa.int64()), ("status", pa.string()), ("amount", pa.float64())])
Row = tuple[Any, ...]


def extension_file(name: str) -> Path:
    package = importlib.import_module(f"duckdb_extension_{name}")
    return Path(package.__file__).parent / "extensions" / f"v{duckdb.__version__}" / f"{name}.duckdb_extension"


def connect(url: str, **attach: str) -> Any:
    """A DuckDB connection with the server attached as catalog `cat` (extra ATTACH options as
    keyword arguments). Extensions come from the wheels only: never from the network."""
    con = duckdb.connect(
        config={"allow_unsigned_extensions": True, "autoinstall_known_extensions": False, "autoload_known_extensions": False}
    )
    for name in ("httpfs", "avro", "iceberg"):  # iceberg's start-up needs avro loaded; REST calls need httpfs
        con.execute(f"LOAD '{extension_file(name)}'")
    options = "".join(f", {key.upper()} {value}" for key, value in attach.items())
    con.execute(f"ATTACH '' AS cat (TYPE iceberg, ENDPOINT '{url}', TOKEN '{TOKEN}'{options})")
    return con


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("duckdb-rest")
    (root / "tokens").write_text(TOKEN + "\n")
    warehouse = root / "warehouse"
    with running_rest_server(warehouse, token_file=root / "tokens") as server:
        yield Served(server, warehouse, None, TOKEN)


@pytest.fixture(scope="module")
def con(served: Served) -> Iterator[Any]:
    connection = connect(served.url)
    connection.execute("CREATE SCHEMA IF NOT EXISTS cat.db")
    yield connection
    connection.close()


@pytest.fixture(scope="module")
def client(served: Served) -> mor.Catalog:
    return mor.load_catalog(uri=served.url, token=TOKEN)


def duck_rows(con: Any, name: str, snapshot_id: int | None = None) -> list[Row]:
    at = "" if snapshot_id is None else f" AT (VERSION => {snapshot_id})"
    return sorted(con.execute(f"SELECT * FROM cat.db.{name}{at}").fetchall())


def arrow_rows(table: pa.Table) -> list[Row]:
    return sorted(tuple(r.values()) for r in table.to_pylist())


def mor_rows(client: mor.Catalog, name: str, snapshot_id: int | None = None) -> list[Row]:
    return arrow_rows(client.load_table(f"db.{name}").scan(snapshot_id=snapshot_id).to_arrow())


def delete_kinds(table: mor.Table) -> set[str]:
    """What the current snapshot's delete files are: 'position', 'equality', 'dv'."""
    kinds = set()
    for task in table.scan().plan_files():
        for f in task.delete_files:
            kinds.add("dv" if f.is_deletion_vector else "position" if f.content == FileContent.POSITION_DELETES else "equality")
    return kinds


def test_duckdb_writes_and_mor_and_pyiceberg_read_every_step(served: Served, con: Any, client: mor.Catalog) -> None:
    name = unique("duck")
    pyiceberg = served.rest()
    statements = [
        f"CREATE TABLE cat.db.{name} (id BIGINT, status VARCHAR, amount DOUBLE)",
        f"INSERT INTO cat.db.{name} SELECT i, 'open', i * 1.5 FROM range(20) t(i)",
        f"INSERT INTO cat.db.{name} VALUES (100, 'new', NULL), (101, NULL, 2.0)",
        f"DELETE FROM cat.db.{name} WHERE id % 3 = 0",
        f"UPDATE cat.db.{name} SET status = 'closed', amount = amount + 1 WHERE id BETWEEN 4 AND 8",
        f"DELETE FROM cat.db.{name} WHERE status IS NULL",
    ]
    for statement in statements:
        con.execute(statement)
        expected = duck_rows(con, name)
        assert mor_rows(client, name) == expected, statement
        assert arrow_rows(pyiceberg.load_table(f"db.{name}").scan().to_arrow()) == expected, statement
    table = client.load_table(f"db.{name}")
    assert table.metadata.format_version == 2 and delete_kinds(table) == {"position"}
    # The server kept DuckDB's own snapshot ids and sequence numbers, and every snapshot reads alike.
    theirs = con.execute(f"SELECT snapshot_id, sequence_number FROM iceberg_snapshots(cat.db.{name}) ORDER BY 2").fetchall()
    assert [(s.snapshot_id, s.sequence_number) for s in table.snapshots()] == theirs
    for snapshot_id, _ in theirs:
        assert mor_rows(client, name, snapshot_id) == duck_rows(con, name, snapshot_id)


def test_duckdb_creates_with_rows_and_commits_two_tables_at_once(con: Any, client: mor.Catalog) -> None:
    """CREATE TABLE AS, and CREATE + INSERT in one transaction, write manifests into the staged
    table's metadata folder before the commit that creates the table; a transaction over two
    tables is one `POST /v1/transactions/commit`."""
    ctas, both = unique("ctas"), unique("both")
    con.execute(f"CREATE TABLE cat.db.{ctas} AS SELECT i AS id FROM range(5) t(i)")
    con.execute(f"BEGIN; CREATE TABLE cat.db.{both} (id BIGINT); INSERT INTO cat.db.{both} VALUES (1), (2); COMMIT")
    assert mor_rows(client, ctas) == duck_rows(con, ctas) == [(i,) for i in range(5)]
    assert mor_rows(client, both) == duck_rows(con, both) == [(1,), (2,)]
    con.execute(f"BEGIN; DELETE FROM cat.db.{ctas} WHERE id < 3; INSERT INTO cat.db.{both} VALUES (3); COMMIT")
    assert mor_rows(client, ctas) == duck_rows(con, ctas) == [(3,), (4,)]
    assert mor_rows(client, both) == duck_rows(con, both) == [(1,), (2,), (3,)]


def test_duckdb_creating_without_staging_re_adds_what_the_table_has(served: Served, client: mor.Catalog) -> None:
    """With STAGE_CREATE_TABLES false the table exists at once, and DuckDB's next commit adds
    the same schema, spec and sort order again (ids 0): no-ops."""
    name = unique("unstaged")
    con = connect(served.url, stage_create_tables="false")
    try:
        con.execute(f"CREATE TABLE cat.db.{name} (id BIGINT, status VARCHAR)")
        con.execute(f"INSERT INTO cat.db.{name} VALUES (1, 'a'), (2, 'b')")
        con.execute(f"DELETE FROM cat.db.{name} WHERE id = 1")
        assert mor_rows(client, name) == duck_rows(con, name) == [(2, "b")]
    finally:
        con.close()
    metadata = client.load_table(f"db.{name}").metadata
    assert [s.schema_id for s in metadata.schemas] == [0] and [s.spec_id for s in metadata.partition_specs] == [0]


def test_mor_writes_and_duckdb_reads_then_writes_on_top(con: Any, client: mor.Catalog) -> None:
    name = unique("mor")
    table = client.create_table(f"db.{name}", schema=SCHEMA)
    steps = [
        lambda: table.append(pa.table({"id": range(30), "status": ["open"] * 30, "amount": [i / 2 for i in range(30)]}, SCHEMA)),
        lambda: table.delete("id < 5 or id = 17"),
        lambda: table.upsert(pa.table({"id": [20, 21, 99], "status": ["up", "up", "new"], "amount": [1.0, 2.0, 3.0]}, SCHEMA),
                             on=["id"], strategy="equality"),
    ]  # fmt: skip
    for step in steps:
        step()
        assert duck_rows(con, name) == mor_rows(client, name)
    assert delete_kinds(table.refresh()) == {"position", "equality"}
    con.execute(f"DELETE FROM cat.db.{name} WHERE id IN (6, 20, 99)")
    con.execute(f"UPDATE cat.db.{name} SET status = 'duck' WHERE id = 21 OR id = 7")
    con.execute(f"INSERT INTO cat.db.{name} VALUES (200, 'duck', 0.5)")
    expected = duck_rows(con, name)
    assert mor_rows(client, name) == expected
    assert {r[0] for r in expected} == {*range(5, 30), 200} - {6, 17, 20}
    assert {r[0] for r in expected if r[1] == "duck"} == {7, 21, 200}
    table.refresh().delete("status = 'duck'")  # and mor again, on top of DuckDB's deletes
    assert duck_rows(con, name) == mor_rows(client, name) == [r for r in expected if r[1] != "duck"]


def test_v3_deletion_vectors_both_ways(con: Any, client: mor.Catalog) -> None:
    """mor's deletion vectors read by DuckDB; DuckDB's DELETE on the same data file replaces
    mor's vector (the old entry DELETED, its snapshot id inherited); mor reads that."""
    name = unique("dv")
    table = client.create_table(f"db.{name}", schema=SCHEMA, properties={"format-version": "3"})
    table.append(pa.table({"id": range(40), "status": ["open"] * 40, "amount": [float(i) for i in range(40)]}, SCHEMA))
    table.delete(f"id in ({', '.join(str(i) for i in range(0, 40, 4))})")
    assert delete_kinds(table.refresh()) == {"dv"}
    assert duck_rows(con, name) == mor_rows(client, name)
    con.execute(f"DELETE FROM cat.db.{name} WHERE id % 4 = 1")
    con.execute(f"UPDATE cat.db.{name} SET status = 'closed' WHERE id = 2")
    expected = duck_rows(con, name)
    assert [r[0] for r in expected] == [i for i in range(40) if i % 4 > 1]
    assert mor_rows(client, name) == expected
    table = client.load_table(f"db.{name}")
    assert table.metadata.format_version == 3 and delete_kinds(table) == {"dv"}
    # The UPDATE's new file has no deletes; the first file has one vector (DuckDB replaced mor's twice).
    assert sorted(len(task.delete_files) for task in table.scan().plan_files()) == [0, 1]
    table.delete("id = 3")
    assert duck_rows(con, name) == mor_rows(client, name) == [r for r in expected if r[0] != 3]


def test_duckdb_transaction_reads_the_metadata_it_began_with(served: Served, client: mor.Catalog) -> None:
    """DuckDB's snapshot isolation: a transaction that began before mor's commit reads the
    older metadata file the `metadata-log` names."""
    name = unique("iso")
    table = client.create_table(f"db.{name}", schema=SCHEMA)
    table.append(pa.table({"id": [1, 2], "status": ["a", "b"], "amount": [1.0, 2.0]}, SCHEMA))
    con = connect(served.url)
    try:
        con.execute("BEGIN")
        before = duck_rows(con, name)
        table.append(pa.table({"id": [3], "status": ["c"], "amount": [3.0]}, SCHEMA))
        table.delete("id = 1")
        assert duck_rows(con, name) == before == [(1, "a", 1.0), (2, "b", 2.0)]
        con.execute("COMMIT")
        assert duck_rows(con, name) == mor_rows(client, name) == [(2, "b", 2.0), (3, "c", 3.0)]
    finally:
        con.close()


def test_duckdb_lists_every_table_and_no_view(con: Any, client: mor.Catalog) -> None:
    """DuckDB 1.5.5 asks for no pages (the server then answers whole listings, as the spec
    says) and never calls the view endpoints: its listing holds every table of the namespace
    and none of the views beside them. (Java and pyiceberg
    judge paging and views: tests/interop/test_rest_java.py, tests/server/test_serve_views.py.)"""
    namespace = f"listing_{unique('ns')}"
    client.create_namespace(namespace)
    tables = {f"t{i:02d}" for i in range(12)}
    for name in tables:
        client.create_table(f"{namespace}.{name}", schema=SCHEMA)
    client.create_view(f"{namespace}.v", f"SELECT id FROM {namespace}.t00", SCHEMA)
    listed = con.execute(f"SELECT name FROM (SHOW ALL TABLES) WHERE database = 'cat' AND schema = '{namespace}'").fetchall()
    assert {name for (name,) in listed} == tables
    assert set(client.list_tables(namespace)) == {f"{namespace}.{name}" for name in tables}
