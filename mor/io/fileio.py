"""File access through pyarrow.fs, with Iceberg's URI spellings: local files, S3, Google Cloud
Storage and Azure (ADLS Gen2 / Blob).

Iceberg writers spell local paths three ways: `file:///abs`, `file:/abs` (Hadoop) and `/abs`.
Locations are stored as the writer spelled them; this module turns them into file system paths.
Object storage locations are `s3://bucket/key` (`s3a://` and `s3n://`, Hadoop's spellings, are
the same objects), `gs://bucket/key` and `abfss://container@account.dfs.core.windows.net/key`
(or `wasbs://container@account.blob.core.windows.net/key`): mor/io/stores.py has their
spellings and the GCS and Azure settings. One FileIO serves every kind, choosing the file system
by scheme (and for Azure by account).

S3 is configured by catalog properties named as pyiceberg names them (`s3.endpoint`,
`s3.access-key-id`, `s3.secret-access-key`, `s3.session-token`, `s3.region`, `s3.proxy-uri`,
`s3.connect-timeout`, `s3.request-timeout`, `s3.role-arn`, `s3.role-session-name`,
`s3.force-virtual-addressing`, `s3.anonymous`; the `client.*` fallbacks; Iceberg Java's
`s3.path-style-access`), else by the usual environment variables (AWS_ACCESS_KEY_ID,
AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_REGION / AWS_DEFAULT_REGION,
AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL), else by the AWS SDK's own chain (config files,
instance metadata). A FileIO pickles as its properties: Spark ships it to executors, which
open their own connections (and read their own environment).

Writes on object storage (S3, GCS and Azure alike): every file a writer creates has a new
unique name (a uuid in it; metadata files `NNNNN-<uuid>.metadata.json`), so "create
exclusively" is a plain PUT of a key nobody else writes, and an object appears whole or not
at all. Which metadata file is current is decided by the catalog's compare-and-swap, never by
the storage, and no name is ever reused: a lost race leaves an unreferenced object (removed by
`remove_orphan_files`), never an overwritten one.
Reads never list: table state is found from the catalog's metadata location down through
manifest lists and manifests; only `remove_orphan_files` (by design), `expire_snapshots`'
removal of old metadata files, a Spark write's abort and opening a table *folder* (not a
metadata file) with StaticTable list a prefix.
"""

from __future__ import annotations

import contextlib
import errno
import os
import posixpath
import stat
import threading
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs

from mor.errors import (
    CorruptMetadataError,
    InvalidArgumentError,
    MorError,
    StorageError,
    UnsupportedFeatureError,
)
from mor.io.stores import (
    AZURE,
    CLOUD_ENVIRONMENT,
    GCS,
    OBJECT_STORE_PREFIXES,
    S3,
    ObjectLocation,
    azure_options,
    first_setting,
    gcs_options,
    parse_object_location,
    setting_flag,
    store_of,
)

# Environment variables that configure S3 access for the AWS SDK.
AWS_ENVIRONMENT = (
    "AWS_ACCESS_KEY_ID", "AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_ROLE_ARN",
    "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
)  # fmt: skip
WHOLE_OBJECT_BYTES = 8 << 20  # objects up to this size are read in one request


def is_object_store(location: str) -> bool:
    """Is `location` in object storage (S3, GCS or Azure), not a local file?"""
    return store_of(location) is not None


def to_local_path(location: str) -> str:
    if location.startswith("file://"):
        return location[len("file://") :] or "/"
    if location.startswith("file:"):
        return location[len("file:") :]
    if "://" in location:
        raise UnsupportedFeatureError(
            f"only local files and object storage ({', '.join(OBJECT_STORE_PREFIXES)}) are supported, got {location!r}"
        )
    return location


def unreadable(what: str, location: str, error: BaseException) -> MorError:
    """The error for a file of a table that cannot be read, naming it: missing, or not in its
    format (truncated, overwritten, a folder) is CorruptMetadataError; refused by the file
    system (permissions) or by object storage (unreachable, access denied, ...) is StorageError."""
    if isinstance(error, PermissionError):
        return StorageError(f"cannot read {what} {location}: permission denied")
    if isinstance(error, FileNotFoundError):
        return CorruptMetadataError(f"{what} {location} is missing")
    if is_storage_failure(error):
        return StorageError(f"cannot read {what} {location}: {_detail(error)}")
    return CorruptMetadataError(f"{what} {location} is unreadable (damaged, or not the file it should be): {_detail(error)}")


# How pyarrow's object store errors name their source: S3, Azure, GCS (google-cloud-cpp).
_STORE_ERRORS = ("AWS Error", "Azure Error", "google::cloud::Status")


