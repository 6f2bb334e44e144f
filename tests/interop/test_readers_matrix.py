"""The Python readers users already have read our tables: polars, daft and pyiceberg.

Our interop scenarios (append, merge-on-read and copy-on-write DELETE, UPDATE, UPSERT by both
strategies, MERGE, delete_rows; partitioned and not) are built through mor's API with a
list-of-rows model beside them (the steps and helpers of test_pyiceberg_reads_ours.py). Every
snapshot is then read, by snapshot id (time travel), by

* pyiceberg 0.12, through its SqlCatalog on our catalog.db;
* polars `scan_iceberg(..., reader_override="native")`, its own Parquet reader, with the scan
  planned as polars plans it by default (its `polars_iceberg` planner, which hands tables it
  does not support to pyiceberg's planner), and with that planner required
  (`POLARS_ICEBERG_PLANNER=plugin`);
* daft `read_iceberg`;

and the current state once more from the metadata file alone. A reader must return the model's
rows, except where it is known not to read a kind of delete file: there it must raise its own
error (type and message), so that the day it learns to read them this test fails and the
README's table (checked against these measurements below) gets updated. Nothing is skipped.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import daft
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from test_pyiceberg_reads_ours import (
    COPY_ON_WRITE,
    LAYOUTS,
    SCHEMA,
    Append,
    Delete,
    Row,
    arrow_table,
    describe_id_differences,
    make_row,
    pyiceberg_catalog,
    sorted_rows,
)

import mor

pytestmark = pytest.mark.interop

README = Path(__file__).resolve().parents[2] / "README.md"
NO_EQUALITY_DELETES = {"mor.write.equality-deletes.enabled": "false"}

# ---------------------------------------------------------------------------------------------
# DML steps beyond Append and Delete, each with its effect on the model
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Update:
    where: str
    matches: Callable[[Row], bool]
    assignments: dict[str, Any]
    change: Callable[[Row], Row]  # the same assignments, in Python
    mode: str | None = None

    def apply(self, table: mor.Table, model: list[Row]) -> list[Row]:
        table.update(self.assignments, where=self.where, mode=self.mode)
        return [self.change(r) if self.matches(r) else r for r in model]


def upserted_row(i: int) -> Row:
    return {**make_row(i), "name": f"up-{i}", "value": -1.0}


@dataclass(frozen=True)
class Upsert:
    ids: tuple[int, ...]
    strategy: str
    mode: str | None = None

    def apply(self, table: mor.Table, model: list[Row]) -> list[Row]:
        rows = [upserted_row(i) for i in self.ids]
        table.upsert(arrow_table(rows), on=["id"], mode=self.mode, strategy=self.strategy)
        return [r for r in model if r["id"] not in self.ids] + rows


@dataclass(frozen=True)
class Merge:
    """Deletes one matched row, renames another, inserts a new key."""

    delete_id: int
    update_id: int
    insert_id: int
    mode: str | None = None

    def apply(self, table: mor.Table, model: list[Row]) -> list[Row]:
        ids = [self.delete_id, self.update_id, self.insert_id]
        source = pa.table({"id": pa.array(ids, pa.int64()), "op": ["D", "U", "I"], "name": [f"merged-{i}" for i in ids]})
        table.merge(
            source, on=["id"], mode=self.mode,
            when_matched_delete=pc.field("source.op") == "D",
            when_matched_update={"name": pc.field("source.name")},
            when_not_matched_insert={"id": pc.field("source.id"), "name": pc.field("source.name")},
        )  # fmt: skip
        out = [({**r, "name": f"merged-{r['id']}"} if r["id"] == self.update_id else r) for r in model if r["id"] != self.delete_id]
        return out + [{"id": self.insert_id, "category": None, "name": f"merged-{self.insert_id}", "value": None, "ts": None}]


@dataclass(frozen=True)
class DeleteRows:
    """delete_rows on key tuples; null equals null."""

    keys: dict[str, list[Any]]

    def apply(self, table: mor.Table, model: list[Row]) -> list[Row]:
        names = list(self.keys)
        table.delete_rows(pa.table({n: pa.array(v, SCHEMA.field(n).type) for n, v in self.keys.items()}))
        gone = set(zip(*self.keys.values()))
        return [r for r in model if tuple(r[n] for n in names) not in gone]


Step = Append | Delete | Update | Upsert | Merge | DeleteRows

# What each step writes: the kind of snapshot it makes.
APPEND, POSITION, COPY, EQUALITY, KEYS_OFF = "append", "position deletes", "copy-on-write", "equality deletes", "equality deletes off"
VECTORS = "deletion vectors"  # format v3


def _bump(column: str, by: float) -> Callable[[Row], Row]:
    return lambda r: {**r, column: None if r[column] is None else r[column] + by}


# Position-only steps first: an equality delete stays live in every later snapshot.
SCENARIO: list[tuple[str, Step]] = [
    (APPEND, Append(range(0, 300))),
    (APPEND, Append(range(300, 600))),
    (POSITION, Delete("id < 30", lambda r: r["id"] < 30)),
    (COPY, Delete("category = 'b' and id < 200", lambda r: r["category"] == "b" and r["id"] < 200, COPY_ON_WRITE)),
    (POSITION, Update("id >= 500 and id < 520", lambda r: 500 <= r["id"] < 520, {"value": pc.field("value") + 1000}, _bump("value", 1000))),
    (POSITION, Update("id >= 520 and id < 525", lambda r: 520 <= r["id"] < 525, {"category": "'d'"}, lambda r: {**r, "category": "d"})),
    (
        COPY,
        Update("id >= 530 and id < 540", lambda r: 530 <= r["id"] < 540, {"name": "'cow'"}, lambda r: {**r, "name": "cow"}, COPY_ON_WRITE),
    ),
    (POSITION, Upsert((40, 41, 700, 701), "position")),
    (COPY, Upsert((42, 702), "position", COPY_ON_WRITE)),
    (POSITION, Merge(300, 301, 703)),
    (COPY, Merge(310, 311, 704, COPY_ON_WRITE)),
    (EQUALITY, DeleteRows({"id": [60, 61, 99_999]})),
    (EQUALITY, Upsert((62, 705), "equality")),
    (EQUALITY, DeleteRows({"category": ["a", "a", None], "name": ["x-64", None, "merged-703"]})),
    (POSITION, Delete("id >= 590 and id < 600", lambda r: 590 <= r["id"] < 600)),  # position on top of equality
]

# The same key-based steps on a table with `mor.write.equality-deletes.enabled=false`.
KEYS_OFF_SCENARIO: list[tuple[str, Step]] = [
    (APPEND, Append(range(0, 200))),
    (KEYS_OFF, DeleteRows({"id": [60, 61, 99_999]})),
    (KEYS_OFF, Upsert((62, 705), "equality")),
    (KEYS_OFF, DeleteRows({"category": ["a", "a", None], "name": ["x-64", None, "merged-703"]})),
]

# The position steps on a format v3 table: every one writes deletion vectors (a DELETE on files
# that already have one merges into it), and UPDATE/UPSERT/MERGE store `_row_id` columns.
V3_SCENARIO: list[tuple[str, Step]] = [
    (APPEND, Append(range(0, 300))),
    (APPEND, Append(range(300, 600))),
    (VECTORS, Delete("id < 30", lambda r: r["id"] < 30)),
    (VECTORS, Delete("id >= 25 and id < 60", lambda r: 25 <= r["id"] < 60)),
    (VECTORS, Update("id >= 500 and id < 520", lambda r: 500 <= r["id"] < 520, {"value": pc.field("value") + 1000}, _bump("value", 1000))),
    (VECTORS, Upsert((70, 71, 700, 701), "position")),
    (VECTORS, Merge(300, 301, 703)),
    (COPY, Delete("category = 'b' and id < 200", lambda r: r["category"] == "b" and r["id"] < 200, COPY_ON_WRITE)),
]
V3 = {"format-version": "3"}

# ---------------------------------------------------------------------------------------------
# The readers, and what each is known not to read
# ---------------------------------------------------------------------------------------------

Source = Any  # a pyiceberg Table, or a metadata file location


@contextmanager
def environment(name: str, value: str | None) -> Iterator[None]:
    old = os.environ.get(name)
    if value is not None:
        os.environ[name] = value
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = old


def read_pyiceberg(source: Source, snapshot_id: int | None) -> pa.Table:
    if isinstance(source, str):
        from pyiceberg.table import StaticTable

        source = StaticTable.from_metadata(source)
    return source.scan(snapshot_id=snapshot_id).to_arrow()


def read_polars(source: Source, snapshot_id: int | None, planner: str | None = None) -> pa.Table:
    with environment("POLARS_ICEBERG_PLANNER", planner):
        return pl.scan_iceberg(source, snapshot_id=snapshot_id, reader_override="native").collect().to_arrow()


def read_daft(source: Source, snapshot_id: int | None) -> pa.Table:
    return daft.read_iceberg(source, snapshot_id=snapshot_id).to_arrow()


READERS: dict[str, Callable[[Source, int | None], pa.Table]] = {
    "pyiceberg": read_pyiceberg,
    "polars": read_polars,
    "polars (plugin planner)": lambda source, snapshot_id: read_polars(source, snapshot_id, planner="plugin"),
    "daft": read_daft,
}

PYICEBERG_NO_EQUALITY = (ValueError, r"^PyIceberg does not yet support equality deletes")
# reader -> {kind of snapshot it cannot read: (its exception type, a distinctive part of the message)}
KNOWN_LIMITS: dict[str, dict[str, tuple[type[BaseException], str]]] = {
    "pyiceberg": {EQUALITY: PYICEBERG_NO_EQUALITY},
    # polars' planner gives tables with equality deletes to pyiceberg's planner, which refuses them.
    "polars": {EQUALITY: PYICEBERG_NO_EQUALITY},
    "polars (plugin planner)": {EQUALITY: (NotImplementedError, r"polars_iceberg: iceberg: unsupported: equality delete files")},
    # daft plans its scans with pyiceberg, and reads a deletion vector's Puffin file as Parquet.
    "daft": {
        EQUALITY: PYICEBERG_NO_EQUALITY,
        VECTORS: (daft.exceptions.DaftCoreException, r"deletes\.puffin: Parquet error: Invalid Parquet file"),
    },
}

# ---------------------------------------------------------------------------------------------
# Building the tables and reading them
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Read:
    layout: str
    table: str
    step: str  # the kind of the step that made the snapshot
    snapshot_id: int | None  # None: the current snapshot, read from the metadata file alone
    kind: str  # the column of the README table this snapshot counts for
    reader: str
    expected: list[Row]
    result: pa.Table | Exception


def snapshot_kind(table: mor.Table, snapshot_id: int, step: str) -> str:
    """What makes the snapshot hard to read, measured from its plan: live equality deletes
    first, then live position deletes, else the step's own kind."""
    files = [d for t in table.scan(snapshot_id=snapshot_id).plan_files() for d in t.delete_files]
    deletes = {d.content for d in files}
    if mor.FileContent.EQUALITY_DELETES in deletes:
        return EQUALITY
    if any(d.is_deletion_vector for d in files):
        return VECTORS
    if step in (COPY, KEYS_OFF, APPEND):
        return step
    return POSITION if mor.FileContent.POSITION_DELETES in deletes else APPEND


