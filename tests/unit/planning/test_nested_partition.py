"""Partition specs whose source is a primitive field inside a struct (`s.d`, `day(s.ts)`).

The Iceberg spec allows such a source unless a list or a map lies on its path. Checked here:
terms bind to the nested field by id and take Iceberg Java's default names (the full path); the
partition value of every written file is what pyiceberg's transform gives for each of its rows
(a null struct gives a null value); filters on nested fields prune files and never a file
holding a match; DELETE (both modes), UPDATE, UPSERT (both strategies), MERGE and delete_rows
leave the rows a plain model says; spec and schema evolution keep their rules.

The table also has a top-level column `d`: the leaf name of `s.d`, which must never be taken
for it (partition sources are compared by field id).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from pyiceberg.utils.datetime import date_to_days, datetime_to_micros
from unit_helpers import avro_file, live_raw_entries, local

import mor
from mor.errors import InvalidArgumentError, PartitionEvolutionError, SchemaEvolutionError

START = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
STRUCT = pa.struct([pa.field("d", pa.int32()), pa.field("ts", pa.timestamp("us", tz="UTC")), pa.field("name", pa.string())])
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("d", pa.int32()), pa.field("s", STRUCT)])

Row = dict[str, Any]
Model = dict[int, Row]


def make_row(i: int) -> Row:
    """`s` is null for every 9th row; `s.d` is null (in a present struct) for every 11th."""
    s = None if i % 9 == 4 else {"d": None if i % 11 == 5 else i % 4, "ts": START + dt.timedelta(hours=13 * i), "name": f"{'ab'[i % 2]}{i}"}
    return {"id": i, "d": i % 5, "s": s}


def make_rows(ids: range | list[int]) -> pa.Table:
    return pa.Table.from_pylist([make_row(i) for i in ids], schema=SCHEMA)


def nested(row: Row, name: str) -> Any:
    return None if row["s"] is None else row["s"][name]


def rows_of(table: mor.Table, **scan_args: Any) -> list[Row]:
    return sorted(table.scan(**scan_args).to_arrow().to_pylist(), key=lambda r: r["id"])


def model_rows(model: Model) -> list[Row]:
    return [model[i] for i in sorted(model)]


def new_table(catalog: mor.Catalog, partition_by: list[str], *appends: range, name: str = "t") -> tuple[mor.Table, Model]:
    table = catalog.create_table(f"db.{name}", schema=SCHEMA, partition_by=partition_by)
    model: Model = {}
    for ids in appends:
        table.append(make_rows(ids))
        model.update((i, make_row(i)) for i in ids)
    return table, model


# -- an independent look at the files: raw Avro and Parquet, pyiceberg's transforms --------------


def live_data_files(table: mor.Table) -> list[tuple[str, dict[int, Any]]]:
    """(path, partition values by partition field id) of each live data file, read from the
    manifests with fastavro by field id (not by the Avro field name)."""
    names_by_manifest: dict[str, dict[int, str]] = {}
    out = []
    for entry in live_raw_entries(table):
        if entry.content != 0:
            continue
        manifest = entry.manifest["manifest_path"]
        if manifest not in names_by_manifest:
            _, avro_schema, _ = avro_file(manifest)
            data_file = next(f for f in avro_schema["fields"] if f["name"] == "data_file")["type"]
            partition = next(f for f in data_file["fields"] if f["name"] == "partition")["type"]
            names_by_manifest[manifest] = {f["field-id"]: f["name"] for f in partition["fields"]}
        names = names_by_manifest[manifest]
        out.append((entry.path, {field_id: entry.data_file["partition"][name] for field_id, name in names.items()}))
    return out


def as_iceberg_value(value: Any) -> Any:
    """A Python value as Iceberg's transforms take it (and as Avro decodes partition dates)."""
    if isinstance(value, dt.datetime):
        return datetime_to_micros(value)
    if isinstance(value, dt.date):
        return date_to_days(value)
    return value


