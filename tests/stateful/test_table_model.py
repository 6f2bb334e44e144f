"""Random histories of every Table operation against a list-of-rows model.

Operations: append (a pyarrow Table or a RecordBatchReader), delete, update (literal and
`pyarrow.compute` assignments), upsert (strategies "position" and "equality"), merge (matched
delete/update, not-matched insert, with conditions), delete_rows, set_properties of the write
modes, and the maintenance methods the Table has among truncate, compact,
rewrite_position_deletes, expire_snapshots and remove_orphan_files (`OPTIONAL_OPERATIONS`).
Every DML runs merge-on-read or copy-on-write, by argument or by table property. Reads: scan
with a filter and a projection (whole or streamed), count, time travel by `snapshot_id` and by
`as_of`, and the table reloaded from the catalog. Tables are unpartitioned or partitioned by
identity, bucket and truncate transforms.

Predicates follow SQL: a row is selected only where the predicate is TRUE. A comparison with a
NULL operand is NULL, NOT NULL is NULL, AND/OR are Kleene's. NaN equals NaN and is greater than
every number (Iceberg's, Spark's and DuckDB's order). MERGE and UPSERT keys match as SQL's `=`
does (a key with a null matches no row); delete_rows' keys null-safely, as equality deletes do.

The model is checked after every step; at the end of each example every snapshot of the
history must still read as the model said. CI runs a few hundred examples in about a minute;
for a longer run:

    MOR_STATEFUL_EXAMPLES=2000 .venv/bin/python -m pytest tests/stateful

(`MOR_STATEFUL_STEPS` sets the steps per example, 12 by default.)

`TableModelV3` runs the same rules on format v3 tables (created v3, or v2 ones that an
`upgrade` rule turns v3 at some step). Its checks add: at most one deletion vector per data
file, each for a live data file, and no Parquet position delete file in a table created v3;
`_row_id` unique and non-null among live rows once a commit after the upgrade assigned ids
(all null before); every row either keeps its (`_row_id`, `_last_updated_sequence_number`)
with unchanged values or was written by the last commit (its sequence number, an old id or
a new one); DELETE, UPDATE, delete_rows and compaction exactly as the model says (UPDATE keeps
ids), UPSERT by position keeps the id of a row it replaces, by equality hands out new ones;
and every snapshot's lineage reads the same at the end. `MOR_STATEFUL_EXAMPLES_V3` sets its
examples (150 by default).
"""

from __future__ import annotations

import datetime as dt
import math
import operator
import os
import shutil
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

import mor
from mor.format.spec import FileContent, ManifestContent
from mor.planning.planner import live_entries

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("category", pa.string()), ("value", pa.float64())])
COLUMNS = SCHEMA.names
ROW_ID, LAST_UPDATED = "_row_id", "_last_updated_sequence_number"
LINEAGE = [ROW_ID, LAST_UPDATED]
MOR, COW = "merge-on-read", "copy-on-write"
MODE = st.sampled_from([None, MOR, COW])  # None: the table property decides
MODE_PROPERTIES = ["write.delete.mode", "write.update.mode", "write.merge.mode"]
KEYS = st.sampled_from([("id",), ("id", "category")])  # ("id", "category"): null-safe matching matters
NAN = math.nan
Row = dict[str, Any]
Truth = bool | None  # SQL's three values; None is NULL

MAINTENANCE = ("truncate", "compact", "rewrite_position_deletes", "expire_snapshots", "remove_orphan_files")
OPTIONAL_OPERATIONS = [m for m in MAINTENANCE if hasattr(mor.Table, m)]
COMPACTIONS = [m for m in ("compact", "rewrite_position_deletes") if m in OPTIONAL_OPERATIONS]

CATEGORY = st.sampled_from(["a", "b", "ab", "c", None])  # "ab": `like 'a%'` is not `= 'a'`
VALUE = st.one_of(st.none(), st.just(NAN), st.sampled_from([10.0, 20.0, 50.0]), st.floats(0, 100, allow_nan=False))
PARTITIONINGS = st.sampled_from(
    [None, ["category"], ["bucket(3, id)"], ["truncate(10, id)", "category"], ["truncate(1, category)", "bucket(2, id)"]]
)
ROW = st.fixed_dictionaries({"id": st.integers(0, 40), "category": CATEGORY, "value": VALUE})


