"""Adopting existing Parquet files: `table.add_files` and `catalog.create_table_from_files`.

Files are written by plain pyarrow (no field ids) or with `PARQUET:field_id` metadata; scans
must return exactly their rows, metrics must prune, DML must work on them, and every refusal
must leave the table as it was (same metadata location, no new files under its folder).
"""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import mor
from mor.errors import CommitConflictError, CorruptMetadataError, InvalidArgumentError, SchemaMismatchError, TableAlreadyExistsError
from mor.io.fileio import to_local_path

ROWS_SCHEMA = pa.schema([("id", pa.int64()), ("cat", pa.string()), ("ts", pa.timestamp("us"))])


def rows(ids: range, cat: str = "a", day: int = 1) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(list(ids), pa.int64()),
            "cat": [cat] * len(ids),
            "ts": pa.array([dt.datetime(2024, 1, day, i % 24) for i in ids], pa.timestamp("us")),
        }
    )


def write(path: Path, table: pa.Table, **kwargs: object) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path, **kwargs)  # type: ignore[arg-type]
    return str(path)


def with_ids(table: pa.Table, ids: dict[str, int]) -> pa.Table:
    fields = [f.with_metadata({b"PARQUET:field_id": str(ids[f.name])}) for f in table.schema]
    return table.cast(pa.schema(fields))


def files_under(location: str) -> set[str]:
    root = to_local_path(location)
    return {os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs}


def scanned(table: mor.Table, **kwargs: object) -> list[dict[str, object]]:
    return sorted(table.scan(**kwargs).to_arrow().to_pylist(), key=lambda r: r["id"])  # type: ignore[arg-type]


def expected(*tables: pa.Table) -> list[dict[str, object]]:
    return sorted(pa.concat_tables(tables).to_pylist(), key=lambda r: r["id"])


@pytest.fixture
def src(tmp_path: Path) -> Path:
    return tmp_path / "src"


# -- adding to an existing table ------------------------------------------------------------


def test_add_files_without_ids_writes_a_name_mapping_and_reads_the_rows(catalog: mor.Catalog, src: Path) -> None:
    table = catalog.create_table("db.t", schema=ROWS_SCHEMA)
    table.append(rows(range(0, 5)))
    a, b = rows(range(10, 20)), rows(range(20, 30), "b")
    snapshot = table.add_files([write(src / "a.parquet", a), write(src / "b.parquet", b)])
    assert snapshot.summary["operation"] == "append"
    assert snapshot.summary["added-data-files"] == "2"
    assert "schema.name-mapping.default" in table.properties
    assert scanned(table) == expected(rows(range(0, 5)), a, b)
    reloaded = catalog.load_table("db.t")
    assert scanned(reloaded) == expected(rows(range(0, 5)), a, b)
    # the files stay where they were, not copied
    paths = {t.data_file.file_path for t in table.scan().plan_files()}
    assert f"file://{src / 'a.parquet'}" in paths


def test_metrics_from_the_footer_prune_files(catalog: mor.Catalog, src: Path) -> None:
    table = catalog.create_table("db.t", schema=ROWS_SCHEMA)
    table.add_files([write(src / "a.parquet", rows(range(0, 10))), write(src / "b.parquet", rows(range(100, 110)))])
    tasks = table.scan(filter="id >= 100").plan_files()
    assert [t.data_file.file_path.rsplit("/", 1)[1] for t in tasks] == ["b.parquet"]
    assert table.scan(filter="id > 1000").plan_files() == []
    data_file = tasks[0].data_file
    assert data_file.record_count == 10
    assert data_file.value_counts == {1: 10, 2: 10, 3: 10}
    assert data_file.null_value_counts == {1: 0, 2: 0, 3: 0}
    assert set(data_file.lower_bounds or {}) == {1, 2, 3}
    assert data_file.file_size_in_bytes == os.path.getsize(src / "b.parquet")


