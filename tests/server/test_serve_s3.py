"""`mor serve` over a warehouse in S3-compatible object storage (moto on loopback,
tests/servers/s3.py): the server alone holds the S3 settings (`--property s3.*=...`) and hands
them to clients that ask for vended credentials, so pyiceberg and mor's client write and read
the table's objects with nothing configured but the server's URL."""

from __future__ import annotations

import sys
from pathlib import Path

import pyarrow as pa
import pytest
import requests
from pyiceberg.catalog.rest import RestCatalog

TESTS = Path(__file__).resolve().parents[1]
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

from servers.rest import running_rest_server  # noqa: E402
from servers.s3 import S3Server, s3_server  # noqa: E402,F401  (the session fixture)

import mor  # noqa: E402

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False)])


def test_pyiceberg_writes_s3_with_vended_properties(s3_server: S3Server, tmp_path: Path) -> None:  # noqa: F811
    warehouse = s3_server.fresh_prefix()
    uri = f"sqlite:///{tmp_path}/catalog.db"
    properties = [f"--property={k}={v}" for k, v in s3_server.properties.items()]
    with running_rest_server(warehouse, uri=uri, args=properties) as server:
        client = RestCatalog("rest", uri=server.url)  # pyiceberg sends X-Iceberg-Access-Delegation: vended-credentials
        client.create_namespace("db")
        table = client.create_table("db.t", schema=SCHEMA)
        assert table.location().startswith(warehouse + "/")
        table.append(pa.table({"id": [1, 2, 3]}, schema=SCHEMA))
        assert sorted(client.load_table("db.t").scan().to_arrow().column("id").to_pylist()) == [1, 2, 3]

        plain = requests.get(f"{server.url}/v1/namespaces/db/tables/t", timeout=60).json()
        assert plain["config"] == {}  # only to those who ask
        asked = requests.get(
            f"{server.url}/v1/namespaces/db/tables/t", headers={"X-Iceberg-Access-Delegation": "vended-credentials"}, timeout=60
        ).json()
        assert asked["config"] == s3_server.properties
        # the spec's storage credentials: by the prefix they apply to, on load and on their own endpoint
        location = asked["metadata"]["location"]
        assert asked["storage-credentials"] == [{"prefix": location, "config": s3_server.properties}]
        assert "storage-credentials" not in plain
        credentials = requests.get(f"{server.url}/v1/namespaces/db/tables/t/credentials", timeout=60)
        assert credentials.json() == {"storage-credentials": asked["storage-credentials"]}
        assert requests.get(f"{server.url}/v1/namespaces/db/tables/nothing/credentials", timeout=60).status_code == 404
        # a table outside the warehouse's prefix, even in the same bucket, is refused
        outside = {"name": "o", "location": s3_server.fresh_prefix(), "schema": {"type": "struct", "schema-id": 0, "fields": [
            {"id": 1, "name": "id", "type": "long", "required": True}]}}  # fmt: skip
        assert requests.post(f"{server.url}/v1/namespaces/db/tables", json=outside, timeout=60).status_code == 403

    ours = mor.load_catalog(warehouse, uri=uri, properties=s3_server.properties).load_table("db.t")
    ours.delete("id = 2")
    with running_rest_server(warehouse, uri=uri, args=properties) as server:
        assert sorted(RestCatalog("rest", uri=server.url).load_table("db.t").scan().to_arrow().column("id").to_pylist()) == [1, 3]


def test_mors_client_writes_s3_with_vended_properties(s3_server: S3Server, tmp_path: Path) -> None:  # noqa: F811
    """mor's REST client with nothing configured but the URL: every DML verb and compaction
    write the table's objects with what loadTable's config vends."""
    warehouse = s3_server.fresh_prefix()
    uri = f"sqlite:///{tmp_path}/catalog.db"
    properties = [f"--property={k}={v}" for k, v in s3_server.properties.items()]
    with running_rest_server(warehouse, uri=uri, args=properties) as server:
        catalog = mor.load_catalog(uri=server.url)
        table = catalog.create_table("db.t", schema=SCHEMA)
        assert table.location.startswith(warehouse + "/") and table.io.properties == s3_server.properties
        table.append(pa.table({"id": list(range(10))}, schema=SCHEMA))
        table.delete("id < 3")
        table.upsert(pa.table({"id": [5, 20]}, schema=SCHEMA), on=["id"])
        table.compact()
        expected = [*range(3, 10), 20]
        assert sorted(catalog.load_table("db.t").scan().to_arrow().column("id").to_pylist()) == expected
        theirs = RestCatalog("rest", uri=server.url).load_table("db.t").scan().to_arrow()
        assert sorted(theirs.column("id").to_pylist()) == expected


@pytest.fixture(autouse=True)
def _no_aws_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The client must get its S3 settings from the server, not from the environment."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ENDPOINT_URL", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