History = list[tuple[int, str, list[Row]]]  # (snapshot id, kind of the step that made it, model rows)


def build(
    catalog: mor.Catalog, name: str, partition_by: list[str] | None, steps: list[tuple[str, Step]], **properties: str
) -> tuple[mor.Table, History]:
    """A table made by `steps`, and the model's rows at each snapshot."""
    spec = {} if partition_by is None else {"partition_by": partition_by}
    table = catalog.create_table(name, schema=SCHEMA, properties=properties or None, **spec)
    model: list[Row] = []
    history: History = []
    for label, step in steps:
        before = table.current_snapshot()
        model = step.apply(table, model)
        after = table.current_snapshot()
        assert after is not None and after != before, f"{step} committed no snapshot"
        history.append((after.snapshot_id, label, sorted(model, key=lambda r: r["id"])))
    return table, history


def read_all(layout: str, table: mor.Table, history: History, warehouse: Path) -> list[Read]:
    with pyiceberg_catalog(warehouse) as catalog:
        loaded = catalog.load_table(table.identifier)
    reads = []
    for snapshot_id, step, expected in history:
        ours = table.scan(snapshot_id=snapshot_id).to_arrow()
        assert sorted_rows(ours) == expected, f"mor at {snapshot_id}: {describe_id_differences(expected, sorted_rows(ours))}"
        kind = snapshot_kind(table, snapshot_id, step)
        for reader, read in READERS.items():
            reads.append(Read(layout, table.identifier, step, snapshot_id, kind, reader, expected, _attempt(read, loaded, snapshot_id)))
    # The current state, from the metadata file alone (no catalog), without a snapshot id.
    snapshot_id, step, expected = history[-1]
    kind = snapshot_kind(table, snapshot_id, step)
    for reader, read in READERS.items():
        reads.append(Read(layout, table.identifier, step, None, kind, reader, expected, _attempt(read, table.metadata_location, None)))
    return reads


