"""Commits through `mor serve`: requirements checked on the current metadata, lost swaps redone,
several tables all or nothing, and a server killed between writing the metadata file and
swapping the pointer (or just after) leaves each table at its old or its new state."""

from __future__ import annotations

import json
import signal
import threading
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import requests
from pyiceberg.catalog.rest import RestCatalog
from servers.rest import Served, running_rest_server, unique

import mor
from mor.format.requirements import AssertCreate, AssertCurrentSchemaId, AssertRefSnapshotId, AssertTableUuid
from mor.format.updates import AddSchema, SetCurrentSchema, SetProperties, TableCommit

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False)])


def post(served: Served, path: str, body: Any) -> requests.Response:
    return requests.post(served.url + path, data=json.dumps(body), headers=served.headers(), timeout=60)


def change(namespace: str, name: str, commit: TableCommit) -> dict[str, Any]:
    return {"identifier": {"namespace": namespace.split("."), "name": name}, **commit.to_dict()}


def two_tables(served: Served) -> tuple[str, mor.Table, mor.Table]:
    ns = unique("tx")
    catalog = served.mor()
    return ns, catalog.create_table(f"{ns}.a", schema=SCHEMA), catalog.create_table(f"{ns}.b", schema=SCHEMA)


def test_a_failing_requirement_is_409_and_applies_nothing(served: Served) -> None:
    ns, a, b = two_tables(served)
    wrong = TableCommit([AssertRefSnapshotId("main", 123)], [SetProperties({"k": "v"})])
    response = post(served, f"/v1/namespaces/{ns}/tables/a", wrong.to_dict())
    assert response.status_code == 409 and response.json()["error"]["type"] == "CommitFailedException"
    assert served.mor().load_table(f"{ns}.a").metadata_location == a.metadata_location


def test_transaction_is_all_or_nothing(served: Served) -> None:
    ns, a, b = two_tables(served)
    good = TableCommit([AssertTableUuid(a.metadata.table_uuid)], [SetProperties({"k": "a"})])
    bad = TableCommit([AssertTableUuid(a.metadata.table_uuid)], [SetProperties({"k": "b"})])  # a's uuid, not b's
    response = post(served, "/v1/transactions/commit", {"table-changes": [change(ns, "a", good), change(ns, "b", bad)]})
    assert response.status_code == 409, response.text
    catalog = served.mor()
    assert catalog.load_table(f"{ns}.a").metadata_location == a.metadata_location
    assert catalog.load_table(f"{ns}.b").metadata_location == b.metadata_location
    metadata_files = sorted((Path(a.location.removeprefix("file://")) / "metadata").iterdir())
    assert len(metadata_files) == 1  # nothing written, or all of it removed

    fixed = TableCommit([AssertTableUuid(b.metadata.table_uuid)], [SetProperties({"k": "b"})])
    created = TableCommit([AssertCreate()], [AddSchema(a.metadata.schema()), SetCurrentSchema(), SetProperties({"k": "c"})])
    body = {"table-changes": [change(ns, "a", good), change(ns, "b", fixed), change(ns, "c", created)]}
    assert post(served, "/v1/transactions/commit", body).status_code == 204
    catalog = served.mor()
    assert [catalog.load_table(f"{ns}.{t}").metadata.properties["k"] for t in "abc"] == ["a", "b", "c"]
    assert catalog.load_table(f"{ns}.c").metadata.properties == {"k": "c"}  # the client's, nothing added


def test_transaction_requirement_on_an_unchanged_table_holds_at_the_swap(served: Served) -> None:
    """A table with requirements and no updates still takes part: asserted, not changed."""
    ns, a, b = two_tables(served)
    watch = TableCommit([AssertCurrentSchemaId(0)], [])
    move = TableCommit([AssertTableUuid(b.metadata.table_uuid)], [SetProperties({"k": "b"})])
    assert post(served, "/v1/transactions/commit", {"table-changes": [change(ns, "a", watch), change(ns, "b", move)]}).status_code == 204
    catalog = served.mor()
    assert catalog.load_table(f"{ns}.a").metadata_location == a.metadata_location
    assert catalog.load_table(f"{ns}.b").metadata.properties["k"] == "b"


def test_bad_transactions_are_400(served: Served) -> None:
    ns, a, b = two_tables(served)
    commit = TableCommit([], [SetProperties({"k": "v"})])
    for body in (
        {"table-changes": [change(ns, "a", commit), change(ns, "a", commit)]},  # one table twice
        {"table-changes": [commit.to_dict()]},  # no identifier
        {"table-changes": []},
        {"table-changes": [change(ns, "a", commit) | {"updates": [{"action": "no-such-action"}]}]},
        {"table-changes": [change(ns, "a", commit) | {"requirements": [{"type": "assert-nothing"}]}]},
        {"table-changes": [change(ns, "a", commit) | {"updates": [{"action": "set-properties", "updates": {"write.delete.mode": "x"}}]}]},
    ):
        response = post(served, "/v1/transactions/commit", body)
        assert response.status_code == 400, response.text
    assert served.mor().load_table(f"{ns}.a").metadata_location == a.metadata_location


