"""A commit refuses to build on a manifest it would carry that is missing or truncated: the new
snapshot would reference it, and no reader could read that snapshot. The table stays as it was."""

from __future__ import annotations

import os

import pytest
from unit_helpers import make_rows

import mor
from mor.format.manifest_list import read_manifest_list
from mor.io.fileio import to_local_path


def first_manifest(table: mor.Table) -> str:
    return to_local_path(read_manifest_list(table.io, table.current_snapshot().manifest_list)[0].manifest_path)


@pytest.mark.parametrize("damage", ["missing", "truncated"])
def test_an_append_on_a_damaged_manifest_is_refused_and_changes_nothing(make_table, damage: str) -> None:
    table = make_table(range(10), range(10, 20))
    before = table.metadata_location
    path = first_manifest(table)
    if damage == "missing":
        os.unlink(path)
    else:
        with open(path, "r+b") as f:
            f.truncate(os.path.getsize(path) // 2)
    expected = "is missing" if damage == "missing" else "the manifest list says"
    with pytest.raises(mor.CorruptMetadataError, match=f"{os.path.basename(path)} .*{expected}"):
        table.append(make_rows(range(20, 30)))
    table.refresh()
    assert table.metadata_location == before


def test_every_carried_manifest_is_checked(make_table) -> None:
    table = make_table(*(range(i, i + 5) for i in range(0, 40, 5)))  # eight manifests
    manifests = read_manifest_list(table.io, table.current_snapshot().manifest_list)
    assert len(manifests) == 8
    before = table.metadata_location
    os.unlink(to_local_path(manifests[-1].manifest_path))
    with pytest.raises(mor.CorruptMetadataError, match="is missing: refusing to commit"):
        table.append(make_rows(range(40, 45)))
    table.refresh()
    assert table.metadata_location == before