def test_files_with_field_ids_match_by_id_not_name(catalog: mor.Catalog, src: Path) -> None:
    table = catalog.create_table("db.t", schema=ROWS_SCHEMA)
    # the same ids under other names: read by id
    renamed = with_ids(rows(range(0, 4)).rename_columns(["key", "kind", "when"]), {"key": 1, "kind": 2, "when": 3})
    table.add_files(write(src / "ids.parquet", renamed))
    assert "schema.name-mapping.default" not in table.properties
    assert scanned(table) == expected(rows(range(0, 4)))
    assert table.scan(filter="id > 100").plan_files() == []


def test_a_folder_adds_its_parquet_files(catalog: mor.Catalog, src: Path) -> None:
    table = catalog.create_table("db.t", schema=ROWS_SCHEMA)
    write(src / "x" / "1.parquet", rows(range(0, 3)))
    write(src / "x" / "deep" / "2.parquet", rows(range(3, 6)))
    (src / "x" / "_SUCCESS").write_text("")
    table.add_files(str(src / "x"))
    assert scanned(table) == expected(rows(range(0, 6)))


def test_identity_and_day_partitions_come_from_the_rows(catalog: mor.Catalog, src: Path) -> None:
    table = catalog.create_table("db.t", schema=ROWS_SCHEMA, partition_by=["cat", "day(ts)"])
    a, b = rows(range(0, 10), "a", 1), rows(range(10, 20), "b", 2)
    table.add_files([write(src / "a.parquet", a), write(src / "b.parquet", b)])
    parts = sorted(t.data_file.partition for t in table.scan().plan_files())
    assert parts == [("a", 19723), ("b", 19724)]  # days since epoch of 2024-01-01 and -02
    assert [t.data_file.partition for t in table.scan(filter="cat = 'b'").plan_files()] == [("b", 19724)]
    assert scanned(table) == expected(a, b)


def test_bucket_partition(catalog: mor.Catalog, src: Path) -> None:
    placed = catalog.create_table("db.placed", schema=ROWS_SCHEMA, partition_by=["bucket(4, id)"])
    placed.append(rows(range(0, 40)))
    task = placed.scan().plan_files()[0]  # the rows of one bucket, as mor's writer placed them
    one = pq.read_table(to_local_path(task.data_file.file_path)).select(["id", "cat", "ts"])
    table = catalog.create_table("db.t", schema=ROWS_SCHEMA, partition_by=["bucket(4, id)"])
    table.add_files(write(src / "one.parquet", pa.table({c: one.column(c) for c in one.column_names})))
    assert [t.data_file.partition for t in table.scan().plan_files()] == [task.data_file.partition]
    with pytest.raises(InvalidArgumentError, match="more than one partition"):
        table.add_files(write(src / "mixed.parquet", rows(range(0, 40))))


def test_check_partitions_false_uses_the_bounds(catalog: mor.Catalog, src: Path) -> None:
    table = catalog.create_table("db.t", schema=ROWS_SCHEMA, partition_by=["cat", "day(ts)"])
    table.add_files(write(src / "a.parquet", rows(range(0, 10), "a", 3)), check_partitions=False)
    assert [t.data_file.partition for t in table.scan().plan_files()] == [("a", 19725)]
    before = table.metadata_location
    two_days = pa.concat_tables([rows(range(10, 12), "a", 3), rows(range(12, 14), "a", 4)])
    with pytest.raises(InvalidArgumentError, match="span partitions"):
        table.add_files(write(src / "b.parquet", two_days), check_partitions=False)
    assert table.metadata_location == before


def test_delete_and_update_on_adopted_files(catalog: mor.Catalog, src: Path) -> None:
    table = catalog.create_table("db.t", schema=ROWS_SCHEMA, partition_by=["cat"])
    a = rows(range(0, 10), "a")
    table.add_files(write(src / "a.parquet", a))
    table.delete("id < 3")
    table.update({"cat": "'a'"}, where="id = 5")
    table.update({"ts": dt.datetime(2030, 1, 1)}, where="id = 6")
    got = scanned(table)
    assert [r["id"] for r in got] == list(range(3, 10))
    assert next(r for r in got if r["id"] == 6)["ts"] == dt.datetime(2030, 1, 1)
    table.delete("id = 7", mode="copy-on-write")
    assert [r["id"] for r in scanned(table)] == [3, 4, 5, 6, 8, 9]
    assert os.path.exists(src / "a.parquet")  # the user's file is never deleted by DML


