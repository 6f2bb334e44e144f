"""The application in process (`create_app`), called as ASGI without a network: how it answers
failures a live database rarely shows on demand (an unknown commit outcome, an unavailable
database, a bug), with a catalog store that fails on purpose; and `swap_many`, the one
transaction a multi-table commit rests on, against SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pyarrow as pa
import pytest
from servers.rest import unique

import mor
from mor.api.catalog_types import sqlite_url
from mor.catalog.sql import SqlCatalogStore
from mor.catalog.store import TableSwap
from mor.errors import CatalogUnavailableError, CommitStateUnknownError
from mor.format.requirements import AssertTableUuid
from mor.format.updates import SetProperties, TableCommit
from mor.io.fileio import to_uri
from mor.server.app import create_app

SCHEMA = pa.schema([pa.field("id", pa.int64())])


def call(app: Any, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    """One request through the ASGI app: (status, JSON body or None)."""
    payload = b"" if body is None else json.dumps(body).encode()
    raw_path, _, query = path.partition("?")

    async def run() -> list[dict[str, Any]]:
        sent: list[dict[str, Any]] = []
        delivered = False

        async def receive() -> dict[str, Any]:
            nonlocal delivered
            if delivered:
                return {"type": "http.disconnect"}
            delivered = True
            return {"type": "http.request", "body": payload, "more_body": False}

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        scope = {
            "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method, "scheme": "http",
            "path": unquote(raw_path), "raw_path": raw_path.encode(), "query_string": query.encode(), "root_path": "",
            "headers": [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()],
            "server": ("test", 80), "client": ("test", 1),
        }  # fmt: skip
        await app(scope, receive, send)
        return sent

    messages = asyncio.run(run())
    status = next(m["status"] for m in messages if m["type"] == "http.response.start")
    content = b"".join(m.get("body", b"") for m in messages if m["type"] == "http.response.body")
    return status, json.loads(content) if content else None


class FailingStore(SqlCatalogStore):
    """A SQLite store whose multi-table swap fails as told."""

    error: BaseException | None = None

    def swap_many(self, changes: list[TableSwap]) -> bool:
        if self.error is not None:
            raise self.error
        return super().swap_many(changes)


@pytest.fixture
def failing(tmp_path: Path) -> tuple[mor.Catalog, FailingStore]:
    warehouse = tmp_path / "warehouse"
    warehouse.mkdir()
    store = FailingStore(sqlite_url(warehouse / "catalog.db"))
    return mor.SqlCatalog(store, to_uri(warehouse)), store


def commit_properties(app: Any, table: mor.Table) -> tuple[int, Any]:
    commit = TableCommit([AssertTableUuid(table.metadata.table_uuid)], [SetProperties({"k": "v"})])
    return call(app, "POST", "/v1/namespaces/db/tables/t", commit.to_dict())


def metadata_files(table: mor.Table) -> list[str]:
    return sorted(p.name for p in (Path(table.location.removeprefix("file://")) / "metadata").iterdir())


def test_unknown_commit_outcome_is_500_commit_state_unknown_and_keeps_the_file(failing: tuple[mor.Catalog, FailingStore]) -> None:
    catalog, store = failing
    table = catalog.create_table("db.t", schema=SCHEMA)
    store.error = CommitStateUnknownError("the COMMIT was not acknowledged")
    status, body = commit_properties(create_app(catalog), table)
    assert (status, body["error"]["type"], body["error"]["code"]) == (500, "CommitStateUnknownException", 500)
    assert len(metadata_files(table)) == 2  # the catalog may point at the new file: it stays


def test_unavailable_database_is_503_and_removes_the_file(failing: tuple[mor.Catalog, FailingStore]) -> None:
    catalog, store = failing
    table = catalog.create_table("db.t", schema=SCHEMA)
    store.error = CatalogUnavailableError("the catalog database is unreachable")
    status, body = commit_properties(create_app(catalog), table)
    assert (status, body["error"]["type"]) == (503, "ServiceUnavailableException")
    assert len(metadata_files(table)) == 1


def test_a_bug_is_a_generic_500_and_a_log_line(failing: tuple[mor.Catalog, FailingStore], caplog: pytest.LogCaptureFixture) -> None:
    catalog, store = failing
    table = catalog.create_table("db.t", schema=SCHEMA)
    store.error = RuntimeError("secret internals")
    with caplog.at_level(logging.ERROR, logger="mor.server"):
        status, body = commit_properties(create_app(catalog), table)
    assert (status, body["error"]["type"]) == (500, "InternalServerError")
    assert "secret internals" not in json.dumps(body)
    reference = body["error"]["message"].split("reference ")[1].rstrip(")")
    assert any(reference in r.getMessage() and r.exc_info for r in caplog.records)
    assert len(metadata_files(table)) == 1
    assert catalog.load_table("db.t").metadata_location == table.metadata_location


def test_prefix_and_token_in_process(failing: tuple[mor.Catalog, FailingStore]) -> None:
    catalog, _ = failing
    catalog.create_table("db.t", schema=SCHEMA)
    app = create_app(catalog, token="tok", prefix="main")
    assert call(app, "GET", "/v1/namespaces")[0] == 401
    auth = {"Authorization": "Bearer tok"}
    status, config = call(app, "GET", "/v1/config", headers=auth)
    assert status == 200 and config["overrides"] == {"prefix": "main"}
    assert "POST /v1/{prefix}/transactions/commit" in config["endpoints"]
    assert "HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}" in config["endpoints"]
    assert call(app, "GET", "/v1/main/namespaces/db/tables", headers=auth) == (200, {"identifiers": [{"namespace": ["db"], "name": "t"}]})
    assert call(app, "HEAD", "/v1/main/namespaces/db/tables/t", headers=auth) == (204, None)
    assert call(app, "HEAD", "/v1/main/namespaces/db/tables/none", headers=auth) == (404, None)
    assert call(app, "GET", "/v1/other/namespaces", headers=auth)[0] == 404


def test_a_rest_catalog_is_not_served() -> None:
    with pytest.raises(mor.InvalidArgumentError):
        create_app(object())  # type: ignore[arg-type]


# -- swap_many: one transaction --------------------------------------------------------------


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> SqlCatalogStore:
    if request.param == "sqlite":
        return SqlCatalogStore(sqlite_url(tmp_path / "catalog.db"))
    postgres = request.getfixturevalue("postgres_server")
    return SqlCatalogStore(postgres.uri(postgres.create_database()))


def test_swap_many_moves_all_or_none(store: SqlCatalogStore) -> None:
    ns = unique("ns")
    store.create_table_row(ns, "a", "a0")
    store.create_table_row(ns, "b", "b0")
    # b is not where expected: neither moves, and c is not created
    assert not store.swap_many([TableSwap(ns, "a", "a0", "a1"), TableSwap(ns, "c", None, "c1"), TableSwap(ns, "b", "stale", "b1")])
    assert (store.metadata_location(ns, "a"), store.metadata_location(ns, "b")) == ("a0", "b0")
    assert store.list_tables(ns) == ["a", "b"]
    # a table created meanwhile: the insert fails, nothing moves
    assert not store.swap_many([TableSwap(ns, "a", "a0", "a1"), TableSwap(ns, "b", None, "b1")])
    assert store.metadata_location(ns, "a") == "a0"
    # all hold: all move, b only asserted
    assert store.swap_many([TableSwap(ns, "a", "a0", "a1"), TableSwap(ns, "b", "b0", "b0"), TableSwap(ns, "c", None, "c1")])
    assert [store.metadata_location(ns, t) for t in "abc"] == ["a1", "b0", "c1"]
    store.dispose()


def test_rename_and_namespace_properties(store: SqlCatalogStore) -> None:
    ns = unique("ns")
    store.create_table_row(ns, "a", "a0")
    store.create_table_row(ns, "b", "b0")
    with pytest.raises(mor.TableAlreadyExistsError):
        store.rename_table_row(ns, "a", ns, "b")
    with pytest.raises(mor.NoSuchTableError):
        store.rename_table_row(ns, "none", ns, "c")
    store.rename_table_row(ns, "a", ns + "x", "c")
    assert store.metadata_location(ns + "x", "c") == "a0" and store.list_tables(ns) == ["b"]
    # a namespace known by its tables only gets its marker with its first property
    assert store.namespace_properties(ns) == {}
    assert store.update_namespace_properties(ns, {"k": "1", "j": "2"}, ["gone"]) == ([], ["gone"])
    assert store.update_namespace_properties(ns, {"k": "3"}, ["j"]) == (["j"], [])
    assert store.namespace_properties(ns) == {"exists": "true", "k": "3"}
    with pytest.raises(mor.NoSuchNamespaceError):
        store.namespace_properties(unique("none"))
    store.dispose()
