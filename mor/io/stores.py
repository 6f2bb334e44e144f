"""Object storage locations and the file systems' settings for Google Cloud Storage and Azure.

Three stores, each with the spellings Iceberg writers use for it:
- S3: `s3://bucket/key` (Hadoop's `s3a://`, `s3n://` are the same objects);
- GCS: `gs://bucket/key` (`gcs://` too, as pyiceberg accepts it);
- Azure (ADLS Gen2 and Blob storage): `abfss://container@account.dfs.core.windows.net/key`,
  and `wasbs://container@account.blob.core.windows.net/key`, the Blob endpoint's name for the
  same object (`abfs://`, `wasb://` likewise).
Each location has one canonical spelling (`ObjectLocation.canonical`): the one locations are
compared by (mor/maintenance/ownership.py), and the one a listing reports files in.

GCS is configured by pyiceberg's property names: `gcs.service.host` (the endpoint, a URL),
`gcs.oauth2.token` with `gcs.oauth2.token-expires-at` (ms since the epoch), `gcs.project-id`,
`gcs.default-bucket-location`; mor adds `gcs.anonymous` and `gcs.retry-time-limit` (seconds
to retry transient failures for; 60 by default, where Google's client would retry for 15
minutes and so take that long to report an unreachable endpoint). Else the environment:
STORAGE_EMULATOR_HOST (the Google SDKs' emulator switch: that endpoint, no credentials), then
the Google SDK's own chain (GOOGLE_APPLICATION_CREDENTIALS, the metadata server).

Azure is configured by pyiceberg's names: `adls.account-name`, `adls.account-key`,
`adls.sas-token` (or `adls.sas-token.<account host>`, as REST catalogs vend it),
`adls.connection-string`, `adls.account-host`, `adls.blob-storage-authority`,
`adls.dfs-storage-authority`, `adls.blob-storage-scheme`, `adls.dfs-storage-scheme`,
`adls.client-id` / `adls.client-secret` / `adls.tenant-id`. Without credentials among them,
the environment's AZURE_STORAGE_CONNECTION_STRING, else AZURE_STORAGE_ACCOUNT_KEY or
AZURE_STORAGE_SAS_TOKEN, else the Azure SDK's DefaultAzureCredential (AZURE_CLIENT_ID, managed
identity, ...). The account is the one the location names; one file system per account.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass

from mor.errors import InvalidArgumentError, UnsupportedFeatureError

S3, GCS, AZURE = "s3", "gcs", "azure"
SCHEMES: dict[str, str] = {
    "s3": S3, "s3a": S3, "s3n": S3,
    "gs": GCS, "gcs": GCS,
    "abfss": AZURE, "abfs": AZURE, "wasbs": AZURE, "wasb": AZURE,
}  # fmt: skip
OBJECT_STORE_PREFIXES = tuple(f"{scheme}://" for scheme in SCHEMES)
_CANONICAL_SCHEME = {S3: "s3", GCS: "gs", AZURE: "abfss"}
_SPELLING = {
    S3: "s3://bucket/key",
    GCS: "gs://bucket/key",
    AZURE: "abfss://container@account.dfs.core.windows.net/key",
}
# Token lifetime assumed when a GCS token comes without one: the server decides whether it is
# still good (pyarrow insists on an expiry; a past one would make it refuse the token itself).
_NO_EXPIRY = dt.datetime(2200, 1, 1, tzinfo=dt.UTC)
# Environment variables that give Azure or GCS access (FileIO.s3_configured).
CLOUD_ENVIRONMENT = (
    "GOOGLE_APPLICATION_CREDENTIALS", "STORAGE_EMULATOR_HOST", "AZURE_STORAGE_CONNECTION_STRING",
    "AZURE_STORAGE_ACCOUNT_KEY", "AZURE_STORAGE_SAS_TOKEN", "AZURE_CLIENT_ID",
)  # fmt: skip


GCS_RETRY_SECONDS = 60  # how long transient GCS failures are retried unless gcs.retry-time-limit says


def store_of(location: str) -> str | None:
    """S3, GCS or AZURE for an object storage location, None otherwise (a local path)."""
    if not isinstance(location, str) or "://" not in location:
        return None
    return SCHEMES.get(location.split("://", 1)[0].lower())


@dataclass(frozen=True)
class ObjectLocation:
    """An object storage location taken apart. `container` is the bucket (S3, GCS) or the
    container (Azure); `host` the Azure account's host, lowercased and in its `.dfs.` form
    (empty for S3 and GCS); `key` the object's key, '' for the container itself."""

    store: str
    container: str
    host: str
    key: str

    @property
    def prefix(self) -> str:
        """The canonical scheme and authority: `s3://bucket`, `gs://bucket`,
        `abfss://container@account.dfs.core.windows.net`."""
        authority = f"{self.container}@{self.host}" if self.store == AZURE else self.container
        return f"{_CANONICAL_SCHEME[self.store]}://{authority}"

    @property
    def canonical(self) -> str:
        return f"{self.prefix}/{self.key}" if self.key else self.prefix

    @property
    def fs_path(self) -> str:
        """The path in the store's pyarrow file system: `bucket/key` (`container/key` in the
        account's file system)."""
        return f"{self.container}/{self.key}" if self.key else self.container

    @property
    def account(self) -> str:
        """The Azure account name: the host's first label."""
        return self.host.split(".", 1)[0]

    def child(self, fs_path: str) -> ObjectLocation:
        """The location of `fs_path` (a path a listing of this store's file system reported)."""
        container, _, key = fs_path.partition("/")
        return ObjectLocation(self.store, container, self.host, key)


