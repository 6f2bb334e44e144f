"""A throwaway S3 API server for the tests: moto in server mode (`moto[server]`, in the dev
extra), on 127.0.0.1 and a free port, in this process's threads. Its state is in memory and
goes with it.

`s3_server` is a session-scoped pytest fixture: the endpoint, credentials and a bucket, and
`properties` named as pyiceberg names them. `fresh_prefix()` gives each test its own folder.
Where the server cannot start the fixture FAILS, saying what is missing (never skips).
"""

from __future__ import annotations

import logging
import re
import socket
import urllib.request
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

INSTALL_HINT = 'pip install "moto[server]" (in the dev extra: pip install -e ".[dev]")'
ACCESS_KEY, SECRET_KEY, REGION = "testing", "testing", "us-east-1"


class RequestCounter(logging.Filter):
    """Counts the requests the server answers, by method, from werkzeug's access log: a filter
    on its logger that counts each record and drops it (nothing printed or captured)."""

    def __init__(self) -> None:
        super().__init__()
        self.counts: Counter[str] = Counter()

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args if isinstance(record.args, tuple) else ()
        found = _METHOD.search(str(args[0])) if args else None  # the line may carry color codes
        if found:
            self.counts[found.group(1)] += 1
            return False
        return True

    def reset(self) -> None:
        self.counts.clear()

    def snapshot(self) -> dict[str, int]:
        return dict(self.counts)


REQUESTS = RequestCounter()
_METHOD = re.compile(r"(GET|HEAD|PUT|POST|DELETE) /")


@dataclass(frozen=True)
class S3Server:
    endpoint: str  # http://127.0.0.1:PORT
    bucket: str

    @property
    def properties(self) -> dict[str, str]:
        """FileIO / pyiceberg properties reaching this server."""
        return {
            "s3.endpoint": self.endpoint,
            "s3.access-key-id": ACCESS_KEY,
            "s3.secret-access-key": SECRET_KEY,
            "s3.region": REGION,
        }

    @property
    def requests(self) -> RequestCounter:
        """Requests the server answered since `requests.reset()`, by HTTP method."""
        return REQUESTS

    def fresh_prefix(self) -> str:
        """A new empty `s3://bucket/<uuid>` folder."""
        return f"s3://{self.bucket}/{uuid.uuid4().hex}"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_moto() -> tuple[object, S3Server]:
    try:
        from moto.server import ThreadedMotoServer
    except ImportError as e:
        raise RuntimeError(f"the S3 test server needs moto in server mode ({e}): {INSTALL_HINT}") from e
    log = logging.getLogger("werkzeug")  # one record per request: counted, not printed
    log.setLevel(logging.INFO)
    if REQUESTS not in log.filters:
        log.addFilter(REQUESTS)
    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    try:
        server.start()
    except Exception as e:
        raise RuntimeError(f"moto's S3 server did not start on 127.0.0.1:{port}: {e} ({INSTALL_HINT})") from e
    endpoint = f"http://127.0.0.1:{port}"
    bucket = "mor-tests"
    request = urllib.request.Request(f"{endpoint}/{bucket}", method="PUT")  # CreateBucket (us-east-1 takes no body)
    try:
        urllib.request.urlopen(request, timeout=30).read()
    except Exception as e:
        server.stop()
        raise RuntimeError(f"moto's S3 server at {endpoint} did not create bucket {bucket}: {e}") from e
    return server, S3Server(endpoint, bucket)


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    try:
        server, info = start_moto()
    except RuntimeError as e:
        pytest.fail(str(e), pytrace=False)
    try:
        yield info
    finally:
        server.stop()  # type: ignore[attr-defined]
