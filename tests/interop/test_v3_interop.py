"""Format v3 tables written by mor read the same in mor, Iceberg Java and pyiceberg 0.12, row
lineage included (issue 12).

Four tables go through a history of DML, with a dict-of-rows model beside them:

* `v3_part` (v3 from `create_table(format_version=3)`, partitioned by `category`, which holds
  NULLs) and `v3_unpart` (v3 from the `format-version` property, unpartitioned) get the same
  steps: two appends, then DELETEs that hit the same data files again and again (each one
  merges the file's previous deletion vector into a new one), a DELETE on NULLs, UPDATEs,
  a position UPSERT, a MERGE (update, delete and insert), a DELETE that removes every live row
  of some files, copy-on-write DELETE and UPDATE, an equality UPSERT and `delete_rows` (equality
  deletes, which pyiceberg refuses), a DELETE and an UPDATE on files that carry equality deletes,
  `compact()`, a DELETE on the compacted files, `rewrite_position_deletes()`; then a partition
  field is added (`bucket(4, id)`), and a DELETE and an UPDATE hit files of both specs.
* `v3_wide` (unpartitioned) has 10,000 rows in one file: a vector of 4,500 scattered positions
  (a bitmap container), one of a long range (a run container), both merged again, an UPDATE,
  then `delete("true")`, an append and a last DELETE.
* `upgraded` starts as format v2: appends, DELETEs and an UPDATE write v2 position delete files
  (one per data file, file-scoped). Then `upgrade()`, DELETEs on files with v2 deletes (the
  deletion vector merges them and the commit drops them) and on files without, an UPDATE, an
  append, `rewrite_position_deletes()` (the last v2 position deletes become deletion vectors)
  and a last DELETE.

At every snapshot mor must read the model's rows; Iceberg Java (one JVM for the module) and
pyiceberg must read exactly mor's rows (pyiceberg must raise its own error where an equality
delete file is live); Iceberg Java's `_row_id` and `_last_updated_sequence_number` must equal
mor's. Lineage also follows the spec's rules on its own: row ids are unique, kept by UPDATE,
MERGE, position UPSERT, copy-on-write and compaction, and fresh for inserted rows. The files on
disk are checked against what Iceberg Java writes: the Puffin footer, the deletion vector blob,
the manifest entry of each vector, and at most one live vector per data file.
"""

from __future__ import annotations

import json
import zlib
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from java_fixtures import describe_row_differences, row_sort_key, to_json_rows
from oracle_support import read_with_iceberg_java
from pyiceberg.table import StaticTable as PyIcebergStaticTable
from pyroaring import BitMap

import mor
from mor.expr.values import Lit

pytestmark = pytest.mark.interop

Row = dict[str, Any]
Model = dict[int, Row]

SCHEMA = pa.schema([
    pa.field("id", pa.int64(), nullable=False),
    ("category", pa.string()),
    ("name", pa.string()),
    ("value", pa.float64()),
])  # fmt: skip
COLUMNS = SCHEMA.names
LINEAGE = ["_row_id", "_last_updated_sequence_number"]
PYICEBERG_NO_EQUALITY = (ValueError, r"^PyIceberg does not yet support equality deletes")

# What Iceberg Java writes (BaseDVFileWriter, Puffin spec)
DV_BLOB_TYPE = "deletion-vector-v1"
ROW_POSITION_FIELD_ID = 2147483645
DV_MAGIC = bytes([0xD1, 0xD3, 0x39, 0x64])
PUFFIN_MAGIC = b"PFA1"
POSITION_PATH_FIELD_ID = 2147483546  # `file_path` of position delete files


def make_row(i: int, tag: str = "name") -> Row:
    """NULL category every 50 ids (a NULL partition), NULL name and value now and then."""
    return {
        "id": i,
        "category": None if i % 50 == 49 else "abc"[i % 3],
        "name": None if i % 13 == 5 else f"{tag}-{i}",
        "value": None if i % 11 == 3 else i / 4,
    }


def arrow_rows(rows: list[Row]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=SCHEMA)


# ---------------------------------------------------------------------------------------------
# Steps: what mor does, and what it does to the model
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    label: str
    run: Callable[[mor.Table], Any]
    expect: Callable[[Model], Model]
    reinserted: frozenset[int] = frozenset()  # ids whose rows are deleted and inserted again (new row ids)


