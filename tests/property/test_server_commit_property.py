"""Random sequences of valid and invalid commits through `mor serve`'s commit handler (in this
process: the routes and error answers of mor/server, without HTTP): every commit holding an
invalid update is refused with a 4xx and changes nothing (the catalog's pointer, the metadata
file's bytes, the files in the table's metadata folder), every valid one lands, and after each
step the stored metadata loads in pyiceberg and in mor and both read the same rows."""

from __future__ import annotations

import json
import random
import tempfile
from pathlib import Path
from typing import Any

import pyarrow as pa
from examples import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyiceberg.table import StaticTable

import mor
from mor.format.manifest_list import write_manifest_list
from mor.io.fileio import FileIO, to_local_path
from mor.server.auth import EVERYTHING
from mor.server.errors import error_response
from mor.server.routes import Call, Service

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("s", pa.string()), pa.field("ts", pa.timestamp("us"))])
VALID = ("append_rows", "set_properties", "add_column", "add_spec", "add_sort_order", "tag", "side_snapshot")
INVALID = (
    "duplicate_field_id",
    "reserved_field_id",
    "spec_missing_column",
    "spec_bad_transform",
    "partition_name_of_column",
    "sort_missing_column",
    "snapshot_id_string",
    "manifest_list_number",
    "manifest_list_of_another_table",
    "manifest_list_system_file",
    "manifest_list_missing",
    "manifest_list_not_avro",
    "no_operation",
    "stale_sequence_number",
    "ref_to_missing_snapshot",
    "main_as_tag",
    "tag_with_branch_retention",
    "downgrade",
)
step = st.tuples(st.sampled_from(VALID), st.none() | st.sampled_from(INVALID))


def rows(n: int, start: int) -> pa.Table:
    return pa.table({"id": range(start, start + n), "s": [f"s{i}" for i in range(n)], "ts": [None] * n}, schema=SCHEMA)


