"""Where each table's files are, remembered in the catalog's database: whether a new or moved
table would share another table's folder is then a few indexed lookups, not a read of every
table's metadata file (issue 53).

Two tables of mor's own beside pyiceberg's, whose columns and rows stay as they are, so that
pyiceberg's SqlCatalog and Iceberg Java's JDBC catalog read and write the database unchanged
(`iceberg_tables` only gets a trigger, which writes to mor's tables):

- `mor_table_locations`: per table (keyed as in `iceberg_tables`) and per `form` (a spelling
  storage reads its location as: `storage_forms` in mor/maintenance/ownership.py, given to the
  store as `location_forms`), the `location` written in metadata file `metadata_location`.
  Metadata files never change, so a row stays true; it is believed only while the table still
  points at that file. A table moved, renamed or dropped by another writer leaves rows that no
  longer match its pointer, and they are ignored.
- `mor_table_locations_pending`: tables whose location is not recorded yet, with the metadata
  location they pointed at. A trigger on `iceberg_tables` adds every table row any writer
  inserts or updates (pyiceberg, Iceberg Java, an older mor). mor's own writes record the
  location in the same transaction and take their row off; the rest are read by the next check
  and recorded then. Where the database refuses triggers, the tables to read are found by
  comparing every pointer with the recorded rows (correct, but a scan).

A pending row is taken off only for the metadata location it names: a writer that moved the
table meanwhile has set another one, so its change is never lost.

The forms are worked out when a location is recorded; a symbolic link made or changed later
along a table's location is seen once its pointer moves (the check used to resolve links as it
ran). A location too long for the columns is not recorded: that table stays pending, read by
every check, as every table was before.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Column, Index, MetaData, String, Table, and_, delete, insert, select, text, update
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import SQLAlchemyError

log = logging.getLogger("mor.catalog")

LocationForms = Callable[[str], list[str]]  # a table location -> the spellings storage reads it as
Key = tuple[str, str, str]  # (catalog_name, table_namespace, table_name), as in iceberg_tables

# What the columns hold (VARCHAR(1000)); a PostgreSQL index entry holds about 2,700 bytes.
MAX_CHARACTERS, MAX_FORM_BYTES = 1000, 2000
# Forms are compared by their bytes (a folder's contents follow it, "/" then more), whatever the
# database's collation.
_FORM = String(1000).with_variant(String(1000, collation="C"), "postgresql")

_META = MetaData()
LOCATIONS = Table(
    "mor_table_locations",
    _META,
    Column("catalog_name", String(255), nullable=False),
    Column("table_namespace", String(255), nullable=False),
    Column("table_name", String(255), nullable=False),
    Column("form", _FORM, nullable=False),
    Column("metadata_location", String(1000), nullable=False),
    Column("location", String(1000), nullable=False),
    Index("mor_table_locations_key", "catalog_name", "table_namespace", "table_name"),
    Index("mor_table_locations_form", "form"),
)
PENDING = Table(
    "mor_table_locations_pending",
    _META,
    Column("catalog_name", String(255), primary_key=True, nullable=False),
    Column("table_namespace", String(255), primary_key=True, nullable=False),
    Column("table_name", String(255), primary_key=True, nullable=False),
    Column("metadata_location", String(1000), nullable=False),
)

_IS_TABLE = "(NEW.iceberg_type IS NULL OR NEW.iceberg_type = 'TABLE')"
_NEW_ROW = "(NEW.catalog_name, NEW.table_namespace, NEW.table_name, COALESCE(NEW.metadata_location, ''))"
_PENDING_COLUMNS = "mor_table_locations_pending (catalog_name, table_namespace, table_name, metadata_location)"
_SQLITE_TRIGGERS = [
    f"CREATE TRIGGER IF NOT EXISTS mor_table_locations_{event.lower()} AFTER {event} ON iceberg_tables WHEN {_IS_TABLE} "
    f"BEGIN INSERT OR REPLACE INTO {_PENDING_COLUMNS} VALUES {_NEW_ROW}; END"
    for event in ("INSERT", "UPDATE")
]
_POSTGRES_FUNCTION = f"""
CREATE OR REPLACE FUNCTION mor_table_locations_watch() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO {_PENDING_COLUMNS} VALUES {_NEW_ROW}
    ON CONFLICT (catalog_name, table_namespace, table_name) DO UPDATE SET metadata_location = EXCLUDED.metadata_location;
    RETURN NULL;
