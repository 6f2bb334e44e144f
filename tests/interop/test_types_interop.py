"""One table with every Iceberg v2 type, read by mor, pyiceberg 0.12 and Iceberg Java alike.

The table (partitioned by identity on a decimal and a uuid, truncate on binary, day of a
timestamptz and bucket of a decimal(38, 10)) goes through appends, DELETE (both modes), UPDATE
(both modes), an UPSERT and a delete by key (an equality delete, which pyiceberg refuses to read).
At every snapshot each reader must give the same rows, compared value by value in one canonical
form (floats by their bits, decimals by their unscaled integers, temporal values in Iceberg's
epoch units).

Iceberg Java reads twice in one JVM: its generic reader (`IcebergGenerics`, Iceberg core's
Parquet readers) reads the table; Spark (Iceberg's Spark readers, identity partition values
taken from the metadata) reads a twin table without the time column, because Spark has no time
type and refuses such a table.
"""

from __future__ import annotations

import datetime as dt
import json
import struct
import uuid
from decimal import Context, Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from oracle_support import java_generic_rows, read_with_iceberg_java
from pyiceberg.schema import Schema
from pyiceberg.table import StaticTable as PyIcebergStaticTable
from pyiceberg.types import (
    BinaryType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IcebergType,
    ListType,
    MapType,
    StructType,
    TimestampType,
    TimestamptzType,
    TimeType,
    UUIDType,
)
from pyiceberg.utils.datetime import date_to_days, datetime_to_micros, time_to_micros

import mor

pytestmark = [pytest.mark.interop, pytest.mark.oracle]

UTC = dt.UTC
NAN, INF = float("nan"), float("inf")
D = Decimal

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        ("b", pa.bool_()),
        ("i", pa.int32()),
        ("l", pa.int64()),
        ("f", pa.float32()),
        ("d", pa.float64()),
        ("dec9", pa.decimal128(9, 2)),
        ("dec18", pa.decimal128(18, 6)),
        ("dec38", pa.decimal128(38, 10)),
        ("s", pa.string()),
        ("u", pa.uuid()),
        ("fx", pa.binary(4)),
        ("bin", pa.binary()),
        ("dt", pa.date32()),
        ("t", pa.time64("us")),
        ("ts", pa.timestamp("us")),
        ("tstz", pa.timestamp("us", tz="UTC")),
        ("st", pa.struct([("dec", pa.decimal128(38, 10)), ("u", pa.uuid()), ("d", pa.date32()), ("f", pa.float64())])),
        ("lst", pa.list_(pa.decimal128(9, 2))),
        ("mp", pa.map_(pa.string(), pa.timestamp("us", tz="UTC"))),
    ]
)
PARTITION_BY = ["dec9", "u", "truncate(2, bin)", "day(tstz)", "bucket(3, dec38)"]

_STAMPS = [dt.datetime(1, 1, 1), dt.datetime(1969, 12, 31, 23, 59, 59, 999999), dt.datetime(9999, 12, 31, 23, 59, 59, 999999),
           dt.datetime(2024, 2, 29, 12), dt.datetime(1970, 1, 1)]  # fmt: skip
