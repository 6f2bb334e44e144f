"""Compacted and expired tables read the same in mor, pyiceberg 0.12 and Iceberg Java.

Three groups of tables, all built first (module fixtures), then read by one JVM:

* mor-written histories (appends, merge-on-read and copy-on-write deletes, updates, upserts of
  both strategies, `delete_rows`, partitioned or not) compacted once or twice, one of them with
  an equality delete committed between compaction's read and its commit;
* mor-written histories compacted and then expired (`expire_snapshots(retain_last=k, ...)`);
* copies of the Iceberg Java v2 fixtures, relocated to a fresh folder (every path inside the
  metadata, the manifests and the position delete files rewritten) and registered in a mor
  catalog, then compacted, or compacted and expired, or only expired.

Every snapshot each table still has is read by mor, by pyiceberg (only where no equality delete
file is live: pyiceberg refuses them) and by Iceberg Java, and all must give the same rows; the
fixture copies must also give the rows Iceberg Java recorded when it wrote them (Java reads only
their last two snapshots: the older ones are Java's own, and mor and pyiceberg read them all).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from fixture_copies import relocate_fixture
from java_fixtures import (
    FIXTURE_TABLES,
    describe_row_differences,
    fixture_source,
    read_json_lines,
    row_sort_key,
    to_json_rows,
)
from oracle_support import read_with_iceberg_java
from pyiceberg.table import StaticTable as PyIcebergStaticTable

import mor
from mor.io.fileio import to_local_path
from mor.maintenance import compact as compact_module

pytestmark = pytest.mark.interop

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        ("category", pa.string()),
        ("name", pa.string()),
        ("value", pa.float64()),
        ("ts", pa.timestamp("us", tz="UTC")),
    ]
)
START = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
EXPIRE_NOW = {"older_than": dt.timedelta(0), "allow_short_retention": True}


def rows(ids: range | list[int], tag: str = "") -> pa.Table:
    ids = list(ids)
    return pa.table(
        {
            "id": ids,
            "category": [None if i % 17 == 5 else "abc"[i % 3] for i in ids],
            "name": [None if i % 11 == 5 else f"{tag}name-{i}" for i in ids],
            "value": [None if i % 13 == 2 else i * 0.5 for i in ids],
            "ts": [START + dt.timedelta(minutes=i, microseconds=i) for i in ids],
        },
        schema=SCHEMA,
    )


def keys(**columns: list[Any]) -> pa.Table:
    return pa.table({name: pa.array(values, SCHEMA.field(name).type) for name, values in columns.items()})


def read_mor(table: mor.Table, snapshot_id: int) -> pa.Table:
    return table.scan(snapshot_id=snapshot_id).to_arrow()


def has_equality_deletes(snapshot: Any) -> bool:
    """pyiceberg 0.12 refuses to plan a snapshot with any live equality delete file."""
    return snapshot.summary.get("total-equality-deletes", "0") != "0"


# ---------------------------------------------------------------------------------------------
# Building the mor-written tables
# ---------------------------------------------------------------------------------------------


@dataclass
class Built:
    """A table in its final state, with what happened to it on the way."""

    catalog: mor.Catalog
    table: mor.Table
    compactions: list[Any] = field(default_factory=list)  # CompactionResult
    before_expiry: dict[int, pa.Table] = field(default_factory=dict)  # mor's rows at every snapshot
    expired: list[int] = field(default_factory=list)  # snapshot ids expiry removed
    expired_manifest_lists: list[str] = field(default_factory=list)
    notes: dict[str, Any] = field(default_factory=dict)

    def snapshot_ids(self) -> list[int]:
        return [s.snapshot_id for s in self.table.snapshots()]


def compact(built: Built, **options: Any) -> None:
    result = built.table.compact(**options)
    assert result.snapshot_id is not None and result.rewritten_data_files > 0, result
    assert built.table.current_snapshot().operation == "replace"
    built.compactions.append(result)


def expire(built: Built, retain_last: int) -> None:
    table = built.table
    built.before_expiry = {s.snapshot_id: read_mor(table, s.snapshot_id) for s in table.snapshots()}
    kept = [s.snapshot_id for s in table.snapshots()][-retain_last:]
    built.expired = [s.snapshot_id for s in table.snapshots() if s.snapshot_id not in kept]
    built.expired_manifest_lists = [s.manifest_list for s in table.snapshots() if s.snapshot_id not in kept]
    table.expire_snapshots(retain_last=retain_last, **EXPIRE_NOW)


def position_history(built: Built) -> None:
    """Appends, merge-on-read and copy-on-write deletes, an update, a position upsert; compacted,
    then more deletes on the compacted files, and a compaction limited by `where`."""
    table = built.table
    table.append(rows(range(0, 300)))
    table.append(rows(range(300, 600)))
    table.delete("id < 40")
    table.delete("category = 'b' and id < 200", mode="copy-on-write")
    table.update({"value": pc.field("value") + 1, "name": "'updated'"}, where="id >= 250 and id < 270")
    table.upsert(rows([5, 100, 450, 1000, 1001], tag="up-"), on=["id"])
    compact(built)
    table.append(rows(range(1100, 1150)))
    table.update({"name": "'again'"}, where="id >= 560 and id < 565", mode="copy-on-write")
    table.delete("id >= 500 and id < 520")  # on files compaction (and then copy-on-write) wrote
    compact(built, where="id >= 400")


def equality_history(built: Built, upsert_on: list[str]) -> None:
    """Equality deletes (`delete_rows`, equality upserts; global, partition-scoped, null keys,
    two-column keys) mixed with position deletes; compacted twice."""
    table = built.table
    table.append(rows(range(0, 300)))
    table.delete_rows(keys(id=[3, 13, 23, 5_000_000]))  # includes an absent key
    table.append(rows([13, 23, 700, 701], tag="re-"))  # re-inserted keys survive the older delete
    table.delete("id >= 100 and id < 110")
    table.upsert(rows([1, 2, 800], tag="up-"), on=upsert_on, strategy="equality")
    table.delete_rows(keys(name=[None]))  # a null key deletes rows whose name is null
    table.delete_rows(keys(category=["a", "b"], id=[30, 31]))  # partition-scoped when partitioned
    compact(built)
    table.delete_rows(keys(id=[50, 51, 13]))
    table.upsert(rows([60, 900], tag="up2-"), on=upsert_on, strategy="equality")
    table.delete("id >= 200 and id < 205")
    compact(built)


def raced_equality_history(built: Built, raced_keys: pa.Table) -> None:
    """An equality delete commits after compaction read the table and wrote its files: the new
    files keep the older data sequence number, so the delete still applies to their rows."""
    table = built.table
    table.append(rows(range(0, 200)))
    table.delete("id < 20")
    other = built.catalog.load_table(table.identifier)  # another writer's handle
    real = compact_module.write_compaction
    raced: list[int] = []

    def written_then_raced(*args: Any, **kwargs: Any) -> Any:
        validate = real(*args, **kwargs)
        if not raced:
            raced.append(other.delete_rows(raced_keys).snapshot_id)
        return validate

    read_sequence_number = table.current_snapshot().sequence_number
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(compact_module, "write_compaction", written_then_raced)
        compact(built)
    built.notes.update(raced_snapshot=raced[0], read_sequence_number=read_sequence_number)
    table.append(rows([25, 300], tag="re-"))  # newer than the raced delete: stays
    compact(built)


def position_history_then_expire(built: Built, retain_last: int) -> None:
    table = built.table
    table.append(rows(range(0, 200)))
    table.append(rows(range(200, 400)))
    table.delete("id < 30")
    table.delete("category = 'a' and id < 150", mode="copy-on-write")
    table.update({"value": -1.0}, where="id >= 300 and id < 320")
    compact(built)
    table.delete("id >= 390")
    table.upsert(rows([35, 36, 500], tag="up-"), on=["id"])
    expire(built, retain_last)


def equality_history_then_expire(built: Built, retain_last: int) -> None:
    table = built.table
    table.append(rows(range(0, 200)))
    table.delete_rows(keys(id=[7, 8, 9]))
    table.upsert(rows([10, 11, 600], tag="up-"), on=["id"], strategy="equality")
    table.delete("id >= 150")
    compact(built)
    table.delete_rows(keys(id=[40, 41]))
    table.append(rows([7, 700], tag="re-"))
    expire(built, retain_last)


COMPACTION_SCENARIOS: dict[str, tuple[list[str] | None, Callable[[Built], None]]] = {
    "position-unpartitioned": (None, position_history),
    "position-by_category": (["category"], position_history),
    "position-by_bucket_day": (["bucket(3, id)", "day(ts)"], position_history),
    "equality-unpartitioned": (None, lambda b: equality_history(b, ["id"])),
    "equality-by_category-global": (["category"], lambda b: equality_history(b, ["id"])),
    "equality-by_category-scoped": (["category"], lambda b: equality_history(b, ["id", "category"])),
    "raced-unpartitioned": (None, lambda b: raced_equality_history(b, keys(id=[25, 26, 150]))),
    "raced-by_category": (
        ["category"],
        lambda b: raced_equality_history(b, keys(id=[25, 26, 150, 151], category=["b", "c", "a", "c"])),
    ),  # fmt: skip  (151 is category "b": that key matches nothing)
}
EXPIRY_SCENARIOS: dict[str, tuple[list[str] | None, Callable[[Built], None]]] = {
    "position-unpartitioned-keep3": (None, lambda b: position_history_then_expire(b, 3)),
    "position-by_category-keep1": (["category"], lambda b: position_history_then_expire(b, 1)),
    "equality-unpartitioned-keep2": (None, lambda b: equality_history_then_expire(b, 2)),
    "equality-by_category-keep4": (["category"], lambda b: equality_history_then_expire(b, 4)),
}


def build(catalog: mor.Catalog, name: str, partition_by: list[str] | None, steps: Callable[[Built], None]) -> Built:
    table = catalog.create_table(f"db.{name.replace('-', '_')}", schema=SCHEMA, partition_by=partition_by)
    built = Built(catalog, table)
    steps(built)
    return built


# ---------------------------------------------------------------------------------------------
# Relocated copies of the Iceberg Java fixtures
# ---------------------------------------------------------------------------------------------

V2_FIXTURES = sorted(name for name, info in FIXTURE_TABLES.items() if info["format_version"] == 2)


@dataclass
class FixtureCopy:
    """A relocated fixture table after what was done to it: "compacted", "compacted-expired" or "expired"."""

    fixture: str
    treatment: str
    table: mor.Table
    relocated_rows: dict[int, pa.Table]  # mor's rows at every snapshot of the copy, before any change
    compaction: Any = None
    expired: list[int] = field(default_factory=list)

    @property
    def key(self) -> str:
        return f"{self.fixture}-{self.treatment}"

    def java_snapshots(self) -> list[Any]:
        """What Iceberg Java reads: the current snapshot and its parent if retained. Earlier
        snapshots are the fixture's own, already read by Java when it wrote them (and by mor and
        pyiceberg here); each JVM read costs a third of a second or more."""
        return self.table.snapshots()[-2:]


FIXTURE_TREATMENTS = ["compacted", "compacted-expired", "expired"]


def treat_fixture_copy(catalog: mor.Catalog, name: str, treatment: str, root: Path) -> FixtureCopy:
    metadata = relocate_fixture(name, root)
    table = catalog.register_table(f"{name}.{treatment.replace('-', '_')}", metadata)
    relocated = {s.snapshot_id: read_mor(table, s.snapshot_id) for s in table.snapshots()}
    copy = FixtureCopy(name, treatment, table, relocated)
    for task_list in (table.scan(snapshot_id=s).plan_files() for s in relocated):
        for task in task_list:  # mor plans only the copy's files
            for f in (task.data_file, *task.delete_files):
                assert to_local_path(f.file_path).startswith(str(root.resolve())), f.file_path
    before = [s.snapshot_id for s in table.snapshots()]
    if treatment.startswith("compacted"):
        copy.compaction = table.compact(min_input_files=2)
        assert copy.compaction.snapshot_id is not None, f"{name}: compaction found nothing to do"
    if treatment.endswith("expired"):
        retain = 1 if treatment == "compacted-expired" else 2
        kept = [s.snapshot_id for s in table.snapshots()][-retain:]
        table.expire_snapshots(retain_last=retain, **EXPIRE_NOW)
        copy.expired = [s for s in before if s not in kept]
    return copy


def expected_fixture_rows(name: str, snapshot_id: int) -> list[dict[str, Any]]:
    return read_json_lines(fixture_source(name) / "expected" / name / f"{snapshot_id}.json")


def final_fixture_snapshot(name: str) -> int:
    return FIXTURE_TABLES[name]["snapshots"][-1]["snapshot_id"]


# ---------------------------------------------------------------------------------------------
# Module fixtures: build everything, then one JVM reads it all
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("maintenance-interop")


@pytest.fixture(scope="module")
def compacted(workdir: Path) -> dict[str, Built]:
    catalog = mor.load_catalog(workdir / "compacted", create=True)
    return {name: build(catalog, name, spec, steps) for name, (spec, steps) in COMPACTION_SCENARIOS.items()}


@pytest.fixture(scope="module")
def expired(workdir: Path) -> dict[str, Built]:
    catalog = mor.load_catalog(workdir / "expired", create=True)
    return {name: build(catalog, name, spec, steps) for name, (spec, steps) in EXPIRY_SCENARIOS.items()}


@pytest.fixture(scope="module")
def fixture_copies(workdir: Path) -> dict[str, FixtureCopy]:
    catalog = mor.load_catalog(workdir / "fixture-catalog", create=True)
    copies = [
        treat_fixture_copy(catalog, name, treatment, workdir / "fixtures" / treatment)
        for treatment in FIXTURE_TREATMENTS
        for name in V2_FIXTURES
    ]
    return {copy.key: copy for copy in copies}


@pytest.fixture(scope="module")
def java_rows(
    workdir: Path, compacted: dict[str, Built], expired: dict[str, Built], fixture_copies: dict[str, FixtureCopy]
) -> dict[tuple[str, int], pa.Table]:
    """{(table key, snapshot id): Iceberg Java's rows}: every snapshot of our tables, and the
    last two of each fixture copy. One JVM for all of them."""
    tables = {k: b.table for k, b in {**compacted, **expired}.items()}
    where = [(key, s.snapshot_id) for key, table in tables.items() for s in table.snapshots()]
    tables |= {k: c.table for k, c in fixture_copies.items()}
    where += [(key, s.snapshot_id) for key, copy in fixture_copies.items() for s in copy.java_snapshots()]
    requests = [(tables[key].metadata_location, snapshot_id) for key, snapshot_id in where]
    return dict(zip(where, read_with_iceberg_java(requests, workdir)))


# ---------------------------------------------------------------------------------------------
# Comparing
# ---------------------------------------------------------------------------------------------


def canonical(result: pa.Table, schema: pa.Schema = SCHEMA) -> list[tuple[Any, ...]]:
    """Rows as sorted tuples, types normalized (pyiceberg: large strings; Java: its nullability)."""
    plain = pa.schema([f.with_nullable(True) for f in schema])
    return sorted(
        (tuple(r.values()) for r in result.select(plain.names).cast(plain).to_pylist()),
        key=lambda row: tuple((v is not None, v) for v in row),
    )


def describe_difference(expected: list[tuple], actual: list[tuple]) -> str:
    missing = sorted(set(expected) - set(actual), key=str)
    extra = sorted(set(actual) - set(expected), key=str)
    return f"expected {len(expected)} rows, got {len(actual)}; missing {missing[:5]}; extra {extra[:5]}"


def assert_same_rows(ours: pa.Table, theirs: pa.Table, how: str) -> None:
    a, b = canonical(ours), canonical(theirs)
    assert a == b, f"{how}: {describe_difference(a, b)}"


def assert_fixture_rows(actual: pa.Table, schema: pa.Schema, expected: list[dict[str, Any]], how: str) -> None:
    """`actual` has the rows of `expected`, in the columns `expected` has (a snapshot made
    after a schema change, such as a compaction's, reads with more columns) and the types of
    `schema`."""
    names = list(expected[0]) if expected else actual.column_names
    plain = pa.schema([schema.field(n).with_nullable(True) for n in names])
    got = to_json_rows(actual.select(plain.names).cast(plain).to_pylist())
    assert sorted(got, key=row_sort_key) == sorted(expected, key=row_sort_key), f"{how}:\n{describe_row_differences(expected, got)}"


# ---------------------------------------------------------------------------------------------
# Compaction: the scenarios did what they claim; mor, pyiceberg and Java agree everywhere
# ---------------------------------------------------------------------------------------------


def test_compactions_replace_files_and_keep_rows(compacted: dict[str, Built]) -> None:
    for name, built in compacted.items():
        table = built.table
        by_id = {s.snapshot_id: s for s in table.snapshots()}
        replaces = [s for s in table.snapshots() if s.operation == "replace"]
        assert [s.snapshot_id for s in replaces] == [r.snapshot_id for r in built.compactions], name
        for snapshot in replaces:  # compaction changes files, never rows
            parent = by_id[snapshot.parent_snapshot_id]
            assert_same_rows(
                read_mor(table, snapshot.snapshot_id), read_mor(table, parent.snapshot_id), f"{name}: compaction {snapshot.snapshot_id}"
            )
        assert sum(r.removed_delete_files for r in built.compactions) > 0, name
        if name.startswith("equality"):
            assert sum(r.removed_equality_delete_files for r in built.compactions) > 0, name


@pytest.mark.parametrize("name", [n for n in COMPACTION_SCENARIOS if n.startswith("raced")])
def test_raced_equality_delete_applies_to_compacted_files(compacted: dict[str, Built], name: str) -> None:
    built = compacted[name]
    table, raced = built.table, built.notes["raced_snapshot"]
    by_id = {s.snapshot_id: s for s in table.snapshots()}
    compaction = by_id[built.compactions[0].snapshot_id]
    assert compaction.parent_snapshot_id == raced, "the equality delete did not land between read and commit"
    read = by_id[by_id[raced].parent_snapshot_id]
    assert read.sequence_number == built.notes["read_sequence_number"]
    assert_same_rows(read_mor(table, compaction.snapshot_id), read_mor(table, raced), name)

    # The compacted files keep the read snapshot's data sequence number, so the raced delete
    # (newer) still applies to them, and it removes rows that were in the files compaction read.
    tasks = table.scan(snapshot_id=compaction.snapshot_id).plan_files()
    new_files = [t for t in tasks if t.data_file.data_sequence_number == read.sequence_number and t.equality_deletes]
    assert new_files, "no compacted data file has the raced equality delete applied"
    assert all(d.data_sequence_number == by_id[raced].sequence_number for t in new_files for d in t.equality_deletes)
    ids_read = set(read_mor(table, read.snapshot_id)["id"].to_pylist())
    ids_after = set(read_mor(table, compaction.snapshot_id)["id"].to_pylist())
    assert {25, 26, 150} <= ids_read and not {25, 26, 150} & ids_after
    assert 25 in set(read_mor(table, table.current_snapshot().snapshot_id)["id"].to_pylist())  # re-inserted later


@pytest.mark.parametrize("name", list(COMPACTION_SCENARIOS))
def test_pyiceberg_reads_compacted_tables_as_mor(compacted: dict[str, Built], name: str) -> None:
    table = compacted[name].table
    static = PyIcebergStaticTable.from_metadata(table.metadata_location)
    readable = [s for s in table.snapshots() if not has_equality_deletes(s)]
    if name.startswith("position"):
        assert len(readable) == len(table.snapshots()) and len(readable) >= 10
    for snapshot in readable:
        assert_same_rows(
            read_mor(table, snapshot.snapshot_id),
            static.scan(snapshot_id=snapshot.snapshot_id).to_arrow(),
            f"{name}: pyiceberg at {snapshot.snapshot_id} ({snapshot.operation})",
        )


@pytest.mark.oracle
@pytest.mark.parametrize("name", list(COMPACTION_SCENARIOS))
def test_iceberg_java_reads_compacted_tables_as_mor(
    compacted: dict[str, Built], java_rows: dict[tuple[str, int], pa.Table], name: str
) -> None:
    table = compacted[name].table
    for snapshot in table.snapshots():
        java = java_rows[(name, snapshot.snapshot_id)]
        how = f"{name}: Iceberg Java at {snapshot.snapshot_id} ({snapshot.operation}, seq {snapshot.sequence_number})"
        assert_same_rows(read_mor(table, snapshot.snapshot_id), java, how)
        if snapshot.operation == "replace":  # Java on its own: compaction changed no row (the raced
            # equality delete, committed before it, still applies to the files it wrote)
            assert_same_rows(java_rows[(name, snapshot.parent_snapshot_id)], java, f"{how} against its parent")


# ---------------------------------------------------------------------------------------------
# Expiry: retained snapshots read as before, everywhere; expired ones are gone
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(EXPIRY_SCENARIOS))
def test_expired_snapshots_are_gone_from_the_metadata(expired: dict[str, Built], name: str) -> None:
    built = expired[name]
    table = built.table
    retained = built.snapshot_ids()
    assert retained == [s for s in built.before_expiry if s not in built.expired]
    assert built.expired and not set(built.expired) & set(retained)
    assert table.current_snapshot().snapshot_id == list(built.before_expiry)[-1]

    raw = json.loads(Path(to_local_path(table.metadata_location)).read_text())
    assert [s["snapshot-id"] for s in raw["snapshots"]] == retained
    assert {ref["snapshot-id"] for ref in raw.get("refs", {}).values()} <= set(retained)
    assert not {entry["snapshot-id"] for entry in raw.get("snapshot-log", [])} & set(built.expired)
    static = PyIcebergStaticTable.from_metadata(table.metadata_location)
    assert [s.snapshot_id for s in static.snapshots()] == retained
    reloaded = mor.StaticTable.from_metadata(table.metadata_location)
    assert [s.snapshot_id for s in reloaded.snapshots()] == retained
    for manifest_list in built.expired_manifest_lists:
        assert not Path(to_local_path(manifest_list)).exists(), f"manifest list of an expired snapshot left: {manifest_list}"


@pytest.mark.parametrize("name", list(EXPIRY_SCENARIOS))
def test_mor_and_pyiceberg_read_retained_snapshots_as_before(expired: dict[str, Built], name: str) -> None:
    built = expired[name]
    table = built.table
    static = PyIcebergStaticTable.from_metadata(table.metadata_location)
    for snapshot in table.snapshots():
        before = built.before_expiry[snapshot.snapshot_id]
        assert_same_rows(read_mor(table, snapshot.snapshot_id), before, f"{name}: mor at {snapshot.snapshot_id}")
        if not has_equality_deletes(snapshot):
            assert_same_rows(
                static.scan(snapshot_id=snapshot.snapshot_id).to_arrow(), before, f"{name}: pyiceberg at {snapshot.snapshot_id}"
            )
    if name.startswith("position"):
        assert not any(has_equality_deletes(s) for s in table.snapshots())


@pytest.mark.oracle
@pytest.mark.parametrize("name", list(EXPIRY_SCENARIOS))
def test_iceberg_java_reads_retained_snapshots_as_before(
    expired: dict[str, Built], java_rows: dict[tuple[str, int], pa.Table], name: str
) -> None:
    built = expired[name]
    for snapshot_id in built.snapshot_ids():
        assert_same_rows(built.before_expiry[snapshot_id], java_rows[(name, snapshot_id)], f"{name}: Iceberg Java at {snapshot_id}")


# ---------------------------------------------------------------------------------------------
# The Iceberg Java fixtures, relocated, then compacted and/or expired
# ---------------------------------------------------------------------------------------------

FIXTURE_COPY_KEYS = [f"{name}-{treatment}" for treatment in FIXTURE_TREATMENTS for name in V2_FIXTURES]


def expected_rows_at(copy: FixtureCopy, snapshot_id: int) -> list[dict[str, Any]]:
    """The rows Iceberg Java recorded for the fixture at this snapshot; a compaction snapshot
    must hold the rows of the fixture's final snapshot."""
    known = {s["snapshot_id"] for s in FIXTURE_TABLES[copy.fixture]["snapshots"]}
    return expected_fixture_rows(copy.fixture, snapshot_id if snapshot_id in known else final_fixture_snapshot(copy.fixture))


def test_relocated_fixtures_read_as_java_wrote_them(fixture_copies: dict[str, FixtureCopy]) -> None:
    """The relocation itself changes no row: mor reads every snapshot of every copy as recorded."""
    for copy in fixture_copies.values():
        assert list(copy.relocated_rows) == [s["snapshot_id"] for s in FIXTURE_TABLES[copy.fixture]["snapshots"]]
        for snapshot_id, result in copy.relocated_rows.items():
            assert_fixture_rows(result, result.schema, expected_fixture_rows(copy.fixture, snapshot_id), f"{copy.key} at {snapshot_id}")


@pytest.mark.parametrize("key", FIXTURE_COPY_KEYS)
def test_treated_fixture_copies_read_expected_rows_in_mor_and_pyiceberg(fixture_copies: dict[str, FixtureCopy], key: str) -> None:
    copy = fixture_copies[key]
    table = copy.table
    current = table.current_snapshot()
    if copy.compaction is not None:
        assert current.snapshot_id == copy.compaction.snapshot_id and current.operation == "replace"
        # Every file was small or carried deletes: all were rewritten, no delete file is left.
        assert current.summary["total-delete-files"] == "0", current.summary
    else:
        assert current.snapshot_id == final_fixture_snapshot(copy.fixture)
    retained = [s.snapshot_id for s in table.snapshots()]
    assert not set(copy.expired) & set(retained)
    if copy.treatment.endswith("expired"):
        assert len(retained) == (1 if copy.treatment == "compacted-expired" else 2) and copy.expired
    static = PyIcebergStaticTable.from_metadata(table.metadata_location)
    assert [s.snapshot_id for s in static.snapshots()] == retained
    for snapshot in table.snapshots():
        expected = expected_rows_at(copy, snapshot.snapshot_id)
        ours = read_mor(table, snapshot.snapshot_id)
        schema = ours.schema  # the snapshot's own (time travel reads with it)
        assert_fixture_rows(ours, schema, expected, f"{key}: mor at {snapshot.snapshot_id}")
        if not has_equality_deletes(snapshot):
            assert_fixture_rows(
                static.scan(snapshot_id=snapshot.snapshot_id).to_arrow(), schema, expected, f"{key}: pyiceberg at {snapshot.snapshot_id}"
            )


@pytest.mark.oracle
@pytest.mark.parametrize("key", FIXTURE_COPY_KEYS)
def test_iceberg_java_reads_treated_fixture_copies_as_expected(
    fixture_copies: dict[str, FixtureCopy], java_rows: dict[tuple[str, int], pa.Table], key: str
) -> None:
    copy = fixture_copies[key]
    schema = copy.table.arrow_schema()
    snapshots = copy.java_snapshots()
    if copy.compaction is not None:  # the compaction, and the last snapshot Java wrote (or nothing: expired)
        assert snapshots[-1].operation == "replace"
    assert snapshots[-1].snapshot_id == copy.table.current_snapshot().snapshot_id
    for snapshot in snapshots:
        assert_fixture_rows(
            java_rows[(key, snapshot.snapshot_id)],
            schema,
            expected_rows_at(copy, snapshot.snapshot_id),
            f"{key}: Iceberg Java at {snapshot.snapshot_id} ({snapshot.operation})",
        )
