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
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from oracle_support import ORACLE_DIR, ORACLE_VENV, DriverProcess, ensure_oracle

DRIVER = Path(__file__).with_name("oracle_sql_driver.py")
# Iceberg's shaded HTTP client, which the oracle's runtime jar lacks (build_rest_client_jar.py).
HTTPCLIENT_JAR = ORACLE_VENV / "iceberg-oracle" / "iceberg-shaded-httpclient5.jar"
STATEMENT_TIMEOUT_S = 300


class JavaSql:
    def __init__(self, driver: DriverProcess, workdir: Path):
        self.driver, self.workdir = driver, workdir
        self.count = 0

    def sql(self, statement: str) -> None:
        self.driver.ask({"sql": statement, "out": None}, STATEMENT_TIMEOUT_S)

    def rows(self, query: str) -> pa.Table:
        """The query's rows, in Spark's order."""
        self.count += 1
        out = self.workdir / f"rows-{self.count}.parquet"
        self.driver.ask({"sql": query, "out": str(out)}, STATEMENT_TIMEOUT_S)
        return pq.read_table(out)


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
    driver = DriverProcess(DRIVER, str(workdir / "conf.json"))
    try:
        yield JavaSql(driver, workdir)
    finally:
        driver.close()
