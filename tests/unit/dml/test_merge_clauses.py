"""MERGE with clauses built in order (`MergeClauses`): the first clause whose condition holds
applies, checked against a model in plain Python over random clause lists; and the builder's
refusals, which leave the table as it was."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mor
from mor import MergeClauses

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.int64()), ("tag", pa.string())])
SOURCE = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.int64()), ("tag", pa.string()), ("op", pa.string())])
Row = dict[str, Any]

# Conditions as (a pyarrow expression or SQL text, the same in Python over (target row or None,
# source row)).
CONDITIONS: dict[str, tuple[pc.Expression | str, Callable[[Row | None, Row], bool]]] = {
    "op=d": (pc.field("source.op") == "d", lambda t, s: s["op"] == "d"),
    "op=u": (pc.field("source.op") == "u", lambda t, s: s["op"] == "u"),
    "v<source.v": (pc.field("v") < pc.field("source.v"), lambda t, s: t is not None and t["v"] is not None and t["v"] < s["v"]),
    "source.v>5": (pc.field("source.v") > 5, lambda t, s: s["v"] > 5),
    "text op=d": ("source.op = 'd'", lambda t, s: s["op"] == "d"),
    "text v<source.v": ("target.v < source.v", lambda t, s: t is not None and t["v"] is not None and t["v"] < s["v"]),
    "text v+source.v>6": ("v + source.v > 6 and tag <> 'x'", lambda t, s: t is not None and t["v"] + s["v"] > 6 and t["tag"] != "x"),
    "text like or in": ("source.tag like 's1%' or source.op in ('x')", lambda t, s: s["tag"].startswith("s1") or s["op"] == "x"),
}
MATCHED = st.tuples(st.sampled_from(["update_v", "update_all", "delete"]), st.sampled_from([None, *CONDITIONS]))
TARGET_READING = {"v<source.v", "text v<source.v", "text v+source.v>6"}
SOURCE_ONLY = [name for name in CONDITIONS if name not in TARGET_READING]  # an insert sees no target row
NOT_MATCHED = st.tuples(st.sampled_from(["insert_all", "insert_tagged"]), st.sampled_from([None, *SOURCE_ONLY]))


def _build(matched: list[tuple[str, str | None]], not_matched: list[tuple[str, str | None]]) -> MergeClauses:
    clauses = MergeClauses()
    for action, name in matched:
        condition = None if name is None else CONDITIONS[name][0]
        if action == "update_v":
            clauses = clauses.when_matched_update({"v": pc.field("source.v") * 10}, condition)
        elif action == "update_all":
            clauses = clauses.when_matched_update_all(condition)
        else:
            clauses = clauses.when_matched_delete(condition)
    for action, name in not_matched:
        condition = None if name is None else CONDITIONS[name][0]
        if action == "insert_all":
            clauses = clauses.when_not_matched_insert_all(condition)
        else:
            clauses = clauses.when_not_matched_insert({"id": pc.field("source.id"), "tag": "'new'"}, condition)
    return clauses


def _model(
    target: list[Row], source: list[Row], matched: list[tuple[str, str | None]], not_matched: list[tuple[str, str | None]]
) -> list[Row]:
    by_id = {s["id"]: s for s in source}
    out = []
    for t in target:
        s = by_id.get(t["id"])
        applied = None if s is None else next((c for c in matched if c[1] is None or CONDITIONS[c[1]][1](t, s)), None)
        if applied is None:
            out.append(t)
        elif applied[0] == "update_v":
            out.append({**t, "v": s["v"] * 10})  # type: ignore[index]
        elif applied[0] == "update_all":
            out.append({"id": s["id"], "v": s["v"], "tag": s["tag"]})  # type: ignore[index]
    target_ids = {t["id"] for t in target}
    for s in source:
        if s["id"] in target_ids:
            continue
        applied = next((c for c in not_matched if c[1] is None or CONDITIONS[c[1]][1](None, s)), None)
        if applied is not None:
            out.append(
                {
                    "id": s["id"],
                    "v": s["v"] if applied[0] == "insert_all" else None,
                    "tag": s["tag"] if applied[0] == "insert_all" else "new",
                }
            )
    return sorted(out, key=lambda r: r["id"])


def _usable(clauses: list[tuple[str, str | None]]) -> bool:
    return all(name is not None for _, name in clauses[:-1])  # only the last may go without a condition


@settings(max_examples=40, deadline=None)
@given(
    target_ids=st.sets(st.integers(0, 12), max_size=8),
    source=st.dictionaries(st.integers(0, 12), st.tuples(st.integers(0, 9), st.sampled_from(["u", "d", "x"])), max_size=8),
    matched=st.lists(MATCHED, max_size=3).filter(_usable),
    not_matched=st.lists(NOT_MATCHED, max_size=2).filter(_usable),
    mode=st.sampled_from(["merge-on-read", "copy-on-write"]),
)
def test_the_first_clause_whose_condition_holds_applies(
    target_ids: set[int], source: dict[int, tuple[int, str]], matched: list[Any], not_matched: list[Any], mode: str
) -> None:
    if not matched and not not_matched:
        return
    target = [{"id": i, "v": i % 7, "tag": "old"} for i in sorted(target_ids)]
    source_rows = [{"id": i, "v": v, "tag": f"s{i}", "op": op} for i, (v, op) in sorted(source.items())]
    with tempfile.TemporaryDirectory() as root:
        table = mor.load_catalog(root).create_table("db.t", schema=SCHEMA)
        if target:
            table.append(pa.Table.from_pylist(target, schema=SCHEMA))
        table.merge(pa.Table.from_pylist(source_rows, schema=SOURCE), on=["id"], clauses=_build(matched, not_matched), mode=mode)
        got = sorted(table.scan().to_arrow().to_pylist(), key=lambda r: r["id"])
    assert got == _model(target, source_rows, matched, not_matched)


def test_an_unconditional_clause_before_another_is_refused_and_nothing_changes(catalog: mor.Catalog) -> None:
    table = catalog.create_table("db.t", schema=SCHEMA)
    table.append(pa.Table.from_pylist([{"id": 1, "v": 1, "tag": "a"}], schema=SCHEMA))
    before = table.metadata_location
    source = pa.Table.from_pylist([{"id": 1, "v": 2, "tag": "b", "op": "u"}], schema=SOURCE)
    clauses = MergeClauses().when_matched_delete().when_matched_update_all()
    with pytest.raises(mor.InvalidArgumentError, match="unconditional WHEN MATCHED DELETE leaves the WHEN MATCHED UPDATE"):
        table.merge(source, on=["id"], clauses=clauses)
    with pytest.raises(mor.InvalidArgumentError, match="either as keywords or as clauses"):
        table.merge(source, on=["id"], when_matched_update="*", clauses=MergeClauses().when_matched_delete())
    with pytest.raises(mor.InvalidArgumentError, match="at least one clause"):
        table.merge(source, on=["id"], clauses=MergeClauses())
    with pytest.raises(mor.InvalidArgumentError, match="condition is SQL text or a pyarrow.compute expression"):
        table.merge(source, on=["id"], clauses=MergeClauses().when_matched_delete(5))
    with pytest.raises(mor.InvalidFilterError, match="names column 'op'"):  # the source's is source.op
        table.merge(source, on=["id"], clauses=MergeClauses().when_matched_delete("op = 'd'"))
    assert table.refresh().metadata_location == before


def test_the_builder_is_immutable_and_speaks_delta() -> None:
    base = MergeClauses().whenMatchedDelete(pc.field("source.op") == "d")
    more = base.whenMatchedUpdateAll().whenNotMatchedInsertAll()
    assert len(base.matched) == 1 and not base.not_matched
    assert [c.action for c in more] == ["delete", "update", "insert"]
    assert more.has_update and more.has_insert and more.reads_target_columns
    assert not MergeClauses().when_matched_update_all().reads_target_columns


def test_conditions_as_sql_text_in_the_keyword_form_and_their_errors(catalog: mor.Catalog) -> None:
    table = catalog.create_table("db.t", schema=SCHEMA)
    table.append(pa.Table.from_pylist([{"id": i, "v": i, "tag": "old"} for i in range(4)], schema=SCHEMA))
    source = pa.Table.from_pylist(
        [{"id": 0, "v": 9, "tag": "a", "op": "d"}, {"id": 1, "v": 0, "tag": "b", "op": "u"},
         {"id": 2, "v": 7, "tag": "c", "op": "u"}, {"id": 8, "v": 1, "tag": "d", "op": "u"},
         {"id": 9, "v": 2, "tag": "e", "op": "d"}],
        schema=SOURCE,
    )  # fmt: skip
    table.merge(
        source, on=["id"],
        when_matched_delete="source.op = 'd'",
        when_matched_update={"v": "source.v", "tag": "upper(source.tag)"}, when_matched_update_if="source.v > target.v",
        when_not_matched_insert="*", when_not_matched_insert_if="source.op <> 'd'",
    )  # fmt: skip
    got = sorted(table.scan().to_arrow().to_pylist(), key=lambda r: r["id"])
    assert got == [
        {"id": 1, "v": 1, "tag": "old"},  # 0 < 1: the update's condition does not hold
        {"id": 2, "v": 7, "tag": "C"},
        {"id": 3, "v": 3, "tag": "old"},
        {"id": 8, "v": 1, "tag": "d"},
    ]
    before = table.metadata_location
    with pytest.raises(mor.InvalidFilterError, match="names column 'v'.*an insert sees only the source's columns"):
        table.merge(source, on=["id"], when_not_matched_insert="*", when_not_matched_insert_if="v > 1")
    with pytest.raises(mor.InvalidFilterError, match=r"(?s)the condition of WHEN MATCHED UPDATE.*\^"):
        table.merge(source, on=["id"], when_matched_update="*", when_matched_update_if="source.v >")
    with pytest.raises(mor.InvalidArgumentError, match="when_matched_update_if is SQL text or a pyarrow.compute expression"):
        table.merge(source, on=["id"], when_matched_update="*", when_matched_update_if=3)
    assert table.refresh().metadata_location == before
