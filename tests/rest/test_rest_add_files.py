"""Adopting Parquet files through a REST catalog: `add_files` commits as any append does, and
`create_table_from_files` (the server creates tables itself) drops the table it created when
adding the files fails."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from servers.inprocess_rest import RestServer, serving_in_process

from mor.errors import InvalidArgumentError


@pytest.fixture
def rest_server(tmp_path: Path) -> Iterator[RestServer]:
    (tmp_path / "warehouse").mkdir()  # load_catalog no longer makes a missing warehouse folder
    with serving_in_process(tmp_path / "warehouse") as server:
        yield server


def write(path: Path, ids: list[int], cat: str | list[str] = "a") -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    cats = cat if isinstance(cat, list) else [cat] * len(ids)
    pq.write_table(pa.table({"id": pa.array(ids, pa.int64()), "cat": cats}), path)
    return str(path)


def test_create_table_from_files_and_add_files_through_rest(rest_server: RestServer, tmp_path: Path) -> None:
    client = rest_server.client()
    table = client.create_table_from_files("db.t", write(tmp_path / "a.parquet", [1, 2]), partition_by=["cat"])
    table.add_files(write(tmp_path / "b.parquet", [3], "b"))
    assert sorted(table.scan().to_arrow()["id"].to_pylist()) == [1, 2, 3]
    assert sorted(rest_server.catalog.load_table("db.t").scan().to_arrow()["id"].to_pylist()) == [1, 2, 3]


def test_a_refused_create_from_files_leaves_no_table(rest_server: RestServer, tmp_path: Path) -> None:
    client = rest_server.client()
    mixed = write(tmp_path / "m.parquet", [1, 2], ["a", "b"])
    with pytest.raises(InvalidArgumentError, match="more than one partition"):
        client.create_table_from_files("db.t", mixed, partition_by=["cat"])
    assert not client.table_exists("db.t")
