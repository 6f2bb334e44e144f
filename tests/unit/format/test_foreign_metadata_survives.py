"""What other engines wrote into table metadata survives every mor commit unchanged: the
retention fields Iceberg Java keeps on refs (main's included), other branches and tags, and
top-level and snapshot keys mor does not model. mor's expiry honours those retention fields.
"""

from __future__ import annotations

import copy
import datetime as dt
import json
import uuid
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pytest
from unit_helpers import local, make_rows, scan_ids

import mor

DAY_MS = 24 * 3600 * 1000
MAIN_RETENTION = {"min-snapshots-to-keep": 2, "max-snapshot-age-ms": 1, "max-ref-age-ms": 9223372036854775807}
UNKNOWN_TOP_LEVEL = {"x-engine-lineage": {"job": "nightly", "attempt": 3}}
UNKNOWN_SNAPSHOT_KEY = ("x-engine-snapshot-note", "written elsewhere")


def raw(table: mor.Table) -> dict[str, Any]:
    with open(local(table.metadata_location)) as f:
        return json.load(f)


def as_java_left_it(catalog: mor.Catalog) -> tuple[mor.Table, dict[str, Any]]:
    """db.t with four snapshots, its current metadata rewritten as another engine would have it:
    retention fields on main, a tag and a branch with their own, an unknown top-level key, an
    unknown key on the first snapshot. Returns the table and the fields to find again."""
    table = catalog.create_table("db.t", schema=make_rows([]).schema)
    for k in range(4):
        table.append(make_rows(range(10 * k, 10 * k + 10)))
    d = raw(table)
    first, second = d["snapshots"][0]["snapshot-id"], d["snapshots"][1]["snapshot-id"]
    d["refs"] = {
        "main": {**d["refs"]["main"], **MAIN_RETENTION},
        "release-1": {"snapshot-id": first, "type": "tag", "max-ref-age-ms": 365 * DAY_MS},
        "audit": {"snapshot-id": second, "type": "branch", "min-snapshots-to-keep": 2, "max-ref-age-ms": 365 * DAY_MS},
    }
    d.update(copy.deepcopy(UNKNOWN_TOP_LEVEL))
    d["snapshots"][0][UNKNOWN_SNAPSHOT_KEY[0]] = UNKNOWN_SNAPSHOT_KEY[1]
    location = table.metadata_location.rsplit("/", 1)[0] + f"/00099-{uuid.uuid4()}.metadata.json"
    with open(local(location), "w") as f:
        json.dump(d, f)
    assert catalog.store.swap("db", "t", table.metadata_location, location)
    return catalog.load_table("db.t"), d


OPERATIONS: dict[str, Callable[[mor.Table], Any]] = {
    "append": lambda t: t.append(make_rows([100])),
    "delete": lambda t: t.delete("id = 3"),
    "delete-cow": lambda t: t.delete("id = 4", mode="copy-on-write"),
    "update": lambda t: t.update({"name": "'x'"}, where="id = 5"),
    "upsert": lambda t: t.upsert(make_rows([6, 101]), on=["id"]),
    "delete_rows": lambda t: t.delete_rows(pa.table({"id": pa.array([7], pa.int64())})),
    "update_schema": lambda t: t.update_schema().add_column("extra", pa.int32()).commit(),
    "update_spec": lambda t: t.update_spec().add_field("category").commit(),
    "set_properties": lambda t: t.set_properties(owner="someone"),
    "upgrade": lambda t: t.upgrade(3),
    "compact": lambda t: (t.delete("id = 8"), t.compact(min_input_files=1)),
    "rewrite_position_deletes": lambda t: (t.delete("id = 1"), t.delete("id = 2"), t.rewrite_position_deletes()),
    "expire_snapshots": lambda t: (  # main keeps its newest two, audit its two: the middle two go
        t.append(make_rows([102])),
        t.append(make_rows([103])),
        t.expire_snapshots(older_than=dt.timedelta(0), retain_last=1, allow_short_retention=True),
    ),
}


@pytest.mark.parametrize("operation", OPERATIONS.values(), ids=OPERATIONS.keys())
def test_refs_and_unknown_keys_survive_every_commit(catalog: mor.Catalog, operation: Callable[[mor.Table], Any]) -> None:
    table, before = as_java_left_it(catalog)
    location_before = table.metadata_location
    operation(table)
    assert table.metadata_location != location_before  # it committed
    after = raw(catalog.load_table("db.t"))
    main = after["refs"]["main"]
    assert main == {"snapshot-id": after["current-snapshot-id"], "type": "branch", **MAIN_RETENTION}
    assert {k: v for k, v in after["refs"].items() if k != "main"} == {k: v for k, v in before["refs"].items() if k != "main"}
    assert after["x-engine-lineage"] == UNKNOWN_TOP_LEVEL["x-engine-lineage"]
    first = next(s for s in after["snapshots"] if s["snapshot-id"] == before["snapshots"][0]["snapshot-id"])
    assert first[UNKNOWN_SNAPSHOT_KEY[0]] == UNKNOWN_SNAPSHOT_KEY[1]


def test_expiry_honours_the_retention_fields_on_refs(catalog: mor.Catalog) -> None:
    """retain_last=1 asks for less than main's min-snapshots-to-keep (2) and the audit branch's
    (2): the refs win, as in Iceberg. The tag keeps its one snapshot."""
    table, before = as_java_left_it(catalog)
    ids = [s["snapshot-id"] for s in before["snapshots"]]
    result = table.expire_snapshots(older_than=dt.timedelta(0), retain_last=1, allow_short_retention=True)
    # main: ids[3], ids[2] (min 2); audit: ids[1], ids[0] (min 2, ids[0] is also the tag).
    assert result.expired_snapshot_ids == ()
    assert [s.snapshot_id for s in table.snapshots()] == ids
    # A branch without its own minimum takes the caller's; an old tag past its max-ref-age goes.
    d = raw(table)
    d["refs"]["audit"].pop("min-snapshots-to-keep")
    d["refs"]["release-1"]["max-ref-age-ms"] = 1
    location = table.metadata_location.rsplit("/", 1)[0] + f"/00100-{uuid.uuid4()}.metadata.json"
    with open(local(location), "w") as f:
        json.dump(d, f)
    assert catalog.store.swap("db", "t", table.metadata_location, location)
    table = catalog.load_table("db.t")
    result = table.expire_snapshots(older_than=dt.timedelta(0), retain_last=1, allow_short_retention=True)
    assert result.removed_refs == ("release-1",)
    assert result.expired_snapshot_ids == (ids[0],) or set(result.expired_snapshot_ids) == {ids[0]}
    assert [s.snapshot_id for s in table.snapshots()] == ids[1:]
    assert raw(table)["refs"]["main"] == {"snapshot-id": ids[3], "type": "branch", **MAIN_RETENTION}
    assert scan_ids(table) == list(range(40))
