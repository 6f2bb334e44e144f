"""A throwaway Spark standalone cluster for the tests: one master and two workers, each its own
JVM started with pyspark's launcher (`bin/spark-class` of the pip package), on 127.0.0.1 and
free ports only, Java 17 from /usr/lib/jvm, every file (logs, worker and scratch folders) in one
temporary directory. Nothing is shared with the driver but the file system and loopback: a
test that passes here does not lean on the driver's process state.

The executors the workers launch run this interpreter (`PYSPARK_PYTHON`, the checkout's
virtualenv, where mor is installed). Readiness is an event, not a delay: the master's JSON
status page (`http://127.0.0.1:<webui>/json/`) listing every worker ALIVE. Each daemon runs in
its own process group, so `stop()` ends the launcher shell and the JVM it became together.

`start_cluster()` returns a running `SparkCluster` (or raises RuntimeError with the daemons'
log tails); `spark_cluster` is a session-scoped pytest fixture around it that FAILS, saying what
is wrong, where the cluster cannot start.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

LOOPBACK = "127.0.0.1"
STARTUP_TIMEOUT = 180.0  # seconds: JVM start-up on a busy 2-core machine
POLL_INTERVAL = 0.25  # seconds between readiness probes, never a wait for readiness itself
INSTALL_HINT = 'pip install "pyspark>=4.1" (the mor[spark] extra) and a Java 17 JDK under /usr/lib/jvm'


def free_port() -> int:
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


def java_17_home() -> str:
    """JAVA_HOME for Spark 4 (Java 17 or 21): the environment's, else a JDK 17 under /usr/lib/jvm
    (a newer JDK may be first on the PATH)."""
    if os.environ.get("JAVA_HOME"):
        return os.environ["JAVA_HOME"]
    for candidate in sorted(Path("/usr/lib/jvm").glob("*17*")):
        if (candidate / "bin" / "java").exists():
            return str(candidate)
    raise RuntimeError(f"no Java 17 under /usr/lib/jvm and JAVA_HOME is not set: {INSTALL_HINT}")


def spark_class() -> Path:
    try:
        import pyspark
    except ImportError as e:
        raise RuntimeError(f"pyspark is missing ({e}): {INSTALL_HINT}") from e
    launcher = Path(pyspark.__file__).parent / "bin" / "spark-class"
    if not launcher.is_file():
        raise RuntimeError(f"pyspark's launcher {launcher} is missing: {INSTALL_HINT}")
    return launcher


class SparkCluster:
    """A master and `workers` workers of `cores` cores and `memory` each; `url` is the master's
    spark:// URL for `SparkSession.builder.master(...)`."""

    def __init__(self, workers: int = 2, cores: int = 1, memory: str = "1g") -> None:
        self.workers, self.cores, self.memory = workers, cores, memory
        self.root = Path(tempfile.mkdtemp(prefix="mor-spark-cluster-"))
        self.port, self.webui_port = free_port(), free_port()
        self.url = f"spark://{LOOPBACK}:{self.port}"
        self.status_url = f"http://{LOOPBACK}:{self.webui_port}/json/"
        self.processes: list[tuple[str, subprocess.Popen[bytes]]] = []
        self._logs: list[object] = []

    # -- process control --------------------------------------------------------------------
    def environment(self, name: str) -> dict[str, str]:
        """A daemon's environment: loopback only, its own scratch folders, no Spark config
        from the machine (an empty SPARK_CONF_DIR), executors on this interpreter."""
        conf = self.root / "conf"
        conf.mkdir(exist_ok=True)
        scratch = self.root / name
        env = {
            **os.environ,
            "JAVA_HOME": java_17_home(),
            "SPARK_LOCAL_IP": LOOPBACK,
            "SPARK_MASTER_HOST": LOOPBACK,
            "SPARK_CONF_DIR": str(conf),
            "SPARK_LOG_DIR": str(scratch / "logs"),
            "SPARK_WORKER_DIR": str(scratch / "work"),
            "SPARK_LOCAL_DIRS": str(scratch / "local"),
            "SPARK_DAEMON_MEMORY": "512m",
            "PYSPARK_PYTHON": sys.executable,
        }
        for key in ("SPARK_HOME", "SPARK_MASTER", "PYSPARK_DRIVER_PYTHON"):
            env.pop(key, None)  # spark-class finds its own home; no inherited master
        for folder in ("logs", "work", "local"):
            (scratch / folder).mkdir(parents=True, exist_ok=True)
        return env

    def _spawn(self, name: str, *args: str) -> None:
        log = open(self.root / f"{name}.log", "wb")
        self._logs.append(log)
        process = subprocess.Popen(
            [str(spark_class()), *args],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            env=self.environment(name), cwd=self.root,
            start_new_session=True,  # its own process group: stop() ends the shell and its JVM
        )  # fmt: skip
        self.processes.append((name, process))

    def start(self) -> None:
        self._spawn(
            "master", "org.apache.spark.deploy.master.Master",
            "--host", LOOPBACK, "--port", str(self.port), "--webui-port", str(self.webui_port),
        )  # fmt: skip
        for i in range(self.workers):
            self._spawn(
                f"worker-{i}", "org.apache.spark.deploy.worker.Worker", self.url,
                "--host", LOOPBACK, "--cores", str(self.cores), "--memory", self.memory,
                "--webui-port", str(free_port()), "--work-dir", str(self.root / f"worker-{i}" / "work"),
            )  # fmt: skip
        self.wait_until_ready()

    def status(self) -> dict[str, object] | None:
        """The master's JSON status page (workers, active and completed applications), or None
        while it does not answer."""
        return _json_page(self.status_url)

    def worker_statuses(self) -> list[dict[str, object]]:
        """Each worker's JSON status page (its running and finished executors, by application)."""
        workers = (self.status() or {}).get("workers") or []
        pages = [_json_page(f"{w['webuiaddress']}/json/") for w in workers if isinstance(w, dict)]
        return [page for page in pages if page is not None]

    def alive_workers(self) -> int:
        status = self.status() or {}
        workers = status.get("workers") or []
        return sum(1 for w in workers if isinstance(w, dict) and w.get("state") == "ALIVE")

    def wait_until_ready(self, timeout: float = STARTUP_TIMEOUT) -> None:
        """Return once the master lists every worker ALIVE; raise if a daemon exits or the
        deadline passes (the deadline only bounds a hang, it is not how readiness is known)."""
        deadline = time.monotonic() + timeout
        while self.alive_workers() < self.workers:
            for name, process in self.processes:
                if process.poll() is not None:
                    raise RuntimeError(f"Spark {name} exited ({process.returncode}) while starting{self.log_tails()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"the Spark cluster did not list {self.workers} ALIVE workers in {timeout:.0f}s{self.log_tails()}")
            time.sleep(POLL_INTERVAL)

    def log_tails(self, chars: int = 3000) -> str:
        parts = []
        for name, _ in self.processes:
            try:
                parts.append(f"\n--- {name} log ---\n" + (self.root / f"{name}.log").read_text(errors="replace")[-chars:])
            except OSError:
                pass
        return "".join(parts)

    def stop(self) -> None:
        """End every daemon (workers first, so they do not try to reconnect), its whole process
        group, then remove the temporary directory."""
        for _, process in reversed(self.processes):
            _signal_group(process, signal.SIGTERM)
        for _, process in reversed(self.processes):
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                _signal_group(process, signal.SIGKILL)
                process.wait(timeout=30)
            _signal_group(process, signal.SIGKILL)  # executors or launcher leftovers in the group
        self.processes.clear()
        for log in self._logs:
            log.close()  # type: ignore[attr-defined]
        self._logs.clear()
        shutil.rmtree(self.root, ignore_errors=True)


def _json_page(url: str) -> dict[str, object] | None:
    try:
        with urllib.request.urlopen(url, timeout=5) as answer:
            return json.loads(answer.read())
    except (OSError, ValueError):
        return None


def _signal_group(process: subprocess.Popen[bytes], sig: int) -> None:
    try:
        os.killpg(process.pid, sig)  # start_new_session: the group id is the leader's pid
    except ProcessLookupError:
        pass


def start_cluster(workers: int = 2, cores: int = 1, memory: str = "1g") -> SparkCluster:
    """A running cluster, or RuntimeError saying what is wrong (with the daemons' logs); nothing
    is left running after a failed start."""
    cluster = SparkCluster(workers, cores, memory)
    try:
        cluster.start()
    except BaseException:
        cluster.stop()
        raise
    return cluster


@pytest.fixture(scope="session")
def spark_cluster() -> Iterator[SparkCluster]:
    try:
        cluster = start_cluster()
    except RuntimeError as e:
        pytest.fail(str(e), pytrace=False)
    try:
        yield cluster
    finally:
        cluster.stop()
