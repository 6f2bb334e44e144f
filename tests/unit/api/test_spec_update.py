"""Partition spec evolution: `table.update_spec()` (mor/api/spec_update.py), and every writer,
reader and maintenance step on a table whose live files use several specs.

Expected rows come from a plain model (a dict of rows by id) changed by the same operation;
partition values are recomputed from each file's rows with pyiceberg's transforms, not read
back through mor.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from pyiceberg.expressions import EqualTo
from pyiceberg.transforms import BucketTransform, DayTransform, IdentityTransform, TruncateTransform, parse_transform
from unit_helpers import local

import mor
from mor.commit.snapshot_producer import Changes, commit_changes
from mor.format.spec import FileContent, Operation
from mor.write.parquet_files import WriteOptions, write_equality_delete_files

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("category", pa.string()),
        pa.field("ts", pa.timestamp("us")),
        pa.field("value", pa.float64()),
    ]
)
START = dt.datetime(2024, 1, 1)
Model = dict[int, dict[str, Any]]


def rows(ids: range | list[int], value: Callable[[int], float] = lambda i: i / 2) -> pa.Table:
    ids = list(ids)
    return pa.table(
        {
            "id": ids,
            "category": ["abc"[i % 3] for i in ids],
            "ts": [START + dt.timedelta(hours=5 * i) for i in ids],
            "value": [value(i) for i in ids],
        },
        schema=SCHEMA,
    )


def add(model: Model, data: pa.Table) -> None:
    for r in data.to_pylist():
        model[r["id"]] = r


def assert_rows(actual: pa.Table, expected: Model | list[dict[str, Any]]) -> None:
    expected_rows = sorted(expected.values() if isinstance(expected, dict) else expected, key=lambda r: r["id"])
    got = actual.select(SCHEMA.names).sort_by("id").to_pylist()
    assert got == expected_rows


@pytest.fixture
def table(catalog: mor.Catalog) -> mor.Table:
    return catalog.create_table("db.t", schema=SCHEMA, partition_by=["category"])


def spec_fields(table: mor.Table) -> list[tuple[int, str, str, str]]:
    """(field id, source column, transform, name) of the default spec."""
    schema = table.schema()
    return [(f.field_id, schema.find_column_name(f.source_id), str(f.transform), f.name) for f in table.spec().fields]


def on_disk_metadata(table: mor.Table) -> dict[str, Any]:
    return json.loads(Path(local(table.metadata_location)).read_text())


# -- the builder ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        (lambda u: u.add_field("ts", "day"), (1001, "ts", "day", "ts_day")),
        (lambda u: u.add_field("day(ts)"), (1001, "ts", "day", "ts_day")),
        (lambda u: u.add_field("days(ts)"), (1001, "ts", "day", "ts_day")),
        (lambda u: u.add_field("id", "bucket[16]"), (1001, "id", "bucket[16]", "id_bucket_16")),
        (lambda u: u.add_field("id", "bucket(16)"), (1001, "id", "bucket[16]", "id_bucket_16")),
        (lambda u: u.add_field("bucket(16, id)"), (1001, "id", "bucket[16]", "id_bucket_16")),
        (lambda u: u.add_field("id", BucketTransform(16)), (1001, "id", "bucket[16]", "id_bucket_16")),
        (lambda u: u.add_field("category", "truncate[2]"), (1001, "category", "truncate[2]", "category_truncate_2")),
        (lambda u: u.add_field("ts", "hour", name="hr"), (1001, "ts", "hour", "hr")),
        (lambda u: u.add_field("ts", "year"), (1001, "ts", "year", "ts_year")),
        (lambda u: u.add_field("ts", "month"), (1001, "ts", "month", "ts_month")),
        (lambda u: u.add_field("value", "void"), (1001, "value", "void", "value_null")),
        (lambda u: u.add_field("id"), (1001, "id", "identity", "id")),
    ],
)
def test_add_field_forms(table: mor.Table, call: Callable[[Any], Any], expected: tuple[int, str, str, str]) -> None:
    before = table.metadata_location
    update = table.update_spec()
    call(update)
    update.commit()
    assert table.metadata_location != before
    assert spec_fields(table) == [(1000, "category", "identity", "category"), expected]
    assert table.spec().spec_id == 1 and table.metadata.default_spec_id == 1
    assert table.metadata.last_partition_id == 1001
    assert [s.spec_id for s in table.metadata.partition_specs] == [0, 1]
    assert table.current_snapshot() is None  # metadata only
    on_disk = on_disk_metadata(table)
    assert on_disk["default-spec-id"] == 1 and on_disk["last-partition-id"] == 1001
    assert mor.load_catalog(Path(local(table.location)).parents[1]).load_table("db.t").spec() == table.spec()


def test_context_manager_commits_several_changes_at_once(table: mor.Table) -> None:
    with table.update_spec() as update:
        update.add_field("day(ts)").add_field("id", "bucket[4]").rename_field("category", "cat")
    assert spec_fields(table) == [
        (1000, "category", "identity", "cat"),
        (1001, "ts", "day", "ts_day"),
        (1002, "id", "bucket[4]", "id_bucket_4"),
    ]
    assert len(table.metadata.partition_specs) == 2


def test_an_error_inside_the_block_commits_nothing(table: mor.Table) -> None:
    before = table.metadata_location
    with pytest.raises(RuntimeError):
        with table.update_spec() as update:
            update.add_field("day(ts)")
            raise RuntimeError("changed my mind")
    assert table.metadata_location == before and spec_fields(table) == [(1000, "category", "identity", "category")]


def test_remove_field_by_name_or_by_term(table: mor.Table) -> None:
    table.update_spec().add_field("day(ts)").commit()
    table.update_spec().remove_field("ts_day").commit()
    assert spec_fields(table) == [(1000, "category", "identity", "category")]
    assert table.spec().spec_id == 0  # the same fields as spec 0: it is the default again
    table.update_spec().add_field("bucket(4, id)", name="b").commit()
    table.update_spec().remove_field("bucket(4, id)").remove_field("category").commit()
    assert table.spec().fields == () and table.spec().spec_id == 3
    assert table.metadata.last_partition_id == 1002


def test_rename_field(table: mor.Table) -> None:
    spec = table.update_spec().rename_field("category", "cat").commit()
    assert spec == table.spec()
    assert spec_fields(table) == [(1000, "category", "identity", "cat")]
    assert table.spec().spec_id == 1


def test_a_field_added_back_takes_its_old_id(table: mor.Table) -> None:
    table.update_spec().add_field("day(ts)").add_field("bucket(4, id)").commit()  # 1001, 1002
    table.update_spec().remove_field("ts_day").commit()
    table.update_spec().add_field("category", "truncate[1]").commit()  # a new field: 1003
    table.update_spec().add_field("ts", "day").commit()  # ts_day again: 1001
    assert spec_fields(table) == [
        (1000, "category", "identity", "category"),
        (1002, "id", "bucket[4]", "id_bucket_4"),
        (1003, "category", "truncate[1]", "category_truncate_1"),
        (1001, "ts", "day", "ts_day"),
    ]
    assert table.metadata.last_partition_id == 1003
    # Under another name it is another field (Iceberg matches the name when one is given).
    table.update_spec().remove_field("ts_day").commit()
    table.update_spec().add_field("ts", "day", name="d").commit()
    assert spec_fields(table)[-1] == (1004, "ts", "day", "d")


def test_removed_and_added_back_in_one_update_changes_nothing(table: mor.Table) -> None:
    before = table.metadata_location
    table.update_spec().remove_field("category").add_field("category").commit()
    assert table.metadata_location == before
    table.update_spec().remove_field("category").add_field("category", name="c").commit()
    assert spec_fields(table) == [(1000, "category", "identity", "c")]


def test_an_update_that_changes_nothing_writes_nothing(table: mor.Table) -> None:
    before = table.metadata_location
    table.update_spec().commit()
    with table.update_spec():
        pass
    assert table.metadata_location == before


def test_apply_previews_without_committing(table: mor.Table) -> None:
    before = table.metadata_location
    spec = table.update_spec().add_field("day(ts)").apply()
    assert [f.name for f in spec.fields] == ["category", "ts_day"] and spec.spec_id == 1
    assert table.metadata_location == before


def test_a_committed_update_cannot_be_used_again(table: mor.Table) -> None:
    update = table.update_spec().add_field("day(ts)")
    update.commit()
    with pytest.raises(mor.InvalidArgumentError, match="committed already"):
        update.add_field("bucket(2, id)")
    with pytest.raises(mor.InvalidArgumentError, match="committed already"):
        update.commit()


def test_a_read_only_table_cannot_change_spec(table: mor.Table) -> None:
    static = mor.StaticTable.from_metadata(table.metadata_location)
    with pytest.raises(mor.MorError, match="read-only"):
        static.update_spec()


INVALID = {
    "add existing field": lambda u: u.add_field("category"),
    "add existing by term": lambda u: u.add_field("identity(category)"),
    "add twice": lambda u: u.add_field("day(ts)").add_field("ts", "day"),
    "redundant time transforms": lambda u: u.add_field("day(ts)").add_field("hour(ts)"),
    "remove missing": lambda u: u.remove_field("nope"),
    "remove missing term": lambda u: u.remove_field("day(ts)"),
    "remove twice": lambda u: u.remove_field("category").remove_field("category"),
    "remove added": lambda u: u.add_field("day(ts)").remove_field("ts_day"),
    "rename missing": lambda u: u.rename_field("nope", "x"),
    "rename added": lambda u: u.add_field("day(ts)").rename_field("ts_day", "d"),
    "rename removed": lambda u: u.remove_field("category").rename_field("category", "c"),
    "remove renamed": lambda u: u.rename_field("category", "c").remove_field("category"),
    "duplicate name on add": lambda u: u.add_field("ts", "day", name="category"),
    "duplicate name on rename": lambda u: u.add_field("day(ts)").rename_field("category", "ts_day"),
    "duplicate names among adds": lambda u: u.add_field("day(ts)", name="p").add_field("bucket(2, id)", name="p"),
    "name is another column": lambda u: u.add_field("id", "bucket[4]", name="value"),
    "name is the source column, not identity": lambda u: u.add_field("id", "bucket[4]", name="id"),
    "rename to a column": lambda u: u.rename_field("category", "ts"),
    "empty name": lambda u: u.add_field("ts", "day", name=""),
    "empty new name": lambda u: u.rename_field("category", " "),
    "day of a double": lambda u: u.add_field("value", "day"),
    "bucket of a double": lambda u: u.add_field("value", "bucket[4]"),
    "truncate of a timestamp": lambda u: u.add_field("ts", "truncate[4]"),
    "bucket without a number": lambda u: u.add_field("id", "bucket"),
    "bucket of zero": lambda u: u.add_field("id", "bucket[0]"),
    "day with a number": lambda u: u.add_field("ts", "day[3]"),
    "unknown transform": lambda u: u.add_field("id", "zorder"),
    "unparsable transform": lambda u: u.add_field("id", "bucket[4"),
    "unknown column": lambda u: u.add_field("nope"),
    "unknown column in a term": lambda u: u.add_field("day(nope)"),
    "not a column": lambda u: u.add_field(""),
    "not a transform": lambda u: u.add_field("id", 4),
}


@pytest.mark.parametrize("name", sorted(INVALID))
def test_invalid_changes_raise_and_change_nothing(table: mor.Table, name: str) -> None:
    table.append(rows(range(6)))
    before = table.metadata_location
    update = table.update_spec()
    with pytest.raises(mor.PartitionEvolutionError) as e:
        INVALID[name](update)
    assert isinstance(e.value, mor.InvalidArgumentError) and isinstance(e.value, ValueError)
    update.commit()  # the failed call was not recorded; the valid ones before it were
    if name in ("add twice", "redundant time transforms", "duplicate name on rename"):
        assert table.spec().spec_id == 1 and "ts_day" in [f.name for f in table.spec().fields]
    elif name in ("remove twice", "rename removed"):
        assert table.spec().fields == ()
    elif name == "remove renamed":
        assert [f.name for f in table.spec().fields] == ["c"]
    elif name in ("remove added", "rename added"):
        assert [f.name for f in table.spec().fields] == ["category", "ts_day"]
    elif name == "duplicate names among adds":
        assert [f.name for f in table.spec().fields] == ["category", "p"]
    else:
        assert table.metadata_location == before
    assert mor.load_catalog(Path(local(table.location)).parents[1]).load_table("db.t").scan().to_arrow().num_rows == 6


def test_the_identity_field_may_take_its_column_name(catalog: mor.Catalog) -> None:
    table = catalog.create_table("db.u", schema=SCHEMA)
    table.update_spec().add_field("id", name="id").add_field("ts", "identity").commit()
    assert [f.name for f in table.spec().fields] == ["id", "ts"]


def test_a_nested_source_takes_its_full_name(catalog: mor.Catalog) -> None:
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("s", pa.struct([pa.field("x", pa.int32())]))])
    table = catalog.create_table("db.n", schema=schema)
    table.update_spec().add_field("s.x").add_field("bucket(2, s.x)").commit()
    assert [f.name for f in table.spec().fields] == ["s.x", "s.x_bucket_2"]  # more in test_nested_partition.py


# -- concurrency ---------------------------------------------------------------------------


def test_a_spec_change_on_a_stale_table_retries_when_the_default_spec_stayed(catalog: mor.Catalog, table: mor.Table) -> None:
    other = catalog.load_table("db.t")
    other.set_properties(**{"write.delete.mode": "copy-on-write"})
    other.append(rows(range(3)))
    table.update_spec().add_field("day(ts)").commit()
    fresh = catalog.load_table("db.t")
    assert [f.name for f in fresh.spec().fields] == ["category", "ts_day"]
    assert fresh.properties["write.delete.mode"] == "copy-on-write"
    assert fresh.scan().to_arrow().num_rows == 3


def test_a_concurrent_spec_change_is_a_conflict(catalog: mor.Catalog, table: mor.Table) -> None:
    other = catalog.load_table("db.t")
    other.update_spec().add_field("bucket(2, id)").commit()
    committed = other.metadata_location
    with pytest.raises(mor.CommitConflictError, match="default partition spec changed"):
        table.update_spec().add_field("day(ts)").commit()
    fresh = catalog.load_table("db.t")
    assert fresh.metadata_location == committed
    assert [f.name for f in fresh.spec().fields] == ["category", "id_bucket_2"]


def test_a_spec_added_meanwhile_by_a_delete_takes_the_next_id(catalog: mor.Catalog, table: mor.Table) -> None:
    other = catalog.load_table("db.t")
    other.append(rows(range(6)))
    other.delete_rows(pa.table({"id": pa.array([1], pa.int64())}))  # table-wide: adds an unpartitioned spec 1
    table.update_spec().add_field("day(ts)").commit()
    assert table.spec().spec_id == 2
    assert [s.spec_id for s in table.metadata.partition_specs] == [0, 1, 2]
    assert sorted(table.scan().to_arrow().column("id").to_pylist()) == [0, 2, 3, 4, 5]


# -- writers and readers across specs ------------------------------------------------------


def expected_partition(table: mor.Table, spec_id: int, row: dict[str, Any]) -> tuple:
    """A row's partition under a spec, by pyiceberg's transforms on plain values."""
    schema, spec = table.schema(), table.metadata.specs()[spec_id]
    out = []
    for f in spec.fields:
        source = schema.find_field(f.source_id)
        value = row[source.name]
        if isinstance(value, dt.datetime):
            value = (value - dt.datetime(1970, 1, 1)) // dt.timedelta(microseconds=1)
        out.append(None if str(f.transform) == "void" else f.transform.transform(source.field_type)(value))
    return tuple(out)


def assert_files_hold_their_partitions(table: mor.Table, **scan_args: Any) -> None:
    for task in table.scan(**scan_args).plan_files():
        f = task.data_file
        for row in pq.read_table(local(f.file_path)).to_pylist():
            assert expected_partition(table, f.spec_id, row) == f.partition, (f.file_path, row)
        for d in task.delete_files:
            if d.content == FileContent.POSITION_DELETES:
                assert (d.spec_id, d.partition) == (f.spec_id, f.partition)


def evolved(catalog: mor.Catalog, name: str = "e") -> tuple[mor.Table, Model]:
    """Live data under three specs: [category]; [ts_day, id_bucket_4]; [id_bucket_4, category]
    (category's field id 1000 comes back)."""
    table = catalog.create_table(f"db.{name}", schema=SCHEMA, partition_by=["category"])
    model: Model = {}
    for ids in (range(0, 15), range(15, 30)):
        table.append(rows(ids))
        add(model, rows(ids))
    with table.update_spec() as update:
        update.remove_field("category").add_field("day(ts)").add_field("bucket(4, id)")
    table.append(rows(range(30, 60)))
    add(model, rows(range(30, 60)))
    with table.update_spec() as update:
        update.remove_field("ts_day").add_field("category")
    table.append(rows(range(60, 90)))
    add(model, rows(range(60, 90)))
    return table, model


def test_appends_write_the_default_spec(catalog: mor.Catalog) -> None:
    table, model = evolved(catalog)
    assert spec_fields(table) == [(1002, "id", "bucket[4]", "id_bucket_4"), (1000, "category", "identity", "category")]
    by_spec: dict[int, set[int]] = {}
    for task in table.scan().plan_files():
        ids = pq.read_table(local(task.data_file.file_path)).column("id").to_pylist()
        by_spec.setdefault(task.data_file.spec_id, set()).update(ids)
    assert by_spec == {0: set(range(30)), 1: set(range(30, 60)), 2: set(range(60, 90))}
    assert_files_hold_their_partitions(table)
    assert_rows(table.scan().to_arrow(), model)


def test_void_field_writes_null_partitions(table: mor.Table) -> None:
    table.update_spec().add_field("value", "void").commit()
    table.append(rows(range(6)))
    assert {t.data_file.partition for t in table.scan().plan_files()} == {("a", None), ("b", None), ("c", None)}
    assert_rows(table.scan(filter="value > 1").to_arrow(), [r for r in rows(range(6)).to_pylist() if r["value"] > 1])


FILTERS = [
    "category = 'a'",
    "category != 'b'",
    "category in ('a', 'c')",
    "id = 37",
    "id in (3, 41, 77)",
    "id < 20 or id > 80",
    "ts >= '2024-01-05T00:00:00'",
    "ts < '2024-01-03T00:00:00' and category = 'c'",
    "value > 30",
    "not (category = 'a')",
    "category starts with 'b'",
    "category is null",
]


@pytest.mark.parametrize("text", FILTERS)
def test_filters_prune_per_spec_and_never_drop_a_row(catalog: mor.Catalog, text: str) -> None:
    table, model = evolved(catalog)
    every = table.scan().to_arrow()
    expected = every.filter(pc.field("id").isin(table.scan().to_arrow().filter(_arrow_filter(text)).column("id")))
    got = table.scan(filter=text).to_arrow()
    assert_rows(got, expected.to_pylist())
    # Every file a row matches from is planned.
    planned = {t.data_file.file_path for t in table.scan(filter=text).plan_files()}
    for task in table.scan().plan_files():
        held = pq.read_table(local(task.data_file.file_path)).filter(_arrow_filter(text))
        if held.num_rows:
            assert task.data_file.file_path in planned


def _arrow_filter(text: str) -> pc.Expression:
    """The filters above as Arrow expressions (written independently of mor's parser)."""
    f = pc.field
    ts = lambda s: pa.scalar(dt.datetime.fromisoformat(s), pa.timestamp("us"))  # noqa: E731
    return {
        "category = 'a'": f("category") == "a",
        "category != 'b'": f("category") != "b",
        "category in ('a', 'c')": f("category").isin(["a", "c"]),
        "id = 37": f("id") == 37,
        "id in (3, 41, 77)": f("id").isin([3, 41, 77]),
        "id < 20 or id > 80": (f("id") < 20) | (f("id") > 80),
        "ts >= '2024-01-05T00:00:00'": f("ts") >= ts("2024-01-05T00:00:00"),
        "ts < '2024-01-03T00:00:00' and category = 'c'": (f("ts") < ts("2024-01-03T00:00:00")) & (f("category") == "c"),
        "value > 30": f("value") > 30,
        "not (category = 'a')": ~(f("category") == "a"),
        "category starts with 'b'": pc.starts_with(f("category"), "b"),
        "category is null": f("category").is_null(),
    }[text]


def test_partition_pruning_uses_each_specs_own_transforms(catalog: mor.Catalog) -> None:
    table, _ = evolved(catalog)
    tasks = table.scan(filter="category = 'a'").plan_files()
    # Spec 0 and spec 2 prune by category; spec 1 has no category field, so its files stay
    # unless their column bounds rule them out.
    assert {t.data_file.partition for t in tasks if t.data_file.spec_id == 0} == {("a",)}
    assert {t.data_file.partition[1] for t in tasks if t.data_file.spec_id == 2} == {"a"}
    tasks = table.scan(filter="id = 37").plan_files()
    bucket = BucketTransform(4).transform(pa_long())(37)
    assert all(t.data_file.partition[1] == bucket for t in tasks if t.data_file.spec_id == 1)
    assert all(t.data_file.partition[0] == bucket for t in tasks if t.data_file.spec_id == 2)
    day = DayTransform().transform(pa_timestamp())(rows([37]).column("ts")[0].value)
    assert all(t.data_file.partition[0] == day for t in tasks if t.data_file.spec_id == 1)


def pa_long() -> Any:
    from pyiceberg.types import LongType

    return LongType()


def pa_timestamp() -> Any:
    from pyiceberg.types import TimestampType

    return TimestampType()


# -- DML after spec changes: each against the model --------------------------------------------


def _delete(model: Model, keep: Callable[[dict[str, Any]], bool]) -> None:
    for i in [i for i, r in model.items() if not keep(r)]:
        del model[i]


def _update(model: Model, where: Callable[[dict[str, Any]], bool], **values: Any) -> None:
    for r in model.values():
        if where(r):
            r.update(values)


def _upsert(model: Model, source: pa.Table) -> None:
    add(model, source)


UPSERT_SOURCE = rows([2, 16, 31, 44, 61, 75, 200, 201], value=lambda i: -float(i))

DML: dict[str, tuple[Callable[[mor.Table], Any], Callable[[Model], None]]] = {
    "delete merge-on-read": (
        lambda t: t.delete("category = 'b' or id in (31, 62)"),
        lambda m: _delete(m, lambda r: not (r["category"] == "b" or r["id"] in (31, 62))),
    ),
    "delete copy-on-write": (
        lambda t: t.delete("category = 'b' or id in (31, 62)", mode="copy-on-write"),
        lambda m: _delete(m, lambda r: not (r["category"] == "b" or r["id"] in (31, 62))),
    ),
    "update merge-on-read": (
        lambda t: t.update({"category": "'z'", "value": -1.0}, where="id > 10 and id < 70"),
        lambda m: _update(m, lambda r: 10 < r["id"] < 70, category="z", value=-1.0),
    ),
    "update copy-on-write": (
        lambda t: t.update({"category": "'z'", "value": -1.0}, where="id > 10 and id < 70", mode="copy-on-write"),
        lambda m: _update(m, lambda r: 10 < r["id"] < 70, category="z", value=-1.0),
    ),
    "upsert position": (lambda t: t.upsert(UPSERT_SOURCE, on=["id"]), lambda m: _upsert(m, UPSERT_SOURCE)),
    "upsert equality": (lambda t: t.upsert(UPSERT_SOURCE, on=["id"], strategy="equality"), lambda m: _upsert(m, UPSERT_SOURCE)),
    "upsert copy-on-write": (lambda t: t.upsert(UPSERT_SOURCE, on=["id"], mode="copy-on-write"), lambda m: _upsert(m, UPSERT_SOURCE)),
    "merge": (
        lambda t: t.merge(
            UPSERT_SOURCE,
            on=["id"],
            when_matched_delete=pc.field("source.id") < 20,
            when_matched_update={"value": pc.field("source.value")},
            when_not_matched_insert="*",
        ),
        lambda m: (
            _delete(m, lambda r: r["id"] not in (2, 16)),
            [m[i].update(value=-float(i)) for i in (31, 44, 61, 75)],
            add(m, rows([200, 201], value=lambda i: -float(i))),
        ),
    ),
    "delete_rows by id": (
        lambda t: t.delete_rows(pa.table({"id": pa.array([1, 16, 33, 62, 88, 500], pa.int64())})),
        lambda m: _delete(m, lambda r: r["id"] not in (1, 16, 33, 62, 88)),
    ),
    "delete_rows by id and category": (
        lambda t: t.delete_rows(pa.table({"id": pa.array([1, 16, 33, 62], pa.int64()), "category": ["b", "b", "a", "c"]})),
        lambda m: _delete(m, lambda r: (r["id"], r["category"]) not in {(1, "b"), (16, "b"), (33, "a"), (62, "c")}),
    ),
    "truncate": (lambda t: t.truncate(), lambda m: m.clear()),
}


@pytest.mark.parametrize("name", sorted(DML))
def test_dml_after_spec_changes_gives_the_models_rows(catalog: mor.Catalog, name: str) -> None:
    table, model = evolved(catalog)
    before_snapshot = table.current_snapshot().snapshot_id
    before_rows = [dict(r) for r in model.values()]
    run, change = DML[name]
    run(table)
    change(model)
    assert_rows(table.scan().to_arrow(), model)
    assert_files_hold_their_partitions(table)
    # New data files (inserted or rewritten rows) are in the default spec.
    added = {
        t.data_file.spec_id
        for t in table.scan().plan_files()
        if t.data_file.data_sequence_number == table.current_snapshot().sequence_number
    }
    assert added <= {table.spec().spec_id}
    # The same changes again from a fresh load, then time travel to before them.
    assert_rows(catalog.load_table(f"db.{table.identifier.split('.')[-1]}").scan().to_arrow(), model)
    assert_rows(table.scan(snapshot_id=before_snapshot).to_arrow(), before_rows)
    # Then compaction moves every row it rewrites into the default spec, rows unchanged.
    table.compact(min_input_files=2)
    assert_rows(table.scan().to_arrow(), model)
    assert_files_hold_their_partitions(table)


def test_copy_on_write_rewrites_rows_into_the_default_spec(catalog: mor.Catalog) -> None:
    table, model = evolved(catalog)
    table.delete("id = 3", mode="copy-on-write")  # a spec-0 file: its other rows are rewritten
    _delete(model, lambda r: r["id"] != 3)
    tasks = table.scan().plan_files()
    rewritten = [t for t in tasks if t.data_file.data_sequence_number == table.current_snapshot().sequence_number]
    assert rewritten and all(t.data_file.spec_id == table.spec().spec_id for t in rewritten)
    assert_files_hold_their_partitions(table)
    assert_rows(table.scan().to_arrow(), model)


def test_position_deletes_stay_in_their_data_files_spec(catalog: mor.Catalog) -> None:
    table, model = evolved(catalog)
    # One row of a file of several rows in each spec (a file whose rows all go is dropped).
    chosen = []
    for spec_id in (0, 1, 2):
        task = next(t for t in table.scan().plan_files() if t.data_file.spec_id == spec_id and t.data_file.record_count > 1)
        chosen.append(pq.read_table(local(task.data_file.file_path)).column("id")[0].as_py())
    table.delete(f"id in ({', '.join(map(str, chosen))})")
    _delete(model, lambda r: r["id"] not in chosen)
    with_deletes = [t for t in table.scan().plan_files() if t.delete_files]
    assert {t.data_file.spec_id for t in with_deletes} == {0, 1, 2}
    for t in with_deletes:
        assert [(d.spec_id, d.partition) for d in t.delete_files] == [(t.data_file.spec_id, t.data_file.partition)]
    assert_rows(table.scan().to_arrow(), model)


def test_equality_deletes_cover_every_spec_with_live_data(catalog: mor.Catalog) -> None:
    table, model = evolved(catalog)
    # Key (id, category): every spec holding data has only key columns... except spec 1
    # (ts_day): so the delete is table-wide.
    table.delete_rows(pa.table({"id": pa.array([1, 40], pa.int64()), "category": ["b", "b"]}))
    _delete(model, lambda r: (r["id"], r["category"]) not in {(1, "b"), (40, "b")})
    new = [d for t in table.scan().plan_files() for d in t.equality_deletes]
    assert {table.metadata.specs()[d.spec_id].fields for d in new} == {()}
    assert_rows(table.scan().to_arrow(), model)


def test_equality_deletes_are_scoped_per_spec_when_each_spec_allows(catalog: mor.Catalog) -> None:
    table = catalog.create_table("db.s", schema=SCHEMA, partition_by=["category"])
    model: Model = {}
    table.append(rows(range(0, 30)))
    table.update_spec().add_field("bucket(4, id)").commit()
    table.append(rows(range(30, 60)))
    for ids in (range(0, 30), range(30, 60)):
        add(model, rows(ids))
    keys = pa.table({"id": pa.array([1, 2, 40, 41], pa.int64()), "category": ["b", "a", "b", "c"]})
    table.delete_rows(keys)
    _delete(model, lambda r: (r["id"], r["category"]) not in {(1, "b"), (40, "b"), (41, "c")})  # (2, 'a') holds no row
    deletes = {d.file_path: d for t in table.scan().plan_files() for d in t.equality_deletes}
    for d in deletes.values():
        held = pq.read_table(local(d.file_path)).to_pylist()
        assert {expected_partition(table, d.spec_id, r) for r in held} == {d.partition}
    assert {d.spec_id for d in deletes.values()} == {0, 1}
    assert len(table.metadata.partition_specs) == 2  # no unpartitioned spec was needed
    assert_rows(table.scan().to_arrow(), model)
    # The per-spec files reached the files of both specs: upsert by the same key does too.
    source = rows([5, 50], value=lambda i: 99.0)
    table.upsert(source, on=["id", "category"], strategy="equality")
    add(model, source)
    assert_rows(table.scan().to_arrow(), model)


def test_delete_rows_covers_old_spec_files_after_all_data_moved_specs(catalog: mor.Catalog) -> None:
    """Once compaction moved every row to the default spec, partition-scoped deletes suffice."""
    table = catalog.create_table("db.m", schema=SCHEMA, partition_by=["category"])
    model: Model = {}
    for ids in (range(0, 10), range(10, 20)):
        table.append(rows(ids))
        add(model, rows(ids))
    table.update_spec().add_field("bucket(2, id)").commit()
    table.compact(min_input_files=2)
    assert {t.data_file.spec_id for t in table.scan().plan_files()} == {1}
    table.delete_rows(pa.table({"id": pa.array([4, 5], pa.int64()), "category": ["a", "c"]}))
    _delete(model, lambda r: (r["id"], r["category"]) not in {(4, "a"), (5, "c")})
    assert {d.spec_id for t in table.scan().plan_files() for d in t.equality_deletes} == {1}
    assert_rows(table.scan().to_arrow(), model)


def test_a_partition_scoped_delete_reaches_only_its_own_spec(catalog: mor.Catalog) -> None:
    """Spec 0 partitions by category, spec 1 by truncate[1](category): the partition tuples are
    the same ('a',), yet an equality delete in spec 0 must not reach spec 1's files."""
    table = catalog.create_table("db.x", schema=SCHEMA, partition_by=["category"])
    table.append(rows(range(0, 6)))
    table.update_spec().remove_field("category").add_field("category", "truncate[1]").commit()
    table.append(rows(range(6, 12)))
    spec0 = table.metadata.specs()[0]
    keys = pa.table({"category": ["a"]})
    ids = (table.schema().find_field("category").field_id,)
    deletes = write_equality_delete_files(
        table.io, table.location, table.schema(), spec0, keys, ids, WriteOptions(table.metadata.properties)
    )
    table.metadata, table.metadata_location = commit_changes(
        table.io, table.operations(), table.metadata, table.metadata_location, Changes(Operation.DELETE, added_deletes=deletes)
    )
    survivors = sorted(table.scan().to_arrow().column("id").to_pylist())
    assert survivors == [i for i in range(12) if not (i < 6 and i % 3 == 0)]
    for task in table.scan().plan_files():
        assert bool(task.equality_deletes) == (task.data_file.spec_id == 0 and task.data_file.partition == ("a",))


# -- compaction ------------------------------------------------------------------------------


def test_compaction_moves_rows_into_the_default_spec(catalog: mor.Catalog) -> None:
    table, model = evolved(catalog)
    table.delete("id in (3, 33, 63)")
    _delete(model, lambda r: r["id"] not in (3, 33, 63))
    read_seq = table.current_snapshot().sequence_number
    result = table.compact(min_input_files=2)
    assert result.rewritten_data_files > 0
    tasks = table.scan().plan_files()
    assert {t.data_file.spec_id for t in tasks} == {table.spec().spec_id}
    assert all(not t.delete_files for t in tasks)
    # The new files keep the data sequence number of the snapshot compaction read.
    assert len([t for t in tasks if t.data_file.data_sequence_number == read_seq]) == result.added_data_files
    assert_files_hold_their_partitions(table)
    assert_rows(table.scan().to_arrow(), model)


def test_compaction_groups_old_files_by_the_default_partition_when_derivable(catalog: mor.Catalog) -> None:
    table = catalog.create_table("db.g", schema=SCHEMA, partition_by=["category", "bucket(2, id)"])
    model: Model = {}
    for ids in (range(0, 12), range(12, 24), range(24, 36)):
        table.append(rows(ids))
        add(model, rows(ids))
    table.update_spec().remove_field("id_bucket_2").commit()  # [category]: a new spec
    table.append(rows(range(36, 48)))
    add(model, rows(range(36, 48)))
    files_before = len(table.scan().plan_files())
    result = table.compact(min_input_files=2)
    assert result.rewritten_data_files == files_before  # each category has at least two files
    tasks = table.scan().plan_files()
    assert sorted(t.data_file.partition for t in tasks) == [("a",), ("b",), ("c",)]
    assert all(t.data_file.spec_id == table.spec().spec_id for t in tasks)
    assert_rows(table.scan().to_arrow(), model)


def test_compaction_after_a_spec_change_keeps_time_travel(catalog: mor.Catalog) -> None:
    table, model = evolved(catalog)
    snapshots = [(s.snapshot_id, table.scan(snapshot_id=s.snapshot_id).to_arrow()) for s in table.snapshots()]
    table.compact(min_input_files=2)
    for snapshot_id, expected in snapshots:
        assert_rows(table.scan(snapshot_id=snapshot_id).to_arrow(), expected.to_pylist())
    assert_rows(table.scan().to_arrow(), model)


@pytest.mark.parametrize("delete_spec", [0, 1])
def test_compaction_conflicts_with_a_concurrent_scoped_equality_delete_on_moved_rows(catalog: mor.Catalog, delete_spec: int) -> None:
    """Rows move from spec 0 to spec 1 while an equality delete of row 4 scoped to a partition
    lands. In spec 0 it reaches row 4's file, and would stop reaching the row once moved; in
    spec 1 it reaches no file of row 4, and would start to. Compaction re-plans either way,
    and the delete means what it meant when it was committed."""
    table = catalog.create_table("db.c", schema=SCHEMA, partition_by=["category"])
    for ids in (range(0, 10), range(10, 20)):
        table.append(rows(ids))
    table.update_spec().add_field("bucket(2, id)").commit()
    other = catalog.load_table("db.c")
    delete_in = other.metadata.specs()[delete_spec]
    keys = pa.table({"id": pa.array([4], pa.int64()), "category": ["b"]})
    fields = tuple(other.schema().find_field(n).field_id for n in ("id", "category"))

    from mor.maintenance import compact as compact_module

    original = compact_module.write_compaction
    landed: list[bool] = []

    def write_then_race(*args: Any, **kwargs: Any) -> Any:
        validate = original(*args, **kwargs)
        if not landed:
            landed.append(True)
            deletes = write_equality_delete_files(other.io, other.location, other.schema(), delete_in, keys, fields, WriteOptions({}))
            commit_changes(
                other.io, other.operations(), other.metadata, other.metadata_location, Changes(Operation.DELETE, added_deletes=deletes)
            )
        return validate

    compact_module.write_compaction = write_then_race  # type: ignore[attr-defined]
    try:
        table.compact(min_input_files=2)
    finally:
        compact_module.write_compaction = original  # type: ignore[attr-defined]
    assert landed
    expected = [i for i in range(20) if i != 4] if delete_spec == 0 else list(range(20))
    assert sorted(table.scan().to_arrow().column("id").to_pylist()) == expected
    assert sorted(catalog.load_table("db.c").scan().to_arrow().column("id").to_pylist()) == expected
    assert {t.data_file.spec_id for t in table.scan().plan_files()} == {1}


def test_filter_by_pyiceberg_expression_across_specs(catalog: mor.Catalog) -> None:
    table, model = evolved(catalog)
    assert_rows(table.scan(filter=EqualTo("category", "c")).to_arrow(), [r for r in model.values() if r["category"] == "c"])


def test_transforms_are_the_ones_pyiceberg_names(table: mor.Table) -> None:
    table.update_spec().add_field("id", "truncate[10]").commit()
    (field,) = [f for f in table.spec().fields if f.name == "id_truncate_10"]
    assert field.transform == parse_transform("truncate[10]") == TruncateTransform(10)
    assert isinstance(table.spec().fields[0].transform, IdentityTransform)
