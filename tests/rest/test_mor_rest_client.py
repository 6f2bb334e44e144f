"""mor as a client of an Iceberg REST catalog: every verb through the protocol, commits as
requirements + updates, the spec's error outcomes (409 re-plans, 5xx is an unknown outcome that
cleans nothing, 401 is typed), and the same rows for pyiceberg's RestCatalog and for mor's own
SQL catalog under the server."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog as PyIcebergRestCatalog
from servers.inprocess_rest import TOKEN, RestServer

import mor
from mor.api.rest_catalog import RestCatalog

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def rows(n: int, start: int = 0) -> pa.Table:
    return pa.table({"id": list(range(start, start + n)), "v": [f"v{i}" for i in range(start, start + n)]})


def ids(table: mor.Table) -> list[int]:
    return sorted(table.scan().to_arrow()["id"].to_pylist())


def pyiceberg_client(server: RestServer) -> PyIcebergRestCatalog:
    return PyIcebergRestCatalog("py", uri=server.url, token=TOKEN, **{"oauth2-server-uri": f"{server.url}/v1/oauth/tokens"})


def files_under(root: Path) -> set[str]:
    return {str(p) for p in root.rglob("*") if p.is_file() and p.name != "catalog.db"}


def test_every_verb_through_the_rest_catalog_reads_the_same_everywhere(rest_server: RestServer) -> None:
    catalog = rest_server.client()
    assert isinstance(catalog, RestCatalog) and isinstance(catalog, mor.Catalog)
    table = catalog.create_table("db.t", schema=SCHEMA, partition_by=["bucket(4, id)"])
    table.append(rows(20))
    table.delete("id < 3")
    table.update({"v": "'x'"}, where="id = 5")
    table.upsert(pa.table({"id": [6, 100], "v": ["six", "hundred"]}), on=["id"])
    table.update_schema().add_column("w", pa.int32()).commit()
    table.set_properties(**{"owner": "data-eng"})
    table.compact()
    expected = sorted({*range(3, 20), 100})
    assert ids(table) == expected
    assert ids(catalog.load_table("db.t")) == expected
    assert ids(rest_server.catalog.load_table("db.t")) == expected  # the SQL catalog the server keeps
    theirs = pyiceberg_client(rest_server).load_table("db.t").scan().to_arrow()
    assert sorted(theirs["id"].to_pylist()) == expected
    assert dict(zip(theirs["id"].to_pylist(), theirs["v"].to_pylist()))[5] == "x"
    assert catalog.load_table("db.t").properties["owner"] == "data-eng"
    assert [f.name for f in catalog.load_table("db.t").schema().fields] == ["id", "v", "w"]
    result = table.expire_snapshots(older_than=dt.timedelta(0), retain_last=1, allow_short_retention=True)
    assert result.expired_snapshot_ids and ids(catalog.load_table("db.t")) == expected
    assert catalog.list_namespaces() == ["db"] and catalog.list_tables("db") == ["db.t"]
    catalog.rename_table("db.t", "other.t")
    assert catalog.list_tables("other") == ["other.t"] and not catalog.table_exists("db.t")
    location = Path(catalog.load_table("other.t").location.removeprefix("file://"))
    catalog.drop_table("other.t", purge=True)
    assert not catalog.table_exists("other.t") and not files_under(location)


def test_what_pyiceberg_writes_through_the_server_mor_reads_and_deletes(rest_server: RestServer) -> None:
    theirs = pyiceberg_client(rest_server)
    theirs.create_namespace("db")
    table = theirs.create_table("db.p", schema=SCHEMA)
    table.append(rows(10))
    ours = rest_server.client().load_table("db.p")
    ours.delete("id in (1, 2, 3)")
    assert sorted(theirs.load_table("db.p").scan().to_arrow()["id"].to_pylist()) == [0, *range(4, 10)]


def test_a_lost_race_through_the_server_is_re_planned(rest_server: RestServer) -> None:
    catalog = rest_server.client()
    first = catalog.create_table("db.t", schema=SCHEMA)
    first.append(rows(10))
    second = rest_server.client().load_table("db.t")
    first.delete("id = 1")
    second.delete("id = 2")  # planned on the old snapshot: 409 from the server, refreshed, re-planned
    assert ids(catalog.load_table("db.t")) == [0, *range(3, 10)]
    assert len(catalog.load_table("db.t").snapshots()) == 3


def test_another_engines_refs_and_statistics_survive_mor_commits(rest_server: RestServer) -> None:
    theirs = pyiceberg_client(rest_server)
    ours = rest_server.client()
    table = ours.create_table("db.t", schema=SCHEMA)
    table.append(rows(10))
    head = table.metadata.current_snapshot_id
    assert head is not None
    theirs.load_table("db.t").manage_snapshots().create_tag(head, "audit").create_branch(head, "dev").commit()
    table.refresh()
    table.delete("id = 3")
    table.compact()
    table.expire_snapshots(older_than=dt.timedelta(0), retain_last=1, allow_short_retention=True)
    refreshed = theirs.load_table("db.t")
    assert refreshed.metadata.refs["audit"].snapshot_id == head and refreshed.metadata.refs["dev"].snapshot_id == head
    assert sorted(refreshed.scan(snapshot_id=head).to_arrow()["id"].to_pylist()) == list(range(10))
    assert ids(ours.load_table("db.t")) == [i for i in range(10) if i != 3]


def test_a_wrong_token_is_a_typed_error_and_changes_nothing(rest_server: RestServer) -> None:
    rest_server.client().create_table("db.t", schema=SCHEMA).append(rows(3))
    before = rest_server.catalog.load_table("db.t").metadata_location
    with pytest.raises(mor.NotAuthorizedError):
        rest_server.client(token="not-the-token").load_table("db.t").delete("id = 1")
    assert rest_server.catalog.load_table("db.t").metadata_location == before


@pytest.mark.parametrize("status", [500, 502, 503, 504])
def test_a_server_error_after_the_commit_landed_is_an_unknown_outcome_that_deletes_nothing(rest_server: RestServer, status: int) -> None:
    table = rest_server.client().create_table("db.t", schema=SCHEMA)
    table.append(rows(10))
    rest_server.faults.append(lambda method, path: ("after", status) if method == "POST" and path.endswith("/tables/t") else None)
    with pytest.raises(mor.CommitStateUnknownError):
        table.delete("id = 4")
    rest_server.faults.clear()
    # The commit did land (the answer was lost): every file it references is still there.
    assert ids(rest_server.catalog.load_table("db.t")) == [i for i in range(10) if i != 4]
    table = rest_server.client().load_table("db.t")
    assert ids(table) == [i for i in range(10) if i != 4]


def test_a_server_error_before_the_commit_is_also_unknown_and_the_table_is_as_it_was(rest_server: RestServer) -> None:
    table = rest_server.client().create_table("db.t", schema=SCHEMA)
    table.append(rows(5))
    before = rest_server.catalog.load_table("db.t").metadata_location
    rest_server.faults.append(lambda method, path: ("before", 503) if method == "POST" and path.endswith("/tables/t") else None)
    with pytest.raises(mor.CommitStateUnknownError):
        table.delete("id = 1")
    assert rest_server.catalog.load_table("db.t").metadata_location == before


def test_a_commit_refused_every_time_gives_up_as_a_conflict(rest_server: RestServer) -> None:
    table = rest_server.client().create_table(
        "db.t", schema=SCHEMA, properties={"commit.retry.num-retries": "2", "commit.retry.min-wait-ms": "1"}
    )
    table.append(rows(5))
    before = rest_server.catalog.load_table("db.t").metadata_location
    rest_server.faults.append(lambda method, path: ("before", 409) if method == "POST" and path.endswith("/tables/t") else None)
    with pytest.raises(mor.CommitConflictError):
        table.delete("id = 1")
    rest_server.faults.clear()
    assert rest_server.catalog.load_table("db.t").metadata_location == before
    assert ids(rest_server.client().load_table("db.t")) == list(range(5))


def test_an_unreachable_catalog_is_catalog_unavailable() -> None:
    sock = __import__("socket").socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there now
    with pytest.raises(mor.CatalogUnavailableError):
        mor.load_catalog(uri=f"http://127.0.0.1:{port}")


def test_rest_options_are_checked() -> None:
    with pytest.raises(mor.InvalidArgumentError):
        mor.load_catalog(type="rest")  # no uri
    with pytest.raises(mor.InvalidArgumentError):
        mor.load_catalog(uri="http://127.0.0.1:1", type="glue")


def test_the_cli_takes_a_rest_catalog(rest_server: RestServer, capsys: pytest.CaptureFixture[str]) -> None:
    from mor.cli import main

    table = rest_server.client().create_table("db.t", schema=SCHEMA)
    table.append(rows(4))
    table.delete("id = 1")
    assert main(["scan", "db.t", "--uri", rest_server.url, "--token", TOKEN]) == 0
    printed = capsys.readouterr().out
    assert "v0" in printed and "v3" in printed and "v1" not in printed
    assert main(["compact", "db.t", "--uri", rest_server.url, "--token", TOKEN]) == 0
    assert ids(rest_server.catalog.load_table("db.t")) == [0, 2, 3]
    assert main(["scan", "db.t", "--uri", rest_server.url, "--token", "wrong"]) != 0
    assert "NotAuthorizedError" in capsys.readouterr().err


def test_register_a_dropped_tables_metadata_through_the_rest_catalog(rest_server: RestServer) -> None:
    catalog = rest_server.client()
    table = catalog.create_table("db.t", schema=SCHEMA)
    table.append(rows(5))
    table.delete("id = 0")
    metadata_location = catalog.load_table("db.t").metadata_location
    catalog.drop_table("db.t")  # the files stay
    with pytest.raises(mor.NoSuchTableError):
        catalog.load_table("db.t")
    back = catalog.register_table("db.back", metadata_location)
    assert back.metadata_location == metadata_location and ids(back) == [1, 2, 3, 4]
    with pytest.raises(mor.TableAlreadyExistsError):
        catalog.register_table("db.back", metadata_location)


def test_sort_order_and_clustering_through_the_rest_catalog(rest_server: RestServer) -> None:
    catalog = rest_server.client()
    table = catalog.create_table("db.sorted", schema=SCHEMA)
    table.append(rows(30))
    order = table.replace_sort_order("v desc", "id")
    assert order.order_id == 1 and catalog.load_table("db.sorted").sort_order().order_id == 1
    table.append(rows(20, start=30))
    assert table.replace_sort_order().order_id == 0
    assert table.replace_sort_order("v desc", "id").order_id == 1  # the known order's id again
    table.compact(zorder_by=["id", "v"])
    loaded = pyiceberg_client(rest_server).load_table("db.sorted")
    assert loaded.sort_order().order_id == 1 and [o.order_id for o in loaded.metadata.sort_orders] == [0, 1]
    assert sorted(loaded.scan().to_arrow()["id"].to_pylist()) == ids(table) == list(range(50))


def test_format_v1_tables_through_the_server(rest_server: RestServer) -> None:
    """pyiceberg creates and writes a v1 table through `mor serve`, mor rewrites its rows (v1 has
    no delete files), and mor's own client creates one too."""
    theirs = pyiceberg_client(rest_server)
    theirs.create_namespace("v1")
    table = theirs.create_table("v1.p", schema=SCHEMA, properties={"format-version": "1"})
    table.append(rows(10))
    ours = rest_server.client().load_table("v1.p")
    assert ours.metadata.format_version == 1
    ours.delete("id < 3")
    assert not any(t.delete_files for t in ours.scan().plan_files())
    assert sorted(theirs.load_table("v1.p").scan().to_arrow()["id"].to_pylist()) == list(range(3, 10))
    made = rest_server.client().create_table("v1.m", schema=SCHEMA, format_version=1)
    made.append(rows(5))
    made.update({"v": "'x'"}, where="id = 1")
    loaded = theirs.load_table("v1.m")
    assert loaded.format_version == 1 and loaded.scan().to_arrow().num_rows == 5
