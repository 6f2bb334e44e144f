"""DML by mor on format v3 tables that Iceberg Java wrote: deletion vectors merged into mor's,
row lineage carried on (issue 12).

Copies of the Java v3 fixtures (the shared `v3_dv`; ours `v3_dv_multi`, `v3_upgraded`, `v3_eq`,
see tests/fixtures/README.md) are relocated to a fresh folder (every path in the metadata, the
manifest lists, the manifests, the Parquet position delete files and the Puffin footers moved)
and registered in a mor catalog. Then mor DELETEs rows of files that already carry Java's
deletion vectors (twice: its own vector is merged again), and in `v3_upgraded` of a file that
still has a file-scoped and a partition-scoped Parquet position delete; a copy-on-write DELETE,
an UPDATE, a MERGE (update, delete, insert), a `delete_rows`, `compact()`, and a DELETE of the
compacted files. A second copy of `v3_upgraded` first runs `rewrite_position_deletes()`, which
turns those two Parquet files into a vector, then the same steps. Each step's expected rows come from the previous state with pyarrow
(independent of mor's writers); the row lineage follows the spec's rules (test_v3_interop's
`check_lineage`), and the deletion vectors on disk are as Java writes them. At the end Iceberg
Java (one JVM for the module) reads every new snapshot as mor does, `_row_id` and
`_last_updated_sequence_number` included, and pyiceberg 0.12 too (it must raise its own error
where an equality delete is live).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from fixture_copies import relocate_fixture
from java_fixtures import FIXTURE_TABLES, fixture_source, read_json_lines, to_json_rows
from oracle_support import read_with_iceberg_java
from pyiceberg.table import StaticTable as PyIcebergStaticTable
from test_v3_interop import (
    LINEAGE,
    POSITION_PATH_FIELD_ID,
    PYICEBERG_NO_EQUALITY,
    Lineage,
    assert_same_rows,
    check_deletion_vectors,
    check_lineage,
    ids,
    manifest_entries,
)

import mor

pytestmark = pytest.mark.interop

FIXTURE_ROOT = "/tmp/mor-fixtures/iceberg-java"  # the warehouse the fixtures' metadata names
V3_FIXTURES = sorted(name for name, info in FIXTURE_TABLES.items() if info["format_version"] == 3)

# ---------------------------------------------------------------------------------------------
# A relocated copy of a v3 fixture
# ---------------------------------------------------------------------------------------------


# ---------------------------------------------------------------------------------------------
# Steps: what mor does, and the rows expected after it (pyarrow, from the rows before)
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    label: str
    run: Callable[[mor.Table], Any]
    expect: Callable[[pa.Table], pa.Table]
    touched: Callable[[pa.Table], frozenset[int]] = lambda rows: frozenset()  # ids the step updates (in the rows before)


def id_test(rows: pa.Table, test: Callable[[int], bool]) -> pa.Array:
    return pa.array([test(i) for i in rows.column("id").to_pylist()], pa.bool_())


def delete(test: Callable[[int], bool], what: str, mode: str | None = None) -> Step:
    return Step(
        f"delete {what}" + (f" ({mode})" if mode else ""),
        lambda t: t.delete(ids(test), mode=mode),
        lambda rows: rows.filter(pc.invert(id_test(rows, test))),
    )


def update_value(test: Callable[[int], bool], what: str, value: float) -> Step:
    def expect(rows: pa.Table) -> pa.Table:
        i = rows.schema.get_field_index("value")
        chosen = id_test(rows, test)
        return rows.set_column(i, rows.schema.field(i), pc.if_else(chosen, pa.scalar(value, pa.float64()), rows.column(i)))

    def touched(rows: pa.Table) -> frozenset[int]:
        return frozenset(i for i in rows.column("id").to_pylist() if test(i))

    return Step(f"update value = {value} where {what}", lambda t: t.update({"value": value}, where=ids(test)), expect, touched)


def merge() -> Step:
    """Matched ids % 10 = 6 below 100: name 'merged-<id>'; matched ids % 10 = 8 below 100:
    deleted; ids 7000 and 7001 (NULL name), copies of the first row: inserted."""
    sources: dict[str, pa.Table] = {}

    def source(rows: pa.Table) -> pa.Table:
        if "source" not in sources:
            ids_ = rows.column("id").to_pylist()
            updated = rows.filter(id_test(rows, lambda i: i % 10 == 6 and i < 100))
            updated = updated.set_column(
                updated.schema.get_field_index("name"), "name", pa.array([f"merged-{i}" for i in updated.column("id").to_pylist()])
            )
            deleted = rows.filter(id_test(rows, lambda i: i % 10 == 8 and i < 100))
            first = rows.filter(id_test(rows, lambda i: i == min(ids_)))
            inserted = pa.concat_tables([first, first])
            inserted = inserted.set_column(0, inserted.schema.field(0), pa.array([7000, 7001], pa.int64()))
            inserted = inserted.set_column(inserted.schema.get_field_index("name"), "name", pa.array(["new-7000", None], pa.string()))
            ops = ["U"] * updated.num_rows + ["D"] * deleted.num_rows + ["I"] * inserted.num_rows
            both = pa.concat_tables([updated, deleted, inserted])
            sources["source"] = both.append_column("op", pa.array(ops))
            assert updated.num_rows and deleted.num_rows
        return sources["source"]

    def run(table: mor.Table) -> Any:
        src = source(table.scan().to_arrow())
        columns = [c for c in src.column_names if c != "op"]
        return table.merge(
            src,
            on=["id"],
            when_matched_delete=pc.field("source.op") == "D",
            when_matched_update={"name": pc.field("source.name")},
            when_not_matched_insert={c: pc.field(f"source.{c}") for c in columns},
        )

    def expect(rows: pa.Table) -> pa.Table:
        src = source(rows)
        ops = dict(zip(src.column("id").to_pylist(), src.column("op").to_pylist()))
        names = dict(zip(src.column("id").to_pylist(), src.column("name").to_pylist()))
        kept = rows.filter(pa.array([ops.get(i) != "D" for i in rows.column("id").to_pylist()]))
        i = kept.schema.get_field_index("name")
        new_names = [names[k] if ops.get(k) == "U" else n for k, n in zip(kept.column("id").to_pylist(), kept.column(i).to_pylist())]
        kept = kept.set_column(i, kept.schema.field(i), pa.array(new_names, pa.string()))
        inserted = src.filter(pc.equal(src.column("op"), "I")).drop_columns(["op"])
        return pa.concat_tables([kept, inserted.cast(kept.schema)])

    def touched(rows: pa.Table) -> frozenset[int]:
        src = source(rows)
        return frozenset(i for i, op in zip(src.column("id").to_pylist(), src.column("op").to_pylist()) if op == "U")

    return Step("merge", run, expect, touched)


def delete_rows(test: Callable[[int], bool], what: str) -> Step:
    def run(table: mor.Table) -> Any:
        keys = [i for i in table.scan(columns=["id"]).to_arrow().column("id").to_pylist() if test(i)]
        return table.delete_rows(pa.table({"id": pa.array(keys + [5_000_000], pa.int64())}))

    return Step(f"delete_rows {what}", run, lambda rows: rows.filter(pc.invert(id_test(rows, test))))


def compact() -> Step:
    return Step("compact", lambda t: t.compact(min_input_files=2), lambda rows: rows)


def rewrite_position_deletes() -> Step:
    return Step("rewrite_position_deletes", lambda t: t.rewrite_position_deletes(), lambda rows: rows)


KEEP_ROWS = ("compact", "rewrite_position_deletes")


def steps() -> list[Step]:
    return [
        delete(lambda i: i % 10 == 1, "id % 10 = 1"),  # files with Java's vectors: merged into mor's
        delete(lambda i: i % 10 == 2, "id % 10 = 2"),  # and mor's merged again
        delete(lambda i: i % 10 == 7 and i < 60, "id % 10 = 7 and id < 60", mode="copy-on-write"),
        update_value(lambda i: i % 10 == 4, "id % 10 = 4", -7.0),
        merge(),
        delete_rows(lambda i: i % 10 == 9 and i < 100, "id % 10 = 9 and id < 100"),  # equality deletes
        compact(),
        delete(lambda i: i % 10 == 3, "id % 10 = 3"),  # vectors on the compacted files
    ]  # fmt: skip


# ---------------------------------------------------------------------------------------------
# Running the steps on every fixture; Iceberg Java's reads
# ---------------------------------------------------------------------------------------------


@dataclass
class Made:
    step: Step
    snapshot_id: int
    ours: pa.Table  # mor's rows with lineage
    entries: list[dict[str, Any]]  # live manifest entries
    touched: frozenset[int]  # the ids of the rows the step updated
    equality: bool = field(init=False)

    def __post_init__(self) -> None:
        self.equality = any(e["data_file"]["content"] == 2 for e in self.entries)


@dataclass
class Copy:
    name: str
    table: mor.Table
    start: pa.Table  # mor's rows (with lineage) of the relocated fixture, before any step
    made: list[Made]
    columns: list[str]


def live_entries(table: mor.Table, snapshot_id: int) -> list[dict[str, Any]]:
    return [e for e in manifest_entries(table.metadata.snapshot_by_id(snapshot_id).manifest_list) if e["status"] != 2]


def run_steps(root: Path, name: str) -> Copy:
    fixture, first = VARIANTS[name]
    catalog = mor.load_catalog(str(root / "warehouse"), create=True)
    table = catalog.register_table(f"db.{fixture}", relocate_fixture(fixture, root / "copy"))
    columns = table.arrow_schema().names
    start = table.scan(columns=columns + LINEAGE).to_arrow()
    rows = start.select(columns)
    made: list[Made] = []
    for step in first + steps():
        expected, touched = step.expect(rows), step.touched(rows)
        if step.label not in KEEP_ROWS:  # each step must change something, or it proves nothing
            assert to_json_rows(expected.to_pylist()) != to_json_rows(rows.to_pylist()), f"{name}: {step.label} changes no row"
        before = table.current_snapshot()
        step.run(table)
        after = table.current_snapshot()
        assert after is not None and before is not None and after.snapshot_id != before.snapshot_id, f"{name}: {step.label}"
        rows = table.scan().to_arrow()
        assert_same_rows(rows, expected, f"{name}: mor after {step.label}")
        ours = table.scan(snapshot_id=after.snapshot_id, columns=columns + LINEAGE).to_arrow()
        made.append(Made(step, after.snapshot_id, ours, live_entries(table, after.snapshot_id), touched))
    return Copy(name, table, start, made, columns)


@pytest.fixture(scope="module")
def copies(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Copy]:
    return {name: run_steps(tmp_path_factory.mktemp(name), name) for name in VARIANTS}


@pytest.fixture(scope="module")
def java(copies: dict[str, Copy], tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, int, bool], pa.Table]:
    """Iceberg Java's rows at every new snapshot of every copy, plainly and with the lineage
    columns (key `(fixture, snapshot id, lineage?)`). One JVM."""
    keys = [(c.name, m.snapshot_id, lineage) for c in copies.values() for m in c.made for lineage in (False, True)]
    requests = [
        (copies[name].table.metadata_location, sid, copies[name].columns + LINEAGE if lineage else None) for name, sid, lineage in keys
    ]
    return dict(zip(keys, read_with_iceberg_java(requests, tmp_path_factory.mktemp("v3-fixture-oracle"), sort=False)))


# copy -> (fixture, steps before the common ones)
VARIANTS: dict[str, tuple[str, list[Step]]] = {name: (name, []) for name in V3_FIXTURES}
# v3_upgraded's last Parquet position deletes (a file-scoped and a partition-scoped one, on b's
# second file) turned into a deletion vector first, instead of merged by the first DELETE
VARIANTS["v3_upgraded-rewritten"] = ("v3_upgraded", [rewrite_position_deletes()])
FIXTURES = [pytest.param(name, id=name) for name in VARIANTS]


def test_every_v3_fixture_is_here() -> None:
    assert set(V3_FIXTURES) >= {"v3_dv", "v3_dv_multi", "v3_upgraded", "v3_eq"}


@pytest.mark.parametrize("name", FIXTURES)
def test_the_relocated_copy_reads_as_iceberg_java_wrote_it(copies: dict[str, Copy], name: str) -> None:
    """mor reads the copy's current rows with the lineage Java recorded for them."""
    fixture = VARIANTS[name][0]
    final = FIXTURE_TABLES[fixture]["snapshots"][-1]["snapshot_id"]
    recorded = read_json_lines(fixture_source(fixture) / "expected" / fixture / f"{final}.lineage.json")
    assert_same_rows(copies[name].start.select(["id", *LINEAGE]), recorded, f"{name}: the relocated copy")