def append(ids: range) -> Step:
    rows = [make_row(i) for i in ids]
    return Step(f"append {ids.start}..{ids.stop - 1}", lambda t: t.append(arrow_rows(rows)), lambda m: {**m, **{r["id"]: r for r in rows}})


def short(text: str) -> str:
    return text if len(text) <= 70 else text[:60] + "...)" + text[text.index(")") + 1 :]


def delete(where: str, matches: Callable[[Row], bool], mode: str | None = None) -> Step:
    label = f"delete {short(where)}" + (f" ({mode})" if mode else "")
    return Step(label, lambda t: t.delete(where, mode=mode), lambda m: {k: r for k, r in m.items() if not matches(r)})


def literal_values(assignments: dict[str, Any]) -> dict[str, Any]:
    """The values the model stores: `mor.lit(x)` is x."""
    return {k: v.value if isinstance(v, Lit) else v for k, v in assignments.items()}


def update(assignments: dict[str, Any], where: str, matches: Callable[[Row], bool], mode: str | None = None) -> Step:
    label = f"update {assignments} where {short(where)}" + (f" ({mode})" if mode else "")
    return Step(
        label,
        lambda t: t.update(assignments, where=where, mode=mode),
        lambda m: {k: ({**r, **literal_values(assignments)} if matches(r) else r) for k, r in m.items()},
    )


def upsert(rows: list[Row], strategy: str) -> Step:
    def expect(m: Model) -> Model:
        return {**m, **{r["id"]: r for r in rows}}

    reinserted = frozenset(r["id"] for r in rows) if strategy == "equality" else frozenset()
    return Step(f"upsert {strategy}", lambda t: t.upsert(arrow_rows(rows), on=["id"], strategy=strategy), expect, reinserted)


def delete_rows(ids: list[int]) -> Step:
    keys = pa.table({"id": pa.array(ids, pa.int64())})
    return Step(f"delete_rows {ids}", lambda t: t.delete_rows(keys), lambda m: {k: r for k, r in m.items() if k not in ids})


def merge(updates: list[Row], deletes: list[int], inserts: list[Row]) -> Step:
    """MERGE: matched and op 'D' -> delete; matched -> update name and value; not matched and
    op 'I' -> insert."""
    source = pa.Table.from_pylist(
        [{**r, "op": "U"} for r in updates] + [{**make_row(i), "op": "D"} for i in deletes] + [{**r, "op": "I"} for r in inserts],
        schema=SCHEMA.append(pa.field("op", pa.string())),
    )

    def run(table: mor.Table) -> Any:
        return table.merge(
            source,
            on=["id"],
            when_matched_delete=pc.field("source.op") == "D",
            when_matched_update={"name": pc.field("source.name"), "value": pc.field("source.value")},
            when_not_matched_insert={c: pc.field(f"source.{c}") for c in COLUMNS},
            when_not_matched_insert_if=pc.field("source.op") == "I",
        )

    def expect(m: Model) -> Model:
        out = {k: r for k, r in m.items() if k not in deletes}
        for r in updates:
            if r["id"] in out:
                out[r["id"]] = {**out[r["id"]], "name": r["name"], "value": r["value"]}
        for r in inserts:
            if r["id"] not in m:
                out[r["id"]] = r
        return out

    return Step("merge", run, expect)


def compact() -> Step:
    return Step("compact", lambda t: t.compact(min_input_files=2), lambda m: m)


def rewrite_position_deletes() -> Step:
    return Step("rewrite_position_deletes", lambda t: t.rewrite_position_deletes(), lambda m: m)


def add_partition_field(transform: str) -> Step:
    def run(table: mor.Table) -> None:
        with table.update_spec() as spec:
            spec.add_field(transform)

    return Step(f"add partition field {transform}", run, lambda m: m)


def upgrade() -> Step:
    return Step("upgrade", lambda t: t.upgrade(format_version=3), lambda m: m)


def null_safe(value: Any, test: Callable[[Any], bool]) -> bool:
    return value is not None and test(value)


