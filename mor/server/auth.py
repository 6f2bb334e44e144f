"""Who may use the server, and what each may do: bearer tokens from a token file, each with its
grant, and the OAuth2 token endpoint that lets OAuth2 clients (pyiceberg's `credential=`,
Iceberg Java's `credential`) obtain one.

The token file holds one entry a line (blank lines and `#` comments skipped): a credential,
then options, separated by whitespace:
- `TOKEN`: a bearer token clients send as `Authorization: Bearer TOKEN`; an OAuth2 client
  whose secret is TOKEN (any client id) is given TOKEN itself;
- `CLIENT_ID:SECRET`: an OAuth2 client. It is given a token derived from both (an HMAC of
  the id keyed by the secret), so the server keeps no state: a restart or a second server with
  the same file accepts it too. Such a token is valid while the line is in the file; the
  `expires_in` the endpoint answers only tells clients when to ask again.
- options: `read-only` (no write of any kind), `namespaces=NS[,NS...]` (only these namespaces
  and those below them). Without options a token may do everything. A namespace is written as
  a user writes it to mor: levels joined by "."; within a level "." is `%2E`, "," is `%2C`,
  "%" is `%25`, a space `%20` (percent-escapes, decoded once). Words from one starting with
  "#" on are a comment.
A token is what decides its grant, so a token may come from one line only: the same token,
client id or secret on two lines is refused, as is anything the file cannot mean (an unknown
option, an option twice, an empty namespace), naming the line and never its secret.

Tokens are compared with `hmac.compare_digest`, against every accepted token, so the time an
answer takes says nothing about how much of a guess was right. The token an OAuth2 client gets
(or exchanges) is looked up the same way, so it carries the grant of the line it came from.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import parse_qs, unquote

from mor.api.catalog_names import check_new_name
from mor.errors import ForbiddenError, InvalidArgumentError
from mor.server.names import escaped

ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
EXPIRES_IN_S = 3600
# What the token endpoint hands out when the server has no tokens (loopback only): any
# bearer token is accepted then, this one included.
UNAUTHENTICATED_TOKEN = "unauthenticated"
READ_ONLY, NAMESPACES = "read-only", "namespaces"
OPTIONS = f"{READ_ONLY}, {NAMESPACES}=NS[,NS...]"


class OAuthError(Exception):
    """An OAuth2 error answer (RFC 6749 5.2): `{"error": code, "error_description": message}`."""

    def __init__(self, status: int, code: str, message: str):
        super().__init__(message)
        self.status, self.code = status, code

    def body(self) -> dict[str, str]:
        return {"error": self.code, "error_description": str(self)}


@dataclass(frozen=True)
class Grant:
    """What a token may do: write or only read, in every namespace or only in some (each with
    the namespaces below it). Names are mor's spelling (names.py)."""

    read_only: bool = False
    namespaces: tuple[str, ...] | None = None  # None: every namespace

    def covers(self, namespace: str) -> bool:
        """Is `namespace` in scope: one of the token's, or below one?"""
        return self.namespaces is None or any(namespace == n or namespace.startswith(n + ".") for n in self.namespaces)

    def may_list(self, parent: str) -> bool:
        """May the token list the namespaces under `parent`: one in scope, or a level above
        one (so a token for `a.b` finds its way down from `a`)?"""
        return self.covers(parent) or any(n.startswith(parent + ".") for n in self.namespaces or ())

    def check_write(self, what: str) -> None:
        if self.read_only:
            raise ForbiddenError(f"{what} is refused: it writes, and this token is read-only")

    def check_namespaces(self, namespaces: Iterable[str], what: str) -> None:
        outside = sorted({n for n in namespaces if not self.covers(n)})
        if outside:
            raise ForbiddenError(f"{what} is refused: namespace {outside[0]} is outside this token's namespaces ({self._scope()})")

    def check_listing(self, parent: str) -> None:
        if not self.may_list(parent):
            raise ForbiddenError(
                f"listing the namespaces under {parent} is refused: it is outside this token's namespaces ({self._scope()}) "
                "and above none of them"
            )

    def _scope(self) -> str:
        return ", ".join(self.namespaces or ())


