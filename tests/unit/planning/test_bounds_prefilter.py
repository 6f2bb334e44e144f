"""The first pass of file pruning over a manifest's columns (mor/expr/bounds_prefilter.py) never
rules out a file that pyiceberg's metrics evaluator keeps: random files (bounds of every
integer-like type, missing, of the wrong width, inside a list; unknown record counts) in a
manifest written by mor and read by both decoders, random filters (comparisons, `in`, and, or,
not, other types) -- and it rules out what the bounds alone rule out. Plans that use it: the
first row ids files inherit are the same with and without a filter."""

from __future__ import annotations

import datetime as dt
import struct
import uuid
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pytest
from examples import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.types import DateType, IntegerType, ListType, LongType, NestedField, StringType, StructType, TimestamptzType

import mor
from mor.expr.filters import FileFilter, parse_filter
from mor.format.content_file import DataFile
from mor.format.manifest import EntryToWrite, iter_live_files, manifest_columns, read_manifest_bytes, write_manifest
from mor.format.spec import FileContent, ManifestContent, ManifestEntryStatus
from mor.io import avro_columns
from mor.io.fileio import FileIO

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "n", IntegerType(), required=False),
    NestedField(3, "day", DateType(), required=False),
    NestedField(4, "ts", TimestamptzType(), required=False),
    NestedField(5, "s", StringType(), required=False),
    NestedField(6, "inner", StructType(NestedField(7, "x", IntegerType(), required=False)), required=False),
    NestedField(8, "xs", ListType(9, IntegerType(), element_required=False), required=False),
)
SPEC = PartitionSpec(spec_id=0)
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
DAY0 = (dt.date(2024, 1, 1) - dt.date(1970, 1, 1)).days
TS0 = DAY0 * 86_400_000_000
# field id -> (bytes of a value, a strategy of values, how a literal is written)
FIELDS: dict[int, tuple[Callable[[int], bytes], st.SearchStrategy[int], Callable[[int], str]]] = {
    1: (lambda v: struct.pack("<q", v), st.integers(-6, 6), str),
    2: (lambda v: struct.pack("<i", v), st.integers(-6, 6), str),
    3: (lambda v: struct.pack("<i", v), st.integers(DAY0 - 6, DAY0 + 6), lambda v: f"'{dt.date(1970, 1, 1) + dt.timedelta(days=v)}'"),
    4: (
        lambda v: struct.pack("<q", v),
        st.integers(TS0 - 6, TS0 + 6),
        lambda v: f"'{dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(microseconds=v)}'",
    ),
    7: (lambda v: struct.pack("<i", v), st.integers(-6, 6), str),
    9: (lambda v: struct.pack("<i", v), st.integers(-6, 6), str),
}
NAMES = {1: "id", 2: "n", 3: "day", 4: "ts", 7: "inner.x", 9: "xs"}


@st.composite
def bounds(draw: st.DrawFn) -> dict[int, bytes]:
    out: dict[int, bytes] = {}
    for field_id, (encode, values, _) in FIELDS.items():
        kind = draw(st.sampled_from(["value", "value", "value", "none", "odd"]))
        if kind == "value":
            out[field_id] = encode(draw(values))
        elif kind == "odd":
            out[field_id] = draw(st.binary(max_size=9))
    if draw(st.booleans()):
        out[5] = draw(st.text(max_size=3)).encode()
    return out


@st.composite
def data_files(draw: st.DrawFn) -> DataFile:
    lower, upper = draw(bounds()), draw(bounds())
    records = draw(st.sampled_from([-1, 0, 1, 5, 10]))
    ids = sorted(set(lower) | set(upper))
    nulls = {i: draw(st.sampled_from([0, 1, max(records, 0)])) for i in ids}
    return DataFile(
        FileContent.DATA, f"file:///d/{uuid.uuid4()}.parquet", "PARQUET", 0, (), records, 100,
        value_counts={i: max(records, 0) for i in ids}, null_value_counts=nulls, lower_bounds=lower, upper_bounds=upper,
    )  # fmt: skip


@st.composite
def filters(draw: st.DrawFn, depth: int = 0) -> str:
    if depth < 2 and draw(st.integers(0, 2)) == 0:
        op = draw(st.sampled_from(["and", "or"]))
        return f"({draw(filters(depth + 1))} {op} {draw(filters(depth + 1))})"
    if depth < 2 and draw(st.integers(0, 5)) == 0:
        return f"not ({draw(filters(depth + 1))})"
    field_id = draw(st.sampled_from(sorted(NAMES)))
    _, values, literal = FIELDS[field_id]
    if field_id == 9:
        return f"array_contains(xs, {draw(values)})" if draw(st.booleans()) else "s = 'a'"
    kind = draw(st.sampled_from(["<", "<=", ">", ">=", "=", "!=", "in", "is null"]))
    name = NAMES[field_id]
    if kind == "in":
        return f"{name} in ({', '.join(literal(v) for v in draw(st.lists(values, min_size=1, max_size=4)))})"
    if kind == "is null":
        return f"{name} is null"
    return f"{name} {kind} {literal(draw(values))}"


