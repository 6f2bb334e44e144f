"""A throwaway Azure Blob Storage server for the tests: Azurite (npm) in a child process on
127.0.0.1 and a free port, its state in memory, with Azurite's well-known development account.
The fixture installs Azurite with npm into `.cache/azurite` of the checkout (git-ignored) when
it is missing; it needs `node` and `npm` on PATH (Debian: apt-get install nodejs npm).

`azurite_server` is a session-scoped pytest fixture: the endpoint, a container, and
`properties` named as pyiceberg names them. `fresh_prefix()` gives each test its own folder
(`abfss://container@devstoreaccount1.dfs.core.windows.net/<uuid>`). Where the server cannot
start the fixture FAILS, saying what is missing (never skips).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.servers.gcs import wait_until_answering
from tests.servers.postgres import free_port

VERSION = "3.37.0"
FOLDER = Path(__file__).resolve().parents[2] / ".cache" / "azurite"
INSTALL_HINT = f"node and npm on PATH (apt-get install nodejs npm), then: npm install --prefix {FOLDER} azurite@{VERSION}"
# Azurite's development account: its name and key are public, the same in every installation.
ACCOUNT = "devstoreaccount1"
ACCOUNT_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="


@dataclass(frozen=True)
class AzuriteServer:
    endpoint: str  # http://127.0.0.1:PORT (the Blob service; the account is the path's first part)
    container: str

    @property
    def authority(self) -> str:
        return self.endpoint.split("://", 1)[1]

    @property
    def properties(self) -> dict[str, str]:
        """FileIO / pyiceberg properties reaching this server (pyiceberg's PyArrowFileIO names;
        FsspecFileIO takes the connection string)."""
        return {
            "adls.account-name": ACCOUNT,
            "adls.account-key": ACCOUNT_KEY,
            "adls.blob-storage-authority": self.authority,
            "adls.dfs-storage-authority": self.authority,
            "adls.blob-storage-scheme": "http",
            "adls.dfs-storage-scheme": "http",
        }

    @property
    def connection_string(self) -> str:
        return f"DefaultEndpointsProtocol=http;AccountName={ACCOUNT};AccountKey={ACCOUNT_KEY};BlobEndpoint={self.endpoint}/{ACCOUNT};"

    def location(self, container: str, key: str = "") -> str:
        return f"abfss://{container}@{ACCOUNT}.dfs.core.windows.net/{key}".rstrip("/")

    def fresh_prefix(self) -> str:
        """A new empty folder in the test container."""
        return self.location(self.container, uuid.uuid4().hex)


def azurite_bin() -> Path:
    return FOLDER / "node_modules" / ".bin" / "azurite-blob"


def installed_version() -> str | None:
    package = FOLDER / "node_modules" / "azurite" / "package.json"
    try:
        return str(json.loads(package.read_text())["version"])
    except (OSError, ValueError, KeyError):
        return None


def ensure_installed() -> None:
    """Install Azurite into .cache/azurite unless that version is there."""
    if installed_version() == VERSION and azurite_bin().exists():
        return
    missing = [tool for tool in ("node", "npm") if shutil.which(tool) is None]
    if missing:
        raise RuntimeError(
            f"Azurite needs {' and '.join(missing)}, which {'is' if len(missing) == 1 else 'are'} not on PATH: {INSTALL_HINT}"
        )
    FOLDER.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["npm", "install", "--prefix", str(FOLDER), "--no-audit", "--no-fund", "--loglevel=error", f"azurite@{VERSION}"],
        capture_output=True, text=True, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    if done.returncode != 0 or not azurite_bin().exists():
        raise RuntimeError(f"npm could not install Azurite ({INSTALL_HINT}): {(done.stderr or done.stdout).strip()[-2000:]}")


class Azurite:
    """Azurite's Blob service in a child process, and the container the tests use."""

    def __init__(self) -> None:
        ensure_installed()
        port = free_port()
        self.folder = Path(tempfile.mkdtemp(prefix="mor-azurite-"))
        self.log_path = self.folder / "azurite.log"
        self._log = open(self.log_path, "wb")
        command = [
            str(azurite_bin()), "--blobHost", "127.0.0.1", "--blobPort", str(port),
            "--inMemoryPersistence", "--skipApiVersionCheck", "--loose", "--silent",
        ]  # fmt: skip
        self.process = subprocess.Popen(command, cwd=self.folder, stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.server = AzuriteServer(f"http://127.0.0.1:{port}", "mor-tests")
        try:
            # Any answer will do: an unsigned request is refused (403), by a server that serves.
            wait_until_answering(f"{self.server.endpoint}/{ACCOUNT}?comp=list", self.process, self.log_path, "Azurite")
            self.create_container(self.server.container)
        except Exception:
            self.stop()
            raise

    def create_container(self, name: str) -> None:
        import pyarrow.fs as pafs

        authority = self.server.authority
        fs = pafs.AzureFileSystem(
            account_name=ACCOUNT, account_key=ACCOUNT_KEY, blob_storage_authority=authority, dfs_storage_authority=authority,
            blob_storage_scheme="http", dfs_storage_scheme="http",
        )  # fmt: skip
        fs.create_dir(name)

    def stop(self) -> None:
        # Killed outright: its state is in memory, nothing to flush, and on SIGTERM it waits for
        # clients' idle keep-alive connections to close.
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self._log.close()
        shutil.rmtree(self.folder, ignore_errors=True)


@pytest.fixture(scope="session")
def azurite_server() -> Iterator[AzuriteServer]:
    try:
        azurite = Azurite()
    except Exception as e:
        pytest.fail(f"the Azure test server (Azurite) could not start: {e}", pytrace=False)
    try:
        yield azurite.server
    finally:
        azurite.stop()
