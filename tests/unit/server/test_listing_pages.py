"""Listings in pages cut by the catalog's database (issue 53 item 4): each page is one query for
the names after the previous page's last (and one more, to know whether more follow), never a
listing of everything sorted and sliced. Every item once, in order, whatever the page size;
namespace pages fold the walk of distinct namespaces into levels, also for scoped tokens.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

pytest.importorskip("starlette", reason="the server needs the mor[server] extra")

import pyarrow as pa

import mor
from mor.api.catalog_types import sqlite_url
from mor.catalog.sql import SqlCatalogStore
from mor.errors import NoSuchNamespaceError
from mor.io.fileio import to_uri
from mor.server.auth import EVERYTHING, Grant
from mor.server.errors import BadRequestError
from mor.server.namespaces import children_page
from mor.server.pages import page_request
from mor.server.routes import Call, Service

SCHEMA = pa.schema([pa.field("id", pa.int64())])


@pytest.fixture
def service(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Service:
    """A server's handlers over a catalog whose store refuses to list everything."""
    store = SqlCatalogStore(sqlite_url(tmp_path / "catalog.db"))
    service = Service(mor.SqlCatalog(store, to_uri(tmp_path)))

    def everything(*args: Any) -> Any:
        raise AssertionError("a page listed everything")

    for method in ("list_tables", "list_views", "list_namespaces", "table_rows"):
        monkeypatch.setattr(store, method, everything)
    return service


def walk(handler: Any, key: str, size: int, params: dict[str, str] | None = None, grant: Grant = EVERYTHING, **query: str) -> list[Any]:
    """Every page of a listing: the items, in the order given; each page at most `size`."""
    items: list[Any] = []
    token = ""
    for _ in range(1000):
        status, page = handler(Call(params or {}, {**query, "pageSize": str(size), "pageToken": token}, {}, grant))
        assert status == 200 and len(page[key]) <= size
        items += page[key]
        token = page.get("next-page-token", "")
        if not token:
            return items
    raise AssertionError("the pages never end")


def test_table_pages_come_from_the_database(service: Service, monkeypatch: pytest.MonkeyPatch) -> None:
    catalog = service.catalog
    names = [f"t{i:02d}" for i in range(50)]
    for name in names:
        catalog.create_table(f"db.{name}", SCHEMA)
    catalog.create_table("other.t", SCHEMA)
    asked: list[tuple[str | None, int | None, int]] = []
    table_names = catalog.store.table_names

    def spy(namespace: str, after: str | None = None, limit: int | None = None, views: bool = False) -> list[str]:
        found = table_names(namespace, after, limit, views)
        asked.append((after, limit, len(found)))
        return found

    monkeypatch.setattr(catalog.store, "table_names", spy)
    listed = walk(service.list_tables, "identifiers", 7, {"namespace": "db"})
    assert [t["name"] for t in listed] == names  # all, once, in order
    assert all(t["namespace"] == ["db"] for t in listed)
    assert all(limit == 8 and found <= 8 for _, limit, found in asked) and len(asked) == 8  # 7 a page, and one to look ahead


def test_view_pages(service: Service) -> None:
    catalog = service.catalog
    catalog.create_table("db.t", SCHEMA)
    names = sorted(f"v{i}" for i in range(11))
    for name in names:
        catalog.create_view(f"db.{name}", "SELECT 1 AS x", pa.schema([pa.field("x", pa.int32())]))
    listed = walk(service.list_views, "identifiers", 3, {"namespace": "db"})
    assert [v["name"] for v in listed] == names


def test_a_page_of_an_empty_or_unknown_namespace(service: Service) -> None:
    service.catalog.create_namespace("empty")
    service.catalog.create_table("above.below.t", SCHEMA)
    assert walk(service.list_tables, "identifiers", 5, {"namespace": "empty"}) == []
    assert walk(service.list_tables, "identifiers", 5, {"namespace": "above"}) == []  # a level above a namespace
    with pytest.raises(NoSuchNamespaceError):
        walk(service.list_tables, "identifiers", 5, {"namespace": "nope"})


# "m" exists only as a level of "m.x", and comes after "m-1" and "m-2" in the walk ("-" < ".").
NAMESPACES = ["a", "a-b", "a.x", "a.x.y", "a%2Ez", "a-b.c", "b", "b.a", "b.a-", "b.a.c", "c-", "c.d", "m-1", "m-2", "m.x", "zz"]


def test_namespace_pages_fold_levels(service: Service) -> None:
    for namespace in NAMESPACES:
        service.catalog.create_namespace(namespace)
    service.catalog.create_table("q.r.t", SCHEMA)  # a namespace known by its table alone
    expected_top = sorted({n.split(".")[0] for n in [*NAMESPACES, "q.r"]})
    for size in (1, 2, 3, 100):
        top = walk(service.list_namespaces, "namespaces", size)
        assert top == [[level.replace("%2E", ".")] for level in expected_top]
        under_b = walk(service.list_namespaces, "namespaces", size, parent="b")
        assert under_b == [["b", "a"], ["b", "a-"]]
    with pytest.raises(NoSuchNamespaceError):
        walk(service.list_namespaces, "namespaces", 2, parent="nope")


def test_a_scoped_token_pages_through_what_it_may_see(service: Service) -> None:
    for namespace in NAMESPACES:
        service.catalog.create_namespace(namespace)
    grant = Grant(namespaces=("a.x", "b"))
    for size in (1, 2, 5):
        assert walk(service.list_namespaces, "namespaces", size, grant=grant) == [["a"], ["b"]]
        assert walk(service.list_namespaces, "namespaces", size, grant=grant, parent="a") == [["a", "x"]]
        assert walk(service.list_namespaces, "namespaces", size, grant=grant, parent="b") == [["b", "a"], ["b", "a-"]]


def test_bad_page_parameters_are_refused() -> None:
    assert page_request({}) is None
    assert page_request({"pageToken": ""}) is not None  # an empty token asks for the first page
    for query in ({"pageSize": "0"}, {"pageSize": "-1"}, {"pageSize": "x"}, {"pageToken": "garbage!"}, {"pageToken": "W10="}):
        with pytest.raises(BadRequestError):
            page_request(query)


NAMES = st.text(st.sampled_from("ab-."), min_size=1, max_size=4).filter(lambda s: not s.startswith(".") and ".." not in s)


@given(st.sets(NAMES, max_size=16), st.integers(1, 4), st.sampled_from(["", "a."]), st.sets(st.sampled_from("ab-"), max_size=2))
@example({"a-", "a-a", "a.b"}, 1, "", set())  # "a" (from "a.b") comes third in the walk, first in the page
@settings(max_examples=400)
def test_children_pages_are_the_levels_in_order(names: set[str], size: int, prefix: str, hidden: set[str]) -> None:
    """Against a brute-force reading: the visible namespaces under `prefix`, their next level,
    sorted; paging through them gives each once, in order."""
    names = {n.rstrip(".") for n in names if n.rstrip(".")}
    walked = sorted(n for n in names if n.startswith(prefix) and len(n) > len(prefix))

    def visible(name: str) -> bool:
        return not any(c in name for c in hidden)

    expected = sorted({n[len(prefix) :].split(".")[0] for n in walked if visible(n)})
    seen: list[str] = []
    after: str | None = None
    for _ in range(len(expected) + 2):
        start = [n for n in walked if after is None or n > prefix + after]
        page, more = children_page(iter(start), prefix, after, size, visible)
        assert len(page) <= size
        seen += page
        if not more:
            break
        after = page[-1]
    assert seen == expected
    assert children_page(iter(walked), prefix, None, None, visible) == (expected, False)