_VALUES: dict[str, list[Any]] = {
    "b": [True, False],
    "i": [-(2**31), 2**31 - 1, 0, -1, 7],
    "l": [-(2**63), 2**63 - 1, 0, -1],
    "f": [NAN, -0.0, INF, -INF, 1.5, 3.4028234663852886e38],
    "d": [NAN, -0.0, INF, -INF, 5e-324, -1.7976931348623157e308, 2.5],
    "dec9": [D("-9999999.99"), D("9999999.99"), D("0.00"), D("-0.01"), D("1.50"), D("42.00")],
    "dec18": [D("-999999999999.999999"), D("999999999999.999999"), D("0.000001")],
    "dec38": [D("-9999999999999999999999999999.9999999999"), D("9999999999999999999999999999.9999999999"), D("0E-10"), D("1E-10")],
    "s": ["", "a", "é€😀", "z" * 40, "ab"],
    "u": [uuid.UUID(int=n).bytes for n in (0, 2**128 - 1, 2**127, 0x1234_5678_9ABC_DEF0_0FED_CBA9_8765_4321)],
    "fx": [b"\x00" * 4, b"\xff" * 4, b"abcd"],
    "bin": [b"", b"\x00", b"\xff" * 40, b"ab", b"abc"],
    "dt": [dt.date(1, 1, 1), dt.date(1969, 12, 31), dt.date(1970, 1, 1), dt.date(9999, 12, 31), dt.date(2024, 2, 29)],
    "t": [dt.time(0), dt.time(23, 59, 59, 999999), dt.time(12, 30, 1, 5)],
    "ts": _STAMPS,
    "tstz": [s.replace(tzinfo=UTC) for s in _STAMPS],
}


def make_row(i: int) -> dict[str, Any]:
    """Row i: every column cycles through its extremes; each column is null in some rows."""
    row: dict[str, Any] = {"id": i}
    for k, (name, values) in enumerate(_VALUES.items()):
        row[name] = None if (i + k) % 7 == 3 else values[(i + k) % len(values)]
    row["st"] = None if i % 5 == 4 else {"dec": _VALUES["dec38"][i % 4], "u": _VALUES["u"][(i + 1) % 4],
                                         "d": None if i % 3 == 0 else _VALUES["dt"][i % 5], "f": _VALUES["d"][i % 7]}  # fmt: skip
    row["lst"] = [None, [], [D("1.25"), None, D("-9999999.99")]][i % 3]
    row["mp"] = [None, [], [("k", _VALUES["tstz"][i % 5]), ("n", None)]][i % 3]
    return row


# -- one canonical form for every reader's values ----------------------------------------------------


def canonical(t: IcebergType, v: Any) -> Any:
    """What a value is, whoever read it: Arrow's Python values (mor, pyiceberg, Spark) or the
    JSON of Iceberg Java's generic records (epoch units, hex bytes, uuid strings)."""
    if v is None:
        return None
    if isinstance(t, StructType):
        return {f.name: canonical(f.field_type, v[f.name]) for f in t.fields}
    if isinstance(t, ListType):
        return [canonical(t.element_type, x) for x in v]
    if isinstance(t, MapType):
        pairs = v.items() if isinstance(v, dict) else v
        return sorted(([canonical(t.key_type, k), canonical(t.value_type, x)] for k, x in pairs), key=repr)
    if isinstance(t, FloatType):  # py4j hands a Java float over as its shortest decimal: back to 32 bits
        return struct.unpack("<f", struct.pack("<f", float(v)))[0].hex()
    if isinstance(t, DoubleType):
        return float(v).hex()  # keeps -0.0 apart from 0.0; "nan" for every NaN
    if isinstance(t, DecimalType):
        return int(Decimal(v).scaleb(t.scale, Context(prec=80)))  # the unscaled value, at the type's scale
    if isinstance(t, UUIDType):
        return str(uuid.UUID(bytes=bytes(v)) if isinstance(v, (bytes, bytearray)) else uuid.UUID(str(v)))
    if isinstance(t, (FixedType, BinaryType)):
        return v if isinstance(v, str) else bytes(v).hex()
    if isinstance(t, DateType):
        return v if isinstance(v, int) else date_to_days(v)
    if isinstance(t, TimeType):
        return v if isinstance(v, int) else time_to_micros(v)
    if isinstance(t, (TimestampType, TimestamptzType)):
        return v if isinstance(v, int) else datetime_to_micros(v)
    return v


def canonical_rows(schema: Schema, rows: list[dict[str, Any]]) -> list[str]:
    return sorted(json.dumps({f.name: canonical(f.field_type, r[f.name]) for f in schema.fields}) for r in rows)


