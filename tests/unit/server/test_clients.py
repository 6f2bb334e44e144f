"""The client recipes `mor serve` prints (mor/server/clients.py), the README's copy of them, and
the warehouse names a client may give (mor/server/locations.py). Running the recipes against a
server: tests/server/test_client_recipes.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from mor.server.clients import TOKEN_PLACEHOLDER, client_configuration, client_recipes
from mor.server.errors import BadRequestError
from mor.server.locations import check_warehouse, warehouse_names

README = Path(__file__).resolve().parents[3] / "README.md"


def test_the_readme_shows_what_serve_prints() -> None:
    assert client_configuration("http://127.0.0.1:8181", "warehouse", secured=False) in README.read_text()


def test_a_secured_server_shows_where_each_token_goes_and_no_token() -> None:
    recipes = client_recipes("http://h:1", "wh", secured=True)
    assert all(TOKEN_PLACEHOLDER in text for text in recipes.values() if "Iceberg" not in text or "spark" in text), recipes
    assert "AUTHORIZATION_TYPE 'none'" not in recipes["duckdb"]
    assert not any(TOKEN_PLACEHOLDER in text for text in client_recipes("http://h:1", "wh", secured=False).values())


def test_a_warehouse_goes_by_its_location_or_last_name() -> None:
    assert warehouse_names("file:///data/lake/warehouse", None) == ["file:///data/lake/warehouse", "warehouse", "/data/lake/warehouse"]
    assert warehouse_names("s3://bucket/lake/", "prod") == ["s3://bucket/lake", "lake", "prod"]
    for asked in ("warehouse", "/data/lake/warehouse", "/data/lake/warehouse/", "file:///data/lake/warehouse"):
        check_warehouse(asked, "file:///data/lake/warehouse", None)
    for asked in ("wharehouse", "/data/lake", "s3://bucket/warehouse", "lake"):
        with pytest.raises(BadRequestError, match=f"does not serve warehouse '{asked}'"):
            check_warehouse(asked, "file:///data/lake/warehouse", None)
