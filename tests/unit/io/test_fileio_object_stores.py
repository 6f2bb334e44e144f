"""Object storage locations and settings for GCS and Azure, without a server: how locations are
taken apart and spelled, which pyarrow arguments the properties and environment give, and that
the comparisons maintenance relies on treat every store's spellings as one."""

from __future__ import annotations

import datetime as dt
import pickle

import pytest

from mor.errors import InvalidArgumentError, MaintenanceRefusedError, StorageError, UnsupportedFeatureError
from mor.io.fileio import ContainerMissing, FileIO, check_inside, is_object_store, is_storage_failure, to_local_path, unreadable
from mor.io.stores import AZURE, GCS, S3, azure_options, gcs_options, object_prefix, parse_object_location
from mor.maintenance.ownership import Place, place, table_place

ABFSS = "abfss://box@acct.dfs.core.windows.net"


@pytest.mark.parametrize(
    "location, store, canonical, fs_path",
    [
        ("s3a://b/k/x.parquet", S3, "s3://b/k/x.parquet", "b/k/x.parquet"),
        ("gs://b/k/x.parquet", GCS, "gs://b/k/x.parquet", "b/k/x.parquet"),
        ("gcs://b/k", GCS, "gs://b/k", "b/k"),
        (f"{ABFSS}/k/x.parquet", AZURE, f"{ABFSS}/k/x.parquet", "box/k/x.parquet"),
        ("wasbs://box@ACCT.blob.core.windows.net/k", AZURE, f"{ABFSS}/k", "box/k"),
        ("abfs://box@acct.dfs.core.chinacloudapi.cn/k", AZURE, "abfss://box@acct.dfs.core.chinacloudapi.cn/k", "box/k"),
        ("gs://b", GCS, "gs://b", "b"),
    ],
)
def test_locations_take_their_stores_one_spelling(location, store, canonical, fs_path) -> None:
    where = parse_object_location(location)
    assert (where.store, where.canonical, where.fs_path) == (store, canonical, fs_path)
    assert is_object_store(location)
    assert FileIO().path(location) == canonical


@pytest.mark.parametrize(
    "location", ["gs:///k", "gs://", "abfss://box/k", "abfss://acct.dfs.core.windows.net/k", "abfss://@acct.dfs.core.windows.net/k"]
)
def test_malformed_object_locations_are_invalid_arguments(location) -> None:
    with pytest.raises(InvalidArgumentError, match="location is"):
        FileIO().path(location)
    assert object_prefix(*location.split("://", 1)) is None


def test_other_schemes_are_unsupported_and_name_the_stores() -> None:
    assert not is_object_store("hdfs://nn/x") and not is_object_store("/tmp/x") and not is_object_store(None)  # type: ignore[arg-type]
    with pytest.raises(UnsupportedFeatureError, match=r"gs://.*abfss://"):
        to_local_path("hdfs://nn/x")


def test_check_inside_compares_canonical_spellings() -> None:
    table = f"{ABFSS}/db/t"
    assert check_inside(table, "wasbs://box@acct.blob.core.windows.net/db/t/data/x.parquet")
    assert check_inside("gs://b/t", "gcs://b/t/data/x")
    for outside in ("gs://b/t/../u/x", "gs://other/t/x", "abfss://box@other.dfs.core.windows.net/db/t/x", f"{ABFSS}/db/t2/x"):
        with pytest.raises(InvalidArgumentError, match="not under the table location"):
            check_inside(table if outside.startswith("abfss") else "gs://b/t", outside)


def test_ownership_places_every_spelling_of_a_store_alike() -> None:
    assert place("wasbs://box@Acct.blob.core.windows.net/db//t/./x") == Place(ABFSS, "/db/t/x")
    assert place("gcs://b/t/x") == Place("gs://b", "/t/x")
    assert place("s3n://b/t") == Place("s3://b", "/t")
    assert place("hdfs://nn/t") == Place("hdfs://nn", "/t")

    def refusal(reason: str) -> MaintenanceRefusedError:
        return MaintenanceRefusedError(reason)

    assert table_place("gs://b/t", refusal) == Place("gs://b", "/t")
    assert table_place(f"{ABFSS}/t", refusal) == Place(ABFSS, "/t")
    for location in ("hdfs://nn/t", "abfss://box/t", "gs:///t"):
        with pytest.raises(MaintenanceRefusedError, match="neither an absolute local path nor object storage"):
            table_place(location, refusal)