def _attempt(read: Callable[[Source, int | None], pa.Table], source: Source, snapshot_id: int | None) -> pa.Table | Exception:
    try:
        return read(source, snapshot_id)
    except Exception as e:  # judged by the tests below: expected rows, or the reader's known error
        return e


@pytest.fixture(scope="module")
def reads(tmp_path_factory: pytest.TempPathFactory) -> list[Read]:
    out: list[Read] = []
    for param in LAYOUTS:
        (partition_by,) = param.values
        warehouse = tmp_path_factory.mktemp(f"readers-{param.id}")
        catalog = mor.load_catalog(str(warehouse))
        table, history = build(catalog, "db.dml", partition_by, SCENARIO)
        out += read_all(param.id, table, history, warehouse)
        table, history = build(catalog, "db.keys_off", partition_by, KEYS_OFF_SCENARIO, **NO_EQUALITY_DELETES)
        out += read_all(param.id, table, history, warehouse)
        table, history = build(catalog, "db.v3", partition_by, V3_SCENARIO, **V3)
        out += read_all(param.id, table, history, warehouse)
    return out


def where(read: Read) -> str:
    at = "current (metadata file)" if read.snapshot_id is None else f"snapshot {read.snapshot_id}"
    return f"{read.reader}, {read.layout} {read.table} {at} ({read.step}; {read.kind})"