def test_optional_columns_may_be_missing_and_narrower_types_fit(catalog: mor.Catalog, src: Path) -> None:
    table = catalog.create_table("db.t", schema=ROWS_SCHEMA)
    narrow = pa.table({"id": pa.array([1, 2], pa.int32()), "cat": ["x", "y"]})
    table.add_files(write(src / "n.parquet", narrow))
    assert scanned(table) == [{"id": 1, "cat": "x", "ts": None}, {"id": 2, "cat": "y", "ts": None}]
    assert table.scan(filter="id > 2").plan_files() == []


def test_v3_table(catalog: mor.Catalog, src: Path) -> None:
    table = catalog.create_table("db.t", schema=ROWS_SCHEMA, format_version=3)
    table.add_files(write(src / "a.parquet", rows(range(0, 5))))
    table.delete("id = 1")
    assert [r["id"] for r in scanned(table)] == [0, 2, 3, 4]


# -- refusals leave the table unchanged -----------------------------------------------------


REQUIRED_ID = pa.schema([pa.field("id", pa.int64(), nullable=False), ("cat", pa.string()), ("ts", pa.timestamp("us"))])


@pytest.mark.parametrize(
    "case",
    ["already-in-table", "twice", "missing", "not-parquet", "extra-column", "bad-type", "missing-required", "nulls-in-required",
     "spans-partitions", "nanoseconds", "milliseconds", "unsigned", "partial-ids", "wrong-ids", "empty-list"],
)  # fmt: skip
def test_refused_with_the_table_unchanged(catalog: mor.Catalog, src: Path, case: str) -> None:
    table = catalog.create_table("db.t", schema=REQUIRED_ID, partition_by=["cat"])
    good = write(src / "good.parquet", rows(range(0, 5)))
    table.add_files(good)
    before, files_before = table.metadata_location, files_under(table.location)
    ok = write(src / "ok.parquet", rows(range(50, 55)))
    error: type[Exception] = SchemaMismatchError
    match = None
    if case == "already-in-table":
        paths, error, match = [ok, good], InvalidArgumentError, "already in the table"
    elif case == "twice":
        paths, error, match = [ok, f"file://{ok}"], InvalidArgumentError, "given twice"
    elif case == "missing":
        paths, error, match = [ok, str(src / "nope.parquet")], CorruptMetadataError, "nope.parquet is missing"
    elif case == "not-parquet":
        (src / "text.parquet").write_text("hello")
        paths, error, match = [ok, str(src / "text.parquet")], CorruptMetadataError, "text.parquet"
    elif case == "extra-column":
        paths, match = [ok, write(src / "x.parquet", rows(range(5)).append_column("more", pa.array([1] * 5)))], "more"
    elif case == "bad-type":
        bad = pa.table({"id": pa.array(["1"]), "cat": ["a"], "ts": pa.array([None], pa.timestamp("us"))})
        paths, match = [ok, write(src / "x.parquet", bad)], "'id'"
    elif case == "missing-required":
        paths, match = [ok, write(src / "x.parquet", pa.table({"cat": ["a"]}))], "required columns \\['id'\\]"
    elif case == "nulls-in-required":
        paths, match = [ok, write(src / "x.parquet", pa.table({"id": pa.array([1, None], pa.int64()), "cat": ["a", "a"]}))], "nulls"
    elif case == "spans-partitions":
        mixed = pa.concat_tables([rows(range(60, 62), "a"), rows(range(62, 64), "b")])
        paths, error, match = [ok, write(src / "x.parquet", mixed)], InvalidArgumentError, "more than one partition"
    elif case == "nanoseconds":
        ns = rows(range(5)).cast(pa.schema([("id", pa.int64()), ("cat", pa.string()), ("ts", pa.timestamp("ns"))]))
        paths, match = [ok, write(src / "x.parquet", ns)], "in nanoseconds"
    elif case == "milliseconds":  # Iceberg Java 1.10 reads them as microseconds
        ms = rows(range(5)).cast(pa.schema([("id", pa.int64()), ("cat", pa.string()), ("ts", pa.timestamp("ms"))]))
        paths, match = [ok, write(src / "x.parquet", ms)], "in milliseconds"
    elif case == "unsigned":
        paths, match = [ok, write(src / "x.parquet", pa.table({"id": pa.array([1], pa.uint64()), "cat": ["a"]}))], "unsigned"
    elif case == "partial-ids":
        t = pa.table({"id": pa.array([1], pa.int64()), "cat": ["a"]})
        t = t.cast(pa.schema([t.schema.field(0).with_metadata({b"PARQUET:field_id": b"1"}), t.schema.field(1)]))
        paths, match = [ok, write(src / "x.parquet", t)], "no Parquet field id"
    elif case == "wrong-ids":
        t = with_ids(pa.table({"id": pa.array([1], pa.int64()), "cat": ["a"]}), {"id": 1, "cat": 9})
        paths, match = [ok, write(src / "x.parquet", t)], "match no table column"
    else:
        paths, error, match = [], InvalidArgumentError, "non-empty list"
    with pytest.raises(error, match=match):
        table.add_files(paths)
    assert table.metadata_location == before
    assert catalog.load_table("db.t").metadata_location == before
    assert files_under(table.location) == files_before
    assert os.path.exists(ok)