END $$"""
_POSTGRES_TRIGGER = (
    "CREATE TRIGGER mor_table_locations_watch AFTER INSERT OR UPDATE ON iceberg_tables "
    f"FOR EACH ROW WHEN {_IS_TABLE} EXECUTE FUNCTION mor_table_locations_watch()"
)
_TRIGGER_NAMES = {"sqlite": "mor_table_locations_update", "postgresql": "mor_table_locations_watch"}


@dataclass(frozen=True)
class Unindexed:
    """A table whose location is not recorded for the metadata file it points at."""

    catalog_name: str
    namespace: str
    name: str
    metadata_location: str  # where the table points now
    pending: str | None  # the metadata location its pending row names (None: found by a scan)

    @property
    def key(self) -> Key:
        return (self.catalog_name, self.namespace, self.name)


@dataclass(frozen=True)
class Located:
    """A table whose recorded location is current: found near a location being checked."""

    catalog_name: str
    namespace: str
    name: str
    metadata_location: str
    location: str


def indexable(location: str, forms: list[str]) -> bool:
    """Can the columns hold the location and its forms? (A write must never fail on them.)"""
    fits = len(location) <= MAX_CHARACTERS and all(len(f) <= MAX_CHARACTERS and len(f.encode("utf-8")) <= MAX_FORM_BYTES for f in forms)
    return bool(forms) and fits


class LocationIndex:
    """The recorded locations of one database's tables (every catalog name in it: what may share
    a folder is any table of the database). The write side runs in the caller's transaction
    (`conn`); the check side (`unindexed`, `heal`, `near`) opens its own."""

    def __init__(self, engine: Engine, iceberg_tables: Table, watching: bool, on_error: Callable[[str, SQLAlchemyError], Exception]):
        self.engine = engine
        self.tables = iceberg_tables
        self.watching = watching  # do triggers queue other writers' changes? Otherwise a scan finds them
        self._on_error = on_error  # the store's: a server's errors as mor's

    @classmethod
    def open(cls, engine: Engine, iceberg_tables: Table, on_error: Callable[[str, SQLAlchemyError], Exception]) -> LocationIndex | None:
        """The index of the database, its tables and triggers made when missing; None when the
        database cannot hold them (read only): the check then reads every table's metadata."""
        try:
            _META.create_all(engine)
        except SQLAlchemyError as e:
            log.info("no table location index in %s (%s): checks read every table's metadata", engine.url, e)
            return None
        return cls(engine, iceberg_tables, _watch(engine, iceberg_tables), on_error)

    # -- what mor's own writes do, in their transaction ----------------------------------------
    def record(self, conn: Connection, key: Key, metadata_location: str, location: str, forms: list[str]) -> None:
        """The table `key` now points at `metadata_location`, whose table location is `location`
        (the pending row the write's trigger queued is then taken off: it is held by this
        transaction already, so this order waits on nothing `heal` holds)."""
        _write_rows(conn, key, metadata_location, location, forms)
        conn.execute(delete(PENDING).where(_key(PENDING, key), PENDING.c.metadata_location == metadata_location))

    def move(self, conn: Connection, old: Key, new: Key) -> None:
        """A rename: the recorded rows follow the table."""
        conn.execute(update(LOCATIONS).where(_key(LOCATIONS, old)).values(catalog_name=new[0], table_namespace=new[1], table_name=new[2]))
        self.settle(conn, new)

    def settle(self, conn: Connection, key: Key) -> None:
        """Take off the pending row a write of `key` that kept its pointer queued (a rename, a
        table a transaction leaves as it is), when the rows recorded are for that pointer."""
        recorded = select(LOCATIONS.c.metadata_location).where(_key(LOCATIONS, key))
        conn.execute(delete(PENDING).where(_key(PENDING, key), PENDING.c.metadata_location.in_(recorded)))

    def forget(self, conn: Connection, key: Key) -> None:
        # The pending row first: the order `heal` takes them in, so neither waits on the other.
        conn.execute(delete(PENDING).where(_key(PENDING, key)))
        conn.execute(delete(LOCATIONS).where(_key(LOCATIONS, key)))

    # -- what a check does ---------------------------------------------------------------------
    def unindexed(self) -> list[Unindexed]:
        """The tables whose location must be read (and given to `heal`) before `near` can be
        trusted. Pending rows of tables gone since (dropped, renamed, now a view) are taken off."""
        t = self.tables
        with self._errors("list the tables whose location is not recorded"), self.engine.begin() as conn:
            if not self.watching:
                columns = (t.c.catalog_name, t.c.table_namespace, t.c.table_name, t.c.metadata_location)
                rows = conn.execute(select(*columns).where(_is_table(t), t.c.metadata_location.is_not(None), ~_recorded(t))).all()
                return [Unindexed(str(c), str(ns), str(n), str(m), None) for c, ns, n, m in rows]
            joined = PENDING.outerjoin(t, and_(_same_key(t, PENDING), _is_table(t)))
            columns = (PENDING.c.catalog_name, PENDING.c.table_namespace, PENDING.c.table_name, PENDING.c.metadata_location)
            out = []
            for c, ns, n, pending, current in conn.execute(select(*columns, t.c.metadata_location).select_from(joined)).all():
                if current is not None:
                    out.append(Unindexed(str(c), str(ns), str(n), str(current), str(pending)))
                else:
                    conn.execute(delete(PENDING).where(_key(PENDING, (c, ns, n)), PENDING.c.metadata_location == pending))
            return out

    def heal(self, read: list[tuple[Unindexed, str, list[str]]]) -> list[Unindexed]:
        """Record what a check read of tables' metadata: (table, its location, spelled as these
        forms), all in one transaction. Each pending row is taken off first (as `forget` does),
        and only while it still names the file that was read: a writer that moved the table
        meanwhile queued it again. The tables not recorded (a form too long to index), which
        the check must compare itself: they stay pending."""
        recorded = [(table, location, forms) for table, location, forms in read if indexable(location, forms)]
        if recorded:
            with self._errors("record table locations"), self.engine.begin() as conn:
                for table, location, forms in recorded:
                    if table.pending is not None:
                        conn.execute(delete(PENDING).where(_key(PENDING, table.key), PENDING.c.metadata_location == table.pending))
                    _write_rows(conn, table.key, table.metadata_location, location, forms)
        return [table for table, location, forms in read if not indexable(location, forms)]

    def near(self, exact: list[str], below: list[str]) -> Iterator[Located]:
        """Tables whose recorded location is current and has a form in `exact` (a folder and the
        folders above it) or beginning with one of `below` (a folder and "/": what is inside)."""
        t = self.tables
        current = LOCATIONS.join(t, and_(_same_key(t, LOCATIONS), t.c.metadata_location == LOCATIONS.c.metadata_location, _is_table(t)))
        c = LOCATIONS.c
        columns = (c.catalog_name, c.table_namespace, c.table_name, c.metadata_location, c.location)
        # One indexed query each, run as consumed: the caller stops at the first table that shares.
        conditions: list[Any] = [c.form.in_(sorted(set(exact)))]
        conditions += [and_(c.form >= b, c.form < b[:-1] + chr(ord("/") + 1)) for b in below]
        seen: set[Key] = set()
        with self._errors("look up table locations"), self.engine.connect() as conn:
            for condition in conditions:
                for catalog, ns, n, m, location in conn.execute(select(*columns).select_from(current).where(condition)).all():
                    if (catalog, ns, n) not in seen:
                        seen.add((catalog, ns, n))
                        yield Located(str(catalog), str(ns), str(n), str(m), str(location))

    @contextmanager
    def _errors(self, what: str) -> Iterator[None]:
        try:
            yield
        except SQLAlchemyError as e:
            error = self._on_error(what, e)
            if error is e:
                raise
            raise error from None