class World:
    """A catalog with db.t (the table the commits go to) and db.other, and the server over it."""

    def __init__(self, root: Path):
        self.catalog = mor.load_catalog(root / "wh", create=True)
        self.catalog.create_table("db.t", schema=SCHEMA)
        other = self.catalog.create_table("db.other", schema=SCHEMA)
        other.append(rows(2, 0))
        self.other_manifest_list = other.refresh().metadata.snapshots[-1].manifest_list
        self.service = Service(self.catalog)
        self.io = FileIO()
        self.rng = random.Random(0)
        self.next_id = 0

    def table(self) -> mor.Table:
        return self.catalog.load_table("db.t")

    def commit(self, updates: list[dict[str, Any]]) -> tuple[int, Any]:
        call = Call({"namespace": "db", "table": "t"}, {}, {}, EVERYTHING, body={"requirements": [], "updates": updates})
        try:
            return self.service.commit_table(call)
        except Exception as e:  # as the app answers it
            return error_response(e)

    def fresh(self) -> int:
        self.next_id += 1
        return self.rng.randrange(1, 2**59) * 8 + self.next_id % 8

    # -- updates ------------------------------------------------------------------------------
    def valid(self, kind: str) -> list[dict[str, Any]]:
        m = self.table().metadata
        current = json.loads(m.to_json())
        schema = next(s for s in current["schemas"] if s["schema-id"] == m.current_schema_id)
        if kind == "set_properties":
            return [{"action": "set-properties", "updates": {f"k{self.fresh() % 100}": "v"}}]
        if kind == "add_column":
            field = {"id": m.last_column_id + 1, "name": f"c{m.last_column_id + 1}", "type": "long", "required": False}
            return [
                {"action": "add-schema", "schema": {**schema, "fields": [*schema["fields"], field]}},
                {"action": "set-current-schema", "schema-id": -1},
            ]
        if kind == "add_spec":
            n = 2 + self.fresh() % 6
            field = {"source-id": 1, "field-id": m.last_partition_id + 1, "name": f"id_bucket_{n}", "transform": f"bucket[{n}]"}
            return [{"action": "add-spec", "spec": {"spec-id": 1, "fields": [field]}}, {"action": "set-default-spec", "spec-id": -1}]
        if kind == "add_sort_order":
            field = {"source-id": 1, "transform": "identity", "direction": "desc", "null-order": "nulls-last"}
            return [
                {"action": "add-sort-order", "sort-order": {"order-id": 1, "fields": [field]}},
                {"action": "set-default-sort-order", "sort-order-id": -1},
            ]
        if kind == "tag" and m.current_snapshot_id is not None:
            return [
                {"action": "set-snapshot-ref", "ref-name": f"tag{self.fresh() % 5}", "type": "tag", "snapshot-id": m.current_snapshot_id}
            ]
        if kind == "side_snapshot":  # an empty snapshot on a branch of its own, its manifest list written as a client does
            snapshot = self.snapshot(m)
            write_manifest_list(self.io, snapshot["manifest-list"], snapshot_id=snapshot["snapshot-id"], parent_snapshot_id=None,
                                sequence_number=snapshot["sequence-number"], manifests=[])  # fmt: skip
            branch = {
                "action": "set-snapshot-ref",
                "ref-name": f"side{self.fresh() % 3}",
                "type": "branch",
                "snapshot-id": snapshot["snapshot-id"],
            }
            return [{"action": "add-snapshot", "snapshot": snapshot}, branch]
        return [{"action": "set-properties", "updates": {"touched": "yes"}}]

    def snapshot(self, m: Any, **fields: Any) -> dict[str, Any]:
        snapshot_id = self.fresh()
        return {
            "snapshot-id": snapshot_id,
            "sequence-number": m.last_sequence_number + 1,
            "timestamp-ms": 1_700_000_000_000 + self.next_id,
            "manifest-list": f"{m.location}/metadata/snap-{snapshot_id}.avro",
            "summary": {"operation": "append"},
            "schema-id": m.current_schema_id,
            **fields,
        }

    def invalid(self, kind: str) -> list[dict[str, Any]]:
        m = self.table().metadata
        current = json.loads(m.to_json())
        schema = next(s for s in current["schemas"] if s["schema-id"] == m.current_schema_id)
        head = m.current_snapshot_id or 1
        if kind in ("duplicate_field_id", "reserved_field_id"):
            field_id = 1 if kind == "duplicate_field_id" else 2147483540
            field = {"id": field_id, "name": "extra", "type": "long", "required": False}
            return [{"action": "add-schema", "schema": {**schema, "fields": [*schema["fields"], field]}}]
        specs = {
            "spec_missing_column": {"source-id": 999, "field-id": 1999, "name": "nothing", "transform": "identity"},
            "spec_bad_transform": {"source-id": 2, "field-id": 1999, "name": "s_day", "transform": "day"},
            "partition_name_of_column": {"source-id": 1, "field-id": 1999, "name": "s", "transform": "bucket[4]"},
        }
        if kind in specs:
            return [{"action": "add-spec", "spec": {"spec-id": 7, "fields": [specs[kind]]}}]
        if kind == "sort_missing_column":
            field = {"source-id": 999, "transform": "identity", "direction": "asc", "null-order": "nulls-first"}
            return [{"action": "add-sort-order", "sort-order": {"order-id": 5, "fields": [field]}}]
        snapshots = {
            "snapshot_id_string": {"snapshot-id": str(self.fresh())},
            "manifest_list_number": {"manifest-list": 5},
            "manifest_list_of_another_table": {"manifest-list": self.other_manifest_list},
            "manifest_list_system_file": {"manifest-list": "file:///etc/hostname"},
            "manifest_list_missing": {},  # named inside the table, never written
            "manifest_list_not_avro": {"manifest-list": self.table().metadata_location},
            "no_operation": {"summary": {}},
            "stale_sequence_number": {"sequence-number": 0, "parent-snapshot-id": head},
        }
        if kind in snapshots:
            return [{"action": "add-snapshot", "snapshot": self.snapshot(m, **snapshots[kind])}]
        refs = {
            "ref_to_missing_snapshot": ("b", {"type": "branch", "snapshot-id": 12345}),
            "main_as_tag": ("main", {"type": "tag", "snapshot-id": head}),
            "tag_with_branch_retention": ("t", {"type": "tag", "snapshot-id": head, "max-snapshot-age-ms": 1000}),
        }
        if kind in refs:
            name, ref = refs[kind]
            return [{"action": "set-snapshot-ref", "ref-name": name, **ref}]
        assert kind == "downgrade"
        return [{"action": "upgrade-format-version", "format-version": 1}]

    # -- state --------------------------------------------------------------------------------
    def state(self) -> tuple[str, bytes, list[str]]:
        table = self.table()
        folder = Path(to_local_path(table.location)) / "metadata"
        return table.metadata_location, Path(to_local_path(table.metadata_location)).read_bytes(), sorted(p.name for p in folder.iterdir())

    def check_readable(self) -> None:
        table = self.table()
        ours = sorted(table.scan().to_arrow().column("id").to_pylist())
        theirs = StaticTable.from_metadata(table.metadata_location).scan().to_arrow()
        assert sorted(theirs.column("id").to_pylist()) == ours
        assert self.catalog.load_table("db.other").scan().count() == 2  # the catalog serves the other table


@settings(max_examples=examples(24), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(step, min_size=1, max_size=8))
def test_refused_commits_change_nothing_and_every_state_loads_everywhere(steps: list[tuple[str, str | None]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        world = World(Path(tmp))
        appended = 0
        for valid, invalid in steps:
            if valid == "append_rows" and invalid is None:
                table = world.table()
                data = rows(3, appended)
                for f in table.schema().fields[3:]:  # columns the steps added: long, null here
                    data = data.append_column(pa.field(f.name, pa.int64()), pa.nulls(3, pa.int64()))
                table.append(data)  # mor's own writer, through the same validator
                appended += 3
                world.check_readable()
                continue
            updates = world.valid(valid)
            if invalid is not None:
                updates = updates + world.invalid(invalid)
            before = world.state()
            status, body = world.commit(updates)
            if invalid is None:
                assert status == 200, (valid, body)
            else:
                assert 400 <= status < 500, (invalid, status, body)
                assert body["error"]["message"], body
                assert world.state() == before, f"refused {invalid} changed the table"
            world.check_readable()
