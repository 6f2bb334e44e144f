"""Where a client may put a table or view (issue 52, item 3): strictly inside the warehouse as
the operating system walks the path (a link, then `..`), never on the catalog database's files
(`catalog.db` and SQLite's `-journal`, `-wal`, `-shm` beside it: a folder there stops SQLite for
every client), and only where a folder can be made (never at or through a file)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from mor.errors import ForbiddenError
from mor.io.fileio import to_uri
from mor.maintenance.ownership import DATABASE_SUFFIXES
from mor.server.errors import BadRequestError
from mor.server.locations import check_inside, server_files


@pytest.fixture
def warehouse(tmp_path: Path) -> Path:
    """A served warehouse: its SQLite catalog database at the usual name."""
    root = tmp_path / "warehouse"
    root.mkdir()
    sqlite3.connect(root / "catalog.db").close()
    return root


def spellings(path: Path) -> list[str]:
    return [str(path), f"file://{path}", f"file:{path}"]  # as given: to_uri would resolve links


@pytest.mark.parametrize("suffix", DATABASE_SUFFIXES)
def test_the_catalog_database_files_are_no_location(warehouse: Path, suffix: str) -> None:
    database = warehouse / f"catalog.db{suffix}"
    (warehouse / "sub").mkdir()
    (warehouse / "up").symlink_to(warehouse)
    forms = [
        *spellings(database),
        to_uri(warehouse) + f"//sub/../catalog.db{suffix}",  # `//` and `..`
        to_uri(warehouse) + f"/up/catalog.db{suffix}",  # through a link to the warehouse
        to_uri(warehouse) + f"/catalog%2Edb{suffix}",  # a reader that decodes escapes
        to_uri(warehouse) + f"/catalog.db{suffix}/t",  # inside: a path through the file
    ]
    for location in forms:
        with pytest.raises(ForbiddenError, match="catalog's own file"):
            check_inside(to_uri(warehouse), location, "table location")
        with pytest.raises(ForbiddenError, match="catalog's own file"):  # as a file (a registered metadata file) too
            check_inside(to_uri(warehouse), location, "metadata-location", folder=False)
    assert not (warehouse / "catalog.db-journal").exists()
    for name in ("catalog.dbx", "catalog.db.db/t", "catalog", "ns.db/catalog.db-journal"):  # names beside it stay free
        check_inside(to_uri(warehouse), f"{to_uri(warehouse)}/{name}", "table location")


def test_without_a_database_in_the_warehouse_nothing_is_protected(tmp_path: Path) -> None:
    """A catalog database elsewhere (PostgreSQL): the warehouse holds no server state by name
    (the catalog refuses its own database file wherever it is: Catalog.check_location)."""
    assert server_files(to_uri(tmp_path)) == [] and server_files("s3://bucket/wh") == []
    check_inside(to_uri(tmp_path), f"{to_uri(tmp_path)}/catalog.db/t", "table location")
    sqlite3.connect(tmp_path / "catalog.db").close()
    assert server_files(to_uri(tmp_path)) == [str(tmp_path / f"catalog.db{suffix}") for suffix in DATABASE_SUFFIXES]


def test_a_location_that_cannot_be_a_folder_is_a_bad_request(warehouse: Path) -> None:
    data = warehouse / "ns.db" / "t" / "data" / "part-0.parquet"
    data.parent.mkdir(parents=True)
    data.write_bytes(b"PAR1")
    (warehouse / "dangling").symlink_to(warehouse / "nowhere")
    for location in (data, data / "x", data / "x" / "y", warehouse / "dangling" / "t"):
        for spelled in spellings(location):
            with pytest.raises(BadRequestError, match="cannot be a folder"):
                check_inside(to_uri(warehouse), spelled, "table location")
    assert sorted(p.name for p in data.parent.iterdir()) == ["part-0.parquet"]
    check_inside(to_uri(warehouse), str(data), "metadata-location", folder=False)  # a file where a file is asked for
    check_inside(to_uri(warehouse), str(data.parent / "new" / "folder"), "table location")  # made when needed


def test_a_link_then_dotdot_is_where_the_system_goes(warehouse: Path, tmp_path: Path) -> None:
    """Finding: `file:///wh/link/../x`, with the link leading out of the warehouse, was judged
    by its spelling (`/wh/x`) but made where the system walks it (beside the link's target)."""
    outside = tmp_path / "outside" / "sub"
    outside.mkdir(parents=True)
    (warehouse / "out").symlink_to(outside)
    with pytest.raises(ForbiddenError, match="not inside the warehouse"):
        check_inside(to_uri(warehouse), f"{to_uri(warehouse)}/out/../escaped", "table location")
    (warehouse / "in").mkdir()
    (warehouse / "in" / "deep").mkdir()
    (warehouse / "down").symlink_to(warehouse / "in" / "deep")
    check_inside(to_uri(warehouse), f"{to_uri(warehouse)}/down/../t", "table location")  # /wh/in/t: inside
    with pytest.raises(ForbiddenError, match="catalog's own file"):  # a link to the warehouse's child, then ..
        check_inside(to_uri(warehouse), f"{to_uri(warehouse)}/in/../in/deep/../../catalog.db-wal", "table location")