def _write_rows(conn: Connection, key: Key, metadata_location: str, location: str, forms: list[str]) -> None:
    conn.execute(delete(LOCATIONS).where(_key(LOCATIONS, key)))
    names = dict(zip(("catalog_name", "table_namespace", "table_name"), key))
    conn.execute(insert(LOCATIONS), [{**names, "form": f, "metadata_location": metadata_location, "location": location} for f in forms])


def _watch(engine: Engine, iceberg_tables: Table) -> bool:
    """Make sure the triggers that queue other writers' changes exist; queue the tables already
    there when they are new. False when the database refuses them (or has none we know)."""
    dialect = engine.dialect.name
    name = _TRIGGER_NAMES.get(dialect)
    if name is None:
        return False
    try:
        if _has_trigger(engine, dialect, name):
            return True
        with engine.begin() as conn:
            if dialect == "postgresql":
                # One creator at a time. CREATE TRIGGER waits for the writers of iceberg_tables and
                # holds off new ones until this transaction ends, so the rows queued below are all
                # the rows no trigger saw.
                conn.execute(text("SELECT pg_advisory_xact_lock(hashtext('mor_table_locations'))"))
                if not _has_trigger_in(conn, dialect, name):
                    conn.exec_driver_sql(_POSTGRES_FUNCTION)
                    conn.exec_driver_sql(_POSTGRES_TRIGGER)
                    _queue_all(conn, iceberg_tables)
                return True
            for statement in _SQLITE_TRIGGERS:
                conn.exec_driver_sql(statement)
        # SQLite: once the triggers exist, every row is queued by them or here (twice is harmless).
        with engine.begin() as conn:
            _queue_all(conn, iceberg_tables)
        return True
    except SQLAlchemyError as e:
        log.info("no triggers on iceberg_tables in %s (%s): checks compare every table's pointer", engine.url, e)
        return False