@pytest.mark.parametrize("name", FIXTURES)
def test_mor_dml_keeps_row_lineage_and_writes_vectors_as_java(copies: dict[str, Copy], name: str) -> None:
    copy = copies[name]
    before: Lineage | None = check_lineage(None, copy.start.to_pylist(), copy.table.metadata.current_snapshot(), frozenset(), name)
    for made in copy.made:
        how = f"{name}: after {made.step.label}"
        snapshot = copy.table.metadata.snapshot_by_id(made.snapshot_id)
        before = check_lineage(before, made.ours.to_pylist(), snapshot, frozenset(), how, touched=made.touched)
        check_deletion_vectors(made.entries, made.snapshot_id, how)
    first = next(m for m in copy.made if m.step.label.startswith("delete"))
    added = [e for e in first.entries if e["snapshot_id"] == first.snapshot_id and e["data_file"]["content"] == 1]
    summary = copy.table.metadata.snapshot_by_id(first.snapshot_id).summary
    assert added and int(summary.get("removed-dvs", 0)) >= 1, f"{name}: the first DELETE replaces Java's vectors: {summary}"


def parquet_position_deletes(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Live Parquet position delete files: path, and whether their `file_path` bounds name one file."""
    out = []
    for e in entries:
        d = e["data_file"]
        if d["content"] == 1 and d["file_format"] == "PARQUET":
            lower = {b["key"]: b["value"] for b in d["lower_bounds"] or []}.get(POSITION_PATH_FIELD_ID)
            upper = {b["key"]: b["value"] for b in d["upper_bounds"] or []}.get(POSITION_PATH_FIELD_ID)
            out.append({"path": d["file_path"], "file_scoped": lower is not None and lower == upper})
    return out


def test_v3_upgraded_parquet_deletes_go_into_vectors(copies: dict[str, Copy]) -> None:
    """v3_upgraded ends with two live Parquet position deletes on b's second file, a file-scoped
    and a partition-scoped one (which also covers b's first file, that has a vector). mor's first
    DELETE merges both into the file's vector and drops the file-scoped one; the
    partition-scoped one stays (a reader ignores it where a vector exists, as Java does). A
    rewrite_position_deletes turns both into a vector instead."""
    fixture = copies["v3_upgraded"].table
    start = parquet_position_deletes(live_entries(fixture, FIXTURE_TABLES["v3_upgraded"]["snapshots"][-1]["snapshot_id"]))
    assert sorted(d["file_scoped"] for d in start) == [False, True], start
    merged = copies["v3_upgraded"].made[0]
    assert merged.step.label.startswith("delete")
    assert parquet_position_deletes(merged.entries) == [d for d in start if not d["file_scoped"]]
    rewritten = copies["v3_upgraded-rewritten"].made[0]
    assert rewritten.step.label == "rewrite_position_deletes"
    assert parquet_position_deletes(rewritten.entries) == []
    summary = copies["v3_upgraded-rewritten"].table.metadata.snapshot_by_id(rewritten.snapshot_id).summary
    assert summary["operation"] == "replace" and summary["removed-position-delete-files"] == "2" and summary["added-dvs"] == "1", summary


@pytest.mark.parametrize("name", FIXTURES)
def test_pyiceberg_reads_every_new_snapshot_as_mor(copies: dict[str, Copy], name: str) -> None:
    copy = copies[name]
    static = PyIcebergStaticTable.from_metadata(copy.table.metadata_location)
    for made in copy.made:
        if made.equality:
            error, message = PYICEBERG_NO_EQUALITY
            with pytest.raises(error, match=message):
                static.scan(snapshot_id=made.snapshot_id).to_arrow()
            continue
        theirs = static.scan(snapshot_id=made.snapshot_id).to_arrow()
        assert_same_rows(theirs, made.ours.select(copy.columns), f"{name}: pyiceberg after {made.step.label}")
    assert any(m.equality for m in copy.made) and not copy.made[-1].equality


@pytest.mark.oracle
@pytest.mark.parametrize("name", FIXTURES)
def test_iceberg_java_reads_every_new_snapshot_as_mor(
    copies: dict[str, Copy], java: dict[tuple[str, int, bool], pa.Table], name: str
) -> None:
    copy = copies[name]
    for made in copy.made:
        theirs = java[(name, made.snapshot_id, False)]
        assert theirs.column_names == copy.columns
        assert_same_rows(theirs, made.ours.select(copy.columns), f"{name}: Iceberg Java after {made.step.label}")


@pytest.mark.oracle
@pytest.mark.parametrize("name", FIXTURES)
def test_iceberg_java_reads_mors_row_lineage(copies: dict[str, Copy], java: dict[tuple[str, int, bool], pa.Table], name: str) -> None:
    copy = copies[name]
    for made in copy.made:
        theirs = java[(name, made.snapshot_id, True)]
        assert_same_rows(theirs, made.ours, f"{name}: Iceberg Java's lineage after {made.step.label}")
