"""Runs under the iceberg-oracle venv (pyspark 3.5 + Iceberg Java): one Spark session whose
catalog `rc` is an Iceberg REST catalog, kept for as many SQL statements as the caller sends,
so a test module starts one JVM however often it alternates between Java and mor.

usage: python oracle_sql_driver.py <oracle dir> <conf.json>
conf.json: {"spark": Spark settings added to the oracle's session (the `rc` catalog's among
them), "jars": jars added to the oracle's}.
Protocol, one JSON object a line: the caller writes {"sql": statement, "out": path or null};
the driver answers on stdout with a line starting REPLY_MARK: {"ok": true} once the rows (if
`out` is given) are written there as Parquet, or {"error": message}. READY_MARK is printed once
the session has started. Other stdout lines (the JVM may print) are to be ignored.
"""

import json
import sys
import traceback

import pyarrow.parquet as pq

READY_MARK = "ORACLE-READY"  # oracle_support.DriverProcess's
REPLY_MARK = "ORACLE-REPLY "

sys.path.insert(0, sys.argv[1])
import oracle  # noqa: E402

conf = json.load(open(sys.argv[2]))
jars = {"spark.jars": ",".join([*oracle.oracle_jars(), *conf["jars"]])}
spark = oracle.spark_session(app="iceberg-oracle-rest", extra_conf={**conf["spark"], **jars})
print(READY_MARK, flush=True)
for line in sys.stdin:
    request = json.loads(line)
    try:
        frame = spark.sql(request["sql"])
        if request.get("out"):
            pq.write_table(oracle.collect_arrow(frame), request["out"])
        reply = {"ok": True}
    except Exception as e:  # the caller raises it, with Java's message
        reply = {"error": f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=3)}"}
    print(REPLY_MARK + json.dumps(reply), flush=True)
spark.stop()