def test_gcs_options_from_pyiceberg_properties() -> None:
    options = gcs_options(
        {"gcs.service.host": "http://127.0.0.1:4443", "gcs.oauth2.token": "t", "gcs.oauth2.token-expires-at": "1700000000000",
         "gcs.project-id": "p", "gcs.default-bucket-location": "EU"},
        {},
    )  # fmt: skip
    assert options == {
        "scheme": "http", "endpoint_override": "127.0.0.1:4443", "access_token": "t",
        "credential_token_expiration": dt.datetime(2023, 11, 14, 22, 13, 20, tzinfo=dt.UTC),
        "project_id": "p", "default_bucket_location": "EU", "retry_time_limit": dt.timedelta(seconds=60),
    }  # fmt: skip
    assert gcs_options({"gcs.retry-time-limit": "2.5"}, {}) == {"retry_time_limit": dt.timedelta(seconds=2.5)}
    assert gcs_options({"gcs.oauth2.token": "t"}, {})["credential_token_expiration"] > dt.datetime.now(dt.UTC)  # type: ignore[operator]


def test_gcs_emulator_environment_means_anonymous() -> None:
    assert gcs_options({}, {"STORAGE_EMULATOR_HOST": "http://localhost:9023"}) == {
        "scheme": "http", "endpoint_override": "localhost:9023", "anonymous": True, "retry_time_limit": dt.timedelta(seconds=60),
    }  # fmt: skip
    # The property wins over the environment, and a token is not anonymous.
    options = gcs_options({"gcs.service.host": "https://gcs.example", "gcs.oauth2.token": "t"}, {"STORAGE_EMULATOR_HOST": "x:1"})
    assert options["endpoint_override"] == "gcs.example" and "anonymous" not in options
    assert gcs_options({}, {}) == {
        "retry_time_limit": dt.timedelta(seconds=60)
    }  # the Google SDK's own chain (GOOGLE_APPLICATION_CREDENTIALS, ...)


@pytest.mark.parametrize(
    "properties, message",
    [
        ({"gcs.oauth2.token": "t", "gcs.oauth2.token-expires-at": "soon"}, "milliseconds since the epoch"),
        ({"gcs.anonymous": "maybe"}, "gcs.anonymous is true or false"),
        ({"gcs.anonymous": "true", "gcs.oauth2.token": "t"}, "one or the other"),
        ({"gcs.service.host": "ftp://x"}, "http"),
        ({"gcs.retry-time-limit": "soon"}, "number of seconds"),
    ],
)
def test_bad_gcs_properties_are_invalid_arguments(properties, message) -> None:
    with pytest.raises(InvalidArgumentError, match=message):
        gcs_options(properties, {})
    with pytest.raises(InvalidArgumentError, match=message):
        FileIO(properties).resolve("gs://b/k")


def test_azure_options_from_pyiceberg_properties() -> None:
    options = azure_options(
        "acct.dfs.core.windows.net",
        {"adls.account-key": "a2V5", "adls.blob-storage-authority": "127.0.0.1:10000", "adls.dfs-storage-authority": "127.0.0.1:10000",
         "adls.blob-storage-scheme": "http", "adls.dfs-storage-scheme": "http"},
        {"AZURE_STORAGE_ACCOUNT_KEY": "ignored"},
    )  # fmt: skip
    assert options == {
        "account_name": "acct", "account_key": "a2V5", "blob_storage_authority": "127.0.0.1:10000",
        "dfs_storage_authority": "127.0.0.1:10000", "blob_storage_scheme": "http", "dfs_storage_scheme": "http",
    }  # fmt: skip