def path_by_id(fields: list[pa.Field], field_id: int) -> list[str] | None:
    """Names down to the Parquet column of `field_id` (by the file's field ids, so a column
    renamed since the file was written is found too)."""
    for f in fields:
        if f.metadata and f.metadata.get(b"PARQUET:field_id") == str(field_id).encode():
            return [f.name]
        if pa.types.is_struct(f.type):
            below = path_by_id(list(f.type), field_id)
            if below is not None:
                return [f.name, *below]
    return None


def source_value(path: list[str], row: Row) -> Any:
    value: Any = row
    for name in path:
        value = None if value is None else value[name]
    return value


def assert_files_hold_their_partition(table: mor.Table) -> None:
    """Each row of each live data file has the file's partition value, by pyiceberg's transform."""
    schema, specs = table.schema(), table.metadata.specs()
    spec_of = {e.path: e.manifest["partition_spec_id"] for e in live_raw_entries(table)}
    checked = 0
    for path, partition in live_data_files(table):
        spec = specs[spec_of[path]]
        data = pq.read_table(local(path))
        paths = {f.source_id: path_by_id(list(data.schema), f.source_id) for f in spec.fields}
        for row in data.to_pylist():
            for f in spec.fields:
                source = schema.find_field(f.source_id)
                value = source_value(paths[f.source_id], row)  # type: ignore[arg-type]
                expected = None if value is None else f.transform.transform(source.field_type)(as_iceberg_value(value))
                assert as_iceberg_value(partition[f.field_id]) == expected, (path, f.name, row)
                checked += 1
    assert checked > 0


# -- binding terms ---------------------------------------------------------------------------


def test_terms_on_nested_fields_bind_by_id_with_the_full_path_as_name(catalog: mor.Catalog) -> None:
    table = catalog.create_table("db.t", schema=SCHEMA, partition_by=["s.d", "day(s.ts)", "bucket(4, s.d)", "truncate(1, s.name)", "d"])
    schema = table.schema()
    ids = {name: schema.find_field(name).field_id for name in ("s.d", "s.ts", "s.name", "d")}
    assert [(f.source_id, str(f.transform), f.name) for f in table.spec().fields] == [
        (ids["s.d"], "identity", "s.d"),
        (ids["s.ts"], "day", "s.ts_day"),
        (ids["s.d"], "bucket[4]", "s.d_bucket_4"),
        (ids["s.name"], "truncate[1]", "s.name_truncate_1"),
        (ids["d"], "identity", "d"),
    ]


def test_a_field_two_structs_deep_is_a_source(catalog: mor.Catalog) -> None:
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("a", pa.struct([pa.field("b", pa.struct([pa.field("c", pa.string())]))]))])
    table = catalog.create_table("db.deep", schema=schema, partition_by=["a.b.c"])
    rows = [{"id": 0, "a": {"b": {"c": "x"}}}, {"id": 1, "a": {"b": None}}, {"id": 2, "a": None}, {"id": 3, "a": {"b": {"c": "y"}}}]
    table.append(pa.Table.from_pylist(rows, schema=schema))
    assert [f.name for f in table.spec().fields] == ["a.b.c"]
    assert sorted(p[1000] or "" for _, p in live_data_files(table)) == ["", "x", "y"]
    assert sorted(r["id"] for r in table.scan(filter="a.b.c = 'y'").to_arrow().to_pylist()) == [3]
    assert sorted(r["id"] for r in table.scan(filter="a.b.c is null").to_arrow().to_pylist()) == [1, 2]


@pytest.mark.parametrize("term", ["l.element", "m.key", "m.value", "l.element.x", "bucket(2, m.value)"])
def test_a_source_inside_a_list_or_a_map_is_refused(catalog: mor.Catalog, term: str) -> None:
    schema = pa.schema(
        [
            pa.field("id", pa.int64()),
            pa.field("l", pa.list_(pa.struct([pa.field("x", pa.int32())]))) if term.endswith(".x") else pa.field("l", pa.list_(pa.int32())),
            pa.field("m", pa.map_(pa.string(), pa.int32())),
        ]
    )
    with pytest.raises(InvalidArgumentError, match="inside a list or a map"):
        catalog.create_table("db.t", schema=schema, partition_by=[term])
    table = catalog.create_table("db.u", schema=schema)
    with pytest.raises(PartitionEvolutionError, match="inside a list or a map"):
        table.update_spec().add_field(term)