def parse_object_location(location: str) -> ObjectLocation:
    """`location` taken apart; InvalidArgumentError unless it is a well-formed object storage
    location (a bucket or container, and for Azure an account host, in it)."""
    store = store_of(location)
    if store is None:
        raise InvalidArgumentError(f"not an object storage location: {location!r}")
    rest = location.split("://", 1)[1]
    authority, _, key = rest.partition("/")
    host = ""
    container = authority
    if store == AZURE:
        container, at, host = authority.partition("@")
        host = canonical_azure_host(host)
        if not at or not host:
            container = ""
    if not container or key.startswith("/"):
        raise InvalidArgumentError(f"a {store} location is {_SPELLING[store]}, got {location!r}")
    return ObjectLocation(store, container, host, key)


def canonical_azure_host(host: str) -> str:
    """An Azure account host in one spelling: lowercase, the Blob endpoint's name
    (`account.blob.<suffix>`) as the Data Lake one (`account.dfs.<suffix>`): both name the
    same objects."""
    host = host.lower()
    account, dot, suffix = host.partition(".")
    if suffix.startswith("blob."):
        return f"{account}{dot}dfs.{suffix[len('blob.') :]}"
    return host


def object_prefix(scheme: str, authority: str) -> str | None:
    """The canonical prefix for a location's scheme and authority (mor/maintenance/ownership.py
    compares by it); None for a scheme that is no object store, or an authority that names no
    bucket or container."""
    try:
        return parse_object_location(f"{scheme}://{authority}").prefix
    except InvalidArgumentError:
        return None


def first_setting(properties: Mapping[str, str], *keys: str) -> str | None:
    """The value of the first of `keys` set (non-empty) in `properties`."""
    for k in keys:
        v = properties.get(k)
        if v not in (None, ""):
            return v
    return None


def setting_flag(name: str, value: str) -> bool:
    """A true/false property; InvalidArgumentError naming it otherwise."""
    v = str(value).strip().lower()
    if v not in ("true", "false"):
        raise InvalidArgumentError(f"property {name} is true or false, got {value!r}")
    return v == "true"


def _endpoint(url: str, what: str) -> tuple[str, str]:
    """(scheme, host[:port]) of an endpoint URL; a bare host:port is https."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        scheme, rest = "https", url
    if scheme not in ("http", "https") or not rest.strip("/"):
        raise InvalidArgumentError(f"{what} is an http(s) URL such as http://127.0.0.1:4443, got {url!r}")
    return scheme, rest.split("/", 1)[0]


def gcs_options(properties: Mapping[str, str], environ: Mapping[str, str]) -> dict[str, object]:
    """The GcsFileSystem arguments the properties (then the environment) give."""
    p = properties
    options: dict[str, object] = {}
    endpoint = first_setting(p, "gcs.service.host")
    emulator = first_setting(environ, "STORAGE_EMULATOR_HOST") if endpoint is None else None
    if endpoint or emulator:
        what = "property gcs.service.host" if endpoint else "STORAGE_EMULATOR_HOST"
        options["scheme"], options["endpoint_override"] = _endpoint(str(endpoint or emulator), what)
    token = first_setting(p, "gcs.oauth2.token")
    if token is not None:
        options["access_token"] = token
        expires = first_setting(p, "gcs.oauth2.token-expires-at")
        try:
            options["credential_token_expiration"] = (
                _NO_EXPIRY if expires is None else dt.datetime.fromtimestamp(int(expires) / 1000, dt.UTC)
            )
        except (ValueError, OverflowError, OSError):
            raise InvalidArgumentError(f"property gcs.oauth2.token-expires-at is milliseconds since the epoch, got {expires!r}") from None
    anonymous = first_setting(p, "gcs.anonymous")
    if anonymous is not None:
        options["anonymous"] = setting_flag("gcs.anonymous", anonymous)
    elif emulator and token is None:
        options["anonymous"] = True  # an emulator takes no credentials (the SDKs' convention)
    if options.get("anonymous") and token is not None:
        raise InvalidArgumentError("gcs.anonymous is true but gcs.oauth2.token gives a token: give one or the other")
    if project := first_setting(p, "gcs.project-id"):
        options["project_id"] = project
    if location := first_setting(p, "gcs.default-bucket-location"):
        options["default_bucket_location"] = location
    limit = first_setting(p, "gcs.retry-time-limit") or str(GCS_RETRY_SECONDS)
    try:
        seconds = float(limit)
    except ValueError:
        seconds = -1.0
    if not 0 <= seconds < 1e9:
        raise InvalidArgumentError(f"property gcs.retry-time-limit is a number of seconds, got {limit!r}")
    options["retry_time_limit"] = dt.timedelta(seconds=seconds)
    return options


def _connection_string(text: str) -> dict[str, str]:
    """An Azure storage connection string's `Key=value;...` pairs."""
    pairs: dict[str, str] = {}
    for part in text.split(";"):
        if part.strip():
            key, eq, value = part.partition("=")
            if not eq:
                raise InvalidArgumentError(f"an Azure connection string is Key=value pairs separated by ';', got a part {part!r}")
            pairs[key.strip()] = value.strip()
    return pairs


