"""The catalog on PostgreSQL: the catalog API, pyiceberg through the same database, and what
happens when the server is unreachable, slow, or drops the connection during a commit."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyiceberg.catalog.sql import SqlCatalog
from servers.postgres import PostgresServer, free_port
from sqlalchemy import text

# The generic catalog API tests, re-run on PostgreSQL (their `catalog` fixture is ours).
from test_catalog import (  # noqa: F401
    test_create_load_list_drop,
    test_creating_an_existing_namespace_raises_a_mor_error,
    test_creating_an_existing_table_fails_and_changes_nothing,
    test_explicit_namespaces,
    test_missing_namespace_errors,
    test_missing_table_errors,
    test_namespaces_are_created_on_demand,
    test_non_empty_namespace_cannot_be_dropped,
    test_register_refuses_a_missing_file,
    test_register_refuses_metadata_of_an_unknown_format_version,
    test_register_table_adopts_existing_metadata,
    test_register_table_under_a_taken_name_fails,
    test_table_location_is_under_the_warehouse,
)
from unit_helpers import SCHEMA, files_under, local, make_rows, scan_ids

import mor
from mor.io.fileio import to_uri

pytestmark = pytest.mark.postgres


@pytest.fixture
def pg_catalog(warehouse: Path, pg_uri: str) -> Iterator[mor.Catalog]:
    """Through the public entry point: `mor.load_catalog(warehouse, uri=postgresql+psycopg://...)`."""
    catalog = mor.load_catalog(warehouse, uri=pg_uri)
    yield catalog
    catalog.store.dispose()


def catalog_rows(server: PostgresServer, uri: str, sql: str) -> list[tuple]:
    with server.connect(uri.rsplit("/", 1)[1]) as conn:
        return conn.execute(sql).fetchall()


# -- the catalog API -------------------------------------------------------------------------
def test_the_catalog_has_pyicebergs_layout(pg_catalog: mor.Catalog, postgres_server: PostgresServer, pg_uri: str) -> None:
    columns = catalog_rows(
        postgres_server, pg_uri,
        "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = 'public'",
    )  # fmt: skip
    by_table: dict[str, set[str]] = {}
    for table, column in columns:
        by_table.setdefault(table, set()).add(column)
    assert by_table["iceberg_tables"] == {
        "catalog_name", "table_namespace", "table_name", "metadata_location", "previous_metadata_location", "iceberg_type",
    }  # fmt: skip
    assert by_table["iceberg_namespace_properties"] == {"catalog_name", "namespace", "property_key", "property_value"}


def test_commits_swap_the_row_and_another_catalog_object_sees_them(
    pg_catalog: mor.Catalog, warehouse: Path, pg_uri: str, postgres_server: PostgresServer
) -> None:
    table = pg_catalog.create_table("db.t", schema=SCHEMA, partition_by=["category"])
    created = table.metadata_location
    table.append(make_rows(range(50)))
    table.delete("id < 10")
    [(location, previous)] = catalog_rows(
        postgres_server, pg_uri,
        "SELECT metadata_location, previous_metadata_location FROM iceberg_tables WHERE table_name = 't'",
    )  # fmt: skip
    assert location == table.metadata_location and previous != created
    other = mor.load_catalog(warehouse, uri=pg_uri)
    try:
        assert other.list_namespaces() == ["db"] and other.list_tables("db") == ["db.t"]
        assert scan_ids(other.load_table("db.t")) == list(range(10, 50))
        other.load_table("db.t").update({"name": "'x'"}, where="id = 10")
        table.refresh()
        assert table.scan(filter="id = 10").to_arrow().column("name").to_pylist() == ["x"]
        pg_catalog.drop_table("db.t")
        assert not other.table_exists("db.t")
        other.drop_namespace("db")
        assert pg_catalog.list_namespaces() == []
    finally:
        other.store.dispose()


def test_the_swap_is_a_compare_and_swap(pg_catalog: mor.Catalog) -> None:
    table = pg_catalog.create_table("db.t", schema=SCHEMA)
    current = table.metadata_location
    store = pg_catalog.store
    assert not store.swap("db", "t", "file:///not/the/current.json", "file:///new.json")
    assert store.metadata_location("db", "t") == current
    assert store.swap("db", "t", current, "file:///new.json")
    assert store.metadata_location("db", "t") == "file:///new.json"


def test_catalog_names_keep_tables_apart(warehouse: Path, pg_uri: str) -> None:
    first = mor.load_catalog(warehouse, uri=pg_uri)
    second = mor.load_catalog(warehouse, uri=pg_uri, name="other")
    try:
        first.create_table("db.t", schema=SCHEMA)
        assert second.list_namespaces() == [] and not second.table_exists("db.t")
    finally:
        first.store.dispose()
        second.store.dispose()


def test_a_url_without_a_driver_uses_psycopg_and_timeouts_come_from_the_url(warehouse: Path, pg_uri: str) -> None:
    uri = pg_uri.replace("postgresql+psycopg://", "postgresql://") + "?statement_timeout=1234&connect_timeout=3"
    catalog = mor.load_catalog(warehouse, uri=uri)
    try:
        assert catalog.store.engine.dialect.driver == "psycopg"
        with catalog.store.engine.connect() as conn:
            assert conn.execute(text("SHOW statement_timeout")).scalar() == "1234ms"
            assert conn.execute(text("SHOW application_name")).scalar() == "mor"
        assert catalog.store.engine.pool.size() == 5
    finally:
        catalog.store.dispose()
    with pytest.raises(mor.InvalidArgumentError, match="statement_timeout"):
        mor.load_catalog(warehouse, uri=pg_uri + "?statement_timeout=soon")


# -- pyiceberg through the same database -------------------------------------------------------
def test_pyiceberg_opens_mor_tables_and_mor_opens_pyicebergs(pg_catalog: mor.Catalog, warehouse: Path, pg_uri: str) -> None:
    table = pg_catalog.create_table("db.t", schema=SCHEMA, partition_by=["category"])
    table.append(make_rows(range(100)))
    table.delete(mor.isin("id", list(range(0, 100, 7))))
    table.update({"value": 0.5}, where="id < 20")
    theirs = SqlCatalog("default", uri=pg_uri, warehouse=to_uri(warehouse))
    try:
        via_pyiceberg = theirs.load_table("db.t").scan().to_arrow().sort_by("id")
        assert via_pyiceberg.to_pylist() == table.scan().to_arrow().select(via_pyiceberg.column_names).sort_by("id").to_pylist()
        assert via_pyiceberg.num_rows == 100 - 15
        # pyiceberg writes a table through the same database; mor reads and deletes from it.
        made = theirs.create_table("db.p", schema=SCHEMA)
        made.append(make_rows(range(30)))
        ours = pg_catalog.load_table("db.p")
        ours.delete("id >= 20")
        assert scan_ids(ours) == list(range(20))
        assert sorted(theirs.load_table("db.p").scan().to_arrow().column("id").to_pylist()) == list(range(20))
    finally:
        theirs.engine.dispose()


# -- the server unreachable, slow, or gone mid-commit --------------------------------------------
def test_wrong_port_is_catalog_unavailable_quickly_naming_the_server(warehouse: Path, postgres_server: PostgresServer) -> None:
    port = free_port()
    uri = f"postgresql+psycopg://mor:s3cret@127.0.0.1:{port}/somedb"
    started = time.monotonic()
    with pytest.raises(mor.CatalogUnavailableError) as raised:
        mor.load_catalog(warehouse, uri=uri)
    assert time.monotonic() - started < 5
    message = str(raised.value)
    assert f"127.0.0.1:{port}/somedb" in message and "s3cret" not in message
    assert isinstance(raised.value, mor.StorageError)  # callers catching StorageError still do
    assert raised.value.__cause__ is None and raised.value.__suppress_context__  # no driver traceback


def test_a_server_that_never_answers_hits_the_connect_timeout(warehouse: Path) -> None:
    with socket.socket() as silent:  # accepts TCP connections (backlog), never says a word
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        port = silent.getsockname()[1]
        started = time.monotonic()
        with pytest.raises(mor.CatalogUnavailableError, match=f"127.0.0.1:{port}/db"):
            mor.load_catalog(warehouse, uri=f"postgresql+psycopg://mor@127.0.0.1:{port}/db?connect_timeout=2")
        elapsed = time.monotonic() - started
    assert 1.5 < elapsed < 10, elapsed


def test_a_stopped_server_fails_the_commit_cleanly_and_the_table_is_unchanged(
    pg_catalog: mor.Catalog, postgres_server: PostgresServer
) -> None:
    table = pg_catalog.create_table("db.t", schema=SCHEMA)
    table.append(make_rows(range(20)))
    before_files, before_snapshots = files_under(table.location), len(table.snapshots())
    postgres_server.stop()
    try:
        started = time.monotonic()
        with pytest.raises(mor.CatalogUnavailableError, match=f"127.0.0.1:{postgres_server.port}/"):
            table.append(make_rows(range(20, 30)))  # certainly not committed: its files are removed
        with pytest.raises(mor.CatalogUnavailableError):
            table.delete("id < 5")
        with pytest.raises(mor.CatalogUnavailableError):
            pg_catalog.load_table("db.t")
        assert time.monotonic() - started < 10
    finally:
        postgres_server.start()
    assert_nothing_left(files_under(table.location) - before_files)
    again = pg_catalog.load_table("db.t")  # the pool reconnects (pre-ping)
    assert len(again.snapshots()) == before_snapshots and scan_ids(again) == list(range(20))


def assert_nothing_left(new_files: set[str]) -> None:
    """After a commit that certainly failed, nothing it wrote is left: data files, delete files,
    manifests, the manifest list and the metadata JSON written for the swap are all removed."""
    assert not new_files, sorted(Path(f).name for f in new_files)


def _wait_for_backend(server: PostgresServer, database: str, condition: str, timeout: float = 20) -> int:
    deadline = time.monotonic() + timeout
    with server.connect(database) as conn:
        while time.monotonic() < deadline:
            row = conn.execute(
                f"SELECT pid FROM pg_stat_activity WHERE application_name = 'mor' AND datname = %s AND {condition}",
                (database,),
            ).fetchone()
            if row:
                return int(row[0])
            time.sleep(0.02)
    raise AssertionError(f"no mor backend with {condition} within {timeout} s")


def _in_thread(action) -> tuple[threading.Thread, dict]:
    outcome: dict = {}

    def run() -> None:
        try:
            outcome["result"] = action()
        except BaseException as e:  # handed to the test
            outcome["error"] = e

    thread = threading.Thread(target=run)
    thread.start()
    return thread, outcome


def test_connection_killed_while_the_update_waits_is_certainly_not_committed(
    pg_catalog: mor.Catalog, postgres_server: PostgresServer, pg_uri: str
) -> None:
    """The UPDATE runs in a transaction whose COMMIT was never sent: the server rolls it back, so
    the commit certainly did not happen (CatalogUnavailableError) and its files are removed."""
    database = pg_uri.rsplit("/", 1)[1]
    table = pg_catalog.create_table("db.t", schema=SCHEMA)
    table.append(make_rows(range(20)))
    before_files, before_location = files_under(table.location), table.metadata_location
    with postgres_server.connect(database) as locker:
        with locker.transaction():
            locker.execute("SELECT 1 FROM iceberg_tables WHERE table_name = 't' FOR UPDATE")
            thread, outcome = _in_thread(lambda: table.append(make_rows(range(20, 30))))
            pid = _wait_for_backend(postgres_server, database, "wait_event_type = 'Lock'")
            locker.execute("SELECT pg_terminate_backend(%s)", (pid,))
            thread.join(30)
    assert isinstance(outcome.get("error"), mor.CatalogUnavailableError), outcome
    assert "t" in str(outcome["error"]) and f":{postgres_server.port}/{database}" in str(outcome["error"])
    assert_nothing_left(files_under(table.location) - before_files)
    again = pg_catalog.load_table("db.t")
    assert again.metadata_location == before_location and scan_ids(again) == list(range(20))


def test_a_statement_timeout_is_catalog_unavailable_and_commits_nothing(
    warehouse: Path, postgres_server: PostgresServer, pg_uri: str
) -> None:
    database = pg_uri.rsplit("/", 1)[1]
    catalog = mor.load_catalog(warehouse, uri=pg_uri + "?statement_timeout=500")
    try:
        table = catalog.create_table("db.t", schema=SCHEMA)
        table.append(make_rows(range(10)))
        before_location = table.metadata_location
        with postgres_server.connect(database) as locker:
            with locker.transaction():
                locker.execute("SELECT 1 FROM iceberg_tables WHERE table_name = 't' FOR UPDATE")
                started = time.monotonic()
                with pytest.raises(mor.CatalogUnavailableError, match="statement timeout"):
                    table.append(make_rows(range(10, 20)))
                assert time.monotonic() - started < 5
        assert catalog.load_table("db.t").metadata_location == before_location
    finally:
        catalog.store.dispose()


def _killed_during_commit(postgres_server: PostgresServer, pg_uri: str, warehouse: Path, action) -> dict:
    """Run `action(catalog)` in a thread and kill its connection while its COMMIT waits: the
    COMMIT has in fact landed (PostgreSQL commits locally, then waits for a synchronous standby
    that never comes). Returns the thread's outcome ("error" or "value")."""
    database = pg_uri.rsplit("/", 1)[1]
    with postgres_server.connect(database) as admin:
        admin.execute(f'ALTER DATABASE "{database}" SET synchronous_commit = on')  # new sessions wait for the standby
        admin.execute("ALTER SYSTEM SET synchronous_standby_names = 'mor_no_such_standby'")
        admin.execute("SELECT pg_reload_conf()")
    catalog = mor.load_catalog(warehouse, uri=pg_uri)
    try:
        thread, outcome = _in_thread(lambda: action(catalog))
        pid = _wait_for_backend(postgres_server, database, "wait_event = 'SyncRep'")
        with postgres_server.connect(database) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        thread.join(30)
    finally:
        with postgres_server.connect(database) as admin:
            admin.execute("ALTER SYSTEM RESET synchronous_standby_names")
            admin.execute("SELECT pg_reload_conf()")
            admin.execute(f'ALTER DATABASE "{database}" RESET synchronous_commit')
        catalog.store.dispose()
    return outcome