def ids(test: Callable[[int], bool]) -> str:
    """`id in (...)` for the ids (of all the scenarios write) that pass `test` (mor's filter
    text has no `%`)."""
    return "id in (" + ", ".join(str(i) for i in range(11000) if test(i)) + ")"


def on_id(
    test: Callable[[int], bool], where: str = "", matches: Callable[[Row], bool] = lambda r: True
) -> tuple[str, Callable[[Row], bool]]:
    """A filter on ids (and `where`), and the same as a predicate on model rows."""
    return ids(test) + (f" and {where}" if where else ""), lambda r: test(r["id"]) and matches(r)


def dml_steps() -> list[Step]:
    ups = [make_row(i, "ups") for i in (2, 3, 16, 101, 1000)] + [{**make_row(1001), "name": None}]
    merge_updates = [make_row(i, "merged") for i in (4, 8, 41)]  # 41 is gone by then: no insert (op U)
    merge_inserts = [make_row(2000, "merged"), {**make_row(2001, "merged"), "category": None}]
    return [
        append(range(0, 120)),
        append(range(120, 240)),
        delete(*on_id(lambda i: i % 10 == 0)),
        delete(*on_id(lambda i: i % 10 == 5)),  # the same files: vectors merged
        delete(*on_id(lambda i: i % 4 == 1, "id < 150", lambda r: r["id"] < 150)),  # and again
        delete("name is null", lambda r: r["name"] is None),
        update({"value": -1.0, "name": mor.lit("updated")}, *on_id(lambda i: i % 7 == 0)),
        update({"value": 0.5}, "value is null", lambda r: r["value"] is None),
        upsert(ups, "position"),
        merge(merge_updates, [6, 22, 1000], merge_inserts),
        # every live row of the second append's files (and some rows of later files)
        delete("id >= 120 and id < 240", lambda r: 120 <= r["id"] < 240),
        delete("id in (11, 12, 13, 1001)", lambda r: r["id"] in (11, 12, 13, 1001), mode="copy-on-write"),
        update({"name": mor.lit("cow")}, *on_id(lambda i: i % 9 == 1), mode="copy-on-write"),
        upsert([make_row(i, "eq") for i in (14, 17, 3000)], "equality"),
        delete_rows([18, 19, 5000]),
        delete(*on_id(lambda i: i % 6 == 3)),  # vectors on files under equality deletes
        update({"value": 9.5}, "category = 'b' and id < 60", lambda r: r["category"] == "b" and r["id"] < 60),
        compact(),
        delete(ids(lambda i: i % 8 == 7) + " or value = 9.5", lambda r: r["id"] % 8 == 7 or null_safe(r["value"], lambda v: v == 9.5)),
        rewrite_position_deletes(),  # nothing but vectors: nothing to do
        delete("name = 'cow' and category = 'b'", lambda r: r["name"] == "cow" and r["category"] == "b"),
        # partition evolution: vectors for files of both specs, in their own spec's partition
        add_partition_field("bucket(4, id)"),
        append(range(300, 340)),
        delete(*on_id(lambda i: i % 5 == 2)),
        update({"value": 3.25}, *on_id(lambda i: i % 5 == 4)),
    ]  # fmt: skip


def upgraded_steps() -> list[Step]:
    return [
        append(range(0, 120)),
        append(range(120, 240)),
        delete(*on_id(lambda i: i % 10 == 0)),  # v2: a position delete file per data file
        delete(*on_id(lambda i: i % 10 == 3, "category = 'a'", lambda r: r["category"] == "a")),
        update({"value": -2.0}, *on_id(lambda i: i % 17 == 0)),
        upgrade(),
        # a's and b's files: vectors that take in their v2 deletes; c's keep theirs
        delete(*on_id(lambda i: i % 10 == 5, "category in ('a', 'b')", lambda r: r["category"] in ("a", "b"))),
        delete(*on_id(lambda i: i % 10 == 7 and i < 120, "category = 'c'", lambda r: r["category"] == "c")),
        # not c's second file: it keeps its two v2 position delete files until the rewrite
        update({"value": -1.0, "name": mor.lit("updated")}, *on_id(lambda i: i % 7 == 0 and i < 120)),
        append(range(240, 260)),
        rewrite_position_deletes(),  # the v2 deletes still live become vectors
        delete(*on_id(lambda i: i % 10 == 9)),
        merge([make_row(i, "merged") for i in (2, 21, 250)], [4, 245], [make_row(3001, "merged")]),
    ]  # fmt: skip


