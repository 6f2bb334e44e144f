"""Connecting to a catalog database server (PostgreSQL): the pool, the timeouts, and what a
driver's error means (the server unavailable, or refusing a statement), for the SQL catalog's
store (mor/catalog/sql.py)."""

from __future__ import annotations

from typing import Any

from sqlalchemy.engine import URL
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError, SQLAlchemyError
from sqlalchemy.exc import TimeoutError as PoolTimeoutError

from mor.errors import InvalidArgumentError

# Server defaults. Each can be given to SqlCatalogStore, or in the URL's query
# (`?connect_timeout=5&statement_timeout=10000`); connect_timeout is libpq's, in seconds.
DEFAULT_CONNECT_TIMEOUT_S = 10
DEFAULT_STATEMENT_TIMEOUT_MS = 30_000
DEFAULT_POOL_SIZE = 5
DEFAULT_MAX_OVERFLOW = 10
DEFAULT_POOL_RECYCLE_S = 1800


def postgres_engine_options(
    url: URL,
    engine_kwargs: dict[str, Any],
    connect_timeout: float | None,
    statement_timeout: int | None,
    pool_size: int | None,
    max_overflow: int | None,
) -> tuple[URL, dict[str, Any]]:
    """A server's pool and timeouts; query parameters of the URL win over the defaults."""
    if url.drivername == "postgresql":  # SQLAlchemy's default driver is psycopg2; ours is psycopg 3
        url = url.set(drivername="postgresql+psycopg")
    query: dict[str, Any] = dict(url.query)  # a value is a tuple of strings when the key repeats

    def take(key: str, given: Any, default: Any, kind: type) -> Any:
        raw = query.pop(key, None)
        value = given if raw is None else raw
        value = default if value is None else value
        try:
            number = kind(float(value)) if kind is int else kind(value)
        except (TypeError, ValueError):
            raise InvalidArgumentError(f"catalog {key} is a number, got {value!r}") from None
        if number < 0:
            raise InvalidArgumentError(f"catalog {key} is >= 0, got {value!r}")
        return number

    connect_s = take("connect_timeout", connect_timeout, DEFAULT_CONNECT_TIMEOUT_S, float)
    statement_ms = take("statement_timeout", statement_timeout, DEFAULT_STATEMENT_TIMEOUT_MS, int)
    pool = take("pool_size", pool_size, DEFAULT_POOL_SIZE, int)
    overflow = take("max_overflow", max_overflow, DEFAULT_MAX_OVERFLOW, int)
    options = " ".join(filter(None, [query.pop("options", ""), f"-c statement_timeout={statement_ms}"]))
    connect_args = {
        # libpq counts whole seconds, at least 2
        "connect_timeout": max(2, int(round(connect_s))) if connect_s else 0,
        "options": options,
        "application_name": query.pop("application_name", "mor"),
        # notice a peer that vanished without closing the connection
        "keepalives": 1,
        "keepalives_idle": 30,
        "keepalives_interval": 10,
        "keepalives_count": 3,
        **engine_kwargs.pop("connect_args", {}),
    }
    options_out: dict[str, Any] = {
        "pool_pre_ping": True,
        "pool_size": pool,
        "max_overflow": overflow,
        "pool_timeout": max(connect_s, 1.0) * 3,
        "pool_recycle": DEFAULT_POOL_RECYCLE_S,
        "connect_args": connect_args,
        **engine_kwargs,
    }
    return url.set(query=query), options_out


def describe(url: URL) -> str:
    """host:port/database (no user, no password); the file for SQLite."""
    if url.get_backend_name() == "sqlite":
        return url.database or ":memory:"
    port = url.port or {"postgresql": 5432, "mysql": 3306}.get(url.get_backend_name()) or ""
    return f"{url.host or 'localhost'}:{port}/{url.database or ''}"


def reason(e: SQLAlchemyError) -> str:
    """The driver's message, first line, without SQLAlchemy's statement dump."""
    orig = getattr(e, "orig", None)
    text = str(orig if orig is not None else e).strip() or type(orig or e).__name__
    return text.splitlines()[0]


def is_unavailable(e: SQLAlchemyError) -> bool:
    """A connection problem or a timeout (rather than the server rejecting the statement)."""
    if isinstance(e, (OperationalError, InterfaceError, PoolTimeoutError)):
        return True
    return isinstance(e, DBAPIError) and bool(e.connection_invalidated)