def test_connection_killed_during_commit_is_state_unknown_and_deletes_nothing(
    warehouse: Path, postgres_server: PostgresServer, pg_uri: str
) -> None:
    """The COMMIT is sent and the connection dies before the answer: here it has in fact landed,
    which is why the caller must not delete the files: CommitStateUnknownError, every file kept."""
    setup = mor.load_catalog(warehouse, uri=pg_uri)
    table = setup.create_table("db.t", schema=SCHEMA)
    table.append(make_rows(range(20)))
    setup.store.dispose()
    before_files = files_under(table.location)
    outcome = _killed_during_commit(
        postgres_server, pg_uri, warehouse, lambda catalog: catalog.load_table("db.t").append(make_rows(range(20, 30)))
    )
    assert isinstance(outcome.get("error"), mor.CommitStateUnknownError), outcome
    assert "did not acknowledge the COMMIT" in str(outcome["error"])
    after_files = files_under(table.location)
    assert before_files <= after_files and len(after_files - before_files) >= 4  # data, manifests, list, metadata kept
    reopened = mor.load_catalog(warehouse, uri=pg_uri)
    try:
        landed = reopened.load_table("db.t")
        assert scan_ids(landed) == list(range(30))  # the commit had landed; nothing it needs is gone
        assert all(Path(local(f.file_path)).exists() for task in landed.scan().plan_files() for f in [task.data_file])
    finally:
        reopened.store.dispose()