EVERYTHING = Grant()


@dataclass(frozen=True)
class Entry:
    """One line of the token file: the bearer token it accepts and what that token may do."""

    token: str = field(repr=False)  # secrets stay out of every message and log
    grant: Grant
    line: int = 0
    client: tuple[str, str] | None = field(default=None, repr=False)  # (client id, secret) of an OAuth2 client's line


@dataclass(frozen=True)
class Tokens:
    """The bearer tokens the server accepts, with their grants, and the OAuth2 clients it knows."""

    entries: tuple[Entry, ...]

    @classmethod
    def of(cls, token: str) -> Tokens:
        """One bearer token that may do everything."""
        return cls((Entry(token, EVERYTHING),))

    @classmethod
    def parse(cls, text: str, source: str = "the token file") -> Tokens:
        entries: list[Entry] = []
        for number, line in enumerate(text.splitlines(), start=1):
            words = line.split()
            comment = next((i for i, word in enumerate(words) if word.startswith("#")), len(words))
            if comment > 0:
                entries.append(_entry(words[:comment], number, f"{source} line {number}"))
        if not entries:
            raise InvalidArgumentError(f"{source} holds no token")
        _check_unique(entries, source)
        return cls(tuple(entries))

    @classmethod
    def from_file(cls, path: str | Path) -> Tokens:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise InvalidArgumentError(f"cannot read the token file {path}: {e}") from e
        return cls.parse(text, f"token file {path}")

    def grant(self, token: str) -> Grant | None:
        """The grant of an accepted token, None for any other."""
        given, found = token.encode(), None
        for entry in self.entries:  # no early exit: the same work for every guess
            if hmac.compare_digest(given, entry.token.encode()):
                found = entry.grant
        return found

    def grant_of_header(self, authorization: str | None) -> Grant | None:
        """The grant of the bearer token an `Authorization` header carries, None without one."""
        if not authorization:
            return None
        scheme, _, token = authorization.strip().partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return None
        return self.grant(token.strip())

    def token_for(self, client_id: str | None, secret: str) -> str | None:
        """The access token of a client's credentials, None when they are not accepted."""
        found = None
        for entry in self.entries:
            if entry.client is None:
                match = hmac.compare_digest(secret.encode(), entry.token.encode())
            else:
                known_id, known_secret = entry.client
                same_id = client_id is not None and hmac.compare_digest(client_id.encode(), known_id.encode())
                match = hmac.compare_digest(secret.encode(), known_secret.encode()) and same_id
            if match:
                found = entry.token
        return found


def _entry(words: list[str], number: int, where: str) -> Entry:
    credential, options = words[0], words[1:]
    read_only, namespaces, seen = False, None, set[str]()
    for option in options:
        name, equals, value = option.partition("=")
        if name in seen:
            raise InvalidArgumentError(f"{where}: option {name!r} is given twice")
        seen.add(name)
        if name == READ_ONLY:
            if equals:
                raise InvalidArgumentError(f"{where}: {READ_ONLY} takes no value")
            read_only = True
        elif name == NAMESPACES:
            if not equals:
                raise InvalidArgumentError(f"{where}: {NAMESPACES} needs a value, {NAMESPACES}=NS[,NS...]")
            namespaces = _scope(value, where)
        else:
            raise InvalidArgumentError(f"{where}: unknown option {name!r}; the options are {OPTIONS}")
    grant = Grant(read_only, namespaces)
    client_id, colon, secret = credential.partition(":")
    if not colon:
        return Entry(credential, grant, number)
    if not client_id or not secret:
        raise InvalidArgumentError(f"{where}: a client line is CLIENT_ID:SECRET, both non-empty")
    return Entry(client_token(client_id, secret), grant, number, (client_id, secret))