# -- predicates: filter text and the SQL three-valued test of a row -------------------------
class Pred:
    def __init__(self, text: str, test: Callable[[Row], Truth], compound: bool = False):
        self.text, self.test, self.compound = text, test, compound

    def __repr__(self) -> str:  # hypothesis prints the filter text in a failing example
        return repr(self.text)

    def rows(self, rows: Iterable[Row]) -> list[Row]:
        return [r for r in rows if self.test(r) is True]


def _order(v: Any) -> tuple:
    """NaN sorts after every number and equals itself."""
    return (1, 0.0) if isinstance(v, float) and math.isnan(v) else (0, v)


def _literal(v: Any) -> str:
    return f"'{v}'" if isinstance(v, str) else repr(v)


COMPARISONS = {"=": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}


def compare(column: str, op: str, literal: Any) -> Pred:
    cmp = COMPARISONS[op]

    def test(r: Row) -> Truth:
        return None if r[column] is None else cmp(_order(r[column]), _order(literal))

    return Pred(f"{column} {op} {_literal(literal)}", test)


def is_in(column: str, literals: Sequence[Any], negate: bool = False) -> Pred:
    keys = {_order(v) for v in literals}
    text = f"{column} {'not in' if negate else 'in'} ({', '.join(map(_literal, literals))})"
    return Pred(text, lambda r: None if r[column] is None else (_order(r[column]) in keys) != negate)


def is_null(column: str, negate: bool = False) -> Pred:
    return Pred(f"{column} is {'not ' if negate else ''}null", lambda r: (r[column] is None) != negate)


def like(prefix: str, negate: bool = False) -> Pred:
    text = f"category {'not like' if negate else 'like'} '{prefix}%'"
    return Pred(text, lambda r: None if r["category"] is None else r["category"].startswith(prefix) != negate)


def not_(p: Pred) -> Pred:
    return Pred(f"not ({p.text})", lambda r: None if (v := p.test(r)) is None else not v, compound=True)


def and_(p: Pred, q: Pred) -> Pred:
    def test(r: Row) -> Truth:
        a, b = p.test(r), q.test(r)
        return False if False in (a, b) else None if None in (a, b) else True

    return Pred(f"{_paren(p)} and {_paren(q)}", test, compound=True)


def or_(p: Pred, q: Pred) -> Pred:
    def test(r: Row) -> Truth:
        a, b = p.test(r), q.test(r)
        return True if True in (a, b) else None if None in (a, b) else False

    return Pred(f"{_paren(p)} or {_paren(q)}", test, compound=True)


def _paren(p: Pred) -> str:
    return f"({p.text})" if p.compound else p.text


# The three-valued cases the issue names, first so that hypothesis shrinks towards them.
NAMED_PREDICATES = [
    compare("category", "!=", "a"),
    is_in("category", ["a", "b"], negate=True),
    not_(compare("value", "<", 10.0)),
    compare("value", ">", 50.0),
    like("a"),
    like("a", negate=True),
    not_(or_(compare("category", "=", "b"), compare("value", ">=", 50.0))),
    and_(compare("category", "=", "b"), compare("id", ">", 20)),
    or_(compare("value", "<", 10.0), compare("id", "=", 33)),
    is_in("value", [10.0, 20.0], negate=True),
    # `is nan` only at the top: below a NOT, SQL (NULL) and Iceberg (true) differ on null.
    Pred("value is nan", lambda r: None if r["value"] is None else math.isnan(r["value"])),
    is_null("value"),
    compare("id", "<", 0),  # matches nothing
    Pred("true", lambda r: True),
]
_id, _category, _value = st.integers(0, 40), st.sampled_from(["a", "b", "ab", "c"]), st.sampled_from([10.0, 20.0, 50.0, 99.5])
ATOMS = st.one_of(
    st.builds(compare, st.just("id"), st.sampled_from(list(COMPARISONS)), _id),
    st.builds(compare, st.just("category"), st.sampled_from(list(COMPARISONS)), _category),
    st.builds(compare, st.just("value"), st.sampled_from(list(COMPARISONS)), _value),
    st.builds(is_in, st.just("id"), st.lists(_id, min_size=1, max_size=4, unique=True), st.booleans()),
    st.builds(is_in, st.just("category"), st.lists(_category, min_size=1, max_size=3, unique=True), st.booleans()),
    st.builds(is_in, st.just("value"), st.lists(_value, min_size=1, max_size=3, unique=True), st.booleans()),
    st.builds(is_null, st.sampled_from(COLUMNS[1:]), st.booleans()),
    st.builds(like, st.sampled_from(["a", "b", "ab"]), st.booleans()),
)
PREDICATE = st.one_of(
    st.sampled_from(NAMED_PREDICATES),
    st.recursive(
        ATOMS,
        lambda inner: st.one_of(st.builds(not_, inner), st.builds(and_, inner, inner), st.builds(or_, inner, inner)),
        max_leaves=3,
    ),
)


