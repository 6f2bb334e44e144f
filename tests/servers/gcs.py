"""A throwaway Google Cloud Storage server for the tests: gcp-storage-emulator (PyPI) in a child
process on 127.0.0.1 and a free port, its state in memory. The fixture installs the emulator
into the running interpreter's environment when it is missing (CI starts from a fresh machine).

`gcs_server` is a session-scoped pytest fixture: the endpoint, a bucket, and `properties` named
as pyiceberg names them (the emulator takes any token). `fresh_prefix()` gives each test its
own folder. Where the server cannot start the fixture FAILS, saying what is missing (never
skips).
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.servers.postgres import free_port

PACKAGE = "gcp-storage-emulator==2026.7.19"
INSTALL_HINT = f'pip install "{PACKAGE}"'
STARTUP_SECONDS = 60
# pyarrow wants an expiry with a token; the emulator checks neither.
TOKEN, TOKEN_EXPIRES_AT_MS = "emulator-token", str(4_102_444_800_000)  # 2100-01-01


@dataclass(frozen=True)
class GcsServer:
    endpoint: str  # http://127.0.0.1:PORT
    bucket: str

    @property
    def properties(self) -> dict[str, str]:
        """FileIO / pyiceberg properties reaching this server."""
        return {"gcs.service.host": self.endpoint, "gcs.oauth2.token": TOKEN, "gcs.oauth2.token-expires-at": TOKEN_EXPIRES_AT_MS}

    def fresh_prefix(self) -> str:
        """A new empty `gs://bucket/<uuid>` folder."""
        return f"gs://{self.bucket}/{uuid.uuid4().hex}"

    def create_bucket(self, name: str) -> None:
        body = json.dumps({"name": name}).encode()
        request = urllib.request.Request(
            f"{self.endpoint}/storage/v1/b?project=mor-tests", data=body, method="POST", headers={"Content-Type": "application/json"}
        )
        urllib.request.urlopen(request, timeout=30).read()


# The emulator serves one request at a time, and pyarrow's GCS file starts a whole-object
# download it never reads (one more GET per opened data file): writing an object larger than
# the socket buffers to a client waiting for its next answer, the emulator blocks, and the read
# hangs. With a thread per request it serves on (benchmarks/bench_stores.py measures with it).
THREADED = (
    "import http.server, runpy; http.server.HTTPServer = http.server.ThreadingHTTPServer; "
    "runpy.run_module('gcp_storage_emulator', run_name='__main__')"
)


def ensure_installed() -> None:
    """Install the emulator into this interpreter's environment unless it is there."""
    if importlib.util.find_spec("gcp_storage_emulator") is not None:
        return
    done = subprocess.run([sys.executable, "-m", "pip", "install", "-q", PACKAGE], capture_output=True, text=True)
    if done.returncode != 0 or importlib.util.find_spec("gcp_storage_emulator") is None:
        raise RuntimeError(f"could not install the GCS emulator ({INSTALL_HINT}): {done.stderr.strip()[-2000:]}")


def wait_until_answering(url: str, process: subprocess.Popen[bytes], log: Path, what: str) -> None:
    """Poll `url` until the server answers any HTTP response; RuntimeError if the process ends
    first or STARTUP_SECONDS pass (a generous bound for a loaded machine, not a wait)."""
    deadline = time.monotonic() + STARTUP_SECONDS
    while True:
        try:
            urllib.request.urlopen(url, timeout=5).read()
            return
        except urllib.error.HTTPError:
            return  # an HTTP answer, if a refusal: it is serving
        except OSError as e:
            if process.poll() is not None or time.monotonic() > deadline:
                tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
                raise RuntimeError(f"{what} did not start ({e}; exit code {process.poll()}): {tail}") from e
            time.sleep(0.05)  # between polls only: readiness is the answer, not the time


class GcsEmulator:
    """The emulator's child process and what the tests reach it by."""

    def __init__(self) -> None:
        ensure_installed()
        port = free_port()
        self.folder = Path(tempfile.mkdtemp(prefix="mor-gcs-"))
        self.log_path = self.folder / "emulator.log"
        self._log = open(self.log_path, "wb")
        self.process = subprocess.Popen(
            [sys.executable, "-c", THREADED, "start", "--host", "127.0.0.1", "--port", str(port), "--in-memory", "-q"],
            stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        self.server = GcsServer(f"http://127.0.0.1:{port}", "mor-tests")
        try:
            wait_until_answering(f"{self.server.endpoint}/storage/v1/b", self.process, self.log_path, "the GCS emulator")
            self.server.create_bucket(self.server.bucket)
        except Exception:
            self.stop()
            raise

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()
        shutil.rmtree(self.folder, ignore_errors=True)


@pytest.fixture(scope="session")
def gcs_server() -> Iterator[GcsServer]:
    try:
        emulator = GcsEmulator()
    except Exception as e:
        pytest.fail(f"the GCS test server could not start: {e}", pytrace=False)
    try:
        yield emulator.server
    finally:
        emulator.stop()