def test_a_struct_itself_is_no_source(catalog: mor.Catalog) -> None:
    with pytest.raises(InvalidArgumentError, match="cannot apply to column 's'"):
        catalog.create_table("db.t", schema=SCHEMA, partition_by=["s"])


# -- writing -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "partition_by",
    [["s.d"], ["day(s.ts)"], ["bucket(3, s.d)"], ["truncate(1, s.name)", "hour(s.ts)"], ["s.d", "d"], ["month(s.ts)", "bucket(2, id)"]],
)
def test_append_writes_the_partition_values_of_pyiceberg_transforms(catalog: mor.Catalog, partition_by: list[str]) -> None:
    table, model = new_table(catalog, partition_by, range(40), range(40, 70))
    assert_files_hold_their_partition(table)
    assert rows_of(table) == model_rows(model)


def test_a_null_struct_and_a_null_field_give_a_null_partition_value(catalog: mor.Catalog) -> None:
    table, _ = new_table(catalog, ["s.d", "day(s.ts)"], [4, 5, 6])  # s null, s.d null, s.d = 2
    by_id = {}
    for path, partition in live_data_files(table):
        for row in pq.read_table(local(path)).to_pylist():
            by_id[row["id"]] = (partition[1000], as_iceberg_value(partition[1001]))
    day = (START + dt.timedelta(hours=13 * 5) - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)).days
    assert by_id == {4: (None, None), 5: (None, day), 6: (2, day + 1)}


# -- filters -------------------------------------------------------------------------------------


def _before(hours: int) -> str:
    return (START + dt.timedelta(hours=hours)).isoformat()


# (filter, the rows it selects in plain Python, whether it must prune some file)
FILTERS: list[tuple[str, Callable[[Row], bool], bool]] = [
    ("s.d = 1", lambda r: nested(r, "d") == 1, True),
    ("s.d in (0, 2)", lambda r: nested(r, "d") in (0, 2), True),
    ("s.d is null", lambda r: nested(r, "d") is None, True),
    ("s.d is not null", lambda r: nested(r, "d") is not None, True),
    ("s.d != 1", lambda r: nested(r, "d") is not None and nested(r, "d") != 1, True),
    ("not s.d >= 1", lambda r: nested(r, "d") is not None and nested(r, "d") < 1, True),
    ("s.d > 2 or id < 3", lambda r: (nested(r, "d") or 0) > 2 or r["id"] < 3, True),
    ("d = 1", lambda r: r["d"] == 1, False),  # the top-level column with the leaf name
    ("s.d = 1 and d = 1", lambda r: nested(r, "d") == 1 and r["d"] == 1, True),
    (f"s.ts < '{_before(24 * 3)}'", lambda r: nested(r, "ts") is not None and nested(r, "ts") < START + dt.timedelta(hours=72), True),
    (f"s.ts >= '{_before(24 * 20)}'", lambda r: nested(r, "ts") is not None and nested(r, "ts") >= START + dt.timedelta(hours=480), True),
    ("s.name starts with 'b'", lambda r: (nested(r, "name") or "").startswith("b"), True),
    ("s.name = 'a10'", lambda r: nested(r, "name") == "a10", True),
    ("s.name is null", lambda r: nested(r, "name") is None, True),
]