def wide_steps() -> list[Step]:
    return [
        append(range(0, 10000)),
        append(range(10000, 11000)),
        # 4,500 scattered positions in one vector: a bitmap container, not an array
        delete(*on_id(lambda i: i % 2 == 0 and i < 9000)),
        # a long range: a run container (mor run-optimizes its bitmaps)
        delete("id >= 10100 and id < 10900", lambda r: 10100 <= r["id"] < 10900),
        delete(*on_id(lambda i: i % 7 == 3)),  # both vectors merged again
        update({"name": mor.lit("wide")}, *on_id(lambda i: i % 1000 == 1)),
        delete("true", lambda r: True),  # every file goes, and every vector with it
        append(range(20000, 20010)),
        delete("id = 20004", lambda r: r["id"] == 20004),
    ]


@dataclass(frozen=True)
class Scenario:
    partition_by: list[str] | None
    create: dict[str, Any]
    steps: Callable[[], list[Step]]


SCENARIOS = {
    "v3_part": Scenario(["category"], {"format_version": 3}, dml_steps),
    "v3_unpart": Scenario(None, {"properties": {"format-version": "3"}}, dml_steps),
    "upgraded": Scenario(["category"], {}, upgraded_steps),
    "v3_wide": Scenario(None, {"format_version": 3}, wide_steps),
}

# ---------------------------------------------------------------------------------------------
# Building the tables; what each snapshot holds on disk
# ---------------------------------------------------------------------------------------------


@dataclass
class Made:
    """One snapshot: the step that made it and the model's rows after it."""

    step: Step
    snapshot_id: int
    sequence_number: int
    format_version: int  # of the table when the snapshot was made
    model: list[Row]
    ours: pa.Table = field(default_factory=lambda: pa.table({}))  # mor's rows with lineage, read at the end
    entries: list[dict[str, Any]] = field(default_factory=list)  # live manifest entries
    all_entries: list[dict[str, Any]] = field(default_factory=list)  # deleted ones too


@dataclass
class Built:
    name: str
    table: mor.Table
    history: list[Made]
    skipped: list[str]  # steps that made no snapshot


def to_local(location: str) -> str:
    return location.removeprefix("file://").removeprefix("file:")


def manifest_entries(manifest_list: str) -> list[dict[str, Any]]:
    """Every entry of every manifest of a snapshot, in order, read with fastavro (independent of
    mor's readers), each with its manifest list entry beside it."""
    out = []
    with open(to_local(manifest_list), "rb") as f:
        manifests = list(fastavro.reader(f))
    for manifest in manifests:
        with open(to_local(manifest["manifest_path"]), "rb") as f:
            out += [{**entry, "manifest": manifest} for entry in fastavro.reader(f)]
    return out


def build(root: Path, name: str, scenario: Scenario) -> Built:
    catalog = mor.load_catalog(str(root / "warehouse"), create=True)
    table = catalog.create_table(f"db.{name}", schema=SCHEMA, partition_by=scenario.partition_by, **scenario.create)
    model: Model = {}
    history: list[Made] = []
    skipped: list[str] = []
    for step in scenario.steps():
        before = table.current_snapshot()
        step.run(table)
        table.refresh()
        model = step.expect(model)
        after = table.current_snapshot()
        if after is None or (before is not None and after.snapshot_id == before.snapshot_id):
            skipped.append(step.label)
            continue
        history.append(Made(step, after.snapshot_id, after.sequence_number, table.metadata.format_version, list(model.values())))
    metadata = json.loads(Path(to_local(table.metadata_location)).read_text())
    lists = {s["snapshot-id"]: s["manifest-list"] for s in metadata["snapshots"]}
    for made in history:
        made.ours = table.scan(snapshot_id=made.snapshot_id, columns=COLUMNS + LINEAGE).to_arrow()
        made.all_entries = manifest_entries(lists[made.snapshot_id])
        made.entries = [e for e in made.all_entries if e["status"] != 2]
    return Built(name, table, history, skipped)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Built]:
    root = tmp_path_factory.mktemp("v3")
    return {name: build(root, name, scenario) for name, scenario in SCENARIOS.items()}


