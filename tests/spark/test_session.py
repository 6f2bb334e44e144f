"""`mor.spark.session()`: a ready session in one call. It must start the SparkContext to set the
workers' Python and the jars, so it runs in a process of its own (the suite's session is
already running here), with no PYSPARK_PYTHON and a PATH whose `python3` has no mor: the format
"mor" read only works if the session points the workers at this interpreter."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from mor.spark.sessions import session_settings

SCRIPT = """
import json, sys
import pyarrow as pa
from pyiceberg.expressions import LessThan
import mor, mor.spark

spark = mor.spark.session("mor-session-test", master="local[1]", conf={"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "1"})
spark.sparkContext.setLogLevel("ERROR")
table = mor.load_catalog(sys.argv[1], create=True).create_table("db.t", pa.schema([("id", pa.int64())]))
table.append(pa.table({"id": list(range(10))}))
table.delete(LessThan("id", 3))
print(json.dumps({
    "python": spark.conf.get("spark.pyspark.python"),
    "zone": spark.conf.get("spark.sql.session.timeZone"),
    "jars": spark.conf.get("spark.jars"),
    "shuffle": spark.conf.get("spark.sql.shuffle.partitions"),
    "source": spark.read.format("mor").option("warehouse", sys.argv[1]).load("db.t").count(),
    "jvm": mor.spark.read_table(spark, table, path="jvm").count(),
}))
spark.stop()
"""


def test_session_builds_a_ready_session_in_one_call(tmp_path: Path) -> None:
    warehouse = tmp_path / "warehouse"
    env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")}
    venv_bin = str(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p and Path(p).resolve() != Path(venv_bin).resolve())
    env["PATH"] = env["PATH"] or "/usr/bin:/bin"
    if not env.get("JAVA_HOME"):  # Spark 4 wants Java 17 or 21 (as conftest.py picks it)
        for jdk in sorted(Path("/usr/lib/jvm").glob("*17*"))[:1]:
            if (jdk / "bin" / "java").exists():
                env["JAVA_HOME"] = str(jdk)
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(warehouse)], capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["python"] == sys.executable and got["zone"] == "UTC" and got["shuffle"] == "1"
    assert "mor-deletes.jar" in got["jars"]
    assert got["source"] == 7 and got["jvm"] == 7  # the Python workers run mor; the jar filters the native scan


def test_session_settings_give_way_to_the_callers() -> None:
    jar = Path(__file__)  # any file that exists
    settings = session_settings({}, "UTC", None, [jar], "spark.sql.catalog.mor_deletes", "mor.jvm.DeleteFunctions")
    assert settings["spark.sql.session.timeZone"] == "UTC" and settings["spark.jars"] == str(jar)
    assert settings["spark.sql.catalog.mor_deletes"] == "mor.jvm.DeleteFunctions"
    assert settings["spark.pyspark.python"] in (os.environ.get("PYSPARK_PYTHON"), sys.executable)
    mine = session_settings(
        {"spark.sql.session.timeZone": "Europe/Berlin", "spark.jars": "/x/other.jar", "spark.pyspark.python": "/opt/py"},
        "UTC", "/ignored/python", [jar], "spark.sql.catalog.mor_deletes", "mor.jvm.DeleteFunctions",
    )  # fmt: skip
    assert mine["spark.sql.session.timeZone"] == "Europe/Berlin" and mine["spark.pyspark.python"] == "/opt/py"
    assert mine["spark.jars"] == f"{jar},/x/other.jar"
    assert session_settings({}, "Asia/Tokyo", "/my/python", [], "k", "c")["spark.pyspark.python"] == "/my/python"


def test_format_mor_is_registered_once_per_session(spark: object, monkeypatch: object) -> None:
    """Reads and DML call `register` each time (a session of its own may lack the format); only
    the first call per session registers, so Spark does not log that the source replaced a
    previously registered one at every call (issue 54 item 4)."""
    import pytest
    from pyspark.sql.datasource import DataSourceRegistration

    import mor.spark

    assert isinstance(monkeypatch, pytest.MonkeyPatch)
    calls: list[object] = []
    original = DataSourceRegistration.register
    monkeypatch.setattr(DataSourceRegistration, "register", lambda self, cls: (calls.append(cls), original(self, cls))[1])
    for _ in range(3):
        mor.spark.register(spark)  # type: ignore[arg-type]
    assert calls == []  # the suite's session has it already
    other = spark.newSession()  # type: ignore[attr-defined]
    for _ in range(3):
        mor.spark.register(other)
    assert len(calls) == 1
