from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from unit_helpers import SCHEMA, make_rows

import mor
from mor.io.fileio import FileIO, to_uri


@pytest.fixture
def warehouse(tmp_path: Path) -> Path:
    path = tmp_path / "warehouse"
    path.mkdir()
    return path


@pytest.fixture(scope="session")
def empty_catalog_database(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A catalog.db as load_catalog makes it for an empty folder, made once per process."""
    folder = tmp_path_factory.mktemp("empty-catalog")
    mor.load_catalog(folder).store.dispose()  # type: ignore[attr-defined]
    return folder / "catalog.db"


@pytest.fixture
def catalog(warehouse: Path, empty_catalog_database: Path) -> mor.Catalog:
    # A copy of a new catalog's database, opened by load_catalog: making its tables, indexes
    # and triggers again cost 8 ms of CPU a test, the copy and open 0.6 ms (tests/unit/catalog
    # makes its own databases from nothing).
    shutil.copyfile(empty_catalog_database, warehouse / "catalog.db")
    return mor.load_catalog(warehouse)


@pytest.fixture
def make_table(catalog: mor.Catalog) -> Callable[..., mor.Table]:
    """A table `db.<name>` with the helpers' schema and the given appends (lists of ids)."""

    def make(*appends: range | list[int], name: str = "t", **create_args: object) -> mor.Table:
        table = catalog.create_table(f"db.{name}", schema=SCHEMA, **create_args)  # type: ignore[arg-type]
        for ids in appends:
            table.append(make_rows(ids))
        return table

    return make


@pytest.fixture
def io() -> FileIO:
    return FileIO()


@pytest.fixture
def metadata_dir(tmp_path: Path) -> str:
    return to_uri(tmp_path) + "/metadata"