@pytest.fixture(scope="module")
def java(built: dict[str, Built], tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, int, bool], pa.Table]:
    """Iceberg Java's rows at every snapshot of every table, read twice: plainly (every column
    of the schema) and with the lineage columns (key `(table, snapshot id, lineage?)`). One JVM."""
    keys = [(b.name, m.snapshot_id, lineage) for b in built.values() for m in b.history for lineage in (False, True)]
    requests = [(built[name].table.metadata_location, sid, COLUMNS + LINEAGE if lineage else None) for name, sid, lineage in keys]
    return dict(zip(keys, read_with_iceberg_java(requests, tmp_path_factory.mktemp("v3-oracle"), sort=False)))


def has_equality_deletes(made: Made) -> bool:
    return any(e["data_file"]["content"] == 2 for e in made.entries)


def deletion_vectors(made: Made) -> list[dict[str, Any]]:
    return [e["data_file"] for e in made.entries if e["data_file"]["content"] == 1 and e["data_file"]["file_format"] == "PUFFIN"]


def assert_same_rows(theirs: pa.Table, ours: pa.Table | list[Row], how: str) -> None:
    ours_rows = to_json_rows(ours.to_pylist() if isinstance(ours, pa.Table) else ours)
    columns = list(ours_rows[0]) if ours_rows else COLUMNS
    theirs_rows = to_json_rows(theirs.select(columns).to_pylist())
    assert sorted(theirs_rows, key=row_sort_key) == sorted(ours_rows, key=row_sort_key), (
        f"{how}:\n{describe_row_differences(ours_rows, theirs_rows)}"
    )


def snapshots(built: dict[str, Built], name: str) -> Iterator[tuple[Built, Made]]:
    for made in built[name].history:
        yield built[name], made


TABLES = [pytest.param(name, id=name) for name in SCENARIOS]

# ---------------------------------------------------------------------------------------------
# The history is what it claims to be
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", TABLES)
def test_the_history_covers_the_scenario(built: dict[str, Built], name: str) -> None:
    b = built[name]
    summaries = [m.step.label + " " + json.dumps(b.table.metadata.snapshot_by_id(m.snapshot_id).summary) for m in b.history]
    by_label = {m.step.label: m for m in b.history}
    skipped = {"upgraded": ["upgrade"], "v3_wide": []}.get(name, ["rewrite_position_deletes", "add partition field bucket(4, id)"])
    assert b.skipped == skipped, b.skipped
    # a vector replaced by a later one: deletes merged again and again
    assert sum('"removed-dvs"' in s for s in summaries) >= {"upgraded": 2, "v3_wide": 2}.get(name, 4), summaries
    if name == "v3_wide":
        assert not by_label["delete true"].entries, "a truncated table has no live file"
        vectors = [v for m in b.history for v in deletion_vectors(m)]
        assert max(v["record_count"] for v in vectors) > 4096
        assert any(vector_has_runs(v) for v in vectors)
    elif name == "upgraded":
        first_v3 = next(m for m in b.history if m.format_version == 3)
        assert '"removed-position-delete-files"' in json.dumps(b.table.metadata.snapshot_by_id(first_v3.snapshot_id).summary)
        v2_deletes = [e for e in first_v3.entries if e["data_file"]["content"] == 1 and e["data_file"]["file_format"] == "PARQUET"]
        assert v2_deletes, "c's files keep their v2 deletes beside the new vectors"
        rewritten = by_label["rewrite_position_deletes"]
        assert all(d["data_file"]["file_format"] == "PUFFIN" for d in rewritten.entries if d["data_file"]["content"] == 1)
        assert deletion_vectors(rewritten)
    else:
        assert any(has_equality_deletes(m) for m in b.history)
        assert not has_equality_deletes(by_label["compact"]), "compaction drops the equality deletes"
        # the DELETE that takes every live row of the second append's files drops them (and their vectors)
        emptied = b.table.metadata.snapshot_by_id(by_label["delete id >= 120 and id < 240"].snapshot_id).summary
        assert int(emptied["deleted-data-files"]) >= 1 and int(emptied["removed-dvs"]) >= 1, emptied
        # no v2 position delete file ever
        assert all(e["data_file"]["file_format"] == "PUFFIN" for m in b.history for e in m.entries if e["data_file"]["content"] == 1)