def known_limit(read: Read) -> tuple[type[BaseException], str] | None:
    return KNOWN_LIMITS.get(read.reader, {}).get(read.kind)


# ---------------------------------------------------------------------------------------------
# Tests
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("reader", sorted(READERS))
def test_reader_returns_our_rows_at_every_snapshot_it_can_read(reads: list[Read], reader: str) -> None:
    mine = [r for r in reads if r.reader == reader and known_limit(r) is None]
    assert len(mine) >= 20
    problems = []
    for r in mine:
        if isinstance(r.result, Exception):
            problems.append(f"{where(r)}: raised {type(r.result).__name__}: {str(r.result)[:300]}")
            continue
        got = sorted_rows(r.result.select(SCHEMA.names))
        if got != r.expected:
            problems.append(f"{where(r)}: {describe_id_differences(r.expected, got)}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("reader", sorted(KNOWN_LIMITS))
def test_reader_raises_its_own_error_where_it_cannot_read(reads: list[Read], reader: str) -> None:
    """Never a skip, never a silent pass: the day the reader learns, this fails."""
    mine = [r for r in reads if r.reader == reader and known_limit(r) is not None]
    assert len(mine) >= 6, "the scenarios no longer make the snapshots this reader cannot read"
    problems = []
    for r in mine:
        error_type, message = known_limit(r)  # type: ignore[misc]
        if not isinstance(r.result, Exception):
            same = sorted_rows(r.result.select(SCHEMA.names)) == r.expected
            problems.append(f"{where(r)}: read it ({'the right' if same else 'WRONG'} rows): update KNOWN_LIMITS and the README")
        elif type(r.result) is not error_type or not re.search(message, str(r.result)):
            problems.append(f"{where(r)}: expected {error_type.__name__} /{message}/, got {type(r.result).__name__}: {str(r.result)[:300]}")
    assert not problems, "\n".join(problems)


def test_scenarios_make_every_kind_of_snapshot(reads: list[Read]) -> None:
    """Each layout has snapshots of every kind the README's table has a column for, and the
    table with equality deletes off never holds one."""
    for layout in {r.layout for r in reads}:
        kinds = {(r.table, r.kind) for r in reads if r.layout == layout}
        assert kinds == {
            ("db.dml", APPEND), ("db.dml", POSITION), ("db.dml", COPY), ("db.dml", EQUALITY),
            ("db.keys_off", APPEND), ("db.keys_off", KEYS_OFF),
            ("db.v3", APPEND), ("db.v3", VECTORS),
        }, layout  # fmt: skip
        time_travel = [r for r in reads if r.layout == layout and r.snapshot_id is not None and r.reader == "pyiceberg"]
        assert len(time_travel) == len(SCENARIO) + len(KEYS_OFF_SCENARIO) + len(V3_SCENARIO)


def measured_matrix(reads: list[Read]) -> dict[tuple[str, str], str]:
    """(reader, kind) -> "yes" (every such snapshot read right) or the name of the error every
    one of them raised; a mixture fails."""
    outcomes: dict[tuple[str, str], set[str]] = {}
    for r in reads:
        if r.kind == APPEND:
            continue
        if isinstance(r.result, Exception):
            outcome = type(r.result).__name__
        else:
            outcome = "yes" if sorted_rows(r.result.select(SCHEMA.names)) == r.expected else "wrong rows"
        outcomes.setdefault((r.reader, r.kind), set()).add(outcome)
    mixed = {k: v for k, v in outcomes.items() if len(v) != 1}
    assert not mixed, f"readers whose outcome depends on the snapshot, not only on its kind: {mixed}"
    return {k: v.pop() for k, v in outcomes.items()}


# README row (first cell starts with) -> reader; README column header -> kind.
README_ROWS = {"polars": "polars", "daft": "daft", "pyiceberg": "pyiceberg"}
README_COLUMNS = {
    "position deletes": POSITION,
    "equality deletes": EQUALITY,
    "copy-on-write": COPY,
    "equality deletes off": KEYS_OFF,
    "deletion vectors": VECTORS,
}


def readme_matrix() -> dict[tuple[str, str], str]:
    """The "## Other readers" table: (reader, kind) -> "yes", or "no" with the error it names."""
    text = README.read_text()
    section = text.split("\n## Other readers\n", 1)[1].split("\n## ", 1)[0]
    lines = [line for line in section.splitlines() if line.startswith("|")]
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    out = {}
    for line in lines[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        row = next((reader for prefix, reader in README_ROWS.items() if cells[0].lstrip("*").startswith(prefix)), None)
        if row is None:
            continue
        for title, cell in zip(header[1:], cells[1:]):
            titles = [t for t in README_COLUMNS if title.startswith(t)]
            if titles:
                out[(row, README_COLUMNS[max(titles, key=len)])] = cell
    return out


def test_readme_table_says_what_we_measured(reads: list[Read]) -> None:
    measured = measured_matrix(reads)
    documented = readme_matrix()
    assert {(reader, kind) for reader, kind in documented} == {(reader, kind) for reader, kind in measured if reader in README_ROWS}
    for (reader, kind), cell in documented.items():
        outcome = measured[(reader, kind)]
        if outcome == "yes":
            assert cell.startswith("yes"), f"README says {cell!r} for {reader} x {kind}; measured: reads it"
        else:
            assert cell.startswith("no") and outcome in cell, f"README says {cell!r} for {reader} x {kind}; measured: {outcome}"


def test_after_compaction_every_reader_reads_the_table(tmp_path: Path) -> None:
    """The README's way back for a table that has equality deletes: compact() applies them and
    drops the files, and the snapshot it makes is readable by every reader."""
    catalog = mor.load_catalog(str(tmp_path))
    table, history = build(catalog, "db.compacted", ["category"], [(APPEND, Append(range(0, 100))), (APPEND, Append(range(100, 150)))])
    model = history[-1][2]
    for _, step in [(EQUALITY, DeleteRows({"id": [1, 2, 120]})), (EQUALITY, Upsert((3, 130, 200), "equality"))]:
        model = step.apply(table, model)
    assert snapshot_kind(table, table.current_snapshot().snapshot_id, EQUALITY) == EQUALITY
    table.compact()
    assert not [d for t in table.scan().plan_files() for d in t.delete_files]
    expected = sorted(model, key=lambda r: r["id"])
    with pyiceberg_catalog(tmp_path) as pyiceberg:
        loaded = pyiceberg.load_table(table.identifier)
    for reader, read in READERS.items():
        for source in (loaded, table.metadata_location):
            got = sorted_rows(read(source, None).select(SCHEMA.names))
            assert got == expected, f"{reader}: {describe_id_differences(expected, got)}"
