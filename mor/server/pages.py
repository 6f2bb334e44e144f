"""Listings in pages: what a client asks for (`pageSize`, `pageToken`) and the token of the
next page.

A token names the last item given (its levels and name, in mor's spelling: names.py), base64 of
a JSON list of strings, opaque to clients. The next page is the items after it in the catalog's
order (the bytes of mor's spelling, the order the store pages in: mor/catalog/listings.py), so
items created or dropped between pages shift nothing: each item present throughout is listed
exactly once. The store is asked for one page at a time, never for every item.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Any

from mor.server.errors import BadRequestError

DEFAULT_PAGE_SIZE = 1000  # a listing's page when the client asks for pages (`pageToken`) without a size


@dataclass(frozen=True)
class PageRequest:
    size: int
    after: list[str] | None  # the key of the previous page's last item; None: the first page

    @property
    def after_name(self) -> str | None:
        """The last level of that key: what the next page starts after, within one listing."""
        return self.after[-1] if self.after else None

    def answer(self, listing: dict[str, Any], last: list[str] | None) -> dict[str, Any]:
        """`listing` with the token of the page after it, when there is one (`last`: the key of
        this page's last item, None when no more follow)."""
        return listing if last is None else {**listing, "next-page-token": token_of(last)}


def page_request(query: dict[str, str]) -> PageRequest | None:
    """What the client asks for: a page (`pageSize`, or `pageToken`, which is empty on the first
    request), or everything (None). BadRequestError for a size or token this server cannot mean."""
    if "pageSize" not in query and "pageToken" not in query:
        return None
    size_text = query.get("pageSize") or str(DEFAULT_PAGE_SIZE)
    if not size_text.isdigit() or int(size_text) < 1:
        raise BadRequestError(f"pageSize is a positive integer, got {size_text!r}")
    token = query.get("pageToken") or None
    return PageRequest(int(size_text), None if token is None else token_key(token))


def token_of(key: list[str]) -> str:
    return base64.urlsafe_b64encode(json.dumps(key).encode()).decode()


def token_key(token: str) -> list[str]:
    try:
        key = json.loads(base64.urlsafe_b64decode(token.encode()))
    except ValueError:
        raise BadRequestError(f"pageToken {token!r} is not one this server gave") from None
    if not isinstance(key, list) or not all(isinstance(k, str) for k in key) or not key:
        raise BadRequestError(f"pageToken {token!r} is not one this server gave")
    return key