class ContainerMissing(OSError):
    """A read found no bucket or container at all: the storage is misconfigured (a wrong name,
    another account), not a file missing from a table."""


def is_storage_failure(error: BaseException) -> bool:
    """An object store's refusal or failure (pyarrow's errors name the store's error), as
    opposed to a file that is there but not what it should be."""
    if isinstance(error, ContainerMissing):
        return True
    return isinstance(error, OSError) and not isinstance(error, FileNotFoundError) and any(m in str(error) for m in _STORE_ERRORS)


def _detail(error: BaseException) -> str:
    """What the system said, in one line: an OSError's strerror, else the message's first line."""
    strerror = getattr(error, "strerror", None)
    if strerror:
        return str(strerror)
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__


@contextlib.contextmanager
def write_errors(location: str) -> Iterator[None]:
    """A file system's or object store's failure to write `location` (disk full, unreachable,
    access denied) as StorageError naming it; mor's own errors pass unchanged."""
    try:
        yield
    except MorError:
        raise
    except OSError as e:
        raise StorageError(f"cannot write {location}: {_detail(e)}") from e


def check_inside(table_location: str, location: str) -> str:
    """`location` itself, after checking that it names a file under `table_location` once `.`
    and `..` are resolved: the last check before a writer creates a file, so that no name
    (a partition field's, a prefix) can put one elsewhere. InvalidArgumentError otherwise."""

    def normal(loc: str) -> str:
        if is_object_store(loc):
            where = parse_object_location(loc)
            return where.prefix + posixpath.normpath("/" + where.key)
        return posixpath.normpath(to_local_path(loc))

    root, file = normal(table_location).rstrip("/"), normal(location)
    if not file.startswith(root + "/"):
        raise InvalidArgumentError(f"refusing to write {location}: it is not under the table location {table_location}")
    return location


_FILE_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"),
               (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))  # fmt: skip


def check_regular_file(path: str) -> None:
    """An OSError unless the local `path` is a regular file (a link to one is): opening a FIFO
    blocks until someone writes to it, and a device never ends, so a read would hang; callers
    report it as they report a damaged file (`unreadable`). FileNotFoundError when missing."""
    mode = os.stat(path).st_mode
    if not stat.S_ISREG(mode):
        kind = next((name for test, name in _FILE_KINDS if test(mode)), "not a file")
        raise OSError(errno.EINVAL, f"not a regular file but {kind}", path)


def to_uri(path: str | os.PathLike[str]) -> str:
    """The `file:///abs` spelling we write for new locations."""
    return "file://" + str(Path(path).resolve())


def s3_options(properties: Mapping[str, str], environ: Mapping[str, str] = os.environ) -> dict[str, object]:
    """The S3FileSystem arguments the properties (then the environment) give."""
    p = properties
    # A small file is one PutObject when closed, not a three-request multipart upload.
    options: dict[str, object] = {"allow_delayed_open": True}
    endpoint = first_setting(p, "s3.endpoint") or first_setting(environ, "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")
    if endpoint:
        if endpoint.startswith("http://"):
            options["scheme"], endpoint = "http", endpoint[len("http://") :]
        elif endpoint.startswith("https://"):
            options["scheme"], endpoint = "https", endpoint[len("https://") :]
        options["endpoint_override"] = endpoint.rstrip("/")
    key = first_setting(p, "s3.access-key-id", "client.access-key-id")
    secret = first_setting(p, "s3.secret-access-key", "client.secret-access-key")
    token = first_setting(p, "s3.session-token", "client.session-token")
    if key is None and secret is None:
        key, secret = first_setting(environ, "AWS_ACCESS_KEY_ID"), first_setting(environ, "AWS_SECRET_ACCESS_KEY")
        token = token or first_setting(environ, "AWS_SESSION_TOKEN")
    if key is not None:
        options["access_key"] = key
    if secret is not None:
        options["secret_key"] = secret
    if token is not None:
        options["session_token"] = token
    region = first_setting(p, "s3.region", "client.region") or first_setting(environ, "AWS_REGION", "AWS_DEFAULT_REGION")
    if region:
        options["region"] = region
    if proxy := first_setting(p, "s3.proxy-uri"):
        options["proxy_options"] = proxy
    for prop, arg in (("s3.connect-timeout", "connect_timeout"), ("s3.request-timeout", "request_timeout")):
        if (value := first_setting(p, prop)) is not None:
            try:
                options[arg] = float(value)
            except ValueError:
                raise InvalidArgumentError(f"property {prop} is a number of seconds, got {value!r}") from None
    if role := first_setting(p, "s3.role-arn", "client.role-arn"):
        options["role_arn"] = role
    if session := first_setting(p, "s3.role-session-name", "client.role-session-name"):
        options["session_name"] = session
    if (virtual := first_setting(p, "s3.force-virtual-addressing")) is not None:
        options["force_virtual_addressing"] = setting_flag("s3.force-virtual-addressing", virtual)
    elif (path_style := first_setting(p, "s3.path-style-access")) is not None:
        options["force_virtual_addressing"] = not setting_flag("s3.path-style-access", path_style)
    if (anonymous := first_setting(p, "s3.anonymous")) is not None:
        options["anonymous"] = setting_flag("s3.anonymous", anonymous)
    return options


