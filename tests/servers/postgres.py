"""A throwaway PostgreSQL server for the tests: `initdb` + `pg_ctl` from the Debian `postgresql`
package, in a temporary directory, listening on 127.0.0.1 on a free port (unix socket in the
temporary directory too), trust authentication, fsync off. initdb refuses to run as root, so
as root the server runs as the `postgres` system user (`runuser`), owning the directory.

`postgres_server` is a session-scoped pytest fixture (import `postgres_server_fixture` into a
conftest to use it); `fresh_database()` gives each test its own
database. Where the server cannot start the fixture FAILS, saying what is missing.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

USER = "mor"  # the database superuser initdb creates
INSTALL_HINT = "apt-get install postgresql (Debian's package; .ci/run installs it)"


def find_bin_dir() -> Path:
    """The folder of initdb, pg_ctl and postgres: on PATH, else the newest /usr/lib/postgresql/*/bin."""
    on_path = shutil.which("initdb")
    if on_path and shutil.which("pg_ctl"):
        return Path(os.path.realpath(on_path)).parent
    candidates = [Path(d) for d in glob.glob("/usr/lib/postgresql/*/bin") if (Path(d) / "initdb").is_file()]
    candidates.sort(key=lambda d: int(d.parent.name) if d.parent.name.isdigit() else 0)
    if not candidates:
        raise RuntimeError(f"PostgreSQL not found (no initdb on PATH or in /usr/lib/postgresql/*/bin): {INSTALL_HINT}")
    return candidates[-1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PostgresServer:
    def __init__(self) -> None:
        self.bin = find_bin_dir()
        self.as_root = os.geteuid() == 0
        if self.as_root:
            try:
                pwd.getpwnam("postgres")
            except KeyError:
                raise RuntimeError(
                    f"running as root and there is no 'postgres' user to run the test server as (initdb refuses root): {INSTALL_HINT}"
                ) from None
            if not shutil.which("runuser"):
                raise RuntimeError("running as root and runuser (util-linux) is missing: initdb refuses root")
        # Not under pytest's tmp_path: its parents are private to root, the server runs as postgres.
        self.root = Path(tempfile.mkdtemp(prefix="mor-pg-"))
        self.data = self.root / "data"
        self.sockets = self.root / "sockets"
        self.log = self.root / "server.log"
        self.sockets.mkdir()
        if self.as_root:
            entry = pwd.getpwnam("postgres")
            for path in (self.root, self.sockets):
                os.chown(path, entry.pw_uid, entry.pw_gid)
            os.chmod(self.root, 0o700)
        self.host = "127.0.0.1"
        self.port = 0
        self.running = False

    # -- process control --------------------------------------------------------------------
    def _run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        command = [str(self.bin / args[0]), *args[1:]]
        if self.as_root:
            command = ["runuser", "-u", "postgres", "--", *command]
        env = {**os.environ, "LC_ALL": "C", "LANG": "C"}
        result = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env, cwd=self.root)
        if result.returncode != 0:
            raise RuntimeError(
                f"{' '.join(command)} failed ({result.returncode}):\n{result.stdout[-2000:]}{result.stderr[-2000:]}{self._log_tail()}"
            )
        return result

    def _log_tail(self) -> str:
        try:
            return "\nserver log:\n" + self.log.read_text()[-3000:]
        except OSError:
            return ""

    def init(self) -> None:
        self._run("initdb", "-D", str(self.data), "-U", USER, "--auth=trust", "-E", "UTF8", "--no-sync", "--no-instructions")

    def start(self) -> None:
        """Start (again) on a fresh free port the first time, the same port after a stop."""
        if not self.port:
            self.port = free_port()
        options = " ".join(
            [
                f"-c listen_addresses={self.host}",
                f"-p {self.port}",
                f"-c unix_socket_directories={self.sockets}",
                "-c fsync=off -c synchronous_commit=off -c full_page_writes=off",
                "-c max_connections=300",
                "-c shared_buffers=32MB",
            ]
        )
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-o", options, "-w", "-t", "60", "start")
        self.running = True

    def stop(self) -> None:
        if self.running:
            self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")
            self.running = False

    def cleanup(self) -> None:
        try:
            self.stop()
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

    # -- databases ---------------------------------------------------------------------------
    def uri(self, database: str = "postgres", **query: str) -> str:
        tail = "&".join(f"{k}={v}" for k, v in query.items())
        return f"postgresql+psycopg://{USER}@{self.host}:{self.port}/{database}" + (f"?{tail}" if tail else "")

    def connect(self, database: str = "postgres"):  # -> psycopg.Connection, autocommit
        import psycopg

        return psycopg.connect(host=self.host, port=self.port, user=USER, dbname=database, autocommit=True, connect_timeout=10)

    def create_database(self, name: str | None = None) -> str:
        name = name or f"t_{uuid.uuid4().hex[:12]}"
        with self.connect() as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return name


def start_server() -> PostgresServer:
    """A running server, or RuntimeError saying what is missing (with the server's log)."""
    try:
        import psycopg  # noqa: F401
    except ImportError as e:
        raise RuntimeError(f"the PostgreSQL driver is missing ({e}): pip install 'psycopg[binary]>=3.1'") from e
    server = PostgresServer()
    try:
        server.init()
        server.start()
        deadline = time.monotonic() + 30
        while True:  # pg_ctl -w waited for the socket; make sure TCP answers too
            try:
                server.connect().close()
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
    except BaseException:
        server.cleanup()
        raise
    return server


@pytest.fixture(scope="session", name="postgres_server")
def postgres_server_fixture() -> Iterator[PostgresServer]:
    """A PostgreSQL server for the whole session; fails (never skips) when it cannot start."""
    try:
        server = start_server()
    except (RuntimeError, OSError, subprocess.SubprocessError) as e:
        pytest.fail(f"cannot start the PostgreSQL test server: {e}", pytrace=False)
    try:
        yield server
    finally:
        server.cleanup()
