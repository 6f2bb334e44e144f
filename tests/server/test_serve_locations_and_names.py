"""Issue 52, items 3 and 4, through the real `mor serve` and raw HTTP, as a buggy or hostile
client would send it.

3. No table or view may be located on the catalog's own files: a table at
   `<warehouse>/catalog.db-journal` made that a folder, and SQLite then failed every later write
   of every client (500s until someone removed it by hand); one at `catalog.db` answered 500.
   Nor where no folder can be made (at or through a regular file). Every such request, by every
   route that sets a location (create, staged create, set-location, a create by an
   `assert-create` commit, register, views), is a 4xx that leaves the catalog database and every
   table as they were, byte for byte, and the server goes on serving.
4. The namespaces ["a.b"], ["a", "b"] and ["a%2Eb"] are three names with three folders, and
   each holds its own table `t` (the check that refuses a shared folder compared percent-decoded
   spellings, so one blocked the others). On SQLite and on PostgreSQL (`served`, conftest.py),
   whose catalog keeps no state in the warehouse.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import requests
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField
from servers.rest import Served, running_rest_server

SCHEMA = pa.schema([pa.field("id", pa.int64())])
SCHEMA_JSON = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "type": "long", "required": False}]}
VIEW_VERSION = {
    "version-id": 1, "schema-id": 0, "timestamp-ms": 1, "summary": {}, "default-namespace": ["ns"],
    "representations": [{"type": "sql", "sql": "SELECT 1 AS id", "dialect": "spark"}],
}  # fmt: skip


@pytest.fixture(scope="module")
def on_sqlite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """A server on SQLite, its database at `<warehouse>/catalog.db`; namespace `ns` holds a table
    `victim` with rows (a data file, metadata files), a table `mover` and a view `v`."""
    warehouse = tmp_path_factory.mktemp("rest-locations") / "warehouse"
    warehouse.mkdir()
    with running_rest_server(warehouse) as server:
        yield populated(Served(server, warehouse, None))


def populated(served: Served) -> Served:
    client = served.rest()
    client.create_namespace("ns")
    client.create_table("ns.victim", schema=SCHEMA).append(pa.table({"id": [1, 2, 3]}, schema=SCHEMA))
    client.create_table("ns.mover", schema=SCHEMA)
    answer = send(served, "POST", "/v1/namespaces/ns/views", {"name": "v", "schema": SCHEMA_JSON, "view-version": VIEW_VERSION})
    assert answer.status_code == 200, answer.text
    return served


def send(served: Served, method: str, path: str, body: Any = None) -> requests.Response:
    data = None if body is None else json.dumps(body)
    return requests.request(method, served.url + path, data=data, headers=served.headers(), timeout=60)


def local(location: str) -> Path:
    return Path(location.removeprefix("file://"))


def contents(root: Path) -> dict[str, bytes | None]:
    """Every file (its bytes) and folder (None) under `root`, links not followed."""
    found: dict[str, bytes | None] = {}
    for folder, folders, files in os.walk(root):
        for name in folders:
            found[os.path.relpath(os.path.join(folder, name), root)] = None
        for name in files:
            path = os.path.join(folder, name)
            found[os.path.relpath(path, root)] = None if os.path.islink(path) else Path(path).read_bytes()
    return found


def bad_locations(served: Served) -> dict[str, str]:
    """Locations no table or view may take, by what they are."""
    wh = served.warehouse
    victim = served.rest().load_table("ns.victim")
    data_file = next(iter(victim.inspect.files().column("file_path").to_pylist()))
    return {
        "journal": f"{wh}/catalog.db-journal",
        "journal as a URI": f"file://{wh}/catalog.db-journal",
        "journal spelled with ..": f"file://{wh}/ns.db/../catalog.db-journal",
        "database": f"{wh}/catalog.db",
        "wal": f"{wh}/catalog.db-wal",
        "shm": f"{wh}/catalog.db-shm",
        "through the database": f"{wh}/catalog.db/t",
        "the warehouse": str(wh),
        "the folder holding the warehouse": str(wh.parent),
        "a data file": data_file,
        "through a data file": f"{data_file}/t",
        "another table's metadata file": victim.metadata_location,
    }


def creation_updates(location: str) -> list[dict[str, Any]]:
    """What a staged create commits (pyiceberg's and Iceberg Java's create transactions)."""
    return [
        {"action": "assign-uuid", "uuid": str(uuid.uuid4())},
        {"action": "upgrade-format-version", "format-version": 2},
        {"action": "add-schema", "schema": SCHEMA_JSON},
        {"action": "set-current-schema", "schema-id": -1},
        {"action": "add-spec", "spec": {"spec-id": 0, "fields": []}},
        {"action": "set-default-spec", "spec-id": -1},
        {"action": "add-sort-order", "sort-order": {"order-id": 0, "fields": []}},
        {"action": "set-default-sort-order", "sort-order-id": -1},
        {"action": "set-location", "location": location},
    ]


def requests_for(served: Served, what: str, location: str) -> list[tuple[str, str, dict[str, Any]]]:
    """Every route that sets a location, each asking for `location`."""
    lure = served.warehouse / "ns.db" / "lures" / f"{what.replace(' ', '-')}.metadata.json"
    if not lure.exists():  # a metadata file inside the warehouse naming the location (made before the state is taken)
        metadata = json.loads(local(served.rest().load_table("ns.victim").metadata_location).read_text())
        lure.parent.mkdir(exist_ok=True)
        # without the victim's snapshots: their manifest lists lie in the victim's folder, not the lure's
        empty = {"snapshots": [], "refs": {}, "current-snapshot-id": -1, "snapshot-log": []}
        lure.write_text(json.dumps({**metadata, **empty, "location": location}))
    table = {"name": "t", "schema": SCHEMA_JSON, "location": location}
    return [
        ("POST", "/v1/namespaces/ns/tables", table),
        ("POST", "/v1/namespaces/ns/tables", {**table, "stage-create": True}),
        ("POST", "/v1/namespaces/ns/tables/mover", {"requirements": [], "updates": [{"action": "set-location", "location": location}]}),
        ("POST", "/v1/namespaces/ns/tables/t", {"requirements": [{"type": "assert-create"}], "updates": creation_updates(location)}),
        ("POST", "/v1/transactions/commit", {"table-changes": [
            {"identifier": {"namespace": ["ns"], "name": "t"}, "requirements": [{"type": "assert-create"}],
             "updates": creation_updates(location)}]}),
        ("POST", "/v1/namespaces/ns/register", {"name": "t", "metadata-location": str(lure)}),
        ("POST", "/v1/namespaces/ns/views", {"name": "w", "schema": SCHEMA_JSON, "view-version": VIEW_VERSION, "location": location}),
        ("POST", "/v1/namespaces/ns/views/v", {"requirements": [], "updates": [{"action": "set-location", "location": location}]}),
    ]  # fmt: skip


def check_serving(served: Served, name: str) -> None:
    """Another client creates a table, commits to it and loads it; the victim still reads."""
    client = served.rest()
    created = client.create_table(f"ns.{name}", schema=SCHEMA)
    created.append(pa.table({"id": [7]}, schema=SCHEMA))
    assert client.load_table(f"ns.{name}").scan().to_arrow()["id"].to_pylist() == [7]
    assert sorted(client.load_table("ns.victim").scan().to_arrow()["id"].to_pylist()) == [1, 2, 3]
    assert served.mor().load_table(f"ns.{name}").scan().to_arrow()["id"].to_pylist() == [7]


def check_refused(served: Served, locations: dict[str, str]) -> None:
    """Every route asking for each of `locations` is refused (4xx), changes nothing, and the
    server goes on serving."""
    for i, (what, location) in enumerate(locations.items()):
        sent = requests_for(served, what, location)
        before = contents(served.warehouse)
        for method, path, body in sent:
            answer = send(served, method, path, body)
            assert answer.status_code in (400, 403), f"{what}: {method} {path} answered {answer.status_code}: {answer.text}"
            assert answer.json()["error"]["code"] == answer.status_code and "Traceback" not in answer.text
        assert contents(served.warehouse) == before, what  # the database and every table byte for byte
        assert not served.rest().table_exists("ns.t")
        check_serving(served, f"alive_{i}")


def test_no_location_on_the_catalog_files_or_where_no_folder_can_be(on_sqlite: Served) -> None:
    served = on_sqlite
    check_refused(served, bad_locations(served))
    # the same requests with a good location succeed: what was refused is the location
    for i, (method, path, body) in enumerate(requests_for(served, "good", f"{served.warehouse}/ns.db/good")):
        if path.endswith("/mover") or path.endswith("/v"):
            body["updates"][0]["location"] = f"{served.warehouse}/ns.db/moved_{i}"
        answer = send(served, method, path, body)
        assert answer.status_code in (200, 204), f"{method} {path}: {answer.text}"
        # leave no table `t` for the next route to meet
        send(served, "DELETE", "/v1/namespaces/ns/tables/t")
        send(served, "DELETE", "/v1/namespaces/ns/views/w")
    check_serving(served, "alive_good")


NAMES = [("a.b",), ("a", "b"), ("a%2Eb",), ("a%252Eb",)]


def test_distinct_namespaces_have_distinct_folders_and_tables(served: Served) -> None:
    client = served.rest()
    for namespace in NAMES:
        client.create_namespace(namespace)
    schema = Schema(NestedField(1, "id", LongType()))
    locations = []
    for i, namespace in enumerate(NAMES):
        table = client.create_table((*namespace, "t"), schema=schema)
        table.append(pa.table({"id": pa.array([i], pa.int64())}))
        locations.append(table.location())
    for i, namespace in enumerate(NAMES):
        assert client.load_table((*namespace, "t")).scan().to_arrow()["id"].to_pylist() == [i]
    assert len(set(locations)) == len(NAMES)
    folders = [local(location) for location in locations]
    assert all(f.is_dir() for f in folders) and len({f.resolve() for f in folders}) == len(NAMES)
    assert [f.parent.name for f in folders] == ["a%2Eb.db", "a.b.db", "a%252Eb.db", "a%25252Eb.db"]


def test_table_names_with_dots_and_percents_have_their_own_folders(served: Served) -> None:
    names = ["t.x", "t%2Ex", "t%252Ex"]
    send(served, "POST", "/v1/namespaces", {"namespace": ["dots"]})
    for name in names:
        answer = send(served, "POST", "/v1/namespaces/dots/tables", {"name": name, "schema": SCHEMA_JSON})
        assert answer.status_code == 200, answer.text
    listed = send(served, "GET", "/v1/namespaces/dots/tables").json()["identifiers"]
    assert sorted(i["name"] for i in listed) == sorted(names)
    folders = {local(served.rest().load_table(("dots", name)).location()).name for name in names}
    assert folders == {"t%2Ex", "t%252Ex", "t%25252Ex"}
    # a client that gives another table's folder in another spelling is still refused
    taken = local(served.rest().load_table(("dots", "t.x")).location())
    for location in (f"file://{taken}", f"{taken.parent}//./{taken.name}", f"file:{taken.parent}/x/../{taken.name}", f"{taken}/data"):
        answer = send(served, "POST", "/v1/namespaces/dots/tables", {"name": "copy", "schema": SCHEMA_JSON, "location": location})
        assert answer.status_code == 409 and "same folder" in answer.json()["error"]["message"], location


def test_a_catalog_database_elsewhere_in_the_warehouse_is_refused_too(tmp_path: Path) -> None:
    """`mor serve --uri sqlite:///<warehouse>/state/cat.db`: the catalog knows its own file."""
    warehouse = tmp_path / "warehouse"
    (warehouse / "state").mkdir(parents=True)
    database = warehouse / "state" / "cat.db"
    with running_rest_server(warehouse, uri=f"sqlite:///{database}") as server:
        served = populated(Served(server, warehouse, f"sqlite:///{database}"))
        locations = {suffix or "database": f"{database}{suffix}" for suffix in ("", "-journal", "-wal", "-shm")}
        check_refused(served, {**locations, "the folder holding it": str(database.parent), "through it": f"{database}/t"})
        assert not (warehouse / "state" / "cat.db-journal").exists()