def _has_trigger(engine: Engine, dialect: str, name: str) -> bool:
    with engine.connect() as conn:
        return _has_trigger_in(conn, dialect, name)


def _has_trigger_in(conn: Connection, dialect: str, name: str) -> bool:
    if dialect == "postgresql":
        query = "SELECT 1 FROM pg_trigger WHERE tgname = :name AND tgrelid = to_regclass('iceberg_tables')"
    else:
        query = "SELECT 1 FROM sqlite_master WHERE type = 'trigger' AND name = :name"
    return conn.execute(text(query), {"name": name}).first() is not None


def _queue_all(conn: Connection, t: Table) -> None:
    """Queue every table not yet recorded for its pointer (a database that had tables before it
    had the triggers)."""
    queued = select(PENDING.c.table_name).where(_same_key(t, PENDING)).exists()
    rows = select(t.c.catalog_name, t.c.table_namespace, t.c.table_name, t.c.metadata_location).where(
        _is_table(t), t.c.metadata_location.is_not(None), ~_recorded(t), ~queued
    )
    statement = insert(PENDING).from_select(["catalog_name", "table_namespace", "table_name", "metadata_location"], rows)
    conn.execute(statement.prefix_with("OR IGNORE", dialect="sqlite"))


def _recorded(t: Table) -> Any:
    """EXISTS: the table's location is recorded for the metadata file it points at."""
    return select(LOCATIONS.c.table_name).where(_same_key(t, LOCATIONS), LOCATIONS.c.metadata_location == t.c.metadata_location).exists()


def _same_key(a: Table, b: Table) -> Any:
    return and_(a.c.catalog_name == b.c.catalog_name, a.c.table_namespace == b.c.table_namespace, a.c.table_name == b.c.table_name)


def _key(table: Table, key: Key) -> Any:
    return and_(table.c.catalog_name == key[0], table.c.table_namespace == key[1], table.c.table_name == key[2])


def _is_table(t: Table) -> Any:
    return (t.c.iceberg_type == "TABLE") | t.c.iceberg_type.is_(None)