def test_files_outside_the_location_survive_purge(catalog: mor.Catalog, src: Path) -> None:
    table = catalog.create_table("db.t", schema=ROWS_SCHEMA)
    outside = write(src / "a.parquet", rows(range(0, 5)))
    table.add_files(outside)
    table.append(rows(range(5, 8)))
    result = catalog.drop_table("db.t", purge=True)
    assert result is not None
    assert os.path.exists(outside)
    assert any(p.endswith("a.parquet") for p in result.skipped_paths)
    assert files_under(table.location) == set()


def test_orphan_removal_and_expiry_leave_files_outside_the_location(catalog: mor.Catalog, src: Path) -> None:
    table = catalog.create_table("db.t", schema=ROWS_SCHEMA)
    outside = write(src / "a.parquet", rows(range(0, 5)))
    table.add_files(outside)
    table.delete("true", mode="copy-on-write")  # the file leaves the table
    table.expire_snapshots(older_than=dt.timedelta(0), retain_last=1, allow_short_retention=True)
    table.remove_orphan_files(older_than=dt.timedelta(0))
    assert os.path.exists(outside)


# -- a new table from files -----------------------------------------------------------------


def test_create_table_from_files_infers_schema_and_partitions(catalog: mor.Catalog, src: Path) -> None:
    a, b = rows(range(0, 10), "a", 1), rows(range(10, 20), "b", 2)
    write(src / "d" / "a.parquet", a)
    write(src / "d" / "b.parquet", b)
    table = catalog.create_table_from_files("db.t", str(src / "d"), partition_by=["cat"], properties={"owner": "me"})
    assert [f.name for f in table.schema().fields] == ["id", "cat", "ts"]
    assert table.properties["owner"] == "me"
    assert len(table.snapshots()) == 1
    assert sorted(t.data_file.partition for t in table.scan().plan_files()) == [("a",), ("b",)]
    assert scanned(table) == expected(a, b)
    table.append(rows(range(20, 22), "c"))
    assert len(scanned(table)) == 22