@pytest.mark.parametrize("name", TABLES)
def test_mor_reads_the_model_at_every_snapshot(built: dict[str, Built], name: str) -> None:
    for b, made in snapshots(built, name):
        assert_same_rows(made.ours, made.model, f"{name}: mor after {made.step.label}")
        assert_same_rows(b.table.scan(snapshot_id=made.snapshot_id).to_arrow(), made.model, f"{name}: mor, plain scan")


@pytest.mark.parametrize("name", TABLES)
def test_pyiceberg_reads_every_snapshot_as_mor(built: dict[str, Built], name: str) -> None:
    static = PyIcebergStaticTable.from_metadata(built[name].table.metadata_location)
    for _, made in snapshots(built, name):
        how = f"{name}: pyiceberg after {made.step.label}"
        if has_equality_deletes(made):
            error, message = PYICEBERG_NO_EQUALITY
            with pytest.raises(error, match=message):
                static.scan(snapshot_id=made.snapshot_id).to_arrow()
            continue
        assert_same_rows(static.scan(snapshot_id=made.snapshot_id).to_arrow(), made.ours.select(COLUMNS), how)


@pytest.mark.oracle
@pytest.mark.parametrize("name", TABLES)
def test_iceberg_java_reads_every_snapshot_as_mor(built: dict[str, Built], java: dict[tuple[str, int, bool], pa.Table], name: str) -> None:
    for _, made in snapshots(built, name):
        theirs = java[(name, made.snapshot_id, False)]
        assert theirs.column_names == COLUMNS
        assert_same_rows(theirs, made.ours.select(COLUMNS), f"{name}: Iceberg Java after {made.step.label}")


@pytest.mark.oracle
@pytest.mark.parametrize("name", TABLES)
def test_iceberg_java_reads_mors_row_lineage(built: dict[str, Built], java: dict[tuple[str, int, bool], pa.Table], name: str) -> None:
    for _, made in snapshots(built, name):
        theirs = java[(name, made.snapshot_id, True)]
        assert_same_rows(theirs, made.ours, f"{name}: Iceberg Java's lineage after {made.step.label}")
        if made.format_version == 2:
            assert theirs.column("_row_id").null_count == theirs.num_rows


Lineage = dict[Any, tuple[int, int, Row]]  # key -> (_row_id, _last_updated_sequence_number, other values)


def check_lineage(
    before: Lineage | None,
    rows: list[Row],
    snapshot: Any,
    reinserted: frozenset[Any],
    how: str,
    key: str = "id",
    touched: frozenset[Any] | None = None,
) -> Lineage:
    """Row lineage at `snapshot` against the snapshot before (None: nothing to compare with):
    row ids are set and unique; a row that stays (UPDATE, MERGE, position UPSERT, copy-on-write,
    compaction) keeps its row id, and its last-updated sequence number unless the step updated
    it (`touched`; by default: the rows whose values changed), when it becomes the snapshot's
    (even if the values stay the same, as in Iceberg Java); a new row (or one in `reinserted`:
    deleted and inserted again by an equality UPSERT) gets a row id from the range the snapshot
    reserved (first-row-id, added-rows) and the snapshot's sequence number. The lineage at
    `snapshot`."""
    ids = [r["_row_id"] for r in rows]
    assert None not in ids and None not in [r["_last_updated_sequence_number"] for r in rows], how
    assert len(set(ids)) == len(ids), f"{how}: duplicate row ids {[i for i, n in Counter(ids).items() if n > 1][:10]}"
    current = {r[key]: (r["_row_id"], r["_last_updated_sequence_number"], {c: v for c, v in r.items() if c not in LINEAGE}) for r in rows}
    assert len(current) == len(rows), f"{how}: {key} is not unique"
    reserved = range(snapshot.first_row_id, snapshot.first_row_id + (snapshot.added_rows or 0))
    for k, (row_id, updated, values) in current.items():
        if before is None:
            continue
        if k in before and k not in reinserted:
            old_id, old_updated, old_values = before[k]
            assert row_id == old_id, f"{how}: {key} {k} moved from row id {old_id} to {row_id}"
            if touched is not None:
                assert values == old_values or k in touched, f"{how}: {key} {k} changed without being updated"
            updated_now = values != old_values if touched is None else k in touched
            expected = snapshot.sequence_number if updated_now else old_updated
            assert updated == expected, f"{how}: {key} {k} ({old_values} -> {values}) last updated at {updated}, not {expected}"
        else:
            assert row_id in reserved, f"{how}: new {key} {k} has row id {row_id}, outside the snapshot's {reserved}"
            assert updated == snapshot.sequence_number, f"{how}: new {key} {k} last updated at {updated}"
    return current


