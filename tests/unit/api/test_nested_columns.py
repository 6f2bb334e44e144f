"""Every filter form on every column kind (fields of structs, of nested structs; lists and maps,
which no filter may name) with every projection, through `to_arrow()` and `count()` after deletes
of both kinds and an update; and the change feed (net too) with each projection. Each answer is
the rows of a model (Python over the table's rows) or a typed mor error, never pyarrow's or a
KeyError (issue 43)."""

from __future__ import annotations

from collections.abc import Callable
from itertools import combinations
from typing import Any

import pyarrow as pa
import pytest

import mor

INFO = pa.struct([("city", pa.string()), ("zip", pa.int32()), ("geo", pa.struct([("lat", pa.float64()), ("ok", pa.bool_())]))])
SCHEMA = pa.schema([
    pa.field("id", pa.int64(), nullable=False), ("info", INFO),
    ("tags", pa.list_(pa.string())), ("attrs", pa.map_(pa.string(), pa.int32())),
])  # fmt: skip
CITIES = ["Berlin", "Paris", None, "Bern"]


def row(i: int) -> dict[str, Any]:
    info = None if i % 7 == 6 else {"city": CITIES[i % 4], "zip": None if i % 5 == 4 else 1000 + i,
                                    "geo": None if i % 3 == 2 else {"lat": i / 2, "ok": i % 2 == 0}}  # fmt: skip
    return {"id": i, "info": info, "tags": None if i % 6 == 5 else [f"t{i % 3}"] * (i % 3), "attrs": [("k", i)] if i % 2 else []}


def field(r: dict[str, Any], *path: str) -> Any:
    value: Any = r
    for name in path:
        value = None if value is None else value[name]
    return value


def known(f: Callable[[Any], bool], *path: str) -> Callable[[dict[str, Any]], bool]:
    """SQL's rule: a comparison with NULL holds for no row."""
    return lambda r: field(r, *path) is not None and f(field(r, *path))


FILTERS: list[tuple[str, Callable[[dict[str, Any]], bool]]] = [
    ("info.city = 'Berlin'", known(lambda v: v == "Berlin", "info", "city")),
    ("info.city != 'Berlin'", known(lambda v: v != "Berlin", "info", "city")),
    ("info.city in ('Paris', 'Bern')", known(lambda v: v in ("Paris", "Bern"), "info", "city")),
    ("info.city starts with 'Be'", known(lambda v: v.startswith("Be"), "info", "city")),
    ("info.city is null", lambda r: field(r, "info", "city") is None),
    ("info.zip > 1010", known(lambda v: v > 1010, "info", "zip")),
    ("info.zip is not null and id < 20", lambda r: field(r, "info", "zip") is not None and r["id"] < 20),
    ("info.geo.lat <= 5.5", known(lambda v: v <= 5.5, "info", "geo", "lat")),
    ("info.geo.ok = true or info.city = 'Paris'", lambda r: field(r, "info", "geo", "ok") is True or field(r, "info", "city") == "Paris"),
    ("not (info.geo.ok = true)", known(lambda v: v is not True, "info", "geo", "ok")),
]
REFUSED = ["tags = 'a'", "attrs = 1", "tags.element = 't1'", "attrs.key = 'k'", "info = 'x'", "info.nothing = 1"]
PROJECTIONS: list[list[str] | None] = [None, *[list(c) for n in (1, 2) for c in combinations(["id", "info", "tags", "attrs"], n)],
                                       ["id", "info.city"], ["info.geo.lat"]]  # fmt: skip


@pytest.fixture(scope="module")
def nested(tmp_path_factory: pytest.TempPathFactory) -> tuple[mor.Table, list[dict[str, Any]], int]:
    catalog = mor.load_catalog(tmp_path_factory.mktemp("nested"), create=True)
    table = catalog.create_table("db.n", schema=SCHEMA)
    table.append(pa.Table.from_pylist([row(i) for i in range(0, 30)], schema=SCHEMA))
    first = table.current_snapshot().snapshot_id
    table.append(pa.Table.from_pylist([row(i) for i in range(30, 45)], schema=SCHEMA))
    table.delete("id % 4 = 1")  # position deletes
    table.delete_rows(pa.table({"id": pa.array([2, 40], pa.int64())}))  # an equality delete
    table.update({"tags": pa.scalar(["new"], pa.list_(pa.string()))}, where="id = 3")
    live = [row(i) for i in range(45) if i % 4 != 1 and i not in (2, 40)]
    live = [{**r, "tags": ["new"]} if r["id"] == 3 else r for r in live]
    return table, live, first


def expected_ids(live: list[dict[str, Any]], keep: Callable[[dict[str, Any]], bool]) -> list[int]:
    return sorted(r["id"] for r in live if keep(r))


@pytest.mark.parametrize("columns", PROJECTIONS, ids=str)
def test_every_filter_with_every_projection(nested: tuple[mor.Table, list[dict[str, Any]], int], columns: list[str] | None) -> None:
    table, live, _ = nested
    for text, keep in FILTERS:
        want = expected_ids(live, keep)
        scan = table.scan(filter=text, columns=columns)
        got = scan.to_arrow()
        assert got.num_rows == len(want) and scan.count() == len(want), (text, columns)
        if "id" in got.column_names:
            assert sorted(got["id"].to_pylist()) == want, (text, columns)
        with_id = None if columns is None else [*(c for c in columns if c != "id"), "id"]
        with_ids = table.scan(filter=text, columns=with_id).to_arrow()
        assert sorted(with_ids["id"].to_pylist()) == want, (text, columns)
    for text in REFUSED:
        with pytest.raises(mor.MorError):
            table.scan(filter=text, columns=columns).to_arrow()
        with pytest.raises(mor.MorError):
            table.scan(filter=text, columns=columns).count()


@pytest.mark.parametrize("columns", PROJECTIONS, ids=str)
def test_change_feeds_on_nested_columns(nested: tuple[mor.Table, list[dict[str, Any]], int], columns: list[str] | None) -> None:
    table, _, first = nested
    last = table.current_snapshot().snapshot_id
    every = table.changes(first, last, columns=columns, on=["id"]).to_arrow()
    net = table.changes(first, last, columns=columns, on=["id"], net_changes=True).to_arrow()
    assert every.num_rows >= net.num_rows > 0
    kinds = sorted(set(net["_change_type"].to_pylist()))
    assert kinds == ["DELETE", "INSERT", "UPDATE_AFTER", "UPDATE_BEFORE"]
    filtered = table.changes(first, last, columns=columns, filter="info.city = 'Berlin'", on=["id"], net_changes=True).to_arrow()
    assert 0 < filtered.num_rows < net.num_rows