# -- UPDATE assignments: what the API gets and what the model does -------------------------
class Assignment:
    def __init__(self, text: str, set: dict[str, Any], apply: Callable[[Row], Row]):
        self.text, self.set, self.apply = text, set, apply

    def __repr__(self) -> str:
        return repr(self.text)


def _num(v: Any, f: Callable[[Any], Any]) -> Any:
    return None if v is None else f(v)  # arithmetic on NULL is NULL; on NaN, NaN


ASSIGNMENTS = [
    Assignment("category = 'z'", {"category": "'z'"}, lambda r: {**r, "category": "z"}),
    Assignment("category = upper(category)", {"category": "upper(category)"}, lambda r: {**r, "category": _num(r["category"], str.upper)}),
    Assignment("category = null", {"category": None}, lambda r: {**r, "category": None}),
    Assignment("value = value + 1", {"value": pc.field("value") + 1}, lambda r: {**r, "value": _num(r["value"], lambda v: v + 1)}),
    Assignment("value = NaN, category = 'b'", {"value": NAN, "category": mor.lit("b")}, lambda r: {**r, "value": NAN, "category": "b"}),
    Assignment("value = value * 2 + 1", {"value": "value * 2 + 1"}, lambda r: {**r, "value": _num(r["value"], lambda v: v * 2 + 1)}),
    Assignment(  # moves rows between id buckets and truncate ranges
        "id = id + 1, value = value * 2",
        {"id": pc.field("id") + 1, "value": pc.field("value") * 2},
        lambda r: {**r, "id": r["id"] + 1, "value": _num(r["value"], lambda v: v * 2)},
    ),
]


# -- MERGE clauses: API argument and model function per option ------------------------------
def _eq(a: Any, b: Any) -> Truth:
    return None if a is None or b is None else a == b


MATCHED_DELETE = {  # (API clause, model test of (table row, source row))
    "never": (False, lambda r, s: False),
    "source.op = 'D'": (pc.field("source.op") == "D", lambda r, s: _eq(s["op"], "D")),
    "always": (True, lambda r, s: True),
}
MATCHED_UPDATE = {
    "none": (None, None),
    "*": ("*", lambda r, s: {c: s[c] for c in COLUMNS}),
    "value = source.value": ({"value": pc.field("source.value")}, lambda r, s: {**r, "value": s["value"]}),
    "category = 'm', value = value + source.value": (
        {"category": "'m'", "value": pc.field("value") + pc.field("source.value")},
        lambda r, s: {**r, "category": "m", "value": None if s["value"] is None else _num(r["value"], lambda v: v + s["value"])},
    ),
}
NOT_MATCHED_INSERT = {
    "none": (None, None),
    "*": ("*", lambda s: {c: s[c] for c in COLUMNS}),
    "id, value, category = 'new'": (
        {"id": "source.id", "value": "source.value", "category": "'new'"},
        lambda s: {"id": s["id"], "category": "new", "value": s["value"]},
    ),
}
UPDATE_IF = (pc.field("category") != "c", lambda r: None if r["category"] is None else r["category"] != "c")
INSERT_IF = (pc.field("source.op") != "D", lambda s: None if s["op"] is None else s["op"] != "D")


@dataclass(frozen=True)
class Clauses:
    """A MERGE's clauses, by their names in the tables above (what hypothesis prints)."""

    delete: str
    update: str
    update_if: bool
    insert: str
    insert_if: bool


@st.composite
def merge_clauses(draw: st.DrawFn) -> Clauses:
    """Only what MERGE accepts: some clause, no update behind an unconditional delete, a
    condition only with its clause."""
    update = draw(st.sampled_from(list(MATCHED_UPDATE)))
    delete = draw(st.sampled_from(list(MATCHED_DELETE) if update == "none" else ["never", "source.op = 'D'"]))
    inserts = list(NOT_MATCHED_INSERT) if (update, delete) != ("none", "never") else ["*", "id, value, category = 'new'"]
    insert = draw(st.sampled_from(inserts))
    return Clauses(delete, update, update != "none" and draw(st.booleans()), insert, insert != "none" and draw(st.booleans()))