@pytest.mark.parametrize("name", TABLES)
def test_row_lineage_follows_the_spec(built: dict[str, Built], name: str) -> None:
    before: Lineage | None = None
    for b, made in snapshots(built, name):
        how = f"{name}: after {made.step.label}"
        rows = made.ours.to_pylist()
        if made.format_version == 2:
            assert all(r["_row_id"] is None and r["_last_updated_sequence_number"] is None for r in rows), how
            continue
        snapshot = b.table.metadata.snapshot_by_id(made.snapshot_id)
        before = check_lineage(before, rows, snapshot, made.step.reinserted, how)


# ---------------------------------------------------------------------------------------------
# On disk: Puffin files and manifest entries as Iceberg Java writes them
# ---------------------------------------------------------------------------------------------


def puffin_footer(data: bytes) -> dict[str, Any]:
    assert data[:4] == PUFFIN_MAGIC and data[-4:] == PUFFIN_MAGIC
    size = int.from_bytes(data[-12:-8], "little", signed=True)
    assert data[-8:-4] == bytes(4), "footer flags: uncompressed, nothing else set"
    start = len(data) - 12 - size
    assert data[start - 4 : start] == PUFFIN_MAGIC
    return json.loads(data[start : start + size])


def vector_has_runs(entry: dict[str, Any]) -> bool:
    """Does the vector's first 32-bit bitmap hold run containers (Roaring's portable format:
    cookie 12347)?"""
    with open(to_local(entry["file_path"]), "rb") as f:
        f.seek(entry["content_offset"] + 8 + 8 + 4)  # length, magic; bitmap count; first key
        return int.from_bytes(f.read(4), "little") & 0xFFFF == 12347


def vector_positions(blob: bytes) -> list[int]:
    """The positions a deletion-vector-v1 blob holds (length, magic, portable 64-bit roaring
    bitmap, CRC-32 of magic and bitmap: the Puffin spec's layout)."""
    length = int.from_bytes(blob[:4], "big")
    assert length == len(blob) - 8, "the length counts the magic and the bitmap"
    assert blob[4:8] == DV_MAGIC
    assert int.from_bytes(blob[-4:], "big") == zlib.crc32(blob[4:-4])
    bitmap = blob[8:-4]
    count, rest, positions = int.from_bytes(bitmap[:8], "little"), bitmap[8:], []
    for _ in range(count):
        key = int.from_bytes(rest[:4], "little")
        part = BitMap.deserialize(rest[4:])
        rest = rest[4 + len(part.serialize()) :]
        positions += [(key << 32) | p for p in part]
    assert not rest
    return positions


