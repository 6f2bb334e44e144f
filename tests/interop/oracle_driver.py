"""Runs under the iceberg-oracle venv (pyspark 3.5 + Iceberg Java): reads the requested table
snapshots with Iceberg Java and writes each result as Parquet. One JVM for every read of a test
process: it serves request files until its input ends.

usage: python oracle_driver.py <oracle dir>
Protocol (oracle_support.DriverProcess), one JSON object a line: the caller writes {"requests":
path of a requests.json}; the driver answers with a line starting REPLY_MARK, {"ok": true} once
every result is written, or {"error": message}. READY_MARK is printed once the session started.
requests.json: [{"metadata": path, "snapshot_id": int, "out": path.parquet}, ...]; a request may also
hold "columns": [names] (metadata columns such as _row_id and _last_updated_sequence_number
too), else every column of the snapshot's schema is read; and "sort": false, to get the rows in
the order Spark returns them (sorting them all costs about half of each read); or
"metadata_table": a name, for that metadata table of the table (snapshot_id ignored).
"""

import json
import sys
import traceback

import pyarrow.parquet as pq

READY_MARK = "ORACLE-READY"
REPLY_MARK = "ORACLE-REPLY "

sys.path.insert(0, sys.argv[1])
import oracle  # noqa: E402


def read(spark, request):
    if request.get("metadata_table"):  # e.g. "files": Iceberg Java's metadata table of that name
        return spark.read.format("iceberg").load(request["metadata"] + "#" + request["metadata_table"])
    if request.get("sort", True):
        return oracle.read_rows(spark, request["metadata"], request["snapshot_id"], columns=request.get("columns"))
    df = spark.read.format("iceberg").option("snapshot-id", str(request["snapshot_id"])).load(request["metadata"])
    return df.select(*(request.get("columns") or df.columns))


spark = oracle.spark_session()
print(READY_MARK, flush=True)
for line in sys.stdin:
    try:
        for request in json.load(open(json.loads(line)["requests"])):
            pq.write_table(oracle.collect_arrow(read(spark, request)), request["out"])
        reply = {"ok": True}
    except Exception as e:  # the caller raises it, with Java's message
        reply = {"error": f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=3)}"}
    print(REPLY_MARK + json.dumps(reply), flush=True)
spark.stop()