def azure_options(account_host: str, properties: Mapping[str, str], environ: Mapping[str, str]) -> dict[str, object]:
    """The AzureFileSystem arguments for the account at `account_host` (canonical, as
    `ObjectLocation.host`) that the properties (then the environment) give."""
    p = properties
    given_credentials = any(
        first_setting(p, k) for k in ("adls.account-key", "adls.sas-token", f"adls.sas-token.{account_host}", "adls.client-id")
    )
    text = first_setting(p, "adls.connection-string")
    if text is None and not given_credentials:
        text = first_setting(environ, "AZURE_STORAGE_CONNECTION_STRING")
    conn = _connection_string(text) if text else {}
    options: dict[str, object] = {}
    account = account_host.split(".", 1)[0]
    named = first_setting(p, "adls.account-name") or conn.get("AccountName")
    if ".dfs." not in account_host and named:
        account = named  # a host that names no account (an emulator's address)
    options["account_name"] = account

    if endpoint := conn.get("BlobEndpoint"):
        scheme, authority = _endpoint(endpoint, "the connection string's BlobEndpoint")
        options["blob_storage_scheme"] = options["dfs_storage_scheme"] = scheme
        options["blob_storage_authority"] = options["dfs_storage_authority"] = authority
    elif suffix := conn.get("EndpointSuffix"):
        options["blob_storage_authority"], options["dfs_storage_authority"] = f".blob.{suffix}", f".dfs.{suffix}"
    if conn.get("DefaultEndpointsProtocol") in ("http", "https") and "BlobEndpoint" not in conn:
        options["blob_storage_scheme"] = options["dfs_storage_scheme"] = conn["DefaultEndpointsProtocol"]
    if host := first_setting(p, "adls.account-host"):
        # `account.blob.core.windows.net` names the endpoints' suffix; `127.0.0.1:10000` an
        # emulator, which serves the account under its path.
        authority = host[len(account) :] if host.lower().startswith(account.lower() + ".") else host
        if authority.startswith(".dfs."):
            authority = ".blob." + authority[len(".dfs.") :]
        dfs = ".dfs." + authority[len(".blob.") :] if authority.startswith(".blob.") else authority
        options["blob_storage_authority"], options["dfs_storage_authority"] = authority, dfs
    for prop, arg in (
        ("adls.blob-storage-authority", "blob_storage_authority"), ("adls.dfs-storage-authority", "dfs_storage_authority"),
        ("adls.blob-storage-scheme", "blob_storage_scheme"), ("adls.dfs-storage-scheme", "dfs_storage_scheme"),
    ):  # fmt: skip
        if value := first_setting(p, prop):
            options[arg] = value

    key = first_setting(p, "adls.account-key") or conn.get("AccountKey")
    sas = first_setting(p, f"adls.sas-token.{account_host}", "adls.sas-token") or conn.get("SharedAccessSignature")
    if not given_credentials and not key and not sas:
        key = first_setting(environ, "AZURE_STORAGE_ACCOUNT_KEY")
        sas = None if key else first_setting(environ, "AZURE_STORAGE_SAS_TOKEN")
    if key and sas:
        raise InvalidArgumentError("Azure access is by an account key or a SAS token, not both: give adls.account-key or adls.sas-token")
    if key:
        options["account_key"] = key
    if sas:
        options["sas_token"] = sas.lstrip("?")
    for prop, arg in (("adls.client-id", "client_id"), ("adls.client-secret", "client_secret"), ("adls.tenant-id", "tenant_id")):
        if value := first_setting(p, prop):
            options[arg] = value
    anonymous = first_setting(p, "adls.anon")
    if anonymous is not None and setting_flag("adls.anon", anonymous):
        raise UnsupportedFeatureError("adls.anon: pyarrow's AzureFileSystem has no anonymous access; give a SAS token instead")
    return options