def test_concurrent_commits_all_land(served: Served) -> None:
    """Commits that do not contradict each other all succeed: a lost swap is redone on the
    newer metadata by the server (at most as often as others won)."""
    ns, a, b = two_tables(served)
    results: list[int] = []

    def commit(i: int) -> None:
        single = TableCommit([AssertTableUuid(a.metadata.table_uuid)], [SetProperties({f"k{i}": "a"})])
        pair = TableCommit([AssertTableUuid(b.metadata.table_uuid)], [SetProperties({f"k{i}": "b"})])
        if i % 2:
            results.append(post(served, f"/v1/namespaces/{ns}/tables/a", single.to_dict()).status_code)
        else:
            body = {"table-changes": [change(ns, "a", single), change(ns, "b", pair)]}
            results.append(post(served, "/v1/transactions/commit", body).status_code)

    threads = [threading.Thread(target=commit, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == [200] * 4 + [204] * 4
    catalog = served.mor()
    assert {k for k in catalog.load_table(f"{ns}.a").metadata.properties if k[1:].isdigit()} == {f"k{i}" for i in range(8)}
    assert {k for k in catalog.load_table(f"{ns}.b").metadata.properties if k[1:].isdigit()} == {f"k{i}" for i in range(0, 8, 2)}


@pytest.mark.parametrize("point, lands", [("metadata-written", False), ("committed", True)])
def test_server_killed_mid_commit_leaves_old_or_new_state(tmp_path: Path, point: str, lands: bool) -> None:
    warehouse = tmp_path / "warehouse"
    table = mor.load_catalog(warehouse, create=True).create_table("db.t", schema=SCHEMA)
    table.append(pa.table({"id": [1, 2]}, schema=SCHEMA))
    before = table.metadata_location
    with running_rest_server(warehouse, env={"MOR_FAULT_POINT": point}) as server:
        client_table = RestCatalog("rest", uri=server.url).load_table("db.t")
        with pytest.raises(requests.exceptions.ConnectionError):
            client_table.append(pa.table({"id": [3]}, schema=SCHEMA))
        assert server.process.wait() == -signal.SIGKILL
    after = mor.load_catalog(warehouse).load_table("db.t")
    assert (after.metadata_location != before) is lands
    assert sorted(after.scan().to_arrow().column("id").to_pylist()) == ([1, 2, 3] if lands else [1, 2])
    with running_rest_server(warehouse) as server:  # a new server carries on from there
        again = RestCatalog("rest", uri=server.url).load_table("db.t")
        again.append(pa.table({"id": [4]}, schema=SCHEMA))
        assert sorted(again.scan().to_arrow().column("id").to_pylist()) == ([1, 2, 3, 4] if lands else [1, 2, 4])


def test_keys_mor_does_not_model_are_served_and_kept(served: Served) -> None:
    """loadTable answers the metadata file as stored; a commit keeps what it does not change."""
    ns = unique("keys")
    catalog = served.mor()
    table = catalog.create_table(f"{ns}.src", schema=SCHEMA)
    catalog.drop_table(f"{ns}.src")  # its files stay, to be registered under another name
    metadata = json.loads(Path(table.metadata_location.removeprefix("file://")).read_text())
    metadata["x-engine-extra"] = {"kept": [1, 2]}
    extra_file = Path(table.location.removeprefix("file://")) / "metadata" / "00001-extra.metadata.json"
    extra_file.write_text(json.dumps(metadata))
    registered = post(served, f"/v1/namespaces/{ns}/register", {"name": "t", "metadata-location": f"file://{extra_file}"})
    assert registered.status_code == 200, registered.text
    assert registered.json()["metadata"]["x-engine-extra"] == {"kept": [1, 2]}
    uuid = metadata["table-uuid"]
    committed = post(served, f"/v1/namespaces/{ns}/tables/t", TableCommit([AssertTableUuid(uuid)], [SetProperties({"k": "v"})]).to_dict())
    assert committed.status_code == 200, committed.text
    body = committed.json()
    assert body["metadata"]["x-engine-extra"] == {"kept": [1, 2]} and body["metadata"]["properties"]["k"] == "v"
    assert json.loads(Path(body["metadata-location"].removeprefix("file://")).read_text()) == body["metadata"]
    assert body["metadata"]["metadata-log"][-1]["metadata-file"] == f"file://{extra_file}"
    loaded = requests.get(f"{served.url}/v1/namespaces/{ns}/tables/t", headers=served.headers(), timeout=60).json()
    assert loaded == {"metadata-location": body["metadata-location"], "metadata": body["metadata"], "config": {}}
