"""Avro files read into columns (mor/io/avro_columns.py): the compiled decoder (polars) and
fastavro give the same values on every manifest and manifest list of the Iceberg Java fixtures
and on mor's own; a file polars refuses is read by fastavro; a scan that prunes nothing plans
the same tasks without column metrics."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import fastavro
import pytest
from pyiceberg.schema import Schema
from pyiceberg.types import DecimalType, NestedField, UUIDType
from unit_helpers import make_rows

import mor
from mor.format.manifest import decode_manifest
from mor.io import avro_columns
from mor.io.avro_columns import python_values, read_avro_columns
from mor.planning.planner import manifests_of

ROOTS = [
    Path(__file__).resolve().parents[3].parent / "shared" / "fixtures" / "iceberg-java",
    Path(__file__).resolve().parents[2] / "fixtures",
]
AVRO_FILES = sorted(p for root in ROOTS for p in root.rglob("*.avro"))


def paths_of(data: bytes) -> tuple[str, ...]:
    """Every top-level field and every field one record down, as read_avro_columns names them."""
    schema = fastavro.reader(io.BytesIO(data)).writer_schema
    out = []
    for f in schema["fields"]:  # type: ignore[index]
        out.append(f["name"])
        t = f["type"]
        if isinstance(t, dict) and t.get("type") == "record":
            out += [f"{f['name']}.{g['name']}" for g in t["fields"]]
    return tuple(out)


@pytest.mark.parametrize("path", AVRO_FILES, ids=lambda p: f"{p.parent.parent.name}/{p.name[:24]}")
def test_the_compiled_decoder_reads_what_fastavro_reads(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = path.read_bytes()
    paths = paths_of(data) + ("no_such_field", "data_file.no_such_field")
    monkeypatch.setattr(avro_columns, "COMPILED_FROM", 0)
    compiled = values(read_avro_columns(data, paths))
    monkeypatch.setattr(avro_columns, "COMPILED_FROM", 1 << 40)
    assert compiled == values(read_avro_columns(data, paths))
    assert "no_such_field" not in compiled[0]


def values(read: tuple[dict[str, Any], int]) -> tuple[dict[str, list[Any]], int]:
    return {path: column.to_pylist() for path, column in read[0].items()}, read[1]


def test_map_items_are_cut_to_the_keys_asked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    paths = ("data_file.lower_bounds", "data_file.value_counts")
    data = next(
        d
        for d in (p.read_bytes() for p in AVRO_FILES)
        if any(b for b in read_avro_columns(d, paths)[0]["data_file.lower_bounds"].to_pylist() if b and len(b) > 1)
    )
    for compiled_from in (0, 1 << 40):
        monkeypatch.setattr(avro_columns, "COMPILED_FROM", compiled_from)
        every, _ = values(read_avro_columns(data, paths))
        key = next(m for m in every["data_file.lower_bounds"] if m)[0]["key"]
        cut, _ = values(read_avro_columns(data, paths, {"data_file.lower_bounds": {key}}))
        assert cut["data_file.value_counts"] == every["data_file.value_counts"]
        assert cut["data_file.lower_bounds"] == [
            None if m is None else [kv for kv in m if kv["key"] == key] for m in every["data_file.lower_bounds"]
        ]
        assert cut["data_file.lower_bounds"] != every["data_file.lower_bounds"] and any(cut["data_file.lower_bounds"])


def test_a_schema_polars_refuses_is_read_by_fastavro(catalog: mor.Catalog, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two partition fields of one named Avro type (fixed uuid, decimal): polars refuses the
    schema; the entries come from fastavro all the same."""
    schema = Schema(NestedField(1, "a", UUIDType()), NestedField(2, "b", UUIDType()), NestedField(3, "x", DecimalType(9, 2)))
    table = catalog.create_table("db.t", schema=schema, partition_by=["a", "b", "x"])
    import uuid
    from decimal import Decimal

    import pyarrow as pa

    from mor.format.arrow_types import to_arrow_schema

    rows = [{"a": uuid.UUID(int=i).bytes, "b": uuid.UUID(int=7 + i).bytes, "x": Decimal(f"{i}.25")} for i in range(2)]
    table.append(pa.Table.from_pylist(rows, schema=to_arrow_schema(schema)))
    monkeypatch.setattr(avro_columns, "COMPILED_FROM", 0)
    (manifest,) = manifests_of(table.io, table.refresh().current_snapshot())  # type: ignore[arg-type]
    data = Path(manifest.manifest_path.removeprefix("file://")).read_bytes()
    entries = decode_manifest(data, manifest, table.metadata.specs(), table.schema(), metrics=False)  # the compiled path
    assert sorted(e.file.partition[2] for e in entries) == [Decimal("0.25"), Decimal("1.25")]


def test_a_scan_without_a_filter_plans_the_same_tasks_without_metrics(catalog: mor.Catalog, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(avro_columns, "COMPILED_FROM", 0)
    table = catalog.create_table("db.t", schema=make_rows([]).schema, partition_by=["category"])
    for k in range(3):
        table.append(make_rows(range(10 * k, 10 * k + 10)))
    table.delete("id % 3 = 0")
    full = table.scan().plan_files()
    lean = table.scan().plan_files(keep_metrics=False)

    def files(tasks: list) -> list:  # type: ignore[type-arg]
        return [(t.data_file.file_path, [d.file_path for d in t.delete_files]) for t in tasks]

    assert files(lean) == files(full)
    assert all(t.data_file.value_counts is None and t.data_file.split_offsets is None for t in lean)
    assert all(t.data_file.value_counts for t in full)
    # A position delete file keeps what names its data file: its referenced_data_file, or its bounds.
    assert all(d.referenced_data_file or d.lower_bounds for t in lean for d in t.delete_files)
    assert sorted(table.scan().to_arrow().column("id").to_pylist()) == [i for i in range(30) if i % 3]


MAP_PATHS = tuple(
    f"data_file.{m}" for m in ("column_sizes", "value_counts", "null_value_counts", "nan_value_counts", "lower_bounds", "upper_bounds")
)


@pytest.mark.parametrize(
    "path", [p for p in AVRO_FILES if b"value_counts" in p.read_bytes()][:40], ids=lambda p: f"{p.parent.parent.name}/{p.name[:24]}"
)
def test_maps_made_from_flat_keys_and_values_equal_those_made_per_record(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = path.read_bytes()
    for compiled_from in (0, 1 << 40):
        monkeypatch.setattr(avro_columns, "COMPILED_FROM", compiled_from)
        columns, count = read_avro_columns(data, MAP_PATHS)
        for column in columns.values():
            for start, length in ((0, count), (1, count), (count // 2, 1)):
                part = column.slice(start, length)
                expected = [None if items is None else {kv["key"]: kv["value"] for kv in items} for items in part.to_pylist()]
                assert python_values(part, as_maps=True) == expected
