"""`mor serve` over a warehouse in S3-compatible object storage (moto on loopback,
tests/servers/s3.py): the server alone holds the S3 settings (`--property s3.*=...`) and hands
them to clients that ask for vended credentials, so pyiceberg and mor's client write and read
the table's objects with nothing configured but the server's URL. With a role to assume
(`server.vend.s3.role-arn`) it mints credentials per table instead, which an S3 server checking
IAM (tests/servers/s3.py's IamS3Server) refuses outside the table's prefix."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs
import pytest
import requests
from pyiceberg.catalog.rest import RestCatalog

TESTS = Path(__file__).resolve().parents[1]
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

from servers.rest import running_rest_server  # noqa: E402
from servers.s3 import IamS3Server, S3Server, iam_s3_server, s3_server  # noqa: E402,F401  (the session fixtures)

import mor  # noqa: E402
from mor.server.credentials import EXPIRES_AT  # noqa: E402

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


def test_the_server_mints_credentials_that_reach_one_table_only(iam_s3_server: IamS3Server, tmp_path: Path) -> None:  # noqa: F811
    s3 = iam_s3_server
    warehouse = s3.fresh_prefix()
    settings = {**s3.admin_properties, "server.vend.s3.role-arn": s3.role_arn, "server.vend.duration-seconds": "900"}
    delegation = {"X-Iceberg-Access-Delegation": "vended-credentials"}
    args = [f"--property={k}={v}" for k, v in settings.items()]
    with running_rest_server(warehouse, uri=f"sqlite:///{tmp_path}/catalog.db", args=args) as server:
        client = RestCatalog("rest", uri=server.url)  # writes and reads each table with the key minted for it
        client.create_namespace("db")
        for name in ("a", "b"):
            client.create_table(f"db.{name}", schema=SCHEMA).append(pa.table({"id": [1, 2, 3]}, schema=SCHEMA))
        tables = f"{server.url}/v1/namespaces/db/tables"
        loaded = {name: requests.get(f"{tables}/{name}", headers=delegation, timeout=60).json() for name in "ab"}
        config = loaded["a"]["config"]
        assert config["s3.access-key-id"] != s3.admin_key and config["s3.secret-access-key"] != s3.admin_secret
        assert config["s3.session-token"] and int(config[EXPIRES_AT]) / 1000 > time.time() + 600
        assert config["s3.endpoint"] == s3.endpoint  # the server's settings that are no secret go along
        assert loaded["a"]["storage-credentials"] == [{"prefix": loaded["a"]["metadata"]["location"], "config": config}]
        # the same key while most of its life is left; another table, another key
        again = requests.get(f"{tables}/a/credentials", timeout=60).json()
        assert again["storage-credentials"][0]["config"] == config
        assert loaded["b"]["config"]["s3.access-key-id"] != config["s3.access-key-id"]

        minted = pafs.S3FileSystem(
            access_key=config["s3.access-key-id"], secret_key=config["s3.secret-access-key"], session_token=config["s3.session-token"],
            endpoint_override=s3.endpoint.removeprefix("http://"), scheme="http", region=config["s3.region"],
        )  # fmt: skip
        own, other = (loaded[name]["metadata-location"].removeprefix("s3://") for name in "ab")
        assert minted.open_input_stream(own).read()
        with pytest.raises(OSError, match="ACCESS_DENIED|AccessDenied"):
            minted.open_input_stream(other).read()
        with pytest.raises(OSError, match="ACCESS_DENIED|AccessDenied"):
            with minted.open_output_stream(other.rsplit("/", 1)[0] + "/planted.json") as out:
                out.write(b"{}")

        # mor's client writes and compacts with the minted key alone
        table = mor.load_catalog(uri=server.url).load_table("db.a")
        assert table.io.properties["s3.access-key-id"] == config["s3.access-key-id"]
        table.delete("id = 2")
        table.compact()
        assert sorted(client.load_table("db.a").scan().to_arrow().column("id").to_pylist()) == [1, 3]


@pytest.fixture(autouse=True)
def _no_aws_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The client must get its S3 settings from the server, not from the environment."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ENDPOINT_URL", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