def _scope(value: str, where: str) -> tuple[str, ...]:
    """The namespaces of `namespaces=`, in mor's spelling (module docstring)."""
    scope = []
    for written in value.split(","):
        try:
            levels = [unquote(level, errors="strict") for level in written.split(".")]
            namespace = ".".join(escaped(level) for level in levels)
            check_new_name("namespace", namespace)
        except (UnicodeDecodeError, InvalidArgumentError) as e:
            raise InvalidArgumentError(f"{where}: {NAMESPACES}= holds {written!r}, not a namespace: {e}") from None
        scope.append(namespace)
    return tuple(dict.fromkeys(scope))


def _check_unique(entries: list[Entry], source: str) -> None:
    """One line per token: a token on two lines could be given two grants. A bearer token is
    also a client secret (for any client id), so no client's secret may be one either."""

    def refuse(one: int, other: int, what: str) -> NoReturn:
        first, second = sorted((one, other))
        raise InvalidArgumentError(f"{source}: lines {first} and {second} give the same {what}; a token comes from one line")

    tokens: dict[str, int] = {}
    ids: dict[str, int] = {}
    for entry in entries:
        if entry.token in tokens:
            refuse(tokens[entry.token], entry.line, "token")
        tokens[entry.token] = entry.line
        if entry.client is not None:
            if entry.client[0] in ids:
                refuse(ids[entry.client[0]], entry.line, "client id")
            ids[entry.client[0]] = entry.line
    bearer = {entry.token: entry.line for entry in entries if entry.client is None}
    for entry in entries:
        if entry.client is not None and entry.client[1] in bearer:
            refuse(bearer[entry.client[1]], entry.line, "secret (a bearer token is a client secret too)")


def client_token(client_id: str, secret: str) -> str:
    return hmac.new(secret.encode(), f"mor serve access token for {client_id}".encode(), hashlib.sha256).hexdigest()


def token_response(tokens: Tokens | None, body: bytes, authorization: str | None) -> dict[str, Any]:
    """The answer of `POST /v1/oauth/tokens` to a form-encoded request: the client credentials
    grant (credentials in the form or in a Basic Authorization header), or a token exchange
    whose subject token is already accepted (Iceberg Java refreshes tokens that way)."""
    try:
        form = {k: v[-1] for k, v in parse_qs(body.decode("utf-8"), keep_blank_values=True, strict_parsing=False).items()}
    except UnicodeDecodeError:
        raise OAuthError(400, "invalid_request", "the request body is not UTF-8 form data") from None
    grant = form.get("grant_type")
    if grant == "client_credentials":
        client_id, secret = _credentials(form, authorization)
        token = UNAUTHENTICATED_TOKEN if tokens is None else tokens.token_for(client_id, secret)
        if token is None:
            raise OAuthError(401, "invalid_client", "unknown client or wrong secret")
    elif grant == TOKEN_EXCHANGE:
        token = form.get("subject_token") or ""
        if tokens is not None and tokens.grant(token) is None:  # the token keeps its grant: it is the same token
            raise OAuthError(401, "invalid_grant", "the subject token is not accepted")
    else:
        raise OAuthError(400, "unsupported_grant_type", f"grant_type {grant!r} is not supported (client_credentials is)")
    return {"access_token": token, "token_type": "bearer", "expires_in": EXPIRES_IN_S, "issued_token_type": ACCESS_TOKEN_TYPE}


def _credentials(form: dict[str, str], authorization: str | None) -> tuple[str | None, str]:
    if authorization and authorization.strip().lower().startswith("basic "):
        try:
            decoded = base64.b64decode(authorization.strip()[6:], validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            raise OAuthError(400, "invalid_request", "the Basic Authorization header is malformed") from None
        client_id, _, basic_secret = decoded.partition(":")
        return client_id or None, basic_secret
    secret = form.get("client_secret")
    if not secret:
        raise OAuthError(400, "invalid_request", "client_secret is missing")
    return form.get("client_id") or None, secret