CLAUSES = merge_clauses()


def _key(row: Row, on: Sequence[str]) -> tuple:
    return tuple(row[c] for c in on)  # None == None: null-safe


def _match_key(row: Row, on: Sequence[str]) -> tuple | None:
    """The key MERGE and UPSERT match by: None (matching nothing) when a part of it is null."""
    key = _key(row, on)
    return None if None in key else key


def merge_model(rows: list[Row], source: list[Row], on: Sequence[str], delete: Callable, update: Callable | None,
                update_if: Callable, insert: Callable | None, insert_if: Callable) -> tuple[list[Row], bool]:  # fmt: skip
    """The rows after MERGE, and whether it changed anything (removed or added a row)."""
    by_key = {k: s for s in source if (k := _match_key(s, on)) is not None}
    present = {_match_key(r, on) for r in rows} - {None}
    out, changed = [], False
    for r in rows:
        s = by_key.get(_match_key(r, on))  # type: ignore[arg-type]
        if s is not None and delete(r, s) is True:  # tried before the update
            changed = True
        elif s is not None and update is not None and update_if(r) is True:
            out.append(update(r, s))
            changed = True
        else:
            out.append(r)
    inserted = [insert(s) for s in source if insert and _match_key(s, on) not in present and insert_if(s) is True]
    return out + inserted, changed or bool(inserted)


# -- comparing rows: multisets, NaN equal to NaN -----------------------------------------
def _cell(v: Any) -> tuple:
    return (0, 0) if v is None else (2, 0) if isinstance(v, float) and math.isnan(v) else (1, v)


def _bag(rows: Iterable[Row], columns: Sequence[str] = COLUMNS) -> list[tuple]:
    return sorted(tuple(_cell(r[c]) for c in columns) for r in rows)


def _lineage_bag(rows: Iterable[Row]) -> list[tuple]:
    return _bag(rows, [*COLUMNS, *LINEAGE])


def _ms_to_datetime(ms: int) -> dt.datetime:
    return dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(milliseconds=ms)


@dataclass
class Version:
    """One snapshot the model knows: its rows, and the time it was current (until the next)."""

    snapshot_id: int
    timestamp_ms: int
    rows: list[Row]
    until_ms: int | None = None


