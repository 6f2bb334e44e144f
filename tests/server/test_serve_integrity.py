"""`mor serve` keeps the rules of what it commits for any client (issue 38): no two tables in one
folder (create, set-location), and rows a client adds are checked against the table's NOT NULL
and CHECK constraints as they are when the server applies the commit."""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
import pytest
import requests
from servers.rest import Served, unique

import mor

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.int64())])


def rest_client(served: Served) -> mor.Catalog:
    """mor's own REST client of the server."""
    return mor.load_catalog(None, uri=served.url)


def post(served: Served, path: str, body: Any) -> requests.Response:
    return requests.post(served.url + path, data=json.dumps(body), headers=served.headers(), timeout=60)


def test_set_location_into_another_tables_folder_is_refused(served_sqlite: Served) -> None:
    ns = unique("loc")
    catalog = served_sqlite.mor()
    a = catalog.create_table(f"{ns}.a", schema=SCHEMA)
    b = catalog.create_table(f"{ns}.b", schema=SCHEMA)
    b.append(pa.table({"id": [1], "v": [1]}, schema=SCHEMA))
    for target in (b.location, f"{b.location}/inner", b.location.rsplit("/", 1)[0]):
        commit = {"requirements": [], "updates": [{"action": "set-location", "location": target}]}
        response = post(served_sqlite, f"/v1/namespaces/{ns}/tables/a", commit)
        assert response.status_code == 400, response.text
        assert f"{ns}.b" in response.json()["error"]["message"]
    assert catalog.load_table(f"{ns}.a").metadata_location == a.metadata_location
    b.expire_snapshots(retain_last=1)  # b's maintenance is not refused: nothing shares its folder
    assert catalog.load_table(f"{ns}.b").scan().count() == 1


def test_a_move_to_a_folder_of_its_own_is_applied(served_sqlite: Served) -> None:
    ns = unique("loc")
    catalog = served_sqlite.mor()
    a = catalog.create_table(f"{ns}.a", schema=SCHEMA)
    moved = f"{a.location}-moved"
    commit = {"requirements": [], "updates": [{"action": "set-location", "location": moved}]}
    assert post(served_sqlite, f"/v1/namespaces/{ns}/tables/a", commit).status_code == 200
    assert catalog.load_table(f"{ns}.a").location == moved


def test_create_in_another_tables_folder_is_refused(served_sqlite: Served) -> None:
    ns = unique("loc")
    catalog = served_sqlite.mor()
    b = catalog.create_table(f"{ns}.b", schema=SCHEMA)
    fields = [{"id": 1, "name": "id", "type": "long", "required": True}]
    body = {"name": "c", "location": b.location, "schema": {"type": "struct", "schema-id": 0, "fields": fields}}
    response = post(served_sqlite, f"/v1/namespaces/{ns}/tables", body)
    assert response.status_code == 409, response.text
    assert f"{ns}.b" in response.json()["error"]["message"]
    assert not catalog.table_exists(f"{ns}.c")
    with pytest.raises(mor.TableAlreadyExistsError, match=f"{ns}.b"):  # mor's REST client: inside b's folder
        rest_client(served_sqlite).create_table(f"{ns}.c", schema=SCHEMA, location=f"{b.location}/c")


def test_a_pyiceberg_client_loaded_before_set_not_null_cannot_commit_a_null(served_sqlite: Served) -> None:
    ns = unique("nn")
    catalog = served_sqlite.mor()
    table = catalog.create_table(f"{ns}.t", schema=SCHEMA)
    table.append(pa.table({"id": [1], "v": [1]}, schema=SCHEMA))
    stale = served_sqlite.rest().load_table(f"{ns}.t")  # pyiceberg, v still optional for it
    table.set_not_null("v")
    location = catalog.load_table(f"{ns}.t").metadata_location
    with pytest.raises(Exception, match="NOT NULL"):
        stale.append(pa.table({"id": [2], "v": [None]}, schema=SCHEMA))
    fresh = catalog.load_table(f"{ns}.t")
    assert fresh.metadata_location == location
    assert fresh.scan(filter="v is null").count() == 0


def test_a_client_that_knows_no_constraints_cannot_break_one(served_sqlite: Served) -> None:
    ns = unique("ck")
    catalog = served_sqlite.mor()
    table = catalog.create_table(f"{ns}.t", schema=SCHEMA)
    table.add_constraint("positive", "v > 0")
    pyiceberg = served_sqlite.rest().load_table(f"{ns}.t")
    with pytest.raises(Exception, match="positive"):
        pyiceberg.append(pa.table({"id": [1], "v": [-1]}, schema=SCHEMA))
    pyiceberg.append(pa.table({"id": [2], "v": [5]}, schema=SCHEMA))
    assert catalog.load_table(f"{ns}.t").scan().to_arrow().column("v").to_pylist() == [5]


def test_a_stale_mor_rest_client_gets_a_constraint_violation(served_sqlite: Served) -> None:
    ns = unique("ck")
    catalog = served_sqlite.mor()
    table = catalog.create_table(f"{ns}.t", schema=SCHEMA)
    stale = rest_client(served_sqlite).load_table(f"{ns}.t")
    table.add_constraint("positive", "v > 0")
    with pytest.raises(mor.ConstraintViolationError, match="positive"):
        stale.append(pa.table({"id": [1], "v": [-1]}, schema=SCHEMA))
    assert catalog.load_table(f"{ns}.t").scan().count() == 0


def test_no_client_drops_a_column_a_constraint_uses(served_sqlite: Served) -> None:
    ns = unique("ck")
    catalog = served_sqlite.mor()
    table = catalog.create_table(f"{ns}.t", schema=SCHEMA)
    table.add_constraint("positive", "v > 0")
    pyiceberg = served_sqlite.rest().load_table(f"{ns}.t")
    with pytest.raises(Exception, match="positive"):
        with pyiceberg.update_schema() as update:
            update.delete_column("v")
    with pyiceberg.update_schema() as update:  # a rename keeps the constraint: it binds to the field id
        update.rename_column("v", "value")
    with pytest.raises(mor.ConstraintViolationError, match="positive"):
        catalog.load_table(f"{ns}.t").append(pa.table({"id": [1], "value": [-1]}))