def differences(theirs: list[str], ours: list[str]) -> str:
    """The columns that differ, row by row (by id), for a readable failure."""
    a, b = ({r["id"]: r for r in map(json.loads, rows)} for rows in (theirs, ours))
    out = [f"ids only theirs {sorted(a.keys() - b.keys())}, only ours {sorted(b.keys() - a.keys())}"]
    for i in sorted(a.keys() & b.keys()):
        out += [f"id {i} {k}: theirs {a[i][k]!r}, ours {b[i][k]!r}" for k in a[i] if a[i][k] != b[i][k]]
    return "\n".join(out[:20])


# -- Iceberg Java (the test run's one reader JVM, oracle_support) -----------------------------------


def read_with_java(requests: list[tuple[str, str, int]], workdir: Path) -> list[list[dict[str, Any]]]:
    """Rows of each (reader: "generic" | "spark", metadata location, snapshot id)."""
    generic = java_generic_rows([(m, s) for r, m, s in requests if r == "generic"], workdir)
    spark = read_with_iceberg_java([(m, s) for r, m, s in requests if r == "spark"], workdir)
    out = []
    for reader, _, _ in requests:
        out.append(generic.pop(0) if reader == "generic" else spark.pop(0).to_pylist())
    return out


# -- the scenario -----------------------------------------------------------------------------------


def _data(table: mor.Table, rows: list[dict[str, Any]]) -> pa.Table:
    columns = table.arrow_schema().names
    return pa.Table.from_pylist([{k: r.get(k) for k in columns} for r in rows], schema=table.arrow_schema())


def build(table: mor.Table) -> list[int]:
    """The scenario; the snapshot id of each step."""
    table.append(_data(table, [make_row(i) for i in range(14)]))
    table.append(_data(table, [make_row(i) for i in range(14, 24)]))
    table.delete("dec9 < 0")
    table.delete("dt < '1970-01-01'", mode="copy-on-write")
    table.update({"tstz": pa.scalar(dt.datetime(1, 1, 1, tzinfo=UTC), pa.timestamp("us", tz="UTC")),
                  "dec38": pa.scalar(D("-0.0000000001"), pa.decimal128(38, 10)),
                  "st": pa.scalar({"dec": D("1E-10"), "u": uuid.UUID(int=9).bytes, "d": dt.date(1, 1, 1), "f": -0.0},
                                  table.arrow_schema().field("st").type)},
                 where="s starts with 'z' or s = ''")  # fmt: skip
    table.update({"u": pa.scalar(uuid.UUID(int=7).bytes, pa.binary(16)), "dec9": pa.scalar(D("-0.01"), pa.decimal128(9, 2))},
                 where="i > 0", mode="copy-on-write")  # fmt: skip
    table.upsert(_data(table, [make_row(i) for i in (2, 5, 30, 31)]), on=["id"])
    # Equality deletes (pyiceberg 0.12 refuses to read them from here on): keys of a decimal
    # partition source, then of a fixed and a date column together.
    table.delete_rows(_data(table, [{"dec9": D("42.00")}, {"dec9": None}]).select(["dec9"]))
    table.delete_rows(_data(table, [{"fx": b"abcd", "dt": dt.date(2024, 2, 29)}, {"fx": b"\xff" * 4, "dt": None}]).select(["fx", "dt"]))
    return [s.snapshot_id for s in table.snapshots()]


UUID_KEYS = pa.schema([pa.field("id", pa.int64(), nullable=False), ("u", pa.uuid())])


def build_uuid_keyed(table: mor.Table) -> int:
    rows = [{"id": i, "u": None if i == 3 else uuid.UUID(int=i % 3).bytes} for i in range(6)]
    table.append(pa.Table.from_pylist(rows, schema=table.arrow_schema()))
    table.delete_rows(pa.table({"u": pa.array([uuid.UUID(int=1).bytes, None], pa.uuid())}))
    return table.current_snapshot().snapshot_id