def test_create_table_from_files_unifies_schemas(catalog: mor.Catalog, src: Path) -> None:
    a = pa.table({"id": pa.array([1], pa.int64()), "v": pa.array([None], pa.null())})
    b = pa.table({"id": pa.array([2], pa.int64()), "v": ["x"]})
    table = catalog.create_table_from_files("db.t", [write(src / "a.parquet", a), write(src / "b.parquet", b)])
    assert table.scan().to_arrow().sort_by("id").to_pylist() == [{"id": 1, "v": None}, {"id": 2, "v": "x"}]


def test_create_table_from_files_with_field_ids_keeps_them(catalog: mor.Catalog, src: Path) -> None:
    t = with_ids(rows(range(0, 3)), {"id": 7, "cat": 3, "ts": 5})
    table = catalog.create_table_from_files("db.t", write(src / "a.parquet", t))
    assert {f.name: f.field_id for f in table.schema().fields} == {"id": 7, "cat": 3, "ts": 5}
    assert "schema.name-mapping.default" not in table.properties
    assert scanned(table) == expected(rows(range(0, 3)))


def test_create_table_from_files_refused_leaves_no_table(catalog: mor.Catalog, src: Path) -> None:
    mixed = pa.concat_tables([rows(range(0, 2), "a"), rows(range(2, 4), "b")])
    with pytest.raises(InvalidArgumentError, match="more than one partition"):
        catalog.create_table_from_files("db.t", write(src / "m.parquet", mixed), partition_by=["cat"])
    assert not catalog.table_exists("db.t")
    assert files_under(catalog.default_location("db.t")) == set()  # no manifest left behind
    a = write(src / "a.parquet", rows(range(0, 2)))
    b = write(src / "b.parquet", pa.table({"id": pa.array(["x"])}))
    with pytest.raises(SchemaMismatchError, match="share one schema"):
        catalog.create_table_from_files("db.t", [a, b])
    assert not catalog.table_exists("db.t")
    catalog.create_table_from_files("db.t", a)
    with pytest.raises(TableAlreadyExistsError):
        catalog.create_table_from_files("db.t", a)


def test_dictionary_columns_from_pandas_categoricals(catalog: mor.Catalog, src: Path) -> None:
    data = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "cat": pa.array(["a", "b", "a"]).dictionary_encode()})
    table = catalog.create_table_from_files("db.t", write(src / "d.parquet", data))
    assert str(table.schema().find_field("cat").field_type) == "string"
    assert table.scan().to_arrow().sort_by("id").to_pylist() == [{"id": 1, "cat": "a"}, {"id": 2, "cat": "b"}, {"id": 3, "cat": "a"}]
    assert [t.data_file.file_path.rsplit("/", 1)[1] for t in table.scan(filter="cat = 'b'").plan_files()] == ["d.parquet"]


def test_a_concurrent_add_of_the_same_file_is_refused(catalog: mor.Catalog, src: Path) -> None:
    first, stale = catalog.create_table("db.t", schema=ROWS_SCHEMA), catalog.load_table("db.t")
    path = write(src / "a.parquet", rows(range(0, 5)))
    first.add_files(path)
    with pytest.raises(CommitConflictError, match="concurrent commit"):
        stale.add_files(path)  # planned on the old state, where the file is not yet in the table
    assert catalog.load_table("db.t").metadata_location == first.metadata_location
    assert scanned(catalog.load_table("db.t")) == expected(rows(range(0, 5)))
    assert os.path.exists(path)
    # the table has its name mapping now: the conflict is found by the commit's retry
    stale = catalog.load_table("db.t")
    second = write(src / "b.parquet", rows(range(5, 10)))
    first.refresh().add_files(second)
    with pytest.raises(CommitConflictError, match="concurrent commit"):
        stale.add_files(second)
    assert scanned(catalog.load_table("db.t")) == expected(rows(range(0, 10)))