def test_azure_sas_tokens_account_host_and_environment() -> None:
    host = "acct.dfs.core.windows.net"
    assert azure_options(host, {"adls.sas-token": "?sv=1&sig=x"}, {})["sas_token"] == "sv=1&sig=x"
    vended = azure_options(host, {"adls.sas-token": "general", f"adls.sas-token.{host}": "vended"}, {})
    assert vended["sas_token"] == "vended"
    assert azure_options(host, {"adls.account-host": "acct.blob.core.windows.net"}, {}) == {
        "account_name": "acct", "blob_storage_authority": ".blob.core.windows.net", "dfs_storage_authority": ".dfs.core.windows.net",
    }  # fmt: skip
    assert azure_options(host, {}, {"AZURE_STORAGE_ACCOUNT_KEY": "k"}) == {"account_name": "acct", "account_key": "k"}
    assert azure_options(host, {}, {"AZURE_STORAGE_SAS_TOKEN": "s"}) == {"account_name": "acct", "sas_token": "s"}
    assert azure_options(host, {}, {}) == {"account_name": "acct"}  # DefaultAzureCredential


def test_azure_connection_string_from_property_or_environment() -> None:
    text = (
        "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=a2V5;BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1;"
    )
    want = {
        "account_name": "devstoreaccount1", "account_key": "a2V5", "blob_storage_scheme": "http", "dfs_storage_scheme": "http",
        "blob_storage_authority": "127.0.0.1:10000", "dfs_storage_authority": "127.0.0.1:10000",
    }  # fmt: skip
    host = "devstoreaccount1.dfs.core.windows.net"
    assert azure_options(host, {"adls.connection-string": text}, {}) == want
    assert azure_options(host, {}, {"AZURE_STORAGE_CONNECTION_STRING": text}) == want
    # Credentials among the properties: the environment's connection string is not theirs.
    assert "account_key" not in azure_options(host, {"adls.sas-token": "s"}, {"AZURE_STORAGE_CONNECTION_STRING": text})
    suffix = azure_options(
        "a.dfs.core.chinacloudapi.cn", {"adls.connection-string": "AccountName=a;EndpointSuffix=core.chinacloudapi.cn"}, {}
    )
    assert suffix["blob_storage_authority"] == ".blob.core.chinacloudapi.cn"


@pytest.mark.parametrize(
    "properties, error, message",
    [
        ({"adls.account-key": "k", "adls.sas-token": "s"}, InvalidArgumentError, "not both"),
        ({"adls.connection-string": "AccountName"}, InvalidArgumentError, "Key=value"),
        ({"adls.anon": "true"}, UnsupportedFeatureError, "no anonymous access"),
        ({"adls.client-id": "a", "adls.client-secret": "s"}, InvalidArgumentError, "cannot configure Azure.*tenant_id"),
    ],
)
def test_bad_azure_properties_are_typed_errors(properties, error, message) -> None:
    with pytest.raises(error, match=message):
        FileIO(properties).resolve(f"{ABFSS}/k")


def test_file_io_pickles_as_its_properties_with_its_stores_unopened() -> None:
    io = FileIO({"gcs.anonymous": "true", "adls.account-key": "a2V5"})
    io.resolve("gs://b/k")
    io.resolve(f"{ABFSS}/k")
    copy = pickle.loads(pickle.dumps(io))
    assert copy.properties == io.properties and copy._stores == {}
    assert copy.s3_configured  # object storage is configured (by gcs./adls. properties)


def test_one_azure_file_system_per_account() -> None:
    io = FileIO({"adls.account-key": "a2V5"})
    one, path = io.resolve("abfss://c@one.dfs.core.windows.net/k")
    assert path == "c/k"
    assert io.resolve("wasbs://d@one.blob.core.windows.net/k")[0] is one
    assert io.resolve("abfss://c@two.dfs.core.windows.net/k")[0] is not one


@pytest.mark.parametrize(
    "message",
    [
        "GetProperties failed for 'http://x/acct/c/k'. Azure Error: [AuthorizationFailure] 403 Server failed to authenticate",
        "google::cloud::Status(PERMISSION_DENIED: Permanent error)",
    ],
)
def test_store_errors_are_storage_failures(message) -> None:
    error = OSError(message)
    assert is_storage_failure(error)
    assert isinstance(unreadable("manifest list", "gs://b/k", error), StorageError)
    assert not is_storage_failure(FileNotFoundError(message))


def test_a_missing_container_is_a_storage_failure() -> None:
    error = ContainerMissing(2, "the bucket b of gs://b does not exist")
    found = unreadable("table metadata file", "gs://b/k", error)
    assert isinstance(found, StorageError) and "does not exist" in str(found) and "gs://b/k" in str(found)