@pytest.mark.parametrize("partition_by", [["s.d", "day(s.ts)"], ["bucket(3, s.d)", "truncate(1, s.name)"], ["month(s.ts)"]])
def test_filters_on_nested_fields_prune_and_never_drop_a_match(catalog: mor.Catalog, partition_by: list[str]) -> None:
    table, model = new_table(catalog, partition_by, range(30), range(30, 60), range(60, 80))
    files = {path: pq.read_table(local(path)).to_pylist() for path, _ in live_data_files(table)}
    pruned_somewhere = 0
    for text, selects, _ in FILTERS:
        assert rows_of(table, filter=text) == [r for r in model_rows(model) if selects(r)], text
        planned = {t.data_file.file_path for t in table.scan(filter=text).plan_files()}
        holding = {p for p, rows in files.items() if any(selects(r) for r in rows)}
        assert holding <= planned, text
        pruned_somewhere += len(planned) < len(files)
    assert pruned_somewhere >= 5


def test_filters_prune_by_each_nested_partition_field(catalog: mor.Catalog) -> None:
    table, _ = new_table(catalog, ["s.d", "day(s.ts)", "truncate(1, s.name)"], range(80))
    files = len(live_data_files(table))
    for text, _, must_prune in FILTERS:
        planned = len(table.scan(filter=text).plan_files())
        assert planned < files or not must_prune, (text, planned, files)


# -- DML against a model ----------------------------------------------------------------------------

SPECS = [["s.d"], ["bucket(2, s.d)", "day(s.ts)"]]


@pytest.mark.parametrize("partition_by", SPECS)
@pytest.mark.parametrize("mode", ["merge-on-read", "copy-on-write"])
def test_delete_and_update_by_nested_fields(catalog: mor.Catalog, partition_by: list[str], mode: str) -> None:
    table, model = new_table(catalog, partition_by, range(30), range(30, 50))
    table.delete("s.d = 1", mode=mode)
    model = {i: r for i, r in model.items() if nested(r, "d") != 1}
    table.delete("s.d is null and d = 0", mode=mode)
    model = {i: r for i, r in model.items() if not (nested(r, "d") is None and r["d"] == 0)}
    assert rows_of(table) == model_rows(model)

    table.update({"d": 9}, where="s.d = 2", mode=mode)  # stays in its partition
    for r in model.values():
        if nested(r, "d") == 2:
            r["d"] = 9
    moved = pc.make_struct(
        pc.field("s", "d") + pc.scalar(pa.scalar(10, pa.int32())),
        pc.field("s", "ts"),
        pc.field("s", "name"),
        field_names=["d", "ts", "name"],
    )
    table.update({"s": moved}, where="s.d = 3", mode=mode)  # moves to another partition
    for r in model.values():
        if nested(r, "d") == 3:
            r["s"] = {**r["s"], "d": 13}
    table.update({"s": {"d": 7, "ts": START, "name": "z"}}, where="id in (4, 13)", mode=mode)  # a null struct gets one
    for i in (4, 13):
        if i in model:
            model[i]["s"] = {"d": 7, "ts": START, "name": "z"}
    assert rows_of(table) == model_rows(model)
    assert rows_of(table, filter="s.d = 13") == [r for r in model_rows(model) if nested(r, "d") == 13]
    assert_files_hold_their_partition(table)


@pytest.mark.parametrize("partition_by", SPECS)
@pytest.mark.parametrize("strategy", ["position", "equality"])
def test_upsert_merge_and_delete_rows(catalog: mor.Catalog, partition_by: list[str], strategy: str) -> None:
    table, model = new_table(catalog, partition_by, range(30))
    changed = [{**make_row(i + 100), "id": i} for i in (1, 3, 7)] + [make_row(i) for i in (40, 41)]  # 3 gets a null struct
    table.upsert(pa.Table.from_pylist(changed, schema=SCHEMA), on=["id"], strategy=strategy)
    model.update((r["id"], r) for r in changed)
    assert rows_of(table) == model_rows(model)

    source = pa.Table.from_pylist([make_row(i) for i in (2, 3, 5, 50)], schema=SCHEMA)
    table.merge(
        source, on=["id"],
        when_matched_delete=pc.field("source.id") == 2,
        when_matched_update={"d": pc.field("source.d") + 20},
        when_not_matched_insert="*",
    )  # fmt: skip
    del model[2]
    model[3]["d"] = make_row(3)["d"] + 20
    model[5]["d"] = make_row(5)["d"] + 20
    model[50] = make_row(50)
    assert rows_of(table) == model_rows(model)

    table.delete_rows(pa.table({"id": [7, 8, 41, 99]}))
    for i in (7, 8, 41):
        del model[i]
    assert rows_of(table) == model_rows(model)
    assert rows_of(table, filter="s.d = 0") == [r for r in model_rows(model) if nested(r, "d") == 0]
    assert_files_hold_their_partition(table)


