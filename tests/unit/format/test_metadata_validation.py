"""Metadata that breaks an invariant of the spec is CorruptMetadataError naming the file, when it
is read: never wrong rows, never a commit that makes it worse. What Iceberg Java writes passes
(every Java fixture loads: tests/interop/test_java_fixtures.py)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from unit_helpers import local, make_rows, scan_ids

import mor
from mor.commit.snapshot_producer import Changes, commit_changes
from mor.format.spec import ManifestContent
from mor.planning.planner import live_entries


def history(catalog: mor.Catalog, **create: Any) -> mor.Table:
    """db.t with three appends (sequence numbers 1, 2, 3) and a position delete (4)."""
    table = catalog.create_table("db.t", schema=make_rows([]).schema, partition_by=["category"], **create)
    for k in range(3):
        table.append(make_rows(range(10 * k, 10 * k + 10)))
    table.delete("id = 1")
    return table


def rewritten(catalog: mor.Catalog, table: mor.Table, change: Callable[[dict[str, Any]], None]) -> str:
    """The table's metadata with `change` made by hand, written as the next file and swapped in
    (as a buggy writer would); its location."""
    with open(local(table.metadata_location)) as f:
        d = json.load(f)
    change(d)
    location = table.metadata_location.rsplit("/", 1)[0] + f"/00099-{uuid.uuid4()}.metadata.json"
    with open(local(location), "w") as f:
        json.dump(d, f)
    assert catalog.store.swap("db", "t", table.metadata_location, location)
    return location


def snapshot(d: dict[str, Any], index: int) -> dict[str, Any]:
    return d["snapshots"][index]


def set_sequence(index: int, value: int) -> Callable[[dict[str, Any]], None]:
    return lambda d: snapshot(d, index).update({"sequence-number": value})


def drop_current(d: dict[str, Any]) -> None:
    del d["current-snapshot-id"]


DAMAGE: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    "last-sequence-number below a snapshot's": (lambda d: d.update({"last-sequence-number": 2}), "above last-sequence-number 2"),
    "a child below its parent": (set_sequence(2, 1), "not above its parent"),
    "a child equal to its parent": (set_sequence(2, 2), "not above its parent"),
    "negative sequence number": (lambda d: set_sequence(0, -1)(d), "negative"),
    "current-snapshot-id missing, refs.main set": (drop_current, "current-snapshot-id (missing) is not refs.main's"),
    "current-snapshot-id -1, refs.main set": (lambda d: d.update({"current-snapshot-id": -1}), "current-snapshot-id (missing)"),
    "current-snapshot-id not refs.main's": (
        lambda d: d.update({"current-snapshot-id": snapshot(d, 0)["snapshot-id"]}),
        "is not refs.main's snapshot-id",
    ),
    "a tag naming no snapshot": (lambda d: d["refs"].update({"t": {"snapshot-id": 42, "type": "tag"}}), "ref 't' names snapshot 42"),
    "refs.main naming no snapshot": (lambda d: d["refs"]["main"].update({"snapshot-id": 42}), "ref 'main' names snapshot 42"),
    "a ref of no known type": (
        lambda d: d["refs"].update({"b": {"snapshot-id": snapshot(d, 0)["snapshot-id"], "type": "twig"}}),
        "ref 'b' has type 'twig'",
    ),
    "main as a tag": (lambda d: d["refs"]["main"].update({"type": "tag"}), "ref 'main' has type 'tag'"),
    "a snapshot id twice": (
        lambda d: snapshot(d, 1).update({"snapshot-id": snapshot(d, 0)["snapshot-id"]}),
        "snapshot id",
    ),
    "a schema id twice": (lambda d: d["schemas"].append(dict(d["schemas"][0])), "schema id 0 is used twice"),
    "a spec id twice": (lambda d: d["partition-specs"].append(dict(d["partition-specs"][0])), "partition spec id 0 is used twice"),
    "last-column-id below a field id": (lambda d: d.update({"last-column-id": 3}), "last-column-id 3 is below field id 4"),
    "last-partition-id below a field id": (lambda d: d.update({"last-partition-id": 999}), "last-partition-id 999 is below"),
    "a bucket count over 2**31 - 1": (
        lambda d: (
            d["partition-specs"][0]["fields"].append(
                {"name": "b", "transform": "bucket[99999999999999999999]", "source-id": 1, "field-id": 1001}
            )
            or d.update({"last-partition-id": 1001})
        ),
        "bucket[99999999999999999999]",
    ),
}


@pytest.mark.parametrize(("change", "message"), DAMAGE.values(), ids=DAMAGE.keys())
def test_metadata_breaking_an_invariant_is_refused_on_load(
    catalog: mor.Catalog, change: Callable[[dict[str, Any]], None], message: str
) -> None:
    table = history(catalog)
    location = rewritten(catalog, table, change)
    for load in (lambda: catalog.load_table("db.t"), lambda: mor.StaticTable.from_metadata(location), table.refresh):
        with pytest.raises(mor.CorruptMetadataError, match="table metadata file") as error:
            load()
        assert location in str(error.value) and message in str(error.value)
    # Nothing commits on top of it either.
    with pytest.raises(mor.CorruptMetadataError):
        table.append(make_rows([100]))


def test_v3_next_row_id_below_the_ids_handed_out_is_refused(catalog: mor.Catalog) -> None:
    table = history(catalog, properties={"format-version": "3"})
    location = rewritten(catalog, table, lambda d: d.update({"next-row-id": 5}))
    with pytest.raises(mor.CorruptMetadataError, match="next-row-id 5 is below") as error:
        catalog.load_table("db.t")
    assert location in str(error.value)


ACCEPTED: dict[str, Callable[[dict[str, Any]], None]] = {
    # Iceberg Java writes an empty table with -1 or without the key, and without refs.main.
    "an empty table, current-snapshot-id -1": lambda d: d.update(
        {"current-snapshot-id": -1, "refs": {}, "snapshots": [], "snapshot-log": [], "last-sequence-number": 0}
    ),
    "an empty table, no current-snapshot-id": lambda d: (
        drop_current(d),
        d.update({"refs": {}, "snapshots": [], "snapshot-log": [], "last-sequence-number": 0}),
    ),
    # Older writers: no refs at all, main taken from current-snapshot-id.
    "no refs": lambda d: d.pop("refs"),
    # Snapshots from before an upgrade from v1 all have sequence number 0.
    "v1 snapshots at sequence number 0": lambda d: [s.update({"sequence-number": 0}) for s in d["snapshots"][:2]],
    # A parent expired away: nothing to compare with.
    "a parent that was expired": lambda d: d["snapshots"].pop(0),
}


@pytest.mark.parametrize("change", ACCEPTED.values(), ids=ACCEPTED.keys())
def test_what_iceberg_java_writes_is_accepted(catalog: mor.Catalog, change: Callable[[dict[str, Any]], None]) -> None:
    table = history(catalog)
    rewritten(catalog, table, change)
    catalog.load_table("db.t").scan().to_arrow()


def readd(table: mor.Table, content: ManifestContent) -> None:
    """Commit a snapshot that adds a file the table already has live, as a writer that appended
    one file twice would (Iceberg Java before 1.7 let a caller do that)."""
    snapshot = table.current_snapshot()
    assert snapshot is not None
    entry = next(e for e in live_entries(table.io, table.metadata, snapshot, content))
    changes = (
        Changes("append", added_data=[entry.file]) if content == ManifestContent.DATA else Changes("delete", added_deletes=[entry.file])
    )
    table.metadata, table.metadata_location = commit_changes(table.io, table._ops, table.metadata, table.metadata_location, changes)  # type: ignore[arg-type]


@pytest.mark.parametrize("content", [ManifestContent.DATA, ManifestContent.DELETES], ids=["data-file", "delete-file"])
def test_a_file_live_twice_in_one_snapshot_is_refused_when_planned(catalog: mor.Catalog, content: ManifestContent) -> None:
    table = history(catalog)
    expected = scan_ids(table)
    readd(table, content)
    manifest_list = table.current_snapshot().manifest_list  # type: ignore[union-attr]
    for read in (lambda: table.scan().to_arrow(), lambda: table.scan(filter="id < 100").plan_files(), lambda: table.delete("id = 2")):
        with pytest.raises(mor.CorruptMetadataError, match="is live twice") as error:
            read()
        assert manifest_list in str(error.value)
    # The snapshot before is as it was.
    previous = table.current_snapshot().parent_snapshot_id  # type: ignore[union-attr]
    assert scan_ids(table, snapshot_id=previous) == expected


def test_deletion_vectors_sharing_a_puffin_file_are_not_duplicates(catalog: mor.Catalog) -> None:
    table = catalog.create_table("db.t", schema=make_rows([]).schema, properties={"format-version": "3"})
    table.append(make_rows(range(10)))
    table.append(make_rows(range(10, 20)))
    table.delete("id = 3 or id = 13")  # one DELETE over two data files
    snapshot = table.current_snapshot()
    assert snapshot is not None
    deletes = live_entries(table.io, table.metadata, snapshot, ManifestContent.DELETES)
    assert len(deletes) == 2 and len({e.file.file_path for e in deletes}) == 1  # two blobs, one Puffin file
    assert scan_ids(table) == [i for i in range(20) if i not in (3, 13)]