def written(io: FileIO, folder: str, files: list[DataFile]) -> tuple[Any, bytes]:
    entries = [EntryToWrite(ManifestEntryStatus.ADDED, 1, f) for f in files]
    manifest = write_manifest(
        io, f"{folder}/{uuid.uuid4()}.avro", spec=SPEC, schema=SCHEMA, content=ManifestContent.DATA, snapshot_id=1, entries=entries
    )
    manifest = manifest.with_sequence_number(1)
    return manifest, read_manifest_bytes(io, manifest)


@pytest.mark.parametrize("decoder", ["fastavro", "compiled"])
@settings(max_examples=examples(50), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(files=st.lists(data_files(), min_size=1, max_size=12), text=filters())
def test_the_first_pass_never_rules_out_a_file_the_evaluator_keeps(
    files: list[DataFile], text: str, decoder: str, io: FileIO, metadata_dir: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(avro_columns, "COMPILED_FROM", 0 if decoder == "compiled" else 1 << 40)
    manifest, data = written(io, metadata_dir, files)
    try:
        file_filter = FileFilter(SCHEMA, {0: SPEC}, parse_filter(text))
    except mor.MorError:
        return  # a filter mor refuses (e.g. over a list): nothing to prune by
    for metrics in (True, frozenset(file_filter.field_ids)):
        decoded = manifest_columns(data, manifest, metrics)
        decoded_files = [f for chunk in iter_live_files(decoded, manifest, {0: SPEC}, SCHEMA) for f in chunk]
        may_match = file_filter.entries_may_match(decoded.columns, decoded.count)
        for i, f in enumerate(decoded_files):
            try:
                kept = file_filter.file_may_match(f)
            except Exception:  # pyiceberg cannot read a bound of the wrong size: the plan fails as before
                continue
            if kept:
                assert may_match is None or may_match[i], (text, f.lower_bounds, f.upper_bounds, f.record_count)


def test_the_first_pass_rules_out_by_integer_bounds(io: FileIO, metadata_dir: str) -> None:
    def bounds(v: int) -> dict[int, bytes]:
        return {1: struct.pack("<q", v), 3: struct.pack("<i", DAY0 + v)}

    def file(lo: int, hi: int) -> DataFile:
        path = f"file:///d/{lo}.parquet"
        return DataFile(FileContent.DATA, path, "PARQUET", 0, (), 10, 100, lower_bounds=bounds(lo), upper_bounds=bounds(hi))

    manifest, data = written(io, metadata_dir, [file(0, 9), file(10, 19), file(20, 29)])
    decoded = manifest_columns(data, manifest, True)
    expected = {
        "id < 10": [True, False, False],
        "id >= 20": [False, False, True],
        "id = 15 or id in (29, 40)": [False, True, True],
        "id in (40, -1)": [False, False, False],
        f"day > '{dt.date(2024, 1, 1) + dt.timedelta(days=19)}'": [False, False, True],
        "id < 10 and s = 'a'": [True, False, False],
        "id < 10 or s = 'a'": [True, True, True],
    }
    for text, mask in expected.items():
        may_match = FileFilter(SCHEMA, {0: SPEC}, parse_filter(text)).entries_may_match(decoded.columns, decoded.count)
        assert may_match is not None and may_match.tolist() == mask, text
    assert FileFilter(SCHEMA, {0: SPEC}, parse_filter("s = 'a'")).entries_may_match(decoded.columns, decoded.count) is None


def test_files_planned_through_the_first_pass_keep_the_row_ids_they_inherit(tmp_path: Any) -> None:
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("p", pa.int64())])
    table = mor.load_catalog(tmp_path / "wh", create=True).create_table("db.t", schema=schema, partition_by=["p"], format_version=3)
    ids = [i for p in range(5) for i in range(p * 10, p * 10 + 10 - p)]  # files of 10, 9, 8, 7 and 6 rows
    table.append(pa.table({"id": pa.array(ids, pa.int64()), "p": pa.array([i // 10 for i in ids], pa.int64())}))
    full = {t.data_file.file_path: t.data_file.first_row_id for t in table.scan().plan_files()}
    assert len(full) == 5 and len(set(full.values())) == 5
    some = table.scan(filter="id >= 20 and id < 40").plan_files()
    assert len(some) == 2
    assert all(t.data_file.first_row_id == full[t.data_file.file_path] for t in some)
    assert sorted(
        r["_row_id"] for r in table.scan(filter="id >= 20 and id < 40", columns=["id", "_row_id"]).to_arrow().to_pylist()
    ) == sorted(r["_row_id"] for r in table.scan(columns=["id", "_row_id"]).to_arrow().to_pylist() if 20 <= r["id"] < 40)
