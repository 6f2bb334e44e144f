"""Reading tables with the real Iceberg Java reader (../shared/tools/iceberg-oracle).

Reads go to one long-lived driver (oracle_driver.py) for the whole test process: starting Spark
with Iceberg costs 15-25 s, once rather than once per test module. Drivers speak one JSON object
a line (`DriverProcess`); oracle_rest.py runs its SQL driver the same way.
"""

from __future__ import annotations

import atexit
import json
import os
import selectors
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[2]
ORACLE_DIR = ROOT.parent / "shared" / "tools" / "iceberg-oracle"
ORACLE_VENV = Path(os.environ.get("MOR_ORACLE_VENV", ROOT / ".oracle-venv"))


def ensure_oracle() -> Path:
    """Install the oracle's environment (idempotent, ~40 s the first time); its python."""
    if not ORACLE_DIR.is_dir():
        raise RuntimeError(f"the Iceberg Java oracle is missing at {ORACLE_DIR}")
    env = {**os.environ, "ORACLE_VENV": str(ORACLE_VENV)}
    subprocess.run(["bash", str(ORACLE_DIR / "setup.sh")], check=True, env=env, capture_output=True)
    return ORACLE_VENV / "bin" / "python"


def java_metadata_tables(requests: Sequence[tuple[str, str]], workdir: Path) -> list[pa.Table]:
    """Iceberg Java's metadata table of each (metadata location, name), e.g. "files"."""
    return _run_oracle([{"metadata": m, "metadata_table": name} for m, name in requests], workdir)


def read_with_iceberg_java(
    requests: Sequence[tuple[str, int] | tuple[str, int, Sequence[str] | None]], workdir: Path, sort: bool = True
) -> list[pa.Table]:
    """Rows of each (metadata location, snapshot id), as Iceberg Java reads them.

    A request may name the columns to read as a third item, metadata columns included: on a v3
    table `("…/v9.metadata.json", snapshot_id, ["id", "_row_id", "_last_updated_sequence_number"])`
    gives each row's lineage as Iceberg Java assigns it (NULL in snapshots from before v3).
    Without it (or with None) every column of the snapshot's schema is read. The rows come
    sorted by every column; `sort=False` leaves them in Spark's order, which halves the cost of
    each read, for callers that compare rows as multisets."""
    payload = []
    for metadata, snapshot_id, *rest in requests:
        request: dict[str, Any] = {"metadata": metadata, "snapshot_id": snapshot_id}
        if rest and rest[0] is not None:
            request["columns"] = list(rest[0])
        if not sort:
            request["sort"] = False
        payload.append(request)
    return _run_oracle(payload, workdir)


READY_MARK = "ORACLE-READY"  # as the drivers print them
REPLY_MARK = "ORACLE-REPLY "
START_TIMEOUT_S = 300  # safety nets: start-up and replies are awaited as lines, not delays
READ_TIMEOUT_S = 900


class DriverProcess:
    """A driver script in the oracle's venv, kept running: the caller writes one JSON request a
    line, the driver answers each with a line starting REPLY_MARK ({"ok": ...} or {"error":
    message}); READY_MARK once its session has started. Its stderr goes to a log file."""

    def __init__(self, script: Path, *args: str) -> None:
        python = ensure_oracle()
        env = {**os.environ, "ORACLE_VENV": str(ORACLE_VENV), "PYSPARK_PYTHON": str(python)}
        log_fd, log_name = tempfile.mkstemp(prefix="iceberg-java-", suffix=".log")
        self.log_path = Path(log_name)
        with os.fdopen(log_fd, "w") as log:
            self.process = subprocess.Popen(
                [str(python), str(script), str(ORACLE_DIR), *args],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True, env=env,
            )  # fmt: skip
        try:
            self._line(READY_MARK, START_TIMEOUT_S)
        except BaseException:
            self.close()
            raise

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def ask(self, request: dict[str, Any], timeout: float) -> dict[str, Any]:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        reply: dict[str, Any] = json.loads(self._line(REPLY_MARK, timeout))
        if "error" in reply:
            raise RuntimeError(f"Iceberg Java failed on {request}:\n{reply['error']}")
        return reply

    def _line(self, mark: str, timeout: float) -> str:
        """What follows `mark` on the next stdout line that starts with it (the JVM may print
        other lines)."""
        assert self.process.stdout is not None
        deadline = time.monotonic() + timeout
        with selectors.DefaultSelector() as selector:
            selector.register(self.process.stdout, selectors.EVENT_READ)
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not selector.select(timeout=remaining):
                    raise RuntimeError(f"the Iceberg Java driver said nothing in {timeout} s; its log:\n{self.log()}")
                line = self.process.stdout.readline()
                if not line:
                    raise RuntimeError(f"the Iceberg Java driver exited ({self.process.wait()}); its log:\n{self.log()}")
                if line.startswith(mark):
                    return line[len(mark) :].strip()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-4000:]

    def close(self) -> None:
        if self.process.stdin is not None and not self.process.stdin.closed:
            self.process.stdin.close()  # a driver stops its session at the end of its input
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()
        self.log_path.unlink(missing_ok=True)


_reader: DriverProcess | None = None


def java_generic_rows(requests: Sequence[tuple[str, int]], workdir: Path) -> list[list[dict[str, Any]]]:
    """Rows of each (metadata location, snapshot id) as Iceberg core's generic reader reads them
    (no Spark: types Spark has not, such as time, timestamp_ns and unknown, read too), with
    temporal values in epoch units (days, micros; nanos for the timestamp_ns types), binary as
    hex, decimals as text, maps as [key, value] pairs."""
    payload = [{"metadata": m, "snapshot_id": s, "generic": True} for m, s in requests]
    _ask_oracle(payload, workdir, "json")
    return [[json.loads(line) for line in Path(p["out"]).read_text().splitlines()] for p in payload]


def _run_oracle(payload: list[dict[str, Any]], workdir: Path) -> list[pa.Table]:
    _ask_oracle(payload, workdir, "parquet")
    return [pq.read_table(p["out"]) for p in payload]


def _ask_oracle(payload: list[dict[str, Any]], workdir: Path, suffix: str) -> None:
    """Each request's result written to the file its "out" names (set here)."""
    global _reader
    if _reader is None or not _reader.alive:
        _reader = DriverProcess(Path(__file__).with_name("oracle_driver.py"))
        atexit.register(_reader.close)
    n = len(list(workdir.glob("oracle-requests-*.json")))  # a workdir may serve several calls
    for i, request in enumerate(payload):
        request["out"] = str(workdir / f"oracle-{n}-{i}.{suffix}")
    request_file = workdir / f"oracle-requests-{n}.json"
    request_file.write_text(json.dumps(payload))
    _reader.ask({"requests": str(request_file)}, READ_TIMEOUT_S)
