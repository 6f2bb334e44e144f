"""The server's pure pieces: protocol names to mor's spelling and back (dots and percents in
levels and table names), and listings in pages (property-based: every item once, in order,
whatever the page size)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

pytest.importorskip("starlette", reason="the server needs the mor[server] extra")

from mor.server.errors import BadRequestError
from mor.server.names import escaped, namespace_from_levels, namespace_levels, unescaped
from mor.server.routes import paged

LEVEL = st.text(st.sampled_from("ab.%2E5_ "), min_size=1, max_size=8).filter(lambda s: s.strip())


@given(st.lists(LEVEL, min_size=1, max_size=4))
def test_levels_round_trip_and_never_merge(levels: list[str]) -> None:
    namespace = namespace_from_levels(levels)
    assert namespace_levels(namespace) == levels
    assert len(namespace.split(".")) == len(levels)  # a dot inside a level is never a level boundary


@given(st.text(st.sampled_from("x.%2E5"), max_size=10))
def test_names_round_trip(name: str) -> None:
    assert unescaped(escaped(name)) == name
    assert "." not in escaped(name)


def test_spellings() -> None:
    assert namespace_from_levels(["a.b", "c"]) == "a%2Eb.c"
    assert escaped("50%") == "50%25" and unescaped("50%") == "50%"  # a stray '%' of another writer stays


@given(st.lists(st.text("abc", min_size=1, max_size=3), unique=True, max_size=30), st.integers(1, 7))
def test_pages_give_every_item_once_in_order(names: list[str], size: int) -> None:
    listing = {"identifiers": [{"namespace": ["ns"], "name": n} for n in names]}
    seen: list[str] = []
    token = ""
    for _ in range(len(names) + 2):
        page = paged(listing, "identifiers", {"pageSize": str(size), "pageToken": token})
        seen += [i["name"] for i in page["identifiers"]]
        assert len(page["identifiers"]) <= size
        token = page.get("next-page-token", "")
        if not token:
            break
    assert seen == sorted(names)


def test_no_paging_unless_asked_and_bad_parameters_refused() -> None:
    listing = {"namespaces": [["b"], ["a"]]}
    assert paged(listing, "namespaces", {}) == listing
    assert paged(listing, "namespaces", {"pageToken": ""})["namespaces"] == [["a"], ["b"]]
    for query in ({"pageSize": "0"}, {"pageSize": "x"}, {"pageToken": "garbage!"}):
        with pytest.raises(BadRequestError):
            paged(listing, "namespaces", query)
