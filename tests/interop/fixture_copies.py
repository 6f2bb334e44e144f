"""Copies of the Iceberg Java fixture tables at another location, for tests that change them.

The fixtures' metadata holds absolute paths under their warehouse, so a copy elsewhere needs
every location inside it moved (an Iceberg table cannot be copied by copying its folder).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq
from java_fixtures import FIXTURE_TABLES, fixture_source

from mor.io.fileio import to_local_path

FIXTURE_ROOT = "/tmp/mor-fixtures/iceberg-java"  # the warehouse the fixtures' metadata names
POSITION_PATH_FIELD_ID = 2147483546  # `file_path` of position delete files: its bounds name data files
PUFFIN_MAGIC = b"PFA1"


def relocate_fixture(name: str, root: Path, source: Path | None = None, fixture_root: str = FIXTURE_ROOT) -> str:
    """Copy fixture table `name` (of `source`, a fixtures folder whose tables' metadata names
    `fixture_root`; default: the Java fixtures) to root/db/<name> with every location inside it
    moved from the fixtures' warehouse to `root`: metadata JSON files, manifest lists, manifests (paths,
    `referenced_data_file`, `file_path` bounds, sizes of rewritten delete files), the `file_path`
    column of Parquet position delete files and the `referenced-data-file` property in Puffin
    footers (the blobs keep their offsets). Returns the final metadata file."""
    new_root = str(root.resolve())
    target = root / "db" / name
    shutil.copytree((source or fixture_source(name)) / "db" / name, target)

    def moved(location: str | None) -> str | None:
        if location is None:
            return None
        assert fixture_root in location, location
        return location.replace(fixture_root, new_root, 1)

    def rewrite_avro(path: Path, change: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
        with open(path, "rb") as f:
            reader = fastavro.reader(f)
            schema, codec = reader.writer_schema, reader.codec
            metadata = {k: v for k, v in reader.metadata.items() if not k.startswith("avro.")}
            records = [change(record) for record in reader]
        with open(path, "wb") as f:
            fastavro.writer(f, schema, records, codec=codec, metadata=metadata)

    manifests = [p for p in sorted((target / "metadata").glob("*.avro")) if not p.name.startswith("snap-")]
    manifest_lists = sorted((target / "metadata").glob("snap-*.avro"))
    delete_files: dict[str, str] = {}
    for manifest in manifests:
        with open(manifest, "rb") as f:
            for r in fastavro.reader(f):
                if r["data_file"].get("content", 0) == 1:  # v1 manifests hold data files only, without content
                    delete_files[r["data_file"]["file_path"]] = r["data_file"]["file_format"]
    new_sizes: dict[str, int] = {}
    for location, file_format in sorted(delete_files.items()):
        local = Path(to_local_path(moved(location)))  # type: ignore[arg-type]
        if file_format == "PUFFIN":
            data = local.read_bytes()
            size = int.from_bytes(data[-12:-8], "little", signed=True)
            footer = json.loads(data[len(data) - 12 - size : len(data) - 12])
            for blob in footer["blobs"]:
                blob["properties"]["referenced-data-file"] = moved(blob["properties"]["referenced-data-file"])
            payload = json.dumps(footer, separators=(",", ":")).encode()
            start = len(data) - 12 - size
            local.write_bytes(data[:start] + payload + len(payload).to_bytes(4, "little") + data[-8:-4] + PUFFIN_MAGIC)
        else:
            deletes = pq.read_table(local)
            paths = pa.array([moved(p) for p in deletes["file_path"].to_pylist()], pa.string())
            pq.write_table(deletes.set_column(0, deletes.schema.field(0), paths), local)
        new_sizes[location] = local.stat().st_size

    def move_entry(entry: dict[str, Any]) -> dict[str, Any]:
        data_file = entry["data_file"]
        old_path = data_file["file_path"]
        data_file["file_path"] = moved(old_path)
        data_file["referenced_data_file"] = moved(data_file.get("referenced_data_file"))
        if old_path in new_sizes:
            data_file["file_size_in_bytes"] = new_sizes[old_path]
            data_file["split_offsets"] = None
            for bounds in ("lower_bounds", "upper_bounds"):
                for bound in data_file.get(bounds) or []:
                    if bound["key"] == POSITION_PATH_FIELD_ID:
                        bound["value"] = moved(bound["value"].decode()).encode()  # type: ignore[union-attr]
        return entry

    for manifest in manifests:
        rewrite_avro(manifest, move_entry)

    def move_manifest(entry: dict[str, Any]) -> dict[str, Any]:
        entry["manifest_path"] = moved(entry["manifest_path"])
        entry["manifest_length"] = Path(to_local_path(entry["manifest_path"])).stat().st_size
        return entry

    for manifest_list in manifest_lists:
        rewrite_avro(manifest_list, move_manifest)
    for metadata_file in (target / "metadata").glob("*.metadata.json"):
        metadata_file.write_text(metadata_file.read_text().replace(fixture_root, new_root))
    if source is None and name in FIXTURE_TABLES:
        final = root / FIXTURE_TABLES[name]["final_metadata_file"]
    else:  # a fixture without expected reads (no snapshots.json): its newest vN.metadata.json
        final = max((target / "metadata").glob("v*.metadata.json"), key=lambda p: int(p.name[1:].split(".")[0]))
    assert final.is_file(), final
    assert fixture_root not in "".join(p.read_text(errors="replace") for p in (target / "metadata").glob("*.json"))
    return str(final)
