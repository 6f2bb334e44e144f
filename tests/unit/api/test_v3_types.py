"""Format v3's types and defaults: nanosecond timestamps, `unknown`, and column default values
(`initial-default`, `write-default`), read and written; refused with a typed error on older
tables; `variant` refused with a typed error naming it. pyiceberg reads the same rows."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.schema import Schema
from pyiceberg.table import StaticTable as PyicebergTable
from pyiceberg.types import LongType, NestedField, StringType, TimestampNanoType, TimestamptzNanoType, UnknownType

import mor
from mor.errors import InvalidArgumentError, SchemaEvolutionError, UnsupportedFeatureError
from mor.format.metadata import TableMetadata
from mor.io.fileio import to_local_path

MakeTable = Callable[..., mor.Table]
NS = pa.timestamp("ns")
NS_UTC = pa.timestamp("ns", tz="UTC")


def pyiceberg_rows(table: mor.Table) -> list[dict]:
    return PyicebergTable.from_metadata(table.metadata_location).scan().to_arrow().sort_by("id").to_pylist()


def test_nanosecond_timestamps_keep_every_nanosecond(catalog: mor.Catalog) -> None:
    schema = Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "ts", TimestampNanoType()),
                    NestedField(3, "tz", TimestamptzNanoType()))  # fmt: skip
    table = catalog.create_table("db.ns", schema=schema, format_version=3, partition_by=["day(ts)"])
    stamps = [1_700_000_000_000_000_001, 1_700_000_000_000_000_002, 1_700_086_400_123_456_789, None]
    table.append(pa.table({"id": [1, 2, 3, 4], "ts": pa.array(stamps, NS), "tz": pa.array([7, 8, 9, 10], NS_UTC)}))
    table.delete("id = 2")
    table.update({"tz": pa.scalar(11, NS_UTC)}, where="id = 3")
    table.compact(min_input_files=1)
    got = table.scan().to_arrow().sort_by("id")
    assert got.schema.field("ts").type == NS and got.schema.field("tz").type == NS_UTC
    assert got["ts"].cast(pa.int64()).to_pylist() == [stamps[0], stamps[2], None]
    assert got["tz"].cast(pa.int64()).to_pylist() == [7, 11, 10]
    assert pyiceberg_rows(table) == got.to_pylist()


DAY_NS = 86_400_000_000_000
BASE_NS = 1_700_000_000_000_000_000  # 2023-11-14 22:13:20 UTC


def ns_text(nanos: int, zone: str = "") -> str:
    seconds, rest = divmod(nanos, 1_000_000_000)
    return (dt.datetime(1970, 1, 1) + dt.timedelta(seconds=seconds)).isoformat(sep=" ") + f".{rest:09d}{zone}"


@pytest.mark.parametrize("partition_by", [None, ["day(ts)"], ["ts"], ["hour(tz)"]], ids=["unpart", "day", "identity", "hour-tz"])
def test_filters_on_nanosecond_columns_select_exactly_and_prune(catalog: mor.Catalog, partition_by: list[str] | None) -> None:
    """Filters on timestamp_ns / timestamptz_ns compare to the nanosecond (text with nine
    digits, a datetime as its microsecond, a date as its midnight), in scans and DML; files and
    partitions whose values cannot match are not planned. Checked against the same comparison
    on the stored integers."""
    from pyiceberg.expressions import GreaterThanOrEqual, In, LessThan

    schema = Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "ts", TimestampNanoType()),
                    NestedField(3, "tz", TimestamptzNanoType()))  # fmt: skip
    table = catalog.create_table("db.nsf", schema=schema, format_version=3, partition_by=partition_by)
    stamps: list[int | None] = []
    for day in range(3):  # one file a day: nanoseconds apart around the same instant, and a null
        day_stamps: list[int | None] = [BASE_NS + day * DAY_NS + k for k in (0, 1, 2, 999, 1000, 1001)]
        if day == 1:
            day_stamps.append(None)
        ids = list(range(len(stamps), len(stamps) + len(day_stamps)))
        table.append(pa.table({"id": ids, "ts": pa.array(day_stamps, NS), "tz": pa.array(day_stamps, NS_UTC)}))
        stamps += day_stamps
    at = BASE_NS + DAY_NS  # the second day's first stamp
    cases = [
        (f"ts = '{ns_text(at + 1)}'", lambda v: v == at + 1),
        (f"ts > '{ns_text(at + 1)}'", lambda v: v > at + 1),
        (f"ts <= '{ns_text(at + 999)}'", lambda v: v <= at + 999),
        (f"ts in ('{ns_text(at + 2)}', '{ns_text(at + 1001)}')", lambda v: v in (at + 2, at + 1001)),
        (f"ts != '{ns_text(at)}'", lambda v: v != at),
        (f"tz < '{ns_text(at + 1000 + 3_600_000_000_000, '+01:00')}'", lambda v: v < at + 1000),
        (f"ts >= date '{ns_text(at)[:10]}'", lambda v: v >= at - at % DAY_NS),
        (GreaterThanOrEqual("ts", dt.datetime(2023, 11, 15, 22, 13, 20, 1)), lambda v: v >= at + 1000),
        (LessThan("tz", dt.datetime(2023, 11, 15, 22, 13, 20, tzinfo=dt.UTC)), lambda v: v < at),
        (In("ts", {ns_text(at + 1000)}), lambda v: v == at + 1000),
    ]
    for row_filter, keep in cases:
        expected = sorted(i for i, v in enumerate(stamps) if v is not None and keep(v))
        got = table.scan(filter=row_filter).to_arrow()["id"].to_pylist()
        assert sorted(got) == expected, row_filter
        if isinstance(row_filter, In) or " = " in str(row_filter) or " in " in str(row_filter):  # one day's values
            files = len({stamps[i] for i in expected}) if partition_by == ["ts"] else 1  # a file a value, else a day
            assert len(table.scan(filter=row_filter).plan_files()) == files, row_filter
    with pytest.raises(mor.InvalidFilterError, match="ts"):
        table.scan(filter="ts > 'not a time'").count()
    with pytest.raises(mor.InvalidFilterError, match="zone"):
        table.scan(filter=f"ts > '{ns_text(at, '+02:00')}'").count()
    if partition_by != ["ts"]:  # pyiceberg 0.12 reads no `timestamp-nanos` partition value (Avro), Java's neither
        assert pyiceberg_rows(table) == table.scan().to_arrow().sort_by("id").to_pylist()
    table.delete(f"ts > '{ns_text(at + 1)}' and ts < '{ns_text(at + 1001)}'")  # at + 2, + 999, + 1000
    left = table.scan().to_arrow()["ts"].cast(pa.int64()).to_pylist()
    assert sorted(left, key=lambda v: (v is not None, v)) == sorted(
        [v for v in stamps if v is None or not at + 1 < v < at + 1001], key=lambda v: (v is not None, v)
    )


def test_v3_types_and_defaults_are_refused_on_older_tables(catalog: mor.Catalog) -> None:
    schema = Schema(NestedField(1, "id", LongType()), NestedField(2, "ts", TimestampNanoType()))
    for version in (1, 2):
        with pytest.raises(InvalidArgumentError, match="needs table format v3"):
            catalog.create_table(f"db.v{version}", schema=schema, format_version=version)
    v2 = catalog.create_table("db.v2", schema=pa.schema([("id", pa.int64())]))
    with pytest.raises(InvalidArgumentError, match="needs table format v3"):
        v2.add_column("ts", TimestampNanoType())
    with pytest.raises(SchemaEvolutionError, match="format v3"):
        v2.update_schema().add_column("n", pa.int32(), default=1)
    assert [f.name for f in v2.refresh().schema().fields] == ["id"]
    v2.upgrade(format_version=3)
    v2.add_column("ts", TimestampNanoType())  # fine once upgraded


def test_unknown_columns_are_null_and_in_no_file(catalog: mor.Catalog) -> None:
    schema = Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "u", UnknownType()), NestedField(3, "s", StringType()))
    table = catalog.create_table("db.u", schema=schema, format_version=3)
    table.append(pa.table({"id": [1, 2], "s": ["a", "b"]}))  # the unknown column may be left out
    table.append(pa.table({"id": [3], "u": pa.nulls(1), "s": ["c"]}))
    table.delete("id = 2")
    rows = table.scan().to_arrow().sort_by("id")
    assert rows["u"].type == pa.null() and rows.to_pylist() == [{"id": 1, "u": None, "s": "a"}, {"id": 3, "u": None, "s": "c"}]
    for path in table.inspect.data_files()["file_path"].to_pylist():
        assert "u" not in pq.read_schema(to_local_path(path)).names
    assert pyiceberg_rows(table) == rows.to_pylist()


def test_default_values_on_read_and_write(catalog: mor.Catalog) -> None:
    table = catalog.create_table("db.d", schema=pa.schema([pa.field("id", pa.int64(), nullable=False), ("s", pa.string())]),
                                 format_version=3)  # fmt: skip
    table.append(pa.table({"id": [1, 2], "s": ["a", "b"]}))
    with table.update_schema() as u:
        u.add_column("n", pa.int32(), default=7)
        u.add_column("day", pa.date32(), required=True, default=dt.date(2025, 1, 2))
    assert table.scan().to_arrow().sort_by("id")["n"].to_pylist() == [7, 7]  # rows from before: initial default
    table.append(pa.table({"id": [3], "s": ["c"]}))  # leaves out n and day: write defaults
    table.update_schema().set_default("n", 9).commit()
    table.append(pa.table({"id": [4], "s": ["d"], "day": pa.array([dt.date(2020, 1, 1)])}))
    rows = table.scan().to_arrow().sort_by("id")
    assert rows["n"].to_pylist() == [7, 7, 7, 9]
    assert rows["day"].to_pylist() == [dt.date(2025, 1, 2)] * 3 + [dt.date(2020, 1, 1)]
    fields = {f["name"]: f for f in json.loads(table.schema().model_dump_json())["fields"]}
    assert (fields["n"]["initial-default"], fields["n"]["write-default"]) == (7, 9)
    assert fields["day"]["required"] is True and fields["day"]["initial-default"] == "2025-01-02"
    assert pyiceberg_rows(table) == rows.to_pylist()
    before = table.schema()
    with pytest.raises(SchemaEvolutionError, match="does not fit"):
        table.update_schema().add_column("bad", pa.int32(), default="x")
    with pytest.raises(SchemaEvolutionError, match="without a default"):
        table.update_schema().add_column("req", pa.int32(), required=True)
    assert table.refresh().schema() == before


def test_a_variant_column_is_a_typed_error_naming_it(catalog: mor.Catalog) -> None:
    table = catalog.create_table("db.var", schema=pa.schema([("id", pa.int64())]), format_version=3)
    document = json.loads(table.metadata.to_json())
    document["schemas"][0]["fields"].append({"id": 2, "name": "v", "required": False, "type": "variant"})
    document["last-column-id"] = 2
    with pytest.raises(UnsupportedFeatureError, match="'variant'"):
        TableMetadata.from_dict(document)


@pytest.mark.parametrize("transform", ["year", "month", "day", "hour"])
@pytest.mark.parametrize("ftype", [TimestampNanoType(), TimestamptzNanoType()], ids=["ns", "tz-ns"])
def test_time_partitions_of_nanosecond_values_match_the_spec(transform: str, ftype: object) -> None:
    """Partition values of nanosecond timestamps on Arrow data (rounded down to the microsecond
    first) equal pyiceberg's transform of each value, before 1970 too."""
    from pyiceberg.partitioning import PartitionField
    from pyiceberg.transforms import parse_transform

    from mor.write.partitioning import partition_column

    schema = Schema(NestedField(1, "ts", ftype))
    spec_field = PartitionField(source_id=1, field_id=1000, transform=parse_transform(transform), name="p")
    values = [-3_600_000_000_001, -1_000, -999, -1, 0, 1, 999, 3_599_999_999_999, BASE_NS + 1, -BASE_NS - 1, None]
    arrow_type = NS_UTC if isinstance(ftype, TimestamptzNanoType) else NS
    got = partition_column(spec_field, schema, pa.table({"ts": pa.array(values, arrow_type)})).to_pylist()
    expected = [None if v is None else spec_field.transform.transform(ftype)(v) for v in values]
    assert got == expected
