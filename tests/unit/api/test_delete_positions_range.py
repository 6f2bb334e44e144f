"""A delete position outside its data file's rows (a buggy writer's) is a damaged table.

Before, live-row counting subtracted such positions, so a DELETE or UPDATE matching the rows
that remained by that count dropped the whole data file, rows that were never deleted too.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from unit_helpers import FILE_PATH_ID, POS_ID, SCHEMA, files_under, local, make_rows, scan_ids

import mor
from mor.commit.snapshot_producer import Changes
from mor.dml.runner import commit
from mor.format.content_file import DeleteFile
from mor.format.spec import FileContent, Operation
from mor.write.deletion_vectors import write_deletion_vectors


def _data_file(table: mor.Table):
    (task,) = table.scan().plan_files()
    return task.data_file


def _position_delete_file(table: mor.Table, positions: list[int], name: str = "bad-deletes.parquet") -> DeleteFile:
    """A v2 position delete file for the table's one data file, written by hand."""
    data_file = _data_file(table)
    location = f"{table.location}/data/{name}"
    schema = pa.schema([
        pa.field("file_path", pa.string(), nullable=False, metadata={"PARQUET:field_id": str(FILE_PATH_ID)}),
        pa.field("pos", pa.int64(), nullable=False, metadata={"PARQUET:field_id": str(POS_ID)}),
    ])  # fmt: skip
    pq.write_table(pa.table([[data_file.file_path] * len(positions), positions], schema=schema), local(location))
    return DeleteFile(
        content=FileContent.POSITION_DELETES, file_path=location, file_format="PARQUET", spec_id=0, partition=(),
        record_count=len(positions), file_size_in_bytes=Path(local(location)).stat().st_size,
        referenced_data_file=data_file.file_path,
    )  # fmt: skip


def _table_with_deletes(catalog: mor.Catalog, positions: list[int]) -> tuple[mor.Table, DeleteFile]:
    t = catalog.create_table("db.t", schema=SCHEMA)
    t.append(make_rows(range(20)))
    bad = _position_delete_file(t, positions)
    commit(t, Changes(Operation.DELETE, added_deletes=[bad]))
    return t, bad


# 18 positions past the end: counted, they left 2 "live" rows, so a DELETE of 2 rows dropped 20.
PAST_THE_END = list(range(20, 38))


@pytest.mark.parametrize("positions", [PAST_THE_END, [-1, 3]], ids=["past-the-end", "negative"])
def test_out_of_range_positions_fail_reads_naming_the_delete_file(catalog: mor.Catalog, positions: list[int]) -> None:
    t, bad = _table_with_deletes(catalog, positions)
    for read in (lambda: t.scan().to_arrow(), lambda: t.scan(columns=["id"]).count(), lambda: list(t.scan().to_batches())):
        with pytest.raises(mor.CorruptMetadataError, match="bad-deletes.parquet") as e:
            read()
        assert "position delete file" in str(e.value) and "which has 20 rows" in str(e.value)


@pytest.mark.parametrize(
    "dml",
    [
        pytest.param(lambda t: t.delete("id in (0, 1)"), id="delete"),
        pytest.param(lambda t: t.delete("id in (0, 1)", mode="copy-on-write"), id="delete-cow"),
        pytest.param(lambda t: t.update({"name": "'x'"}, where="id in (0, 1)"), id="update"),
        pytest.param(lambda t: t.upsert(make_rows([0, 1]), on=["id"]), id="upsert"),
        pytest.param(lambda t: t.merge(make_rows([0, 1]), on=["id"], when_matched_delete=True), id="merge"),
    ],
)
def test_out_of_range_positions_fail_dml_and_drop_no_rows(catalog: mor.Catalog, dml) -> None:
    t, bad = _table_with_deletes(catalog, PAST_THE_END)
    location, files = t.metadata_location, files_under(t.location)
    with pytest.raises(mor.CorruptMetadataError, match="bad-deletes.parquet"):
        dml(t)
    assert t.metadata_location == location
    assert files_under(t.location) == files


def test_a_deletion_vector_with_positions_past_the_end_is_corrupt(catalog: mor.Catalog) -> None:
    t = catalog.create_table("db.t", schema=SCHEMA, properties={"format-version": "3"})
    t.append(make_rows(range(20)))
    (dv,) = write_deletion_vectors(t.io, t.location, [(_data_file(t), np.arange(20, 38, dtype=np.int64))])
    commit(t, Changes(Operation.DELETE, added_deletes=[dv]))
    with pytest.raises(mor.CorruptMetadataError, match=r"deletion vector .*\.puffin deletes position 37"):
        t.scan().to_arrow()
    with pytest.raises(mor.CorruptMetadataError, match="deletion vector"):
        t.delete("id in (0, 1)")
    with pytest.raises(mor.CorruptMetadataError, match="deletion vector"):
        t.update({"name": "'x'"}, where="id in (0, 1)")


def test_positions_inside_the_file_still_delete(catalog: mor.Catalog) -> None:
    t, _ = _table_with_deletes(catalog, [0, 19])
    assert scan_ids(t) == list(range(1, 19))
    t.delete("id in (1, 2)")
    assert scan_ids(t) == list(range(3, 19))


@pytest.mark.parametrize(
    "maintenance",
    [
        pytest.param(lambda t: t.compact(min_input_files=1, min_delete_ratio=0.5), id="compact-by-ratio"),
        pytest.param(lambda t: t.compact(min_input_files=1), id="compact"),
        pytest.param(lambda t: t.rewrite_position_deletes(), id="rewrite-position-deletes"),
    ],
)
def test_maintenance_refuses_out_of_range_positions_and_changes_nothing(catalog: mor.Catalog, maintenance) -> None:
    """Compaction counts deleted positions to pick files (an out-of-range count would make a
    file look fully deleted) and rewrite_position_deletes copies them: both refuse."""
    t, bad = _table_with_deletes(catalog, PAST_THE_END + [3])
    good = _position_delete_file(t, [5], name="good-deletes.parquet")  # two files to merge
    commit(t, Changes(Operation.DELETE, added_deletes=[good]))
    location, files = t.metadata_location, files_under(t.location)
    with pytest.raises(mor.CorruptMetadataError, match="bad-deletes.parquet"):
        maintenance(t)
    assert catalog.load_table("db.t").metadata_location == location
    assert files_under(t.location) == files
