"""Partition spec evolution by mor, read by pyiceberg 0.12 and by Iceberg Java at every snapshot.

Two histories: a table mor creates and evolves (identity, day, bucket, truncate and void fields
added and removed, a field id coming back), and a copy of the Iceberg Java fixture that Spark
evolved (tests/fixtures/iceberg-java/db/evolve_spec), which mor evolves further. Between spec
changes: appends, DELETE in both modes, UPDATE, UPSERT (both strategies), MERGE, delete by
key and compaction. Each step's expected rows come from a model (a dict of rows by id) changed
in plain Python; mor, pyiceberg (snapshots without equality deletes: it refuses them) and Iceberg
Java (all reads batched in one JVM) must each read exactly the model's rows at every snapshot.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from fixture_copies import relocate_fixture
from java_fixtures import describe_row_differences, row_sort_key, to_json_rows
from oracle_support import read_with_iceberg_java
from pyiceberg.table import StaticTable as PyIcebergStaticTable

import mor

pytestmark = pytest.mark.interop

Row = dict[str, Any]
Model = dict[int, Row]

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64()),
        pa.field("category", pa.string()),
        pa.field("name", pa.string()),
        pa.field("ts", pa.timestamp("us", tz="UTC")),
        pa.field("value", pa.float64()),
    ]
)
START = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)


def make_rows(ids: range | list[int], value: Callable[[int], float | None] = lambda i: i / 2) -> pa.Table:
    ids = list(ids)
    return pa.table(
        {
            "id": ids,
            "category": ["abc"[i % 3] for i in ids],
            "name": [None if i % 11 == 4 else f"{'xyz'[i % 3]}{i}" for i in ids],
            "ts": [START + dt.timedelta(hours=7 * i) for i in ids],
            "value": [value(i) for i in ids],
        },
        schema=SCHEMA,
    )


def put(model: Model, rows: pa.Table) -> None:
    for r in rows.to_pylist():
        model[r["id"]] = r


def drop(model: Model, gone: Callable[[Row], bool]) -> None:
    for i in [i for i, r in model.items() if gone(r)]:
        del model[i]


def assign(model: Model, where: Callable[[Row], bool], **values: Any) -> None:
    for r in model.values():
        if where(r):
            r.update(values)


def assert_same_rows(actual: pa.Table, expected: list[Row], how: str) -> None:
    names = list(expected[0]) if expected else actual.column_names
    ours = sorted(to_json_rows(actual.select(names).to_pylist()), key=row_sort_key)
    theirs = sorted(to_json_rows(expected), key=row_sort_key)
    assert ours == theirs, f"{how}:\n{describe_row_differences(theirs, ours)}"


def has_equality_deletes(table: mor.Table, snapshot_id: int) -> bool:
    return any(t.equality_deletes for t in table.scan(snapshot_id=snapshot_id).plan_files())


def check_every_snapshot(table: mor.Table, made: list[tuple[str, int, list[Row]]], workdir: Path) -> None:
    """mor, pyiceberg and Iceberg Java read each snapshot as the model says; pyiceberg reads the
    specs as mor wrote them."""
    static = PyIcebergStaticTable.from_metadata(table.metadata_location)
    theirs_specs = {i: [(f.source_id, f.field_id, str(f.transform), f.name) for f in s.fields] for i, s in static.metadata.specs().items()}
    ours_specs = {i: [(f.source_id, f.field_id, str(f.transform), f.name) for f in s.fields] for i, s in table.metadata.specs().items()}
    assert theirs_specs == ours_specs
    assert static.metadata.default_spec_id == table.metadata.default_spec_id
    assert static.metadata.last_partition_id == table.metadata.last_partition_id
    pyiceberg_read = 0
    for step, snapshot_id, expected in made:
        assert_same_rows(table.scan(snapshot_id=snapshot_id).to_arrow(), expected, f"mor after {step}")
        if has_equality_deletes(table, snapshot_id):
            continue  # pyiceberg 0.12 refuses equality deletes
        assert_same_rows(static.scan(snapshot_id=snapshot_id).to_arrow(), expected, f"pyiceberg after {step}")
        pyiceberg_read += 1
    assert pyiceberg_read >= 2
    java = read_with_iceberg_java([(table.metadata_location, s) for _, s, _ in made], workdir)
    for (step, _, expected), theirs in zip(made, java, strict=True):
        assert_same_rows(theirs, expected, f"Iceberg Java after {step}")


def test_our_spec_evolved_table_reads_the_same_everywhere(tmp_path: Path) -> None:
    catalog = mor.load_catalog(tmp_path / "warehouse", create=True)
    table = catalog.create_table("db.t", schema=SCHEMA, partition_by=["category"])
    model: Model = {}
    made: list[tuple[str, int, list[Row]]] = []

    def step(name: str, run: Callable[[], Any], change: Callable[[], Any]) -> None:
        run()
        change()
        snapshot = table.current_snapshot()
        assert snapshot is not None
        assert_same_rows(table.scan().to_arrow(), list(model.values()), f"mor after {name}")
        if not made or made[-1][1] != snapshot.snapshot_id:
            made.append((name, snapshot.snapshot_id, [dict(r) for r in model.values()]))

    def spec_change(change: Callable[[Any], Any]) -> None:
        with table.update_spec() as update:
            change(update)

    step("append 0-40", lambda: table.append(make_rows(range(0, 40))), lambda: put(model, make_rows(range(0, 40))))
    step("delete", lambda: table.delete("id in (0, 7, 14, 21)"),
         lambda: drop(model, lambda r: r["id"] in (0, 7, 14, 21)))  # fmt: skip
    spec_change(lambda u: u.add_field("day(ts)").add_field("id", "bucket[4]"))
    step("append 40-80", lambda: table.append(make_rows(range(40, 80))), lambda: put(model, make_rows(range(40, 80))))
    step("delete across specs", lambda: table.delete("value > 15 and value < 25"),
         lambda: drop(model, lambda r: 15 < r["value"] < 25))  # fmt: skip
    spec_change(lambda u: u.remove_field("category").add_field("name", "truncate[1]").add_field("value", "void"))
    step("append 80-120", lambda: table.append(make_rows(range(80, 120))), lambda: put(model, make_rows(range(80, 120))))
    step("update", lambda: table.update({"value": -1.0}, where="category = 'b' and id > 30"),
         lambda: assign(model, lambda r: r["category"] == "b" and r["id"] > 30, value=-1.0))  # fmt: skip
    step("copy-on-write delete", lambda: table.delete("id in (1, 2, 45, 46, 85, 86)", mode="copy-on-write"),
         lambda: drop(model, lambda r: r["id"] in (1, 2, 45, 46, 85, 86)))  # fmt: skip
    upsert_source = make_rows([3, 50, 90, 300, 301], value=lambda i: 1000.0 + i)
    step("upsert position", lambda: table.upsert(upsert_source, on=["id"]), lambda: put(model, upsert_source))
    # category (field 1000) comes back; ts_day leaves: spec [id_bucket_4, name_truncate_1, value_null, category]
    spec_change(lambda u: u.remove_field("ts_day").add_field("category"))
    assert [f.field_id for f in table.spec().fields if f.name == "category"] == [1000]
    step("append 120-160", lambda: table.append(make_rows(range(120, 160))), lambda: put(model, make_rows(range(120, 160))))
    merge_source = make_rows([5, 55, 95, 125, 400], value=lambda i: -float(i))
    step(
        "merge",
        lambda: table.merge(
            merge_source,
            on=["id"],
            when_matched_delete=pc.field("source.id") == 5,
            when_matched_update={"value": pc.field("source.value")},
            when_not_matched_insert="*",
        ),
        lambda: (drop(model, lambda r: r["id"] == 5), [model[i].update(value=-float(i)) for i in (55, 95, 125)],
                 put(model, make_rows([400], value=lambda i: -400.0))),
    )  # fmt: skip
    step("compact", lambda: table.compact(min_input_files=2), lambda: None)
    assert {t.data_file.spec_id for t in table.scan().plan_files()} == {table.spec().spec_id}
    step("delete by key", lambda: table.delete_rows(pa.table({"id": pa.array([6, 60, 100, 130], pa.int64())})),
         lambda: drop(model, lambda r: r["id"] in (6, 60, 100, 130)))  # fmt: skip
    equality_source = make_rows([8, 68, 108, 138, 500], value=lambda i: 7.0)
    step("upsert equality", lambda: table.upsert(equality_source, on=["id"], strategy="equality"), lambda: put(model, equality_source))
    step("compact again", lambda: table.compact(min_input_files=2), lambda: None)

    assert len(table.metadata.partition_specs) >= 4
    check_every_snapshot(table, made, tmp_path)


def test_dml_on_a_copy_of_the_java_spec_evolved_fixture(java_fixtures: Path, tmp_path: Path) -> None:
    catalog = mor.load_catalog(tmp_path / "warehouse", create=True)
    table = catalog.register_table("db.evolve_spec", relocate_fixture("evolve_spec", tmp_path / "copy"))
    names = table.arrow_schema().names
    model: Model = {r["id"]: r for r in table.scan().to_arrow().to_pylist()}
    made: list[tuple[str, int, list[Row]]] = [("as Java left it", table.current_snapshot().snapshot_id, [dict(r) for r in model.values()])]

    def rows(ids: list[int], value: float) -> pa.Table:
        base = make_rows(ids, value=lambda i: value)
        return base.select(names).cast(table.arrow_schema())

    def step(name: str, run: Callable[[], Any], change: Callable[[], Any]) -> None:
        run()
        change()
        assert_same_rows(table.scan().to_arrow(), [dict(r) for r in model.values()], f"mor after {name}")
        made.append((name, table.current_snapshot().snapshot_id, [dict(r) for r in model.values()]))

    # Back to Spark's spec 1 ([category], field 1000): an identical spec becomes the default again.
    with table.update_spec() as update:
        update.remove_field("ts_day").remove_field("id_bucket_3").add_field("category")
    assert table.spec().spec_id == 1 and len(table.metadata.partition_specs) == 5
    step("append", lambda: table.append(rows([1000, 1001, 1002], 1.0)), lambda: put(model, rows([1000, 1001, 1002], 1.0)))
    step("delete by key", lambda: table.delete_rows(pa.table({"id": pa.array([44, 85, 122, 1001], pa.int64())})),
         lambda: drop(model, lambda r: r["id"] in (44, 85, 122, 1001)))  # fmt: skip
    source = rows([46, 87, 124, 2000], 5.0)
    step("upsert equality", lambda: table.upsert(source, on=["id"], strategy="equality"), lambda: put(model, source))
    with table.update_spec() as update:
        update.add_field("bucket(4, id)")
    assert [(f.field_id, f.name) for f in table.spec().fields] == [(1000, "category"), (1003, "id_bucket_4")]
    step("update", lambda: table.update({"value": 0.5}, where="id < 70"),
         lambda: assign(model, lambda r: r["id"] < 70, value=0.5))  # fmt: skip
    step("copy-on-write delete", lambda: table.delete("id in (48, 89, 126, 1000)", mode="copy-on-write"),
         lambda: drop(model, lambda r: r["id"] in (48, 89, 126, 1000)))  # fmt: skip
    merge_source = rows([51, 52, 93, 95, 2001], 9.0)  # some ids Spark deleted: inserted again
    step(
        "merge",
        lambda: table.merge(merge_source, on=["id"], when_matched_update={"value": pc.field("source.value")}, when_not_matched_insert="*"),
        lambda: [model[r["id"]].update(value=9.0) if r["id"] in model else model.update({r["id"]: r}) for r in merge_source.to_pylist()],
    )
    step("compact", lambda: table.compact(min_input_files=2), lambda: None)
    moved = {t.data_file.spec_id for t in table.scan().plan_files()}
    assert table.spec().spec_id in moved
    check_every_snapshot(table, made, tmp_path)
    assert json.loads(Path(table.metadata_location.removeprefix("file://")).read_text())["default-spec-id"] == table.spec().spec_id