class TableModel(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = tempfile.mkdtemp(prefix="mor-stateful-")
        self.model: list[Row] = []
        self.versions: list[Version] = []
        self.modes = dict.fromkeys(MODE_PROPERTIES, MOR)  # what new tables set
        # v3: the live rows with their lineage at the last check, and what each snapshot read
        self.created_v3 = False
        self.lineage_rows: list[Row] | None = None
        self.lineage_at: tuple[int | None, int | None] = (None, None)  # (snapshot id, next-row-id) of lineage_rows
        self.lineage_of: dict[int, list[tuple]] = {}
        # set by a rule for the check after it: (rows before, new sequence number) -> rows after
        self.expect_lineage: Callable[[list[Row], int], list[Row]] | None = None
        self.check_lineage: Callable[[list[Row], list[Row], int, int], None] | None = None

    @initialize(partition_by=PARTITIONINGS)
    def create(self, partition_by: list[str] | None) -> None:
        self._create(partition_by, 2)

    def _create(self, partition_by: list[str] | None, format_version: int) -> None:
        self.catalog = mor.load_catalog(self.dir)
        self.table = self.catalog.create_table("db.t", schema=SCHEMA, partition_by=partition_by, format_version=format_version)
        self.created_v3 = format_version >= 3

    # -- writes ----------------------------------------------------------------------------
    @rule(rows=st.lists(ROW, min_size=1, max_size=20), batch=st.none() | st.integers(1, 8))
    def append(self, rows: list[Row], batch: int | None) -> None:
        data = pa.Table.from_pylist(rows, schema=SCHEMA)
        if batch is not None:  # the streaming form, in batches of `batch` rows
            data = pa.RecordBatchReader.from_batches(SCHEMA, data.to_batches(max_chunksize=batch))
        self._expect(self.table.append(data), self.model + rows, changed=True)

    @rule(where=PREDICATE, mode=MODE)
    def delete(self, where: Pred, mode: str | None) -> None:
        hit = where.rows(self.model)
        self.expect_lineage = lambda before, seq: [r for r in before if where.test(r) is not True]
        self._expect(
            self.table.delete(where.text, mode=mode),
            [r for r in self.model if where.test(r) is not True],
            changed=bool(hit),
            mode=self._mode(mode, "write.delete.mode"),
            is_delete=True,
        )

    @rule(set=st.sampled_from(ASSIGNMENTS), where=PREDICATE, mode=MODE)
    def update(self, set: Assignment, where: Pred, mode: str | None) -> None:
        new = [set.apply(r) if where.test(r) is True else r for r in self.model]
        # An updated row keeps its id and takes the commit's sequence number.
        self.expect_lineage = lambda before, seq: [{**set.apply(r), LAST_UPDATED: seq} if where.test(r) is True else r for r in before]
        snapshot = self.table.update(set.set, where=where.text, mode=mode)
        self._expect(snapshot, new, changed=bool(where.rows(self.model)), mode=self._mode(mode, "write.update.mode"))

    @rule(on=KEYS, data=st.data(), mode=MODE, strategy=st.sampled_from(["position", "equality"]))
    def upsert(self, on: tuple[str, ...], data: st.DataObject, mode: str | None, strategy: str) -> None:
        rows = self._source_rows(data, on)
        if self._mode(mode, "write.merge.mode") == COW:
            strategy = "position"  # the equality strategy is merge-on-read only
        self.check_lineage = lambda before, after, seq, next_id: _upsert_lineage(before, after, seq, next_id, rows, on, strategy)
        snapshot = self.table.upsert(pa.Table.from_pylist(rows, schema=SCHEMA), on=list(on), mode=mode, strategy=strategy)
        keys = {_match_key(s, on) for s in rows} - {None}
        new = [r for r in self.model if _match_key(r, on) not in keys] + rows
        self._expect(snapshot, new, changed=True, mode=self._mode(mode, "write.merge.mode"))

    @rule(on=KEYS, data=st.data(), clauses=CLAUSES, mode=MODE)
    def merge(self, on: tuple[str, ...], data: st.DataObject, clauses: Clauses, mode: str | None) -> None:
        rows = self._source_rows(data, on)
        ops = data.draw(st.lists(st.sampled_from(["D", "U", None]), min_size=len(rows), max_size=len(rows)), label="ops")
        source = [{**r, "op": op} for r, op in zip(rows, ops)]
        (delete_arg, delete_fn), (update_arg, update_fn) = MATCHED_DELETE[clauses.delete], MATCHED_UPDATE[clauses.update]
        insert_arg, insert_fn = NOT_MATCHED_INSERT[clauses.insert]
        update_if_arg, update_if_fn = UPDATE_IF if clauses.update_if else (None, lambda r: True)
        insert_if_arg, insert_if_fn = INSERT_IF if clauses.insert_if else (None, lambda s: True)
        snapshot = self.table.merge(
            pa.Table.from_pylist(source, schema=SCHEMA.append(pa.field("op", pa.string()))),
            on=list(on),
            when_matched_delete=delete_arg,
            when_matched_update=update_arg,
            when_matched_update_if=update_if_arg,
            when_not_matched_insert=insert_arg,
            when_not_matched_insert_if=insert_if_arg,
            mode=mode,
        )
        new, changed = merge_model(self.model, source, on, delete_fn, update_fn, update_if_fn, insert_fn, insert_if_fn)
        self._expect(snapshot, new, changed=changed, mode=self._mode(mode, "write.merge.mode"))

    @rule(on=st.sampled_from([("category",), ("id",), ("id", "category")]), data=st.data())
    def delete_rows(self, on: tuple[str, ...], data: st.DataObject) -> None:
        keys = {_key(r, on) for r in self._source_rows(data, on)}
        columns = {c: [k[i] for k in keys] for i, c in enumerate(on)}
        self.expect_lineage = lambda before, seq: [r for r in before if _key(r, on) not in keys]
        snapshot = self.table.delete_rows(pa.table(columns, schema=pa.schema([SCHEMA.field(c) for c in on])))
        # Blind (reads no data), so it commits even when no row matches.
        self._expect(snapshot, [r for r in self.model if _key(r, on) not in keys], changed=True, mode=MOR)

    @rule(name=st.sampled_from(MODE_PROPERTIES), mode=st.sampled_from([MOR, COW]))
    def set_mode(self, name: str, mode: str) -> None:
        self.table.set_properties(**{name: mode})
        self.modes[name] = mode

    if "truncate" in OPTIONAL_OPERATIONS:

        @rule()
        def truncate(self) -> None:
            self._expect(self.table.truncate(), [], changed=bool(self.model))

    if COMPACTIONS:

        @rule(name=st.sampled_from(COMPACTIONS))
        def compact(self, name: str) -> None:  # the rows stay; a new snapshot may record that
            self.expect_lineage = lambda before, seq: before  # and so does their lineage
            before = self.table.current_snapshot()
            getattr(self.table, name)()
            after = self.table.current_snapshot()
            if name == "compact":  # no delete file is left that applies to no data file
                applied = {d.file_path for t in self.table.scan().plan_files() for d in t.delete_files}
                snapshot = self.table.current_snapshot()
                live = live_entries(self.table.io, self.table.metadata, snapshot, ManifestContent.DELETES) if snapshot else []
                assert {e.file.file_path for e in live} <= applied
            if after is not None and (before is None or after.snapshot_id != before.snapshot_id):
                self._record(after, self.model)

    if "expire_snapshots" in OPTIONAL_OPERATIONS:

        @precondition(lambda self: self.versions)
        @rule(data=st.data())
        def expire_snapshots(self, data: st.DataObject) -> None:
            i = data.draw(st.integers(0, len(self.versions) - 1), label="expire before version")
            older_than = self.versions[i].timestamp_ms
            self.table.expire_snapshots(older_than=_ms_to_datetime(older_than), retain_last=1, allow_short_retention=True)
            kept = {s.snapshot_id for s in self.table.snapshots()}
            assert all(v.snapshot_id in kept for v in self.versions if v.timestamp_ms >= older_than)
            self.versions = [v for v in self.versions if v.snapshot_id in kept]

    if "remove_orphan_files" in OPTIONAL_OPERATIONS:

        @rule()
        def remove_orphan_files(self) -> None:
            # Operations that succeeded leave no orphan; the checks after it show that no file a
            # snapshot reads went.
            assert self.table.remove_orphan_files(older_than=dt.timedelta(0)) == []

    # -- reads -----------------------------------------------------------------------------
    @rule(where=st.none() | PREDICATE, columns=st.lists(st.sampled_from(COLUMNS), min_size=1, unique=True), stream=st.booleans())
    def scan(self, where: Pred | None, columns: list[str], stream: bool) -> None:
        scan = self.table.scan(filter=where and where.text, columns=columns)
        if stream:
            got = [r for batch in scan.to_batches() for r in batch.to_pylist()]
        else:
            result = scan.to_arrow()
            assert set(result.column_names) == set(columns)
            got = result.to_pylist()
        expected = self.model if where is None else where.rows(self.model)
        assert _bag(got, columns) == _bag(expected, columns)

    @precondition(lambda self: self.versions)
    @rule(data=st.data(), how=st.sampled_from(["snapshot_id", "as_of ms", "as_of datetime"]), where=st.none() | PREDICATE)
    def time_travel(self, data: st.DataObject, how: str, where: Pred | None) -> None:
        v = self.versions[data.draw(st.integers(0, len(self.versions) - 1), label="version")]
        if how == "snapshot_id":
            scan = self.table.scan(filter=where and where.text, snapshot_id=v.snapshot_id)
        else:  # any moment while the snapshot was current
            offset = data.draw(st.integers(0, 1000), label="ms after the snapshot")  # not bounds from the clock: replayable
            ms = v.timestamp_ms + offset if v.until_ms is None else min(v.timestamp_ms + offset, v.until_ms - 1)
            scan = self.table.scan(filter=where and where.text, as_of=ms if how == "as_of ms" else _ms_to_datetime(ms))
        assert _bag(scan.to_arrow().to_pylist()) == _bag(v.rows if where is None else where.rows(v.rows))

    @rule()
    def reload(self) -> None:  # what the catalog holds is what this handle saw
        self.table = self.catalog.load_table("db.t")

    # -- checks ----------------------------------------------------------------------------
    @invariant()
    def table_matches_model(self) -> None:
        if not hasattr(self, "table"):
            return
        v3 = self.table.metadata.format_version >= 3
        rows = self.table.scan(columns=[*COLUMNS, *LINEAGE] if v3 else None).to_arrow().to_pylist()
        assert _bag(rows) == _bag(self.model)
        if v3:
            self._check_lineage(rows)
            self._check_deletion_vectors()
        assert self.table.scan().count() == len(self.model)
        assert [s.snapshot_id for s in self.table.snapshots()] == [v.snapshot_id for v in self.versions]
        assert {k: self.table.properties.get(k) for k in MODE_PROPERTIES} == self.modes

    def teardown(self) -> None:
        try:
            # Every snapshot still reads as it did (skipped when a step already failed, so
            # hypothesis reports and shrinks that failure).
            if hasattr(self, "table") and sys.exc_info()[0] is None:
                v3 = self.table.metadata.format_version >= 3
                for v in self.versions:
                    rows = self.table.scan(snapshot_id=v.snapshot_id, columns=[*COLUMNS, *LINEAGE] if v3 else None).to_arrow().to_pylist()
                    assert _bag(rows) == _bag(v.rows), v.snapshot_id
                    if v.snapshot_id in self.lineage_of:  # v3: row ids read as they did
                        assert _lineage_bag(rows) == self.lineage_of[v.snapshot_id], v.snapshot_id
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)

    # -- v3 checks ------------------------------------------------------------------------
    def _check_lineage(self, rows: list[Row]) -> None:
        """`rows`: the live rows with `_row_id` and `_last_updated_sequence_number`."""
        snapshot = self.table.current_snapshot()
        next_id = self.table.metadata.next_row_id
        assert next_id is not None
        expect, check = self.expect_lineage, self.check_lineage
        self.expect_lineage = self.check_lineage = None
        if snapshot is None or snapshot.first_row_id is None:  # no commit since the upgrade gave ids
            assert all(r[ROW_ID] is None and r[LAST_UPDATED] is None for r in rows)
        else:
            ids = [r[ROW_ID] for r in rows]
            assert None not in ids and len(set(ids)) == len(ids), sorted(ids, key=str)
            assert all(0 <= i < next_id for i in ids)
            assert all(1 <= r[LAST_UPDATED] <= snapshot.sequence_number for r in rows)
        before, (before_snapshot, before_next) = self.lineage_rows, self.lineage_at
        snapshot_id = snapshot.snapshot_id if snapshot else None
        had_ids = before is not None and all(r[ROW_ID] is not None for r in before)
        if before is not None and snapshot_id == before_snapshot:
            assert _lineage_bag(rows) == _lineage_bag(before)  # no commit: nothing changed
        elif before is not None and had_ids and snapshot is not None:
            assert before_next is not None
            _kept_or_written(before, rows, snapshot.sequence_number, before_next)
            if expect is not None:
                assert _lineage_bag(rows) == _lineage_bag(expect(before, snapshot.sequence_number))
            if check is not None:
                check(before, rows, snapshot.sequence_number, before_next)
        self.lineage_rows, self.lineage_at = rows, (snapshot_id, next_id)
        if snapshot_id is not None:
            self.lineage_of.setdefault(snapshot_id, _lineage_bag(rows))

    def _check_deletion_vectors(self) -> None:
        snapshot = self.table.current_snapshot()
        if snapshot is None:
            return
        io, metadata = self.table.io, self.table.metadata
        data = {e.file.file_path for e in live_entries(io, metadata, snapshot, ManifestContent.DATA)}
        deletes = [e.file for e in live_entries(io, metadata, snapshot, ManifestContent.DELETES)]
        vectors = [f.referenced_data_file for f in deletes if f.is_deletion_vector]
        assert len(vectors) == len(set(vectors)), sorted(vectors)  # at most one per data file
        assert set(vectors) <= data  # none left behind by a data file that went
        if self.created_v3:  # DVs only, never a Parquet position delete file
            assert not [f.file_path for f in deletes if f.content == FileContent.POSITION_DELETES and not f.is_deletion_vector]

    # -- helpers ---------------------------------------------------------------------------
    def _mode(self, mode: str | None, name: str) -> str:
        return mode or self.modes[name]

    def _source_rows(self, data: st.DataObject, on: Sequence[str]) -> list[Row]:
        """Rows unique by `on`: new ones, and existing rows' keys (so that keys match) with new
        values."""
        existing = st.nothing()
        if self.model:
            existing = st.tuples(st.sampled_from(self.model), VALUE).map(lambda rv: {**rv[0], "value": rv[1]})
        return data.draw(st.lists(ROW | existing, min_size=1, max_size=8, unique_by=lambda r: _key(r, on)), label="rows")

    def _expect(self, snapshot: Any, rows: list[Row], changed: bool, mode: str | None = None, is_delete: bool = False) -> None:
        """Check the snapshot an operation returned (None when it changed nothing) and that it
        used the write mode asked for, then make `rows` the model."""
        if not changed:
            assert snapshot is None
            return
        parent = self.versions[-1].snapshot_id if self.versions else None
        assert snapshot is not None and snapshot.snapshot_id == self.table.current_snapshot().snapshot_id
        assert snapshot.parent_snapshot_id == parent
        if mode == COW:
            assert "added-delete-files" not in snapshot.summary, snapshot.summary
        if mode == MOR and is_delete:  # merge-on-read never rewrites a data file
            assert "added-data-files" not in snapshot.summary, snapshot.summary
        self._record(snapshot, rows)

    def _record(self, snapshot: Any, rows: list[Row]) -> None:
        if self.versions:
            self.versions[-1].until_ms = snapshot.timestamp_ms
        self.versions.append(Version(snapshot.snapshot_id, snapshot.timestamp_ms, list(rows)))
        self.model = list(rows)


