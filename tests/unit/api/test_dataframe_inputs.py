"""The write verbs take the dataframes people have (pandas, polars, anything with the Arrow
PyCapsule stream interface) and fit values to the table's types as Spark's store assignment
does: widening always, narrowing only when every value fits, else a SchemaMismatchError naming
the column and a value, with the table left as it was."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
import textwrap
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from unit_helpers import TableState, make_rows, sorted_rows, table_rows

import mor

pd = pytest.importorskip("pandas")
pl = pytest.importorskip("polars")

UTC = dt.UTC

TYPED = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("n", pa.int64()),
        pa.field("small", pa.int32()),
        pa.field("label", pa.string()),
        pa.field("ts", pa.timestamp("us")),
        pa.field("tstz", pa.timestamp("us", tz="UTC")),
    ]
)

EXPECTED = pa.table(
    {
        "id": [1, 2, 3],
        "n": [10, None, 30],
        "small": [1, -2, 2**31 - 1],
        "label": ["red", "blue", None],
        "ts": [dt.datetime(2025, 6, 5, 10, 0, 0, 123456), None, dt.datetime(1969, 12, 31, 23, 59, 59, 999999)],
        "tstz": [
            dt.datetime(2025, 1, 5, 9, 30, 0, 1, tzinfo=UTC),
            dt.datetime(2025, 1, 5, 23, 0, tzinfo=UTC),
            None,
        ],
    },
    schema=TYPED,
)


class ArrowStreamOnly:
    """Exports rows through `__arrow_c_stream__` and nothing else (no pandas, no iteration)."""

    def __init__(self, data: pa.Table):
        self._data = data

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        return self._data.__arrow_c_stream__(requested_schema)


def _pandas_frame() -> Any:
    paris = "Europe/Paris"
    return pd.DataFrame(
        {
            "id": [1, 2, 3],
            "n": pd.array([10, None, 30], dtype="Int64"),
            "small": pd.array([1, -2, 2**31 - 1], dtype="Int64"),  # int64 data for an int column
            "label": pd.Categorical(["red", "blue", None]),
            "ts": pd.to_datetime(["2025-06-05 10:00:00.123456", None, "1969-12-31 23:59:59.999999"]),  # naive, ns
            "tstz": pd.to_datetime(["2025-01-05 10:30:00.000001", "2025-01-06 00:00:00.000000", None]).tz_localize(paris),
        },
        index=[7, 8, 9],  # not a column: dropped
    )


def _polars_frame() -> Any:
    return pl.DataFrame(
        {
            "id": [1, 2, 3],
            "n": pl.Series([10, None, 30], dtype=pl.Int64),
            "small": pl.Series([1, -2, 2**31 - 1], dtype=pl.Int64),
            "label": pl.Series(["red", "blue", None], dtype=pl.Categorical),
            "ts": pl.Series(EXPECTED.column("ts").to_pylist(), dtype=pl.Datetime("ns")),
            "tstz": pl.Series(EXPECTED.column("tstz").to_pylist(), dtype=pl.Datetime("us", "UTC")).dt.convert_time_zone("Europe/Paris"),
        }
    )


@pytest.fixture
def typed(catalog: mor.Catalog) -> mor.Table:
    return catalog.create_table("db.typed", schema=TYPED)


def _assert_holds_exactly(table: mor.Table, expected: pa.Table) -> None:
    data = table.scan().to_arrow()
    assert data.schema.equals(expected.schema, check_metadata=False), data.schema
    assert data.sort_by("id").to_pylist() == expected.sort_by("id").to_pylist()


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(_pandas_frame, id="pandas"),
        pytest.param(_polars_frame, id="polars"),
        pytest.param(lambda: ArrowStreamOnly(EXPECTED), id="pycapsule-stream"),
        pytest.param(lambda: EXPECTED.to_batches()[0], id="record-batch"),
        pytest.param(lambda: iter(EXPECTED.to_batches(max_chunksize=1)), id="iterator-of-batches"),
    ],
)
def test_dataframes_append_and_read_back_exactly(typed: mor.Table, make: Callable[[], Any]) -> None:
    typed.append(make())
    _assert_holds_exactly(typed, EXPECTED)


def test_a_pandas_frame_converts_as_pyarrow_with_nullable_ints_and_zones() -> None:
    """What the pandas path hands on: nullable ints stay ints, the zone stays, categoricals
    are decoded (so the cast rules, not pandas, decide what fits)."""
    from mor.api.inputs import as_table

    data = as_table(_pandas_frame(), "rows")
    assert data.schema.field("n").type == pa.int64() and data.column("n").null_count == 1
    assert data.schema.field("label").type == pa.string()
    assert data.schema.field("tstz").type == pa.timestamp("ns", tz="Europe/Paris")
    assert "__index_level_0__" not in data.column_names


@pytest.mark.parametrize("kind", ["pandas", "polars", "pycapsule"])
def test_dml_verbs_take_dataframes(make_table: Callable[..., mor.Table], kind: str) -> None:
    table = make_table(range(10))
    rows = make_rows([3, 20]).set_column(2, "name", pa.array(["three", "twenty"]))
    as_input = {"pandas": lambda t: t.to_pandas(), "polars": lambda t: pl.from_arrow(t), "pycapsule": ArrowStreamOnly}[kind]

    table.upsert(as_input(rows), on=["id"])
    table.merge(as_input(make_rows([4]).set_column(2, "name", pa.array(["four"]))), on=["id"], when_matched_update="*")
    table.delete_rows(as_input(pa.table({"id": [5, 6]})))
    expected = [r for r in make_rows(range(10)).to_pylist() if r["id"] not in (3, 4, 5, 6)]
    expected += [{**make_rows([3]).to_pylist()[0], "name": "three"}, {**make_rows([4]).to_pylist()[0], "name": "four"}]
    expected += [{**make_rows([20]).to_pylist()[0], "name": "twenty"}]
    assert table_rows(table) == sorted_rows(expected)


@pytest.mark.parametrize(
    ("data", "named"),
    [
        pytest.param({"id": [1]}, "dict", id="dict"),
        pytest.param("id,name", "str", id="str"),
        pytest.param(42, "int", id="int"),
        pytest.param([{"id": 1}], "dict", id="list-of-dicts"),
    ],
)
def test_what_is_no_table_of_rows_is_refused(make_table: Callable[..., mor.Table], data: Any, named: str) -> None:
    table = make_table(range(3))
    state = TableState(table)
    for write in (table.append, lambda d: table.upsert(d, on=["id"]), table.delete_rows):
        with pytest.raises(mor.SchemaMismatchError, match=named):
            write(data)
    state.assert_unchanged()


def test_a_polars_series_is_refused(make_table: Callable[..., mor.Table]) -> None:
    table = make_table(range(3))
    state = TableState(table)
    with pytest.raises(mor.SchemaMismatchError):
        table.append(pl.Series("id", [1, 2]))
    state.assert_unchanged()


@pytest.mark.subprocess
def test_appending_pyarrow_data_imports_neither_pandas_nor_polars(tmp_path: Path) -> None:
    """mor imports pandas or polars only when given one. pyarrow itself imports pandas when it
    converts Python objects (`pa.array([1])`, `pa.table({...})`, `pa.scalar`) and in
    `ChunkedArray.to_numpy` (which key matching uses), so the child process reads its rows from
    an Arrow IPC file, and pandas is asserted absent after append, scan and count only."""
    rows = pa.table({"id": pa.array([1, 2], pa.int64()), "small": pa.array([3, 4], pa.int64()), "name": ["a", None], "x": [0.5, 1.0]})
    with pa.ipc.new_file(tmp_path / "rows.arrow", rows.schema) as writer:
        writer.write_table(rows)
    script = textwrap.dedent(
        f"""
        import sys
        import pyarrow as pa
        import mor

        def loaded(names):
            return [m for m in names if m in sys.modules]

        rows = pa.ipc.open_file({str(tmp_path / "rows.arrow")!r}).read_all()
        schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("small", pa.int32()), ("name", pa.string()), ("x", pa.float64())])
        table = mor.load_catalog({str(tmp_path / "wh")!r}, create=True).create_table("db.t", schema=schema)
        table.append(rows)
        table.append(iter(rows.to_batches()))
        assert table.scan().count() == 4 and table.scan().to_arrow().num_rows == 4
        assert table.scan(limit=1).to_arrow().num_rows == 1
        assert not loaded(["pandas", "polars"]), loaded(["pandas", "polars"])
        table.upsert(rows.slice(1), on=["id"])
        table.delete_rows(rows.select(["id"]).slice(0, 1))
        assert table.scan().count() == 1
        assert not loaded(["polars"])
        """
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)


# -- narrowing: taken when every value fits, else named and refused ---------------------------------------------------

NARROW = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("n", pa.int32()),
        pa.field("ts", pa.timestamp("us")),
        pa.field("s", pa.string()),
    ]
)


@pytest.fixture
def narrow(catalog: mor.Catalog) -> mor.Table:
    table = catalog.create_table("db.narrow", schema=NARROW)
    table.append(pa.table({"id": [1, 2], "n": [10, 20], "ts": [None, None], "s": ["a", "b"]}, schema=NARROW))
    return table


def _rows(n: pa.Array, ts: pa.Array | None = None, s: pa.Array | None = None) -> pa.Table:
    count = len(n)
    return pa.table(
        {
            "id": pa.array(range(100, 100 + count), pa.int64()),
            "n": n,
            "ts": ts if ts is not None else pa.nulls(count, pa.timestamp("us")),
            "s": s if s is not None else pa.array(["x"] * count),
        }
    )


@pytest.mark.parametrize(
    ("data", "expected_n", "expected_ts"),
    [
        pytest.param(_rows(pa.array([2**31 - 1, -(2**31), None], pa.int64())), [2**31 - 1, -(2**31), None], None, id="int64-that-fits"),
        pytest.param(_rows(pa.array([3, 5], pa.uint64())), [3, 5], None, id="uint64-that-fits"),
        pytest.param(_rows(pa.array([3.0, -0.0, None], pa.float64())), [3, 0, None], None, id="integral-floats"),
        # Spark's ANSI store assignment: a fraction is dropped toward zero, as its cast does
        pytest.param(_rows(pa.array([3.5, -2.7, 2.9999], pa.float64())), [3, -2, 2], None, id="fractional-floats-truncate"),
        pytest.param(_rows(pa.array([1.5], pa.float32())), [1], None, id="float32-fractional-truncates"),
        pytest.param(_rows(pa.array([Decimal("7.9"), Decimal("-7.9")], pa.decimal128(3, 1))), [7, -7], None, id="decimals-truncate"),
        pytest.param(
            _rows(pa.array([1, 2], pa.int64()), ts=pa.array([1_000, 2_000_000], pa.timestamp("ns"))),
            [1, 2],
            [dt.datetime(1970, 1, 1, 0, 0, 0, 1), dt.datetime(1970, 1, 1, 0, 0, 0, 2000)],
            id="nanoseconds-without-a-finer-part",
        ),
        pytest.param(_rows(pa.array([7], pa.int32()), s=pa.array(["y"], pa.large_string())), [7], None, id="large-string"),
    ],
)
def test_narrowing_is_taken_when_every_value_fits(narrow: mor.Table, data: pa.Table, expected_n: list[Any], expected_ts: Any) -> None:
    narrow.append(data)
    got = narrow.scan(filter="id >= 100").to_arrow().sort_by("id")
    assert got.schema.equals(pa.schema(NARROW), check_metadata=False)
    assert got.column("n").to_pylist() == expected_n
    if expected_ts is not None:
        assert got.column("ts").to_pylist() == expected_ts


@pytest.mark.parametrize(
    ("data", "fragments"),
    [
        pytest.param(_rows(pa.array([1, 2**40], pa.int64())), ["'n'", "1099511627776"], id="int64-too-large"),
        pytest.param(_rows(pa.array([1, -(2**31) - 1], pa.int64())), ["'n'", "-2147483649"], id="int64-too-small"),
        pytest.param(_rows(pa.array([float("nan")], pa.float64())), ["'n'", "nan"], id="nan"),
        pytest.param(_rows(pa.array([float("inf")], pa.float64())), ["'n'", "inf"], id="infinity"),
        pytest.param(_rows(pa.array([1e10], pa.float64())), ["'n'", "1e+10"], id="float-out-of-range"),
        pytest.param(
            _rows(pa.array([1], pa.int64()), ts=pa.array([1_000_001], pa.timestamp("ns"))),
            ["'ts'", "1970-01-01 00:00:00.001000001"],
            id="nanoseconds-with-a-finer-part",
        ),
        pytest.param(_rows(pa.array([2.0**40 + 0.5], pa.float64())), ["'n'", "1.0995116277765e+12"], id="fraction-out-of-range"),
        pytest.param(_rows(pa.array([Decimal("99999999999.5")], pa.decimal128(12, 1))), ["'n'", "99999999999"], id="decimal-out-of-range"),
        pytest.param(_rows(pa.array(["1"])), ["'n'", "string", "int32"], id="text-stays-refused"),
        pytest.param(
            _rows(pa.array([1], pa.int32()), ts=pa.array([dt.date(2025, 1, 1)], pa.date32())), ["'ts'", "date32"], id="date-stays-refused"
        ),
        pytest.param(
            _rows(pa.array([1], pa.int32()), ts=pa.array([1], pa.timestamp("us", tz="UTC"))), ["'ts'"], id="zone-ness-stays-checked"
        ),
    ],
)
@pytest.mark.parametrize("verb", ["append", "upsert", "merge"])
def test_a_value_that_does_not_fit_is_named_and_nothing_changes(narrow: mor.Table, data: pa.Table, fragments: list[str], verb: str) -> None:
    state = TableState(narrow)
    before = table_rows_of(narrow)
    with pytest.raises(mor.SchemaMismatchError) as info:
        if verb == "append":
            narrow.append(data)
        elif verb == "upsert":
            narrow.upsert(data, on=["id"])
        else:
            narrow.merge(data, on=["id"], when_not_matched_insert="*")
    for fragment in fragments:
        assert fragment in str(info.value), (fragment, str(info.value))
    state.assert_unchanged()
    assert table_rows_of(narrow) == before


def table_rows_of(table: mor.Table) -> list[dict[str, Any]]:
    return table.scan().to_arrow().sort_by("id").to_pylist()


def test_a_merge_source_computed_with_pyarrow_narrows_into_an_int_column(narrow: mor.Table) -> None:
    """`pc.add(int32_column, 1000)` is int64: its values fit the int column, so MERGE takes it."""
    current = narrow.scan().to_arrow()
    source = current.set_column(1, "n", pc.add(current.column("n"), 1000))
    assert source.schema.field("n").type == pa.int64()
    narrow.merge(source, on=["id"], when_matched_update="*")
    narrow.merge(source, on=["id"], when_matched_update={"n": pc.add(pc.field("source.n"), 1)})
    assert narrow.scan().to_arrow().sort_by("id").column("n").to_pylist() == [1011, 1021]


def test_a_merge_update_that_overflows_the_column_is_refused(narrow: mor.Table) -> None:
    state = TableState(narrow)
    source = pa.table({"id": [1, 2], "n": pa.array([1, 2**35], pa.int64())})
    with pytest.raises(mor.SchemaMismatchError, match=r"'n'.*34359738368"):
        narrow.merge(source, on=["id"], when_matched_update={"n": pc.field("source.n")})
    state.assert_unchanged()


def test_keys_narrow_too_but_a_fractional_key_is_refused(narrow: mor.Table) -> None:
    narrow.delete_rows(pa.table({"id": pa.array([1.0])}))  # 1.0 is the key 1
    assert [r["id"] for r in table_rows_of(narrow)] == [2]
    state = TableState(narrow)
    with pytest.raises(mor.SchemaMismatchError, match=r"'id'.*2\.5"):
        narrow.delete_rows(pa.table({"id": pa.array([2.5])}))
    state.assert_unchanged()


def test_an_update_value_narrows_into_an_int_column(narrow: mor.Table) -> None:
    narrow.update({"n": pc.add(pc.field("n"), pa.scalar(5, pa.int64()))}, where="id = 1")
    assert [r["n"] for r in table_rows_of(narrow)] == [15, 20]
    state = TableState(narrow)
    with pytest.raises(mor.SchemaMismatchError, match=r"'n'.*4294967316"):
        narrow.update({"n": pc.add(pc.field("n"), pa.scalar(2**32, pa.int64()))}, where="id = 2")
    state.assert_unchanged()


def test_a_streamed_append_that_fails_late_leaves_no_files(narrow: mor.Table) -> None:
    """The bad value is in the third batch: the files of the first two are removed."""
    state = TableState(narrow)
    batches = [_rows(pa.array([i], pa.int64())).to_batches()[0] for i in (1, 2, 2**40)]
    with pytest.raises(mor.SchemaMismatchError, match="1099511627776"):
        narrow.append(iter(batches))
    state.assert_unchanged()


def test_schema_merge_still_widens_rather_than_narrows(narrow: mor.Table) -> None:
    narrow.append(_rows(pa.array([2**40], pa.int64())), schema_mode="merge")
    assert narrow.arrow_schema().field("n").type == pa.int64()
    assert 2**40 in [r["n"] for r in table_rows_of(narrow)]


# -- nested narrowing: struct fields, list elements, map values -------------------------------------------------------

NESTED = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("info", pa.struct([("a", pa.int32()), ("b", pa.string())])),
        pa.field("tags", pa.list_(pa.int32())),
        pa.field("attrs", pa.map_(pa.string(), pa.int32())),
    ]
)
WIDE_INFO = pa.struct([("a", pa.int64()), ("b", pa.string())])
WIDE_ATTRS = pa.map_(pa.string(), pa.int64())


def _nested(info: list[Any], tags: list[Any], attrs: list[Any], info_mask: list[bool] | None = None) -> pa.Table:
    ids = pa.array(range(100, 100 + len(info)), pa.int64())
    a = pa.array([None if i is None else i["a"] for i in info], pa.int64())
    b = pa.array([None if i is None else i["b"] for i in info], pa.string())
    mask = pa.array(info_mask if info_mask is not None else [i is None for i in info])
    struct = pa.StructArray.from_arrays([a, b], fields=list(WIDE_INFO), mask=mask)
    return pa.table({"id": ids, "info": struct, "tags": pa.array(tags, pa.list_(pa.int64())), "attrs": pa.array(attrs, WIDE_ATTRS)})


@pytest.fixture
def nested(catalog: mor.Catalog) -> mor.Table:
    return catalog.create_table("db.nested", schema=NESTED)


def test_nested_fields_narrow_when_every_value_fits(nested: mor.Table) -> None:
    """int64 where the table has int32 (what a pandas round trip makes of a struct's field):
    the values fit, so they are taken. A value under a null struct is not a value and is not
    judged."""
    data = _nested([{"a": 1, "b": "x"}, {"a": 2**40, "b": "hidden"}], [[1, 2], None], [[("k", 3)], []], info_mask=[False, True])
    nested.append(data)
    frame = pd.DataFrame({"id": [7], "info": [{"a": 5, "b": "p"}], "tags": [[4]], "attrs": [None]})
    nested.append(frame)
    got = nested.scan().to_arrow().sort_by("id")
    assert got.schema.equals(pa.schema(NESTED), check_metadata=False)
    assert got.column("info").to_pylist() == [{"a": 5, "b": "p"}, {"a": 1, "b": "x"}, None]
    assert got.column("tags").to_pylist() == [[4], [1, 2], None]
    assert got.column("attrs").to_pylist() == [None, [("k", 3)], []]


@pytest.mark.parametrize(
    ("data", "path"),
    [
        pytest.param(_nested([{"a": 2**40, "b": "x"}], [[1]], [[]]), "'info.a'", id="struct-field"),
        pytest.param(_nested([{"a": 1, "b": "x"}], [[1, 2**40]], [[]]), "'tags.element'", id="list-element"),
        pytest.param(_nested([{"a": 1, "b": "x"}], [[1]], [[("k", -(2**40))]]), "'attrs.value'", id="map-value"),
    ],
)
def test_a_nested_value_that_does_not_fit_is_named_by_its_path(nested: mor.Table, data: pa.Table, path: str) -> None:
    state = TableState(nested)
    with pytest.raises(mor.SchemaMismatchError) as info:
        nested.append(data)
    assert path in str(info.value) and "does not fit" in str(info.value)
    state.assert_unchanged()
    assert nested.scan().count() == 0


def test_a_literal_stores_as_the_same_value_appended_would(catalog: mor.Catalog) -> None:
    """One store assignment for every verb (issue 54): a Python literal of UPDATE (and MERGE) is
    stored as append stores the same value: Decimal("1.005") into decimal(10, 2) is 1.01 (HALF_UP),
    2.7 into an int is 2; a value out of range is refused by name either way."""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("d", pa.decimal128(10, 2)), pa.field("i", pa.int32())])
    updated, appended = (catalog.create_table(f"db.{n}", schema=schema) for n in ("updated", "appended"))
    updated.append(
        pa.table({"id": [1], "d": pa.array([Decimal("0")], pa.decimal128(10, 2)), "i": pa.array([0], pa.int32())}, schema=schema)
    )
    updated.update({"d": Decimal("1.005"), "i": 2.7}, where="id = 1")
    appended.append(pa.table({"id": [1], "d": pa.array([Decimal("1.005")], pa.decimal128(10, 3)), "i": [2.7]}))
    assert table_rows_of(updated) == table_rows_of(appended) == [{"id": 1, "d": Decimal("1.01"), "i": 2}]
    state = TableState(updated)
    for verb in (lambda v: updated.update({"d": v}, where="id = 1"), lambda v: appended.append(pa.table({"id": [2], "d": [v], "i": [0]}))):
        with pytest.raises(mor.SchemaMismatchError, match=r"'d'.*123456789012\.5"):
            verb(Decimal("123456789012.5"))
    state.assert_unchanged()