@pytest.mark.parametrize("equality_deletes", ["true", "false"])
def test_delete_rows_by_the_column_with_the_sources_leaf_name_is_table_wide(catalog: mor.Catalog, equality_deletes: str) -> None:
    """Keys on the top-level `d` do not give the partition of `s.d`: equality deletes must not
    be scoped to partitions computed from them."""
    table, model = new_table(catalog, ["s.d"], range(40))
    table.set_properties(**{"mor.write.equality-deletes.enabled": equality_deletes})
    table.delete_rows(pa.table({"d": pa.array([1, 3], pa.int32())}))
    model = {i: r for i, r in model.items() if r["d"] not in (1, 3)}
    assert rows_of(table) == model_rows(model)
    if equality_deletes == "true":
        deletes = [e for e in live_raw_entries(table) if e.content == 2]
        assert deletes and all(table.metadata.specs()[e.manifest["partition_spec_id"]].is_unpartitioned() for e in deletes)


def test_delete_rows_keyed_on_a_top_level_source_are_scoped_only_without_a_nested_one(catalog: mor.Catalog) -> None:
    table, model = new_table(catalog, ["d", "s.d"], range(20))
    table.delete_rows(pa.table({"d": pa.array([2], pa.int32())}))  # s.d is a source too: table-wide
    assert rows_of(table) == [r for r in model_rows(model) if r["d"] != 2]
    table2, model2 = new_table(catalog, ["d"], range(20), name="u")
    table2.delete_rows(pa.table({"d": pa.array([2], pa.int32())}))
    deletes = [e for e in live_raw_entries(table2) if e.content == 2]
    assert [e.manifest["partition_spec_id"] for e in deletes] == [table2.spec().spec_id]
    assert rows_of(table2) == [r for r in model_rows(model2) if r["d"] != 2]


# -- evolution ---------------------------------------------------------------------------------


def test_update_spec_adds_and_removes_a_nested_source(catalog: mor.Catalog) -> None:
    table, model = new_table(catalog, [], range(20))
    table.update_spec().add_field("s.d").add_field("s.ts", "day").commit()
    assert [f.name for f in table.spec().fields] == ["s.d", "s.ts_day"]
    table.append(make_rows(range(20, 40)))
    model.update((i, make_row(i)) for i in range(20, 40))
    with table.update_spec() as update:
        update.remove_field("s.d")
        update.add_field("bucket(2, s.d)")
    assert [f.name for f in table.spec().fields] == ["s.ts_day", "s.d_bucket_2"]
    table.append(make_rows(range(40, 60)))
    model.update((i, make_row(i)) for i in range(40, 60))
    table.update_spec().remove_field("day(s.ts)").add_field("s.d").commit()
    assert [(f.field_id, f.name) for f in table.spec().fields] == [(1002, "s.d_bucket_2"), (1000, "s.d")]  # its id comes back
    table.append(make_rows(range(60, 70)))
    model.update((i, make_row(i)) for i in range(60, 70))
    assert_files_hold_their_partition(table)
    assert rows_of(table) == model_rows(model)
    assert rows_of(table, filter="s.d = 1") == [r for r in model_rows(model) if nested(r, "d") == 1]
    table.delete("s.d = 2")
    assert rows_of(table) == [r for r in model_rows(model) if nested(r, "d") != 2]
    with pytest.raises(PartitionEvolutionError, match="has it already"):
        table.update_spec().add_field("s.d")