def test_the_name_mapping_follows_added_and_renamed_columns(catalog: mor.Catalog, src: Path) -> None:
    table = catalog.create_table("db.t", schema=ROWS_SCHEMA)
    old = rows(range(0, 3))
    table.add_files(write(src / "old.parquet", old))
    table.rename_column("cat", "category")
    table.add_column("extra", pa.int32())
    new = pa.table({"id": pa.array([10], pa.int64()), "category": ["n"], "extra": pa.array([7], pa.int32())})
    before = table.properties["schema.name-mapping.default"]
    table.add_files(write(src / "new.parquet", new))
    mapping = json.loads(table.properties["schema.name-mapping.default"])
    assert mapping != json.loads(before)
    assert {e["field-id"]: e["names"] for e in mapping} == {1: ["id"], 2: ["cat", "category"], 3: ["ts"], 4: ["extra"]}
    got = sorted(table.scan(columns=["id", "category", "extra"]).to_arrow().to_pylist(), key=lambda r: r["id"])
    assert got == [{"id": i, "category": "a", "extra": None} for i in range(3)] + [{"id": 10, "category": "n", "extra": 7}]


def test_a_reused_name_keeps_mapping_to_the_old_field(catalog: mor.Catalog, src: Path) -> None:
    table = catalog.create_table("db.t", schema=ROWS_SCHEMA)
    table.add_files(write(src / "old.parquet", rows(range(0, 3))))
    table.drop_column("cat")
    table.add_column("cat", pa.string())  # a new field under the old name: old files must not fill it
    assert [r["cat"] for r in table.scan().to_arrow().to_pylist()] == [None, None, None]
    with pytest.raises(SchemaMismatchError, match="match no table column"):
        table.add_files(write(src / "new.parquet", rows(range(5, 7))))  # its 'cat' maps to the dropped field


def test_a_list_may_mix_folders_and_files(catalog: mor.Catalog, src: Path) -> None:
    table = catalog.create_table("db.t", schema=ROWS_SCHEMA)
    write(src / "f1" / "1.parquet", rows(range(0, 3)))
    write(src / "f2" / "2.parquet", rows(range(3, 6)))
    single = write(src / "3.parquet", rows(range(6, 9)))
    table.add_files([src / "f1", str(src / "f2"), single])
    assert scanned(table) == expected(rows(range(0, 9)))
    (src / "empty").mkdir()
    with pytest.raises(InvalidArgumentError, match="no .parquet files"):
        table.add_files(str(src / "empty"))


def test_nested_columns_through_the_name_mapping(catalog: mor.Catalog, src: Path) -> None:
    def nested(ids: list[int], a: list[int]) -> pa.Table:
        return pa.table(
            {
                "id": pa.array(ids, pa.int64()),
                "info": pa.array([{"a": v, "b": f"b{v}"} for v in a], pa.struct([("a", pa.int32()), ("b", pa.string())])),
                "tags": pa.array([["p", "q"] if i % 2 else [] for i in ids], pa.list_(pa.string())),
                "attrs": pa.array([[("k", i)] if i % 2 else None for i in ids], pa.map_(pa.string(), pa.int64())),
            }
        )

    one, two = nested([1, 2], [5, 5]), nested([3, 4], [7, 7])
    table = catalog.create_table_from_files("db.t", write(src / "one.parquet", one), partition_by=["info.a"])
    table.add_files(write(src / "two.parquet", two))
    assert sorted(t.data_file.partition for t in table.scan().plan_files()) == [(5,), (7,)]
    assert table.scan().to_arrow().sort_by("id").to_pylist() == pa.concat_tables([one, two]).to_pylist()
    mixed = nested([5, 6], [5, 7])
    with pytest.raises(InvalidArgumentError, match="more than one partition"):
        table.add_files(write(src / "mixed.parquet", mixed))
    plain = catalog.create_table_from_files("db.plain", [str(src / "one.parquet"), str(src / "two.parquet")])
    b_id = plain.schema().find_field("info.b").field_id
    assert all(b_id in (t.data_file.lower_bounds or {}) for t in plain.scan().plan_files())
    assert [t.data_file.file_path.rsplit("/", 1)[1] for t in plain.scan(filter="info.b = 'b7'").plan_files()] == ["two.parquet"]