def test_create_table_killed_during_commit_is_state_unknown_and_keeps_its_metadata_file(
    warehouse: Path, postgres_server: PostgresServer, pg_uri: str
) -> None:
    setup = mor.load_catalog(warehouse, uri=pg_uri)
    setup.create_namespace("db")  # only the table's row is left for the COMMIT that hangs
    setup.store.dispose()
    outcome = _killed_during_commit(postgres_server, pg_uri, warehouse, lambda c: c.create_table("db.t", schema=SCHEMA))
    assert isinstance(outcome.get("error"), mor.CommitStateUnknownError), outcome
    assert "creation of db.t" in str(outcome["error"])
    reopened = mor.load_catalog(warehouse, uri=pg_uri)
    try:
        table = reopened.load_table("db.t")  # it landed: its metadata file must still be there
        table.append(make_rows(range(5)))
        assert scan_ids(table) == list(range(5))
    finally:
        reopened.store.dispose()


def test_drop_table_killed_during_commit_is_state_unknown(warehouse: Path, postgres_server: PostgresServer, pg_uri: str) -> None:
    setup = mor.load_catalog(warehouse, uri=pg_uri)
    table = setup.create_table("db.t", schema=SCHEMA)
    table.append(make_rows(range(5)))
    setup.store.dispose()
    files = files_under(table.location)
    outcome = _killed_during_commit(postgres_server, pg_uri, warehouse, lambda c: c.drop_table("db.t"))
    assert isinstance(outcome.get("error"), mor.CommitStateUnknownError), outcome
    reopened = mor.load_catalog(warehouse, uri=pg_uri)
    try:
        assert not reopened.table_exists("db.t")  # it landed
        assert files_under(table.location) == files  # a drop never removes files
    finally:
        reopened.store.dispose()
