"""Iceberg Java reads our equality-delete (and DML) tables with exactly the rows we read.

pyiceberg refuses equality deletes, so the judge here is the real Iceberg Java reader. All
tables are built first, then one JVM reads every snapshot of every table.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from oracle_support import read_with_iceberg_java

import mor

pytestmark = [pytest.mark.interop, pytest.mark.oracle]

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("category", pa.string()), ("name", pa.string()), ("value", pa.float64())])


def rows(ids: range | list[int], tag: str = "") -> pa.Table:
    ids = list(ids)
    return pa.table(
        {
            "id": ids,
            "category": [None if i % 7 == 3 else "abc"[i % 3] for i in ids],
            "name": [None if i % 11 == 5 else f"{tag}name-{i}" for i in ids],
            "value": [None if i % 13 == 2 else i * 0.5 for i in ids],
        },
        schema=SCHEMA,
    )


def keys(**columns: list[Any]) -> pa.Table:
    return pa.table({name: pa.array(values, SCHEMA.field(name).type) for name, values in columns.items()})


def unpartitioned_global_deletes(table: mor.Table) -> None:
    table.append(rows(range(0, 120)))
    table.delete_rows(keys(id=[3, 13, 23, 5_000_000]))  # includes an absent key
    table.append(rows([13, 23, 500, 501], tag="re-"))  # re-inserted keys survive the older delete
    table.delete_rows(keys(category=[None]))  # a null key deletes rows whose category is null
    table.delete_rows(keys(id=[40, 41, 500], name=["name-40", "wrong", "re-name-500"]))  # two-column key
    table.delete("id >= 100 and id < 110")  # position deletes on top
    table.upsert(rows([1, 2, 600], tag="up-"), on=["id"], strategy="equality")


def partitioned_scoped_and_global(table: mor.Table) -> None:
    table.append(rows(range(0, 90)))
    table.append(rows(range(0, 30), tag="second-"))  # the same ids again, in the same partitions
    table.delete_rows(keys(category=["a", "b"], id=[0, 1]))  # partition-scoped: category is a key
    table.delete_rows(keys(id=[6, 9, 12]))  # global: the table gains an unpartitioned spec
    table.append(rows([6, 7], tag="re-"))
    table.delete_rows(keys(name=[None, "re-name-7"]))  # global, null key
    table.upsert(rows([20, 21, 95], tag="up-"), on=["id", "category"], strategy="equality")


def bucketed_dml(table: mor.Table) -> None:
    table.append(rows(range(0, 80)))
    table.upsert(rows([4, 5, 6, 200], tag="up-"), on=["id"], strategy="equality")  # scoped by bucket(id)
    table.update({"value": pc.field("value") + 1, "category": "'moved'"}, where="id < 10")
    table.upsert(rows([7, 8, 300], tag="pos-"), on=["id"], strategy="position")
    table.merge(
        rows([30, 31, 400]), on=["id"],
        when_matched_delete=pc.field("source.id") == 30,
        when_matched_update={"name": "'merged'"},
        when_not_matched_insert="*",
    )  # fmt: skip
    table.delete_rows(keys(id=[50, 51]))


def constrained_and_idempotent(table: mor.Table) -> None:
    """Table features other engines only carry: CHECK constraints (properties), NOT NULL made
    later (the schema), idempotent writes (snapshot summaries), an overwrite."""
    table.append(rows(range(0, 60)))
    table.add_constraint("non_negative", "value is null or value >= 0")
    table.delete("name is null")
    table.set_not_null("name")
    table.overwrite(rows([1, 2, 700], tag="ow-"), where="id < 3 or id = 700")
    table.append(rows([800, 801]), idempotency=("job", 1))
    table.append(rows([800, 801]), idempotency=("job", 1))  # a repeat: commits nothing
    table.update({"value": pc.field("value") + 1}, where="id between 10 and 20", idempotency=("job", 2))


def format_v1_then_upgraded(table: mor.Table) -> None:
    """Format v1: every verb rewrites rows (no delete files); after the upgrade to v2, merge-on-read."""
    table.append(rows(range(0, 60)))
    table.delete("id % 7 = 0")
    table.update({"value": pc.field("value") + 1}, where="id < 10")
    table.upsert(rows([1, 2, 900], tag="up-"), on=["id"], strategy="equality")  # a join on v1
    table.delete_rows(keys(id=[20, 21]))
    table.overwrite(rows([30], tag="ow-"), where="id = 30")
    table.upgrade(format_version=2)
    table.delete("id between 40 and 45")
    table.delete_rows(keys(id=[50]))


SCENARIOS: dict[str, tuple[list[str] | None, Callable[[mor.Table], None]]] = {
    "unpartitioned": (None, unpartitioned_global_deletes),
    "by_category": (["category"], partitioned_scoped_and_global),
    "by_bucket": (["bucket(4, id)"], bucketed_dml),
    "constrained": (["category"], constrained_and_idempotent),
    "v1": (["category"], format_v1_then_upgraded),
}
FORMAT_VERSIONS = {"v1": 1}  # the others: mor's default


@pytest.fixture(scope="module")
def java_reads(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """{scenario: [(snapshot id, our rows, Iceberg Java's rows)]} for every snapshot, and
    under "kinds" the delete-file kinds live at each scenario's end."""
    workdir = tmp_path_factory.mktemp("oracle")
    catalog = mor.load_catalog(workdir / "warehouse", create=True)
    requests, ours, where = [], [], []
    kinds: dict[str, set[str]] = {}
    for name, (partition_by, build) in SCENARIOS.items():
        table = catalog.create_table(f"db.{name}", schema=SCHEMA, partition_by=partition_by, format_version=FORMAT_VERSIONS.get(name))
        build(table)
        kinds[name] = {_kind(table, d) for task in table.scan().plan_files() for d in task.delete_files}
        for snapshot in table.snapshots():
            requests.append((table.metadata_location, snapshot.snapshot_id))
            ours.append(table.scan(snapshot_id=snapshot.snapshot_id).to_arrow())
            where.append((name, snapshot.snapshot_id))
    defaults = catalog.create_table("db.v3_defaults", schema=SCHEMA, format_version=3)
    build_with_defaults(defaults)
    for snapshot in defaults.snapshots():
        requests.append((defaults.metadata_location, snapshot.snapshot_id))
        ours.append(defaults.scan(snapshot_id=snapshot.snapshot_id).to_arrow())
        where.append(("v3_defaults", snapshot.snapshot_id))
    theirs = read_with_iceberg_java(requests, Path(workdir))
    out: dict[str, Any] = {"kinds": kinds}
    for (name, snapshot_id), a, b in zip(where, ours, theirs):
        out.setdefault(name, []).append((snapshot_id, a, b))
    return out


def build_with_defaults(table: mor.Table) -> None:
    """Format v3 default values: columns added with one (rows from before read it), a write
    default changed, writes that leave the columns out."""
    table.append(rows(range(0, 20)))
    with table.update_schema() as u:
        u.add_column("n", pa.int32(), default=7)
        u.add_column("day", pa.date32(), required=True, default=dt.date(2025, 1, 2))
    table.append(rows(range(20, 30)))  # without n and day: their write defaults
    table.update_schema().set_default("n", 9).commit()
    table.append(rows(range(30, 35)))
    table.delete("id % 4 = 1")


def test_iceberg_java_reads_default_values_as_we_do(java_reads: dict) -> None:
    snapshots = java_reads["v3_defaults"]
    assert len(snapshots) == 4
    for snapshot_id, ours, theirs in snapshots:
        assert ours.column_names == theirs.column_names, snapshot_id
        assert sorted(map(str, ours.to_pylist())) == sorted(map(str, theirs.to_pylist())), f"snapshot {snapshot_id}"
    final = snapshots[-1][1]
    assert {r["n"] for r in final.to_pylist()} == {7, 9} and {r["day"] for r in final.to_pylist()} == {dt.date(2025, 1, 2)}


def _kind(table: mor.Table, delete_file: mor.DeleteFile) -> str:
    if delete_file.content == mor.FileContent.POSITION_DELETES:
        return "position"
    return "equality-scoped" if table.metadata.specs()[delete_file.spec_id].fields else "equality-global"


def _canonical(table: pa.Table) -> list[tuple]:
    return sorted(tuple(r.values()) for r in table.select(SCHEMA.names).to_pylist())


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_iceberg_java_reads_every_snapshot_as_we_do(java_reads: dict, scenario: str) -> None:
    snapshots = java_reads[scenario]
    assert len(snapshots) >= 5
    for snapshot_id, ours, theirs in snapshots:
        assert _canonical(ours) == _canonical(theirs), f"{scenario} snapshot {snapshot_id}"


def test_scenarios_exercise_what_they_claim(java_reads: dict) -> None:
    """Guard against a scenario that silently stops producing the delete files it tests."""
    assert java_reads["kinds"] == {
        "unpartitioned": {"equality-global", "position"},
        "by_category": {"equality-scoped", "equality-global"},
        "by_bucket": {"equality-scoped", "position"},
        "constrained": {"position"},
        "v1": {"equality-global", "position"},
    }