class FileIO:
    """Reads and writes files by location: local files, and `s3://`, `gs://` and Azure objects
    configured by `properties` (see the module docstring and mor/io/stores.py). Picklable: it
    pickles as its properties."""

    def __init__(self, properties: Mapping[str, str] | None = None) -> None:
        if properties is not None and not (
            isinstance(properties, Mapping) and all(isinstance(k, str) and isinstance(v, str) for k, v in properties.items())
        ):
            raise InvalidArgumentError(f"FileIO properties are a dict of strings, got {properties!r}")
        self.properties: dict[str, str] = dict(properties or {})
        self.fs: pafs.FileSystem = pafs.LocalFileSystem()  # the local file system
        self._stores: dict[tuple[str, str], pafs.FileSystem] = {}  # (store, Azure account host) -> file system
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, dict[str, str]]:
        return {"properties": self.properties}

    def __setstate__(self, state: dict[str, dict[str, str]]) -> None:
        type(self).__init__(self, state["properties"])

    def __repr__(self) -> str:
        return f"FileIO({sorted(k for k in self.properties)})"

    @property
    def s3_configured(self) -> bool:
        """Is object storage configured at all: by a property (`s3.*`, `client.*`, `gcs.*`,
        `adls.*`) or the environment? (Named for S3, the first store mor had.)"""
        return any(k.startswith(("s3.", "client.", "gcs.", "adls.")) for k in self.properties) or any(
            os.environ.get(v) for v in (*AWS_ENVIRONMENT, *CLOUD_ENVIRONMENT)
        )

    @property
    def s3(self) -> pafs.FileSystem:
        """The S3 file system, opened on first use."""
        return self._store(S3, "")

    def _store(self, store: str, account_host: str) -> pafs.FileSystem:
        """The file system of a store (for Azure, of one account), opened on first use."""
        key = (store, account_host)
        fs = self._stores.get(key)
        if fs is None:
            with self._lock:
                fs = self._stores.get(key)
                if fs is None:
                    fs = self._stores[key] = self._open_store(store, account_host)
        return fs

    def _open_store(self, store: str, account_host: str) -> pafs.FileSystem:
        name = {S3: "S3", GCS: "Google Cloud Storage", AZURE: f"Azure (account host {account_host})"}[store]
        try:
            options: dict[str, Any]
            if store == S3:
                return pafs.S3FileSystem(**s3_options(self.properties))
            if store == GCS:
                options = gcs_options(self.properties, os.environ)
                return pafs.GcsFileSystem(**options)
            options = azure_options(account_host, self.properties, os.environ)
            return pafs.AzureFileSystem(**options)
        except MorError:
            raise
        except (TypeError, ValueError, pa.ArrowException) as e:
            raise InvalidArgumentError(f"cannot configure {name} from the properties: {_detail(e)}") from e

    def resolve(self, location: str) -> tuple[pafs.FileSystem, str]:
        """The file system holding `location` and its path in it."""
        if is_object_store(location):
            where = parse_object_location(location)
            return self._store(where.store, where.host), where.fs_path
        return self.fs, self.path(location)

    def path(self, location: str) -> str:
        """One spelling per file, to compare locations by: the local path, or the object's
        canonical location (`s3://bucket/key`, `gs://bucket/key`,
        `abfss://container@account.dfs.core.windows.net/key`)."""
        if is_object_store(location):
            return parse_object_location(location).canonical
        return to_local_path(location)

    def open_input(self, location: str, whole: bool = True) -> pa.NativeFile:
        """A file to read. In object storage an object of at most WHOLE_OBJECT_BYTES is fetched
        whole in one GET (Avro readers ask for a few KiB at a time: one ranged GET each
        otherwise) unless `whole` is False (one blob of a Puffin file: one ranged GET); a larger
        one is read by ranges (Parquet readers pre-buffer and coalesce them). Opening an object
        costs a HEAD request (pyarrow's Python API takes no size hint). A missing object whose
        bucket or container is missing too is ContainerMissing, a storage failure."""
        fs, path = self.resolve(location)
        if fs is self.fs:
            check_regular_file(path)
            return fs.open_input_file(path)
        try:
            f = fs.open_input_file(path)
        except FileNotFoundError:
            self._check_container(location)
            raise
        if not whole or f.size() > WHOLE_OBJECT_BYTES:
            return f
        with f:
            return pa.BufferReader(f.read())

    def _check_container(self, location: str) -> None:
        """ContainerMissing when the bucket or container of `location` does not exist (asked
        only once a read found nothing: one more request, on the failure path alone)."""
        where = parse_object_location(location)
        fs = self._store(where.store, where.host)
        try:
            found = fs.get_file_info(where.container).type != pafs.FileType.NotFound
        except OSError:
            return  # the read's own error says enough
        if not found:
            kind = "container" if where.store == AZURE else "bucket"
            raise ContainerMissing(errno.ENOENT, f"the {kind} {where.container} of {where.prefix} does not exist")

    def open_output(self, location: str) -> pa.NativeFile:
        """A new file to stream into (parents made as needed); in object storage it appears
        when closed."""
        with write_errors(location):
            self.make_parent_dirs(location)
            fs, path = self.resolve(location)
            return fs.open_output_stream(path)

    def read_bytes(self, location: str) -> bytes:
        with self.open_input(location) as f:
            return bytes(f.read())

    def size(self, location: str) -> int:
        fs, path = self.resolve(location)
        return int(fs.get_file_info(path).size)

    def exists(self, location: str) -> bool:
        fs, path = self.resolve(location)
        return fs.get_file_info(path).type != pafs.FileType.NotFound

    def make_parent_dirs(self, location: str) -> None:
        if is_object_store(location):
            return  # no folders in object storage
        self.fs.create_dir(os.path.dirname(self.path(location)), recursive=True)

    def write_bytes_exclusive(self, location: str, data: bytes) -> None:
        """Create a new file with `data`; fail if it exists. Written under a temporary name and
        linked into place, so a reader never sees a partial file. In object storage a plain
        PUT: the object appears whole, and the name is new (module docstring)."""
        if is_object_store(location):
            fs, path = self.resolve(location)
            try:
                with fs.open_output_stream(path) as out:
                    out.write(data)
            except OSError as e:
                raise StorageError(f"cannot write {location}: {_detail(e)}") from e
            return
        final = self.path(location)
        tmp = f"{final}.{uuid.uuid4().hex}.tmp"
        try:
            os.makedirs(os.path.dirname(final), exist_ok=True)
            with open(tmp, "xb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
        except OSError as e:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise StorageError(f"cannot write {location}: {e.strerror or e}") from e
        try:
            os.link(tmp, final)  # atomic create-if-absent; os.rename would overwrite
        except FileExistsError:
            raise  # a name collision is a bug of the writer, not of the storage
        except OSError as e:
            raise StorageError(f"cannot write {location}: {e.strerror or e}") from e
        finally:
            os.unlink(tmp)

    def delete(self, location: str) -> None:
        """Delete a file (gone already is fine); StorageError when the storage refuses or fails."""
        fs, path = self.resolve(location)
        try:
            fs.delete_file(path)
        except FileNotFoundError:
            pass
        except OSError as e:
            raise StorageError(f"cannot delete {location}: {_detail(e)}") from e

    def delete_quietly(self, location: str) -> None:
        """Cleanup after a failure: delete the file we wrote, and when the storage fails that
        too (unreachable), leave it, an unreferenced file for `remove_orphan_files`, rather than
        hide the error that made us clean up."""
        with contextlib.suppress(OSError):
            self.delete(location)

    def list_files(self, directory_location: str) -> list[pafs.FileInfo]:
        """Every file under a folder (in object storage: a prefix), each with its path as
        `path()` spells it."""
        fs, path = self.resolve(directory_location)
        selector = pafs.FileSelector(path.rstrip("/"), recursive=True, allow_not_found=True)
        files = [info for info in fs.get_file_info(selector) if info.type == pafs.FileType.File]
        if not is_object_store(directory_location):
            return files
        where = parse_object_location(directory_location)
        return [pafs.FileInfo(listed_location(where, i.path), pafs.FileType.File, mtime_ns=i.mtime_ns, size=i.size) for i in files]


def listed_location(where: ObjectLocation, fs_path: str) -> str:
    """The canonical location of a file a listing under `where` reported by its file system
    path (`bucket/key`)."""
    return where.child(fs_path).canonical