def test_schema_rules_protect_a_nested_source(catalog: mor.Catalog) -> None:
    table, model = new_table(catalog, ["s.d"], range(20))
    for path in ("s", "s.d"):
        with pytest.raises(SchemaEvolutionError, match="source of partition field 's.d'"):
            table.drop_column(path)
    table.drop_column("s.name")  # not a source
    table.rename_column("s", "t")  # the partition field keeps its name; the source is found by id
    table.append(pa.Table.from_pylist([{"id": 100, "d": 0, "t": {"d": 3, "ts": START}}], schema=table.scan().to_arrow().schema))
    expected = [
        {"id": r["id"], "d": r["d"], "t": None if r["s"] is None else {"d": r["s"]["d"], "ts": r["s"]["ts"]}} for r in model_rows(model)
    ]
    expected.append({"id": 100, "d": 0, "t": {"d": 3, "ts": START}})
    assert rows_of(table) == expected
    assert [f.name for f in table.spec().fields] == ["s.d"]
    assert [r["id"] for r in rows_of(table, filter="t.d = 3")] == [r["id"] for r in expected if r["t"] and r["t"]["d"] == 3]
    assert_files_hold_their_partition(table)


# -- partition field names in the manifests' Avro -----------------------------------------------


def test_manifests_give_partition_fields_avro_names_as_iceberg_java_does(catalog: mor.Catalog) -> None:
    """Avro names are [A-Za-z_][A-Za-z0-9_]*: `s.d` is written `s_x2Ed` (Iceberg's original name
    in `iceberg-field-name`), and Java-written manifests spelled so read back."""
    table, model = new_table(catalog, ["s.d", "day(s.ts)", "d"], range(30))
    [entry, *_] = live_raw_entries(table)
    _, avro_schema, _ = avro_file(entry.manifest["manifest_path"])
    data_file = next(f for f in avro_schema["fields"] if f["name"] == "data_file")["type"]
    partition = next(f for f in data_file["fields"] if f["name"] == "partition")["type"]
    assert [(f["name"], f.get("iceberg-field-name")) for f in partition["fields"]] == [
        ("s_x2Ed", "s.d"),
        ("s_x2Ets_day", "s.ts_day"),
        ("d", None),
    ]
    assert rows_of(table, filter="s.d = 2") == [r for r in model_rows(model) if nested(r, "d") == 2]


def test_avro_record_keys_read_names_mor_wrote_before_too() -> None:
    from pyiceberg.types import IntegerType, NestedField, StructType

    from mor.format.partition_values import avro_field_name, avro_record_keys

    assert [avro_field_name(n) for n in ("s.d", "a-b", "1x", "x1", "é_2", "a b")] == ["s_x2Ed", "a_x2Db", "_1x", "x1", "é_2", "a_x20b"]
    partition_type = StructType(NestedField(1000, "a-b", IntegerType()), NestedField(1001, "c", IntegerType()))
    assert avro_record_keys(partition_type, {"a_x2Db": 1, "c": 2}) == ("a_x2Db", "c")
    assert avro_record_keys(partition_type, {"a-b": 1, "c": 2}) == ("a-b", "c")  # an older mor manifest
    assert avro_record_keys(partition_type, None) == ("a_x2Db", "c")


def test_keys_inside_a_struct_are_refused_with_a_clear_error(tmp_path: Any) -> None:
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("s", pa.struct([("d", pa.int32())]))])
    table = mor.load_catalog(str(tmp_path)).create_table("db.k", schema=schema)
    table.append(pa.Table.from_pylist([{"id": 1, "s": {"d": 2}}], schema=schema))
    with pytest.raises(mor.UnsupportedFeatureError, match="inside a struct"):
        table.upsert(pa.Table.from_pylist([{"id": 1, "s": {"d": 2}}], schema=schema), on=["s.d"])
    with pytest.raises(mor.UnsupportedFeatureError, match="inside a struct"):
        table.delete_rows(pa.table({"s.d": pa.array([2], pa.int32())}))
    assert table.scan().to_arrow().num_rows == 1
