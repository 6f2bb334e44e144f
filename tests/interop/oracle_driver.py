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
"metadata_table": a name, for that metadata table of the table (snapshot_id ignored); or
"generic": true, to read through Iceberg core's generic reader (`IcebergGenerics`, no Spark:
types Spark lacks, such as time, timestamp_ns and unknown) into JSON lines (`plain` below).
"""

import json
import sys
import traceback
from decimal import Decimal

import pyarrow.parquet as pq

READY_MARK = "ORACLE-READY"
REPLY_MARK = "ORACLE-REPLY "

sys.path.insert(0, sys.argv[1])
import oracle  # noqa: E402


def plain(jvm, v, iceberg_type):
    """A value of a generic record as JSON: epoch days, microseconds (nanoseconds for the
    timestamp_ns types), hex bytes, maps as [key, value] pairs, structs as objects."""
    from py4j.java_collections import JavaList, JavaMap

    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, Decimal):  # py4j converts BigDecimal
        return str(v)
    if isinstance(v, (bytes, bytearray)):  # fixed is a byte[] (binary a ByteBuffer)
        return bytes(v).hex()
    type_id = iceberg_type.typeId().toString()
    if isinstance(v, JavaMap):
        key_type, value_type = iceberg_type.keyType(), iceberg_type.valueType()
        return [[plain(jvm, k, key_type), plain(jvm, v[k], value_type)] for k in v.keySet()]
    if isinstance(v, JavaList):
        return [plain(jvm, x, iceberg_type.elementType()) for x in v]
    name = v.getClass().getName()
    if name == "java.time.LocalDate":
        return v.toEpochDay()
    if name == "java.time.LocalTime":
        return v.toNanoOfDay() // 1000
    if name in ("java.time.LocalDateTime", "java.time.OffsetDateTime"):
        seconds = v.toEpochSecond(jvm.java.time.ZoneOffset.UTC) if name == "java.time.LocalDateTime" else v.toEpochSecond()
        if type_id == "TIMESTAMP_NANO":
            return seconds * 1_000_000_000 + v.getNano()
        return seconds * 1_000_000 + v.getNano() // 1000
    if name == "java.util.UUID":
        return v.toString()
    if "ByteBuffer" in name:
        return bytes(jvm.org.apache.iceberg.util.ByteBuffers.toByteArray(v)).hex()
    if name.endswith("Record"):
        return {f.name(): plain(jvm, v.getField(f.name()), f.type()) for f in v.struct().fields()}
    raise TypeError(name)


def write_generic_rows(spark, request):
    jvm = spark._jvm
    table = oracle.java_table(spark, request["metadata"])
    metadata = jvm.org.apache.iceberg.MetadataColumns
    records = jvm.org.apache.iceberg.data.IcebergGenerics.read(table).useSnapshot(request["snapshot_id"]).build()
    with open(request["out"], "w") as out:
        it = records.iterator()
        while it.hasNext():
            record = it.next()
            fields = [f for f in record.struct().fields() if not metadata.isMetadataColumn(f.name())]  # _pos, read for deletes
            out.write(json.dumps({f.name(): plain(jvm, record.getField(f.name()), f.type()) for f in fields}) + "\n")
    records.close()


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
            if request.get("generic"):
                write_generic_rows(spark, request)
            else:
                pq.write_table(oracle.collect_arrow(read(spark, request)), request["out"])
        reply = {"ok": True}
    except Exception as e:  # the caller raises it, with Java's message
        reply = {"error": f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=3)}"}
    print(REPLY_MARK + json.dumps(reply), flush=True)
spark.stop()
