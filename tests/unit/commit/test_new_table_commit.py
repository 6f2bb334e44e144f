"""The commit that creates its table (a Spark write's, create_table_from_files'): the outcome of
adding the catalog row decides whether its metadata file stays (Catalog.new_table_operations)."""

from __future__ import annotations

from pathlib import Path

import pytest
from unit_helpers import SCHEMA

import mor
from mor.format.updates import TableCommit


def metadata_files(table_location: Path) -> set[str]:
    return {p.name for p in (table_location / "metadata").glob("*.metadata.json")}


@pytest.mark.parametrize(("failure", "kept"), [(mor.CatalogUnavailableError, False), (mor.CommitStateUnknownError, True)])
def test_the_metadata_file_stays_only_when_the_row_may_have_been_added(
    catalog: mor.Catalog, monkeypatch: pytest.MonkeyPatch, failure: type[Exception], kept: bool
) -> None:
    template = catalog.create_table("db.template", schema=SCHEMA)  # metadata for the new table
    location = Path(template.location.removeprefix("file://"))
    before = metadata_files(location)

    def refuse(namespace: str, name: str, metadata_location: str) -> None:
        raise failure(f"adding {namespace}.{name}: the catalog database is gone")

    monkeypatch.setattr(catalog.store, "create_table_row", refuse)
    with pytest.raises(failure):
        catalog.new_table_operations("db.new").commit(template.metadata, "", TableCommit())
    written = metadata_files(location) - before
    assert len(written) == (1 if kept else 0)
