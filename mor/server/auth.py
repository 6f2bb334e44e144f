"""Who may use the server: bearer tokens from a token file, and the OAuth2 token endpoint that
lets OAuth2 clients (pyiceberg's `credential=`, Iceberg Java's `credential`) obtain one.

The token file holds one entry a line (blank lines and `#` comments skipped):
- `TOKEN`: a bearer token clients send as `Authorization: Bearer TOKEN`; an OAuth2 client
  whose secret is TOKEN (any client id) is given TOKEN itself;
- `CLIENT_ID:SECRET`: an OAuth2 client. It is given a token derived from both (an HMAC of
  the id keyed by the secret), so the server keeps no state: a restart or a second server with
  the same file accepts it too. Such a token is valid while the line is in the file; the
  `expires_in` the endpoint answers only tells clients when to ask again.

Tokens are compared with `hmac.compare_digest`, against every accepted token, so the time an
answer takes says nothing about how much of a guess was right.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

from mor.errors import InvalidArgumentError

ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
EXPIRES_IN_S = 3600
# What the token endpoint hands out when the server has no tokens (loopback only): any
# bearer token is accepted then, this one included.
UNAUTHENTICATED_TOKEN = "unauthenticated"


class OAuthError(Exception):
    """An OAuth2 error answer (RFC 6749 5.2): `{"error": code, "error_description": message}`."""

    def __init__(self, status: int, code: str, message: str):
        super().__init__(message)
        self.status, self.code = status, code

    def body(self) -> dict[str, str]:
        return {"error": self.code, "error_description": str(self)}


@dataclass(frozen=True)
class Tokens:
    """The bearer tokens the server accepts and the OAuth2 clients it knows."""

    bearer: tuple[str, ...]
    clients: tuple[tuple[str, str], ...] = ()  # (client id, secret)

    @classmethod
    def parse(cls, text: str, source: str = "the token file") -> Tokens:
        bearer: list[str] = []
        clients: list[tuple[str, str]] = []
        for line in text.splitlines():
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            client_id, colon, secret = line.partition(":")
            if not colon:
                bearer.append(line)
            elif client_id and secret:
                clients.append((client_id, secret))
            else:
                raise InvalidArgumentError(f"{source}: a client line is CLIENT_ID:SECRET, both non-empty")
        if not bearer and not clients:
            raise InvalidArgumentError(f"{source} holds no token")
        return cls(tuple(bearer), tuple(clients))

    @classmethod
    def from_file(cls, path: str | Path) -> Tokens:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise InvalidArgumentError(f"cannot read the token file {path}: {e}") from e
        return cls.parse(text, f"token file {path}")

    def accepted(self) -> list[str]:
        return [*self.bearer, *(client_token(client_id, secret) for client_id, secret in self.clients)]

    def allows(self, token: str) -> bool:
        given = token.encode()
        found = False
        for candidate in self.accepted():  # no early exit: the same work for every guess
            found |= hmac.compare_digest(given, candidate.encode())
        return found

    def allows_header(self, authorization: str | None) -> bool:
        """Does an `Authorization` header carry an accepted bearer token?"""
        if not authorization:
            return False
        scheme, _, token = authorization.strip().partition(" ")
        return scheme.lower() == "bearer" and bool(token.strip()) and self.allows(token.strip())

    def token_for(self, client_id: str | None, secret: str) -> str | None:
        """The access token of a client's credentials, None when they are not accepted."""
        found = None
        for bearer in self.bearer:
            if hmac.compare_digest(secret.encode(), bearer.encode()):
                found = bearer
        for known_id, known_secret in self.clients:
            if client_id is not None and hmac.compare_digest(client_id.encode(), known_id.encode()):
                if hmac.compare_digest(secret.encode(), known_secret.encode()):
                    found = client_token(known_id, known_secret)
        return found


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
        if tokens is not None and not tokens.allows(token):
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
