"""`load_catalog` chooses a catalog type from its registry: the `type` property when given, else
`rest` for an http(s) URI, else `sql`; an unknown type is refused by name."""

from __future__ import annotations

import pytest

from mor.api.catalog_types import CATALOG_TYPES, catalog_type
from mor.errors import InvalidArgumentError


def test_the_type_property_else_the_uri_picks_the_catalog() -> None:
    assert catalog_type(None, None) == "sql"
    assert catalog_type("sqlite:///c.db", {}) == "sql"
    assert catalog_type("HTTPS://host/catalog", None) == "rest"
    assert catalog_type("postgresql://h/db", {"type": "rest"}) == "rest"
    assert set(CATALOG_TYPES) == {"sql", "rest"}


def test_an_unknown_type_is_refused_by_name() -> None:
    with pytest.raises(InvalidArgumentError, match="'hive' is not supported"):
        catalog_type(None, {"type": "hive"})