def check_deletion_vectors(entries: list[dict[str, Any]], snapshot_id: int, how: str) -> int:
    """The live deletion vectors among a snapshot's live manifest `entries` are as Iceberg Java
    writes them: a `deletion-vector-v1` blob for field 2147483645 with snapshot id and sequence
    number -1 and the properties `referenced-data-file` and `cardinality`, at the entry's
    content offset and size; the entry names its live data file, in the same partition, has
    the cardinality as record count, no `file_path` bounds; at most one live vector per data
    file; the vectors the snapshot adds share one Puffin file. How many vectors there are."""
    data_files = {e["data_file"]["file_path"]: e["data_file"] for e in entries if e["data_file"]["content"] == 0}
    vectors = [e["data_file"] for e in entries if e["data_file"]["content"] == 1 and e["data_file"]["file_format"] == "PUFFIN"]
    per_file = Counter(v["referenced_data_file"] for v in vectors)
    assert max(per_file.values(), default=1) == 1, f"{how}: several live vectors for {per_file.most_common(1)}"
    for v in vectors:
        path = v["file_path"]
        data = Path(to_local(path)).read_bytes()
        assert v["file_size_in_bytes"] == len(data), how
        footer = puffin_footer(data)
        blobs = [b for b in footer["blobs"] if b["offset"] == v["content_offset"]]
        assert len(blobs) == 1, f"{how}: no blob at {v['content_offset']} in {path}"
        blob = blobs[0]
        assert blob["type"] == DV_BLOB_TYPE and blob["fields"] == [ROW_POSITION_FIELD_ID], blob
        assert blob["snapshot-id"] == -1 and blob["sequence-number"] == -1, blob
        assert "compression-codec" not in blob, blob
        assert blob["length"] == v["content_size_in_bytes"], (blob, v)
        assert blob["properties"]["referenced-data-file"] == v["referenced_data_file"], blob
        assert int(blob["properties"]["cardinality"]) == v["record_count"], blob
        positions = vector_positions(data[blob["offset"] : blob["offset"] + blob["length"]])
        assert len(positions) == v["record_count"] and positions == sorted(set(positions)), how
        target = data_files.get(v["referenced_data_file"])
        assert target is not None, f"{how}: a live vector for a data file that is not live: {v['referenced_data_file']}"
        assert positions[-1] < target["record_count"], how
        assert target["partition"] == v["partition"], how
        assert not any(b["key"] == POSITION_PATH_FIELD_ID for b in v["lower_bounds"] or []), f"{how}: file_path bounds on a vector"
        assert v["equality_ids"] is None, how
    added = {
        e["data_file"]["file_path"]
        for e in entries
        if e["status"] == 1 and e["snapshot_id"] == snapshot_id and e["data_file"]["file_format"] == "PUFFIN"
    }
    assert len(added) <= 1, f"{how}: {len(added)} Puffin files in one commit"
    return len(vectors)


@pytest.mark.parametrize("name", TABLES)
def test_deletion_vectors_on_disk_are_as_iceberg_java_writes_them(built: dict[str, Built], name: str) -> None:
    checked = 0
    for _, made in snapshots(built, name):
        how = f"{name}: after {made.step.label}"
        if made.format_version == 2:
            assert not deletion_vectors(made), how
            continue
        checked += check_deletion_vectors(made.entries, made.snapshot_id, how)
    assert checked > (5 if name == "v3_wide" else 20)


@pytest.mark.parametrize("name", TABLES)
def test_row_lineage_fields_on_disk(built: dict[str, Built], name: str) -> None:
    """v3 snapshots carry first-row-id and added-rows; every live data file of a v3 snapshot has
    a first row id, its own or inherited from its manifest's (the manifest's first_row_id plus
    the rows of the files before it that inherit too), and the row id ranges do not overlap."""
    metadata = json.loads(Path(to_local(built[name].table.metadata_location)).read_text())
    assert metadata["format-version"] == 3
    by_id = {s["snapshot-id"]: s for s in metadata["snapshots"]}
    for _, made in snapshots(built, name):
        how = f"{name}: after {made.step.label}"
        snap = by_id[made.snapshot_id]
        if made.format_version == 2:
            assert "first-row-id" not in snap, how
            continue
        assert snap["first-row-id"] >= 0 and snap["added-rows"] >= 0, how
        ranges, inherited = [], Counter[str]()
        for e in made.all_entries:
            d, manifest = e["data_file"], e["manifest"]
            if d["content"] != 0:
                continue
            first = d.get("first_row_id")
            if first is None:
                assert manifest["first_row_id"] is not None, f"{how}: no first row id for {d['file_path']}"
                first = manifest["first_row_id"] + inherited[manifest["manifest_path"]]
                inherited[manifest["manifest_path"]] += d["record_count"]
            if e["status"] != 2:
                ranges.append((first, first + d["record_count"], d["file_path"]))
        ranges.sort()
        assert all(a[1] <= b[0] for a, b in zip(ranges, ranges[1:])), f"{how}: overlapping row id ranges {ranges}"
        assert not ranges or ranges[-1][1] <= snap["first-row-id"] + snap["added-rows"], how
    assert metadata["next-row-id"] == max(s.get("first-row-id", 0) + s.get("added-rows", 0) for s in metadata["snapshots"])
