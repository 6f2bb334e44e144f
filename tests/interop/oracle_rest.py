"""Iceberg Java (Spark SQL) as a client of an Iceberg REST catalog, for tests that alternate
with mor on the same tables: one long-lived Spark session in the oracle's venv
(oracle_sql_driver.py), catalog `rc` on the server, statements sent one at a time.

    with java_sql(url, workdir, credential="id:secret", **{"oauth2-server-uri": url + "/v1/oauth/tokens"}) as java:
        java.sql("CREATE TABLE rc.db.t (id bigint) USING iceberg")
        rows = java.rows("SELECT * FROM rc.db.t")   # a pyarrow.Table, in Spark's order

Start-up and every reply are awaited as lines the driver prints; the timeouts are safety nets.
Spark's table cache is off, so every statement sees the table as the catalog has it now.
"""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from oracle_support import ORACLE_DIR, ORACLE_VENV, ensure_oracle

DRIVER = Path(__file__).with_name("oracle_sql_driver.py")
READY_MARK = "ORACLE-SQL-READY"  # as oracle_sql_driver.py prints them
REPLY_MARK = "ORACLE-SQL-REPLY "
# Iceberg's shaded HTTP client, which the oracle's runtime jar lacks (build_rest_client_jar.py).
HTTPCLIENT_JAR = ORACLE_VENV / "iceberg-oracle" / "iceberg-shaded-httpclient5.jar"
START_TIMEOUT_S = 300
STATEMENT_TIMEOUT_S = 300


class JavaSql:
    def __init__(self, process: subprocess.Popen[str], workdir: Path, log_path: Path):
        self.process, self.workdir, self.log_path = process, workdir, log_path
        self.count = 0

    def sql(self, statement: str) -> None:
        self._send(statement, None)

    def rows(self, query: str) -> pa.Table:
        """The query's rows, in Spark's order."""
        self.count += 1
        out = self.workdir / f"rows-{self.count}.parquet"
        self._send(query, out)
        return pq.read_table(out)

    def _send(self, statement: str, out: Path | None) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({"sql": statement, "out": None if out is None else str(out)}) + "\n")
        self.process.stdin.flush()
        reply = json.loads(self._line(REPLY_MARK, STATEMENT_TIMEOUT_S))
        if "error" in reply:
            raise RuntimeError(f"Iceberg Java failed on {statement!r}:\n{reply['error']}")

    def _line(self, mark: str, timeout: float) -> str:
        """What follows `mark` on the next stdout line that starts with it."""
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
        if self.process.stdin is not None:
            self.process.stdin.close()  # the driver stops its session at the end of its input
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()


@contextmanager
def java_sql(url: str, workdir: Path, **catalog: str) -> Iterator[JavaSql]:
    """A Spark session with catalog `rc` = the REST catalog at `url`; `catalog`: more of its
    settings (token=..., or credential="id:secret" with oauth2-server-uri=...)."""
    python = ensure_oracle()
    if not HTTPCLIENT_JAR.exists():
        build = Path(__file__).with_name("build_rest_client_jar.py")
        done = subprocess.run([str(python), str(build), str(ORACLE_DIR), str(HTTPCLIENT_JAR)], capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"cannot build {HTTPCLIENT_JAR.name}:\n{done.stdout}{done.stderr}")
    prefix = "spark.sql.catalog.rc"
    conf = {prefix: "org.apache.iceberg.spark.SparkCatalog", f"{prefix}.type": "rest", f"{prefix}.uri": url}
    conf[f"{prefix}.cache-enabled"] = "false"
    conf.update({f"{prefix}.{key}": value for key, value in catalog.items()})
    (workdir / "conf.json").write_text(json.dumps({"spark": conf, "jars": [str(HTTPCLIENT_JAR)]}))
    env = {**os.environ, "ORACLE_VENV": str(ORACLE_VENV), "PYSPARK_PYTHON": str(python)}
    log_fd, log_name = tempfile.mkstemp(prefix="iceberg-java-", suffix=".log")
    with os.fdopen(log_fd, "w") as log:
        process = subprocess.Popen(
            [str(python), str(DRIVER), str(ORACLE_DIR), str(workdir / "conf.json")],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True, env=env,
        )  # fmt: skip
    java = JavaSql(process, workdir, Path(log_name))
    try:
        java._line(READY_MARK, START_TIMEOUT_S)
        yield java
    finally:
        java.close()
        java.log_path.unlink(missing_ok=True)