TableModel.TestCase.settings = settings(
    max_examples=int(os.environ.get("MOR_STATEFUL_EXAMPLES", "250")),
    stateful_step_count=int(os.environ.get("MOR_STATEFUL_STEPS", "12")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
test_table_matches_model = TableModel.TestCase


def _kept_or_written(before: list[Row], after: list[Row], seq: int, next_id: int) -> None:
    """Every live row either is one from before, values and lineage unchanged, or was written by
    the commit at `seq`: its sequence number, and an id of a row from before (moved, updated) or
    a new one."""
    left = Counter(_lineage_bag(before))
    old_ids = {r[ROW_ID] for r in before}
    for r in after:
        cells = _lineage_bag([r])[0]
        if left[cells] > 0:
            left[cells] -= 1
            continue
        assert r[LAST_UPDATED] == seq, (r, seq)
        assert r[ROW_ID] in old_ids or r[ROW_ID] >= next_id, (r, next_id)


def _upsert_lineage(
    before: list[Row], after: list[Row], seq: int, next_id: int, source: list[Row], on: Sequence[str], strategy: str
) -> None:
    """UPSERT by position: a source row that replaces exactly one row keeps that row's id. By
    equality: the replaced rows' new versions are new rows (the spec: lineage is not kept
    through equality deletes)."""
    by_key: dict[tuple, list[Row]] = {}
    for r in before:
        by_key.setdefault(_key(r, on), []).append(r)
    written = {_key(r, on): r for r in after if _key(r, on) in {_key(s, on) for s in source}}
    for s in source:
        if _match_key(s, on) is None:
            continue  # matches nothing: a new row, beside any row with the same nulls
        new = written[_key(s, on)]
        assert new[LAST_UPDATED] == seq
        matched = by_key.get(_key(s, on), [])
        if strategy == "position" and len(matched) == 1:
            assert new[ROW_ID] == matched[0][ROW_ID], (s, matched, new)
        elif strategy == "equality" or not matched:
            assert new[ROW_ID] >= next_id, (s, new, next_id)


class TableModelV3(TableModel):
    """The same rules on a v3 table, created v3 or created v2 and upgraded by a rule."""

    @initialize(
        partition_by=PARTITIONINGS,
        format_version=st.sampled_from([3, 2]),
    )
    def create(self, partition_by: list[str] | None, format_version: int) -> None:  # type: ignore[override]
        self._create(partition_by, format_version)

    @precondition(lambda self: hasattr(self, "table") and self.table.metadata.format_version < 3)
    @rule(how=st.sampled_from(["upgrade", "set_properties"]))
    def upgrade(self, how: str) -> None:
        """Metadata only: no snapshot, the rows stay; deletes already written still apply."""
        snapshots = len(self.table.snapshots())
        if how == "upgrade":
            self.table.upgrade()
        else:
            self.table.set_properties(**{"format-version": "3"})
        assert self.table.metadata.format_version == 3 and self.table.metadata.next_row_id == 0
        assert len(self.table.snapshots()) == snapshots


TableModelV3.TestCase.settings = settings(
    TableModel.TestCase.settings,
    max_examples=int(os.environ.get("MOR_STATEFUL_EXAMPLES_V3", os.environ.get("MOR_STATEFUL_EXAMPLES", "150"))),
)
test_v3_table_matches_model = TableModelV3.TestCase
