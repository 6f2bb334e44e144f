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


def request_kind(line: str) -> str | None:
    """The kind of request an access log line records: its HTTP method, or LIST for a GET of a
    bucket (a listing: `GET /bucket?list-type=2&prefix=...`); None for other lines."""
    found = _REQUEST.search(line)  # the line may carry color codes
    if not found:
        return None
    method, path = found.groups()
    if method == "GET" and "/" not in path.split("?", 1)[0].strip("/"):
        return "LIST"
    return method


class RequestCounter(logging.Filter):
    """Counts the requests the server answers, by kind (`request_kind`), from werkzeug's access
    log: a filter on its logger that counts each record and drops it (nothing printed or
    captured)."""

    def __init__(self) -> None:
        super().__init__()
        self.counts: Counter[str] = Counter()

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args if isinstance(record.args, tuple) else ()
        kind = request_kind(str(args[0])) if args else None
        if kind:
            self.counts[kind] += 1
            return False
        return True

    def reset(self) -> None:
        self.counts.clear()

    def snapshot(self) -> dict[str, int]:
        return dict(self.counts)


def _process_counter() -> RequestCounter:
    """The one counter of this process. This module is imported as `tests.servers.s3` and as
    `servers.s3` (tests/server puts tests/ on the path): two counters on the same logger would
    each drop the records, and the second would never count."""
    for existing in logging.getLogger("werkzeug").filters:
        if type(existing).__name__ == RequestCounter.__name__:
            return existing  # type: ignore[return-value]  (the same class, imported under the other name)
    counter = RequestCounter()
    logging.getLogger("werkzeug").addFilter(counter)
    return counter


REQUESTS = _process_counter()
_REQUEST = re.compile(r"(GET|HEAD|PUT|POST|DELETE) (/\S*)")


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


class MotoProcess:
    """moto's S3 server in a child process, for benchmarks: served by this process's threads it
    would compete with the reader being measured for the GIL. Its access log goes to a file;
    `requests()` counts the lines logged since `reset()` by kind (werkzeug logs a request when
    it sends the response headers, so every answered request is counted)."""

    def __init__(self, log_path: str) -> None:
        import subprocess
        import sys
        import time

        self.log_path = log_path
        port = _free_port()
        self._log = open(log_path, "wb")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=self._log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        self.server = S3Server(f"http://127.0.0.1:{port}", "mor-bench")
        deadline = time.monotonic() + 60
        while True:
            try:
                request = urllib.request.Request(f"{self.server.endpoint}/{self.server.bucket}", method="PUT")
                urllib.request.urlopen(request, timeout=30).read()
                break
            except OSError as e:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"moto's S3 server did not start ({e}); see {log_path} ({INSTALL_HINT})") from e
                time.sleep(0.2)
        self._offset = 0
        self.reset()

    def reset(self) -> None:
        self._log.flush()
        with open(self.log_path, "rb") as f:
            self._offset = f.seek(0, 2)

    def requests(self) -> dict[str, int]:
        with open(self.log_path, "rb") as f:
            f.seek(self._offset)
            lines = f.read().decode(errors="replace").splitlines()
        return dict(Counter(k for k in map(request_kind, lines) if k))

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)
        self._log.close()


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


class IamS3Server:
    """An S3 server that checks every request's signature and IAM policies, as AWS does (moto
    with authentication on, in a child process running tests/servers/moto_scoped.py, which also
    applies STS session policies). Set up before authentication starts: a bucket, an admin user
    allowed everything (`admin_properties`, the server's own settings), and a role any
    principal may assume that may do anything in S3 (`role_arn`): what a catalog server mints
    scoped credentials from."""

    def __init__(self, log_path: str) -> None:
        import json
        import subprocess
        import sys
        from pathlib import Path

        import boto3

        from tests.servers.gcs import wait_until_answering

        port = _free_port()
        self._log = open(log_path, "wb")
        script = Path(__file__).with_name("moto_scoped.py")
        self.process = subprocess.Popen(
            [sys.executable, str(script), "-H", "127.0.0.1", "-p", str(port)], stdout=self._log, stderr=subprocess.STDOUT
        )
        self.endpoint, self.bucket = f"http://127.0.0.1:{port}", "mor-iam"
        try:  # up once it answers; moto's start-up prints nothing to wait on
            wait_until_answering(f"{self.endpoint}/moto-api/", self.process, Path(log_path), f"moto's server ({INSTALL_HINT})")
        except RuntimeError:
            self.stop()
            raise
        setup = {"endpoint_url": self.endpoint, "region_name": REGION, "aws_access_key_id": "setup", "aws_secret_access_key": "setup"}
        boto3.client("s3", **setup).create_bucket(Bucket=self.bucket)
        iam = boto3.client("iam", **setup)
        allow_all = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}
        iam.create_user(UserName="admin")
        iam.put_user_policy(UserName="admin", PolicyName="everything", PolicyDocument=json.dumps(allow_all))
        key = iam.create_access_key(UserName="admin")["AccessKey"]
        self.admin_key, self.admin_secret = key["AccessKeyId"], key["SecretAccessKey"]
        trust = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"AWS": "*"}, "Action": "sts:AssumeRole"}]}
        role = iam.create_role(RoleName="mor-tables", AssumeRolePolicyDocument=json.dumps(trust))["Role"]
        all_s3 = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}
        iam.put_role_policy(RoleName="mor-tables", PolicyName="s3", PolicyDocument=json.dumps(all_s3))
        self.role_arn: str = role["Arn"]
        start_checking = urllib.request.Request(  # from now on every request is authenticated and authorized
            f"{self.endpoint}/moto-api/reset-auth", data=b"0", method="POST", headers={"Content-Type": "text/plain"}
        )
        urllib.request.urlopen(start_checking, timeout=30).read()

    @property
    def admin_properties(self) -> dict[str, str]:
        keys = {"s3.access-key-id": self.admin_key, "s3.secret-access-key": self.admin_secret}
        return {"s3.endpoint": self.endpoint, **keys, "s3.region": REGION}

    def fresh_prefix(self) -> str:
        return f"s3://{self.bucket}/{uuid.uuid4().hex}"

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)
        self._log.close()


@pytest.fixture(scope="session")
def iam_s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[IamS3Server]:
    try:
        server = IamS3Server(str(tmp_path_factory.mktemp("moto-iam") / "moto.log"))
    except (RuntimeError, ImportError) as e:
        pytest.fail(str(e), pytrace=False)
    try:
        yield server
    finally:
        server.stop()
