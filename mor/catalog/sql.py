"""SQL catalog: table name -> current metadata location, swapped atomically.

The tables and columns are those of pyiceberg's `SqlCatalog` (and Iceberg Java's JDBC catalog),
so `SqlCatalog("default", uri=..., warehouse=...)` opens our tables unchanged. A commit is one
compare-and-swap UPDATE on `metadata_location`.
"""

from __future__ import annotations

from typing import Any

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
from sqlalchemy.exc import IntegrityError, SQLAlchemyError

from mor.errors import (
    CommitStateUnknownError,
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NoSuchNamespaceError,
    NoSuchTableError,
    TableAlreadyExistsError,
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


class SqlCatalogStore:
    """Rows of one catalog (`catalog_name`) in a SQL database."""

    def __init__(self, uri: str, catalog_name: str = "default", **engine_kwargs: Any) -> None:
        self.catalog_name = catalog_name
        self.engine = create_engine(uri, **engine_kwargs)
        _META.create_all(self.engine)

    # -- namespaces ----------------------------------------------------------------------
    def create_namespace(self, namespace: str, properties: dict[str, str] | None = None) -> None:
        props = {"exists": "true", **(properties or {})}
        if self.namespace_exists(namespace):
            raise NamespaceAlreadyExistsError(f"namespace {namespace!r} already exists")
        try:
            with self.engine.begin() as conn:
                for key, value in props.items():
                    conn.execute(
                        insert(NAMESPACE_PROPERTIES).values(
                            catalog_name=self.catalog_name, namespace=namespace, property_key=key, property_value=value
                        )
                    )
        except IntegrityError as e:  # created concurrently
            raise NamespaceAlreadyExistsError(f"namespace {namespace!r} already exists") from e

    def namespace_exists(self, namespace: str) -> bool:
        with self.engine.connect() as conn:
            props = conn.execute(
                select(NAMESPACE_PROPERTIES.c.namespace).where(
                    NAMESPACE_PROPERTIES.c.catalog_name == self.catalog_name,
                    NAMESPACE_PROPERTIES.c.namespace == namespace,
                ).limit(1)
            ).first()
            tables = conn.execute(
                select(TABLES.c.table_name).where(self._ns(namespace)).limit(1)
            ).first()
        return props is not None or tables is not None

    def list_namespaces(self) -> list[str]:
        with self.engine.connect() as conn:
            a = conn.execute(
                select(NAMESPACE_PROPERTIES.c.namespace).where(NAMESPACE_PROPERTIES.c.catalog_name == self.catalog_name)
            ).scalars()
            names = set(a)
            names |= set(
                conn.execute(select(TABLES.c.table_namespace).where(TABLES.c.catalog_name == self.catalog_name)).scalars()
            )
        return sorted(names)

    def drop_namespace(self, namespace: str) -> None:
        if not self.namespace_exists(namespace):
            raise NoSuchNamespaceError(f"namespace {namespace!r} does not exist")
        if self.list_tables(namespace):
            raise NamespaceNotEmptyError(f"namespace {namespace!r} still has tables")
        with self.engine.begin() as conn:
            conn.execute(
                delete(NAMESPACE_PROPERTIES).where(
                    NAMESPACE_PROPERTIES.c.catalog_name == self.catalog_name, NAMESPACE_PROPERTIES.c.namespace == namespace
                )
            )

    # -- tables --------------------------------------------------------------------------
    def list_tables(self, namespace: str) -> list[str]:
        with self.engine.connect() as conn:
            rows = conn.execute(select(TABLES.c.table_name).where(self._ns(namespace), self._is_table())).scalars()
            return sorted(rows)

    def metadata_location(self, namespace: str, name: str) -> str:
        with self.engine.connect() as conn:
            location = conn.execute(
                select(TABLES.c.metadata_location).where(self._row(namespace, name), self._is_table())
            ).scalar_one_or_none()
        if location is None:
            raise NoSuchTableError(f"table {namespace}.{name} does not exist")
        return str(location)

    def create_table_row(self, namespace: str, name: str, metadata_location: str) -> None:
        try:
            with self.engine.begin() as conn:
                conn.execute(
                    insert(TABLES).values(
                        catalog_name=self.catalog_name,
                        table_namespace=namespace,
                        table_name=name,
                        metadata_location=metadata_location,
                        previous_metadata_location=None,
                        iceberg_type=_TABLE_TYPE,
                    )
                )
        except IntegrityError as e:
            raise TableAlreadyExistsError(f"table {namespace}.{name} already exists") from e

    def swap(self, namespace: str, name: str, expected: str, new: str) -> bool:
        """Point the table at `new` if it still points at `expected`. False: someone else won."""
        try:
            with self.engine.begin() as conn:
                result = conn.execute(
                    update(TABLES)
                    .where(self._row(namespace, name), TABLES.c.metadata_location == expected)
                    .values(metadata_location=new, previous_metadata_location=expected)
                )
                swapped = result.rowcount == 1
        except SQLAlchemyError as e:
            # The UPDATE may or may not have been applied: the caller must not clean up.
            raise CommitStateUnknownError(f"commit of {namespace}.{name} to {new}: {e}") from e
        return swapped

    def drop_table_row(self, namespace: str, name: str) -> None:
        with self.engine.begin() as conn:
            result = conn.execute(delete(TABLES).where(self._row(namespace, name), self._is_table()))
        if result.rowcount == 0:
            raise NoSuchTableError(f"table {namespace}.{name} does not exist")

    def _ns(self, namespace: str) -> Any:
        return and_(TABLES.c.catalog_name == self.catalog_name, TABLES.c.table_namespace == namespace)

    def _row(self, namespace: str, name: str) -> Any:
        return and_(self._ns(namespace), TABLES.c.table_name == name)

    @staticmethod
    def _is_table() -> Any:
        return (TABLES.c.iceberg_type == _TABLE_TYPE) | TABLES.c.iceberg_type.is_(None)