@pytest.fixture(scope="module")
def reads(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The tables, each snapshot's rows as mor reads them, and Iceberg Java's reads (one JVM)."""
    workdir = tmp_path_factory.mktemp("types")
    catalog = mor.load_catalog(workdir / "warehouse", create=True)
    full = catalog.create_table("db.types", schema=SCHEMA, partition_by=PARTITION_BY)
    twin = catalog.create_table("db.types_no_time", schema=SCHEMA.remove(SCHEMA.get_field_index("t")), partition_by=PARTITION_BY)
    snapshots = {full.identifier: build(full), twin.identifier: build(twin)}
    uuid_tables = [
        catalog.create_table(f"db.uuid_keys_{n}", schema=UUID_KEYS, partition_by=p) for n, p in (("unpartitioned", None), ("by_u", ["u"]))
    ]
    uuid_snapshots = [build_uuid_keyed(t) for t in uuid_tables]

    requests = [("generic", full.metadata_location, s) for s in snapshots[full.identifier]]
    requests += [("spark", twin.metadata_location, s) for s in snapshots[twin.identifier]]
    requests += [("generic", t.metadata_location, s) for t, s in zip(uuid_tables, uuid_snapshots)]
    java = read_with_java(requests, workdir)
    n = len(snapshots[full.identifier])
    return {
        "tables": (full, twin),
        "snapshots": snapshots,
        "java": {full.identifier: java[:n], twin.identifier: java[n : 2 * n]},
        "uuid_keyed": [(t, java[2 * n + i]) for i, t in enumerate(uuid_tables)],
    }


def test_every_type_reads_the_same_in_mor_pyiceberg_and_iceberg_java(reads: dict[str, Any]) -> None:
    for table in reads["tables"]:
        schema, snapshots = table.schema(), reads["snapshots"][table.identifier]
        assert len(snapshots) == 9
        theirs = PyIcebergStaticTable.from_metadata(table.metadata_location)
        java_reader = "Iceberg Java generic reader" if "t" in schema.column_names else "Iceberg Spark reader"
        for snapshot_id, java in zip(snapshots, reads["java"][table.identifier]):
            ours = canonical_rows(schema, table.scan(snapshot_id=snapshot_id).to_arrow().to_pylist())
            assert len(ours) > 0
            java_rows = canonical_rows(schema, java)
            assert java_rows == ours, f"{java_reader}, {table.identifier} at {snapshot_id}:\n{differences(java_rows, ours)}"
            if snapshot_id not in snapshots[-2:]:  # not after the equality deletes
                pyiceberg_rows = canonical_rows(schema, theirs.scan(snapshot_id=snapshot_id).to_arrow().to_pylist())
                assert pyiceberg_rows == ours, f"pyiceberg, {table.identifier} at {snapshot_id}:\n{differences(pyiceberg_rows, ours)}"


def test_iceberg_java_applies_equality_deletes_on_uuid_keys(reads: dict[str, Any]) -> None:
    for table, java in reads["uuid_keyed"]:
        schema = table.schema()
        ours = canonical_rows(schema, table.scan().to_arrow().to_pylist())
        assert sorted(json.loads(r)["id"] for r in ours) == [0, 2, 5]  # u = UUID(1) and null u deleted
        assert canonical_rows(schema, java) == ours, f"{table.identifier}:\n{differences(canonical_rows(schema, java), ours)}"


def test_mor_reads_the_uuid_columns_pyiceberg_writes(tmp_path: Path) -> None:
    from pyiceberg.catalog.sql import SqlCatalog

    catalog = SqlCatalog("default", uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=f"file://{tmp_path}")
    catalog.create_namespace("db")
    theirs = catalog.create_table("db.u", schema=UUID_KEYS)
    data = pa.table({"id": pa.array([1, 2], pa.int64()), "u": pa.array([uuid.UUID(int=5).bytes, None], pa.uuid())}, schema=UUID_KEYS)
    theirs.append(data)
    ours = mor.StaticTable.from_metadata(theirs.metadata_location).scan().to_arrow()
    assert ours.column("u").to_pylist() == [uuid.UUID(int=5).bytes, None]
