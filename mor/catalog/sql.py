"""SQL catalog: table name -> current metadata location, swapped atomically.

The tables and columns are those of pyiceberg's `SqlCatalog` (and Iceberg Java's JDBC catalog),
so `SqlCatalog("default", uri=..., warehouse=...)` opens our tables unchanged. A commit is one
compare-and-swap UPDATE on `metadata_location`.

SQLite (a file) is the embedded default; a database server (PostgreSQL:
`postgresql+psycopg://user@host:port/db`) gets a connection pool that checks connections before
use, a connect timeout and a statement timeout. A server that cannot be used raises
`CatalogUnavailableError` naming host:port/db, never a driver error. A commit (`swap`) that fails
before its COMMIT was sent certainly did not happen (`CatalogUnavailableError`); one whose COMMIT
was sent but not acknowledged may have (`CommitStateUnknownError`).

Beside pyiceberg's two tables the store keeps each table's location (mor/catalog/locations.py),
recorded in the transaction of the write that sets it when the writer says what it is (a
`LocatedMetadata` pointer) and the catalog said how to spell locations (`location_forms`);
listings come a page at a time (mor/catalog/listings.py).
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable, Iterator
from typing import Any, TypeVar, cast

from sqlalchemy import (
    Column,
    MetaData,
    String,
    Table,
    and_,
    create_engine,
    delete,
    insert,
    select,
    update,
)
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import IntegrityError, SQLAlchemyError

from mor.catalog import listings
from mor.catalog.located import LocatedMetadata
from mor.catalog.locations import Key, LocationForms, LocationIndex, indexable
from mor.catalog.sql_connections import describe, is_unavailable, postgres_engine_options, reason
from mor.catalog.store import TableSwap, no_such_table
from mor.errors import (
    CatalogUnavailableError,
    CommitConflictError,
    CommitStateUnknownError,
    InvalidArgumentError,
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NoSuchNamespaceError,
    NoSuchViewError,
    StorageError,
    TableAlreadyExistsError,
    ViewAlreadyExistsError,
)

_META = MetaData()
TABLES = Table(
    "iceberg_tables",
    _META,
    Column("catalog_name", String(255), primary_key=True, nullable=False),
    Column("table_namespace", String(255), primary_key=True, nullable=False),
    Column("table_name", String(255), primary_key=True, nullable=False),
    Column("metadata_location", String(1000), nullable=True),
    Column("previous_metadata_location", String(1000), nullable=True),
    Column("iceberg_type", String(5), nullable=True),
)
NAMESPACE_PROPERTIES = Table(
    "iceberg_namespace_properties",
    _META,
    Column("catalog_name", String(255), primary_key=True, nullable=False),
    Column("namespace", String(255), primary_key=True, nullable=False),
    Column("property_key", String(255), primary_key=True, nullable=False),
    Column("property_value", String(1000), nullable=False),
)
_TABLE_TYPE = "TABLE"
_VIEW_TYPE = "VIEW"


class _LostRace(Exception):
    """Internal to swap_many: a table no longer points where expected; undo the transaction."""


_F = TypeVar("_F", bound=Callable[..., Any])
_T = TypeVar("_T")


def _guarded(what: str) -> Callable[[_F], _F]:
    """Driver errors of a server catalog become CatalogUnavailableError / StorageError."""

    def decorate(method: _F) -> _F:
        @functools.wraps(method)
        def wrapper(self: SqlCatalogStore, *args: Any, **kwargs: Any) -> Any:
            try:
                return method(self, *args, **kwargs)
            except SQLAlchemyError as e:
                error = self._error(what, e)
                if error is e:
                    raise
                raise error from None  # the driver's message is in ours; no driver traceback

        return cast(_F, wrapper)  # functools.wraps keeps the signature

    return decorate


class SqlCatalogStore:
    """Rows of one catalog (`catalog_name`) in a SQL database.

    For a server (PostgreSQL): `connect_timeout` (seconds, default 10), `statement_timeout`
    (milliseconds, default 30,000; 0 turns it off), `pool_size` (default 5) and `max_overflow`
    (default 10); the URL's query parameters of the same names win over the defaults. SQLite
    ignores them."""

    # The spellings storage reads a table location as (the SQL catalog sets them: they are
    # mor/maintenance/ownership.py's); without them writes leave locations to the next check.
    location_forms: LocationForms | None = None

    def __init__(
        self,
        uri: str | URL,
        catalog_name: str = "default",
        *,
        connect_timeout: float | None = None,
        statement_timeout: int | None = None,
        pool_size: int | None = None,
        max_overflow: int | None = None,
        **engine_kwargs: Any,
    ) -> None:
        self.catalog_name = catalog_name
        url = make_url(uri)  # ArgumentError for a malformed URL
        self.is_server = url.get_backend_name() != "sqlite"
        if url.get_backend_name() == "postgresql":
            url, engine_kwargs = postgres_engine_options(url, engine_kwargs, connect_timeout, statement_timeout, pool_size, max_overflow)
        self.server = describe(url)
        # An engine in autocommit mode commits with the UPDATE itself: its failure is then unknown.
        self._autocommit = "AUTOCOMMIT" in (
            engine_kwargs.get("isolation_level"),
            dict(engine_kwargs.get("execution_options") or {}).get("isolation_level"),
        )
        try:
            self.engine = create_engine(url, **engine_kwargs)
        except ImportError as e:
            raise InvalidArgumentError(f"catalog uri {self.server}: its driver is not installed ({e})") from e
        # Close the pooled connections when the store is garbage collected (a server counts them).
        weakref.finalize(self, self.engine.dispose)
        try:
            _META.create_all(self.engine)
        except SQLAlchemyError as e:
            if not self.is_server:
                raise  # load_catalog maps SQLite's errors (a locked or unreadable file)
            self.engine.dispose()
            raise self._error("open the catalog", e) from None
        self.locations = LocationIndex.open(self.engine, TABLES, self._error)
        self._collation = self._byte_collation()

    def _byte_collation(self) -> str | None:
        """The collation listings compare names in, and its indexes (mor/catalog/listings.py)."""
        if not self.is_server:
            return None  # SQLite compares bytes
        try:
            with self.engine.connect() as conn:
                collation = listings.byte_collation(conn)
        except SQLAlchemyError as e:
            self.engine.dispose()
            raise self._error("open the catalog", e) from None
        listings.prepare(self.engine, collation)
        return collation

    def _error(self, what: str, e: SQLAlchemyError) -> Exception:
        """The mor error for a driver error `e` raised while doing `what`."""
        if not self.is_server:
            return e  # SQLite: as before
        why = reason(e)
        if is_unavailable(e):
            return CatalogUnavailableError(f"{what}: the catalog database {self.server} is unavailable: {why}")
        return StorageError(f"{what}: the catalog database {self.server} refused it: {why}")

    def dispose(self) -> None:
        """Close the pooled connections."""
        self.engine.dispose()

    @property
    def database_file(self) -> str | None:
        """The SQLite file holding the catalog; None for a server or an in-memory database."""
        url = self.engine.url
        in_file = url.get_backend_name() == "sqlite" and url.database not in (None, "", ":memory:")
        return url.database if in_file else None

    # -- namespaces ----------------------------------------------------------------------
    @_guarded("create a namespace")
    def create_namespace(self, namespace: str, properties: dict[str, str] | None = None) -> None:
        if self.namespace_exists(namespace):
            raise NamespaceAlreadyExistsError(f"namespace {namespace!r} already exists")
        self._add_namespace(namespace, properties)

    @_guarded("create a namespace")
    def create_namespace_if_absent(self, namespace: str) -> None:
        """Make sure the namespace exists. Another process creating it at the same moment is
        fine: its insert wins, ours fails on the unique key, and the namespace is there."""
        if self.namespace_exists(namespace):
            return
        try:
            self._add_namespace(namespace)
        except NamespaceAlreadyExistsError:
            if not self.namespace_exists(namespace):  # not a concurrent creation: say so
                raise

    def _add_namespace(self, namespace: str, properties: dict[str, str] | None = None) -> None:
        """The namespace's property rows; NamespaceAlreadyExistsError when its `exists` row is
        there already (the unique key: created concurrently)."""
        props = {"exists": "true", **(properties or {})}
        rows = [dict(catalog_name=self.catalog_name, namespace=namespace, property_key=k, property_value=v) for k, v in props.items()]
        try:
            with self.engine.begin() as conn:
                conn.execute(insert(NAMESPACE_PROPERTIES), rows)
        except IntegrityError as e:  # created concurrently
            raise NamespaceAlreadyExistsError(f"namespace {namespace!r} already exists") from e

    @_guarded("look up a namespace")
    def namespace_exists(self, namespace: str) -> bool:
        with self.engine.connect() as conn:
            props = conn.execute(
                select(NAMESPACE_PROPERTIES.c.namespace)
                .where(
                    NAMESPACE_PROPERTIES.c.catalog_name == self.catalog_name,
                    NAMESPACE_PROPERTIES.c.namespace == namespace,
                )
                .limit(1)
            ).first()
            tables = conn.execute(select(TABLES.c.table_name).where(self._ns(namespace)).limit(1)).first()
        return props is not None or tables is not None

    @_guarded("list namespaces")
    def list_namespaces(self) -> list[str]:
        with self.engine.connect() as conn:
            a = conn.execute(
                select(NAMESPACE_PROPERTIES.c.namespace).where(NAMESPACE_PROPERTIES.c.catalog_name == self.catalog_name)
            ).scalars()
            names = set(a)
            names |= set(conn.execute(select(TABLES.c.table_namespace).where(TABLES.c.catalog_name == self.catalog_name)).scalars())
        return sorted(names)

    @_guarded("drop a namespace")
    def drop_namespace(self, namespace: str) -> None:
        if not self.namespace_exists(namespace):
            raise NoSuchNamespaceError(f"namespace {namespace!r} does not exist")
        if self.list_tables(namespace) or self.list_views(namespace):
            raise NamespaceNotEmptyError(f"namespace {namespace!r} still has tables or views")
        with self.engine.begin() as conn:
            conn.execute(
                delete(NAMESPACE_PROPERTIES).where(
                    NAMESPACE_PROPERTIES.c.catalog_name == self.catalog_name, NAMESPACE_PROPERTIES.c.namespace == namespace
                )
            )

    @_guarded("load namespace properties")
    def namespace_properties(self, namespace: str) -> dict[str, str]:
        """The namespace's stored properties (pyiceberg's `exists` marker included);
        NoSuchNamespaceError when the namespace does not exist."""
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(NAMESPACE_PROPERTIES.c.property_key, NAMESPACE_PROPERTIES.c.property_value).where(
                    NAMESPACE_PROPERTIES.c.catalog_name == self.catalog_name, NAMESPACE_PROPERTIES.c.namespace == namespace
                )
            ).all()
        if not rows and not self.namespace_exists(namespace):
            raise NoSuchNamespaceError(f"namespace {namespace!r} does not exist")
        return {str(k): str(v) for k, v in rows}

    @_guarded("update namespace properties")
    def update_namespace_properties(self, namespace: str, updates: dict[str, str], removals: list[str]) -> tuple[list[str], list[str]]:
        """Set `updates` and remove `removals`, in one transaction; (removed, missing): the
        removals that were there and those that were not. A namespace known only by its tables
        gets the `exists` marker row too, as create_namespace writes it."""
        if not self.namespace_exists(namespace):
            raise NoSuchNamespaceError(f"namespace {namespace!r} does not exist")
        mine = and_(NAMESPACE_PROPERTIES.c.catalog_name == self.catalog_name, NAMESPACE_PROPERTIES.c.namespace == namespace)
        try:
            with self.engine.begin() as conn:
                present = set(conn.execute(select(NAMESPACE_PROPERTIES.c.property_key).where(mine)).scalars())
                removed = [k for k in removals if k in present]
                if removed:
                    conn.execute(delete(NAMESPACE_PROPERTIES).where(mine, NAMESPACE_PROPERTIES.c.property_key.in_(removed)))
                for key, value in {**({} if present else {"exists": "true"}), **updates}.items():
                    if key in present:
                        conn.execute(
                            update(NAMESPACE_PROPERTIES)
                            .where(mine, NAMESPACE_PROPERTIES.c.property_key == key)
                            .values(property_value=value)
                        )
                    else:
                        conn.execute(
                            insert(NAMESPACE_PROPERTIES).values(
                                catalog_name=self.catalog_name, namespace=namespace, property_key=key, property_value=value
                            )
                        )
        except IntegrityError as e:  # another writer added one of the keys meanwhile
            raise CommitConflictError(f"the properties of namespace {namespace!r} changed meanwhile; try again") from e
        return removed, [k for k in removals if k not in present]

    # -- tables --------------------------------------------------------------------------
    @_guarded("list tables")
    def list_tables(self, namespace: str) -> list[str]:
        with self.engine.connect() as conn:
            rows = conn.execute(select(TABLES.c.table_name).where(self._ns(namespace), self._is_table())).scalars()
            return sorted(rows)

    @_guarded("list every table")
    def table_rows(self) -> list[tuple[str, str, str, str]]:
        """(catalog name, namespace, table, metadata location) of every table in the database,
        of every catalog name: what maintenance must not delete from under another table."""
        columns = (TABLES.c.catalog_name, TABLES.c.table_namespace, TABLES.c.table_name, TABLES.c.metadata_location)
        with self.engine.connect() as conn:
            rows = conn.execute(select(*columns).where(self._is_table(), TABLES.c.metadata_location.is_not(None)))
            return sorted((str(c), str(ns), str(t), str(loc)) for c, ns, t, loc in rows)

    @_guarded("look up a table")
    def metadata_location(self, namespace: str, name: str) -> str:
        with self.engine.connect() as conn:
            location = conn.execute(
                select(TABLES.c.metadata_location).where(self._row(namespace, name), self._is_table())
            ).scalar_one_or_none()
        if location is None:
            raise no_such_table(namespace, name)
        return str(location)

    def create_table_row(self, namespace: str, name: str, metadata_location: str) -> None:
        """Add the table. CatalogUnavailableError: it certainly was not added;
        CommitStateUnknownError: it may have been (the caller must not remove its file)."""
        statement = self._new_row(namespace, name, metadata_location, _TABLE_TYPE)
        located = self._located(metadata_location)

        def write(conn: Any) -> None:
            conn.execute(statement)
            self._record(conn, (namespace, name), metadata_location, located)

        try:
            self._write_once(f"creation of {namespace}.{name}", write)
        except IntegrityError as e:
            raise TableAlreadyExistsError(f"table {namespace}.{name} already exists") from e

    def swap(self, namespace: str, name: str, expected: str, new: str) -> bool:
        """Point the table at `new` if it still points at `expected`. False: someone else won.

        CatalogUnavailableError: the commit certainly did not happen (no connection, or the
        UPDATE failed inside its transaction, which the server then rolls back). A failure once
        COMMIT was sent is CommitStateUnknownError: the caller must not clean up."""
        statement = (
            update(TABLES)
            .where(self._row(namespace, name), TABLES.c.metadata_location == expected)
            .values(metadata_location=str(new), previous_metadata_location=expected)
        )
        located = self._located(new)

        def write(conn: Any) -> bool:
            if conn.execute(statement).rowcount != 1:
                return False
            self._record(conn, (namespace, name), new, located)
            return True

        return self._write_once(f"commit of {namespace}.{name} to {new}", write)

    def swap_many(self, changes: list[TableSwap]) -> bool:
        """Several tables' pointers moved in ONE transaction, all or none: each from its
        `expected` location to its `new` one (`expected` None: the table is created). False,
        and nothing changed, when any of them no longer points where expected (or a created
        one exists by now). Failures as `swap`: CatalogUnavailableError certainly did not
        happen, CommitStateUnknownError may have. One table moving is a plain `swap`."""
        if len(changes) == 1 and (expected := changes[0].expected) is not None and changes[0].new != expected:
            return self.swap(changes[0].namespace, changes[0].name, expected, changes[0].new)

        located = [self._located(change.new) for change in changes]

        def write(conn: Any) -> bool:
            for change, where in zip(changes, located):
                if change.expected is None:
                    conn.execute(self._new_row(change.namespace, change.name, change.new, _TABLE_TYPE))
                    self._record(conn, (change.namespace, change.name), change.new, where)
                    continue
                # new == expected: the table only has to still point there (its row is locked
                # until the end of the transaction); its previous location stays as it is.
                moved = {} if change.new == change.expected else {"previous_metadata_location": change.expected}
                statement = (
                    update(TABLES)
                    .where(self._row(change.namespace, change.name), TABLES.c.metadata_location == change.expected)
                    .values(metadata_location=str(change.new), **moved)
                )
                if conn.execute(statement).rowcount != 1:
                    raise _LostRace()  # leaves the transaction uncommitted: rolled back on close
                if moved:
                    self._record(conn, (change.namespace, change.name), change.new, where)
                elif self.locations is not None:
                    self.locations.settle(conn, self._key(change.namespace, change.name))  # its update queued it again
            return True

        names = ", ".join(f"{c.namespace}.{c.name}" for c in changes)
        try:
            return self._write_once(f"commit of {names}", write)
        except (_LostRace, IntegrityError):
            return False

    def rename_table_row(self, namespace: str, name: str, new_namespace: str, new_name: str) -> None:
        """Move the table's row to another name (the files stay where they are).
        NoSuchTableError, TableAlreadyExistsError for a taken name; CommitStateUnknownError:
        it may have been renamed."""
        statement = (
            update(TABLES).where(self._row(namespace, name), self._is_table()).values(table_namespace=new_namespace, table_name=new_name)
        )
        what = f"rename of {namespace}.{name} to {new_namespace}.{new_name}"

        def write(conn: Any) -> int:
            count = int(conn.execute(statement).rowcount)
            if count and self.locations is not None:
                self.locations.move(conn, self._key(namespace, name), self._key(new_namespace, new_name))
            return count

        try:
            renamed = self._write_once(what, write)
        except IntegrityError as e:
            raise TableAlreadyExistsError(f"table {new_namespace}.{new_name} already exists") from e
        if renamed == 0:
            raise no_such_table(namespace, name)

    def _write_once(self, what: str, write: Callable[[Any], _T]) -> _T:
        """`write(connection)` in one transaction, telling apart the failures after which it
        certainly did not happen (CatalogUnavailableError) from those after which it may have
        (COMMIT sent, not acknowledged: CommitStateUnknownError). IntegrityError passes."""
        try:
            conn = self.engine.connect()
        except SQLAlchemyError as e:  # never reached the statement
            raise self._unsent(what, e) from None
        try:
            transaction = conn.begin()
            try:
                result = write(conn)
            except IntegrityError:
                raise
            except SQLAlchemyError as e:
                if self._autocommit:  # the statement was its own commit
                    raise CommitStateUnknownError(f"{what}: {reason(e)}") from e
                raise self._unsent(what, e) from None  # inside a transaction never committed
            try:
                transaction.commit()
            except SQLAlchemyError as e:
                # COMMIT was sent: the server may have applied it. The caller must not clean up.
                raise CommitStateUnknownError(
                    f"{what}: the catalog database {self.server} did not acknowledge the COMMIT: {reason(e)}"
                ) from e
        finally:
            try:
                conn.close()
            except SQLAlchemyError:
                pass
        return result

    def _unsent(self, what: str, e: SQLAlchemyError) -> Exception:
        error = self._error(what, e)
        if isinstance(error, SQLAlchemyError):  # SQLite
            return CatalogUnavailableError(f"{what}: the catalog database {self.server} is unavailable: {reason(e)}")
        return error

    def drop_table_row(self, namespace: str, name: str) -> None:
        """Remove the table. CommitStateUnknownError: it may have been removed."""
        statement = delete(TABLES).where(self._row(namespace, name), self._is_table())

        def write(conn: Any) -> int:
            count = int(conn.execute(statement).rowcount)
            if count and self.locations is not None:
                self.locations.forget(conn, self._key(namespace, name))
            return count

        if self._write_once(f"drop of {namespace}.{name}", write) == 0:
            raise no_such_table(namespace, name)

    # -- table locations (mor/catalog/locations.py) ----------------------------------------------
    def _key(self, namespace: str, name: str) -> Key:
        return (self.catalog_name, namespace, name)

    def _located(self, metadata_location: str) -> tuple[str, list[str]] | None:
        """(table location, its forms) of a pointer that says where its table is (a
        `LocatedMetadata`, mor/catalog/located.py); worked out before the transaction, which then
        only writes. None: nothing to record, the write leaves the table pending."""
        if self.locations is None or self.location_forms is None or not isinstance(metadata_location, LocatedMetadata):
            return None
        forms = self.location_forms(metadata_location.table_location)
        return (metadata_location.table_location, forms) if indexable(metadata_location.table_location, forms) else None

    def _record(self, conn: Any, name: tuple[str, str], metadata_location: str, located: tuple[str, list[str]] | None) -> None:
        if self.locations is not None and located is not None:
            self.locations.record(conn, self._key(*name), str(metadata_location), *located)

    # -- pages (mor/catalog/listings.py) -------------------------------------------------------
    @_guarded("list tables")
    def table_names(self, namespace: str, after: str | None = None, limit: int | None = None, views: bool = False) -> list[str]:
        """The names of the namespace's tables (`views`: its views) after `after`, in byte order,
        at most `limit` of them: a page."""
        kind = (TABLES.c.iceberg_type == _VIEW_TYPE) if views else self._is_table()
        name: Any = TABLES.c.table_name
        space: Any = TABLES.c.table_namespace
        if self._collation is not None:
            name, space = name.collate(self._collation), space.collate(self._collation)
        query = select(TABLES.c.table_name).where(TABLES.c.catalog_name == self.catalog_name, space == namespace, kind)
        if after is not None:
            query = query.where(name > after)
        with self.engine.connect() as conn:
            return [str(n) for n in conn.execute(query.order_by(name).limit(limit)).scalars()]

    def namespace_names(self, lo: str = "", inclusive: bool = True, hi: str | None = None) -> Iterator[str]:
        """The catalog's namespaces from `lo` up to `hi` (excluded), in byte order, read as
        they are consumed: what a page of namespaces needs, not every table's row."""
        try:
            yield from listings.walk_namespaces(self.engine, self.catalog_name, lo, inclusive, hi, self._collation)
        except SQLAlchemyError as e:
            error = self._error("list namespaces", e)
            if error is e:
                raise
            raise error from None

    # -- views: rows of the same table, `iceberg_type` VIEW (as Iceberg Java's JDBC catalog) ------
    @_guarded("list views")
    def list_views(self, namespace: str) -> list[str]:
        with self.engine.connect() as conn:
            rows = conn.execute(select(TABLES.c.table_name).where(self._ns(namespace), TABLES.c.iceberg_type == _VIEW_TYPE)).scalars()
            return sorted(rows)

    @_guarded("look up a view")
    def view_metadata_location(self, namespace: str, name: str) -> str:
        with self.engine.connect() as conn:
            location = conn.execute(
                select(TABLES.c.metadata_location).where(self._row(namespace, name), TABLES.c.iceberg_type == _VIEW_TYPE)
            ).scalar_one_or_none()
        if location is None:
            raise NoSuchViewError(f"view {namespace}.{name} does not exist")
        return str(location)

    def create_view_row(self, namespace: str, name: str, metadata_location: str) -> None:
        """Add the view; ViewAlreadyExistsError when a view or a table has the name. Failures as
        `create_table_row`'s."""
        statement = self._new_row(namespace, name, metadata_location, _VIEW_TYPE)
        try:
            self._write_once(f"creation of view {namespace}.{name}", lambda conn: conn.execute(statement))
        except IntegrityError as e:
            raise ViewAlreadyExistsError(f"a view or table named {namespace}.{name} already exists") from e

    def rename_view_row(self, namespace: str, name: str, new_namespace: str, new_name: str) -> None:
        statement = (
            update(TABLES)
            .where(self._row(namespace, name), TABLES.c.iceberg_type == _VIEW_TYPE)
            .values(table_namespace=new_namespace, table_name=new_name)
        )
        what = f"rename of view {namespace}.{name} to {new_namespace}.{new_name}"
        try:
            renamed = self._write_once(what, lambda conn: conn.execute(statement).rowcount)
        except IntegrityError as e:
            raise ViewAlreadyExistsError(f"a view or table named {new_namespace}.{new_name} already exists") from e
        if renamed == 0:
            raise NoSuchViewError(f"view {namespace}.{name} does not exist")

    def drop_view_row(self, namespace: str, name: str) -> None:
        statement = delete(TABLES).where(self._row(namespace, name), TABLES.c.iceberg_type == _VIEW_TYPE)
        if self._write_once(f"drop of view {namespace}.{name}", lambda conn: conn.execute(statement).rowcount) == 0:
            raise NoSuchViewError(f"view {namespace}.{name} does not exist")

    def _new_row(self, namespace: str, name: str, metadata_location: str, iceberg_type: str) -> Any:
        """The INSERT of a new table's or view's row."""
        return insert(TABLES).values(
            catalog_name=self.catalog_name,
            table_namespace=namespace,
            table_name=name,
            metadata_location=str(metadata_location),
            previous_metadata_location=None,
            iceberg_type=iceberg_type,
        )

    def _ns(self, namespace: str) -> Any:
        return and_(TABLES.c.catalog_name == self.catalog_name, TABLES.c.table_namespace == namespace)

    def _row(self, namespace: str, name: str) -> Any:
        return and_(self._ns(namespace), TABLES.c.table_name == name)

    @staticmethod
    def _is_table() -> Any:
        return (TABLES.c.iceberg_type == _TABLE_TYPE) | TABLES.c.iceberg_type.is_(None)
