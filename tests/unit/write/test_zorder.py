"""Clustering compaction: `compact(sort_by=...)` and `compact(zorder_by=...)` keep exactly the
rows (deletes applied, v3 lineage kept), make a selective two-column filter plan fewer files,
record the right sort_order_id, are read alike by pyiceberg, and refuse bad input before
writing anything. The Z-order key itself: the classic curve on small values, and ties."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from pyiceberg.table import StaticTable
from unit_helpers import files_under

import mor
from mor.errors import InvalidArgumentError
from mor.write.zorder import interleave, zorder_indices, zorder_key

SCHEMA = pa.schema([("id", pa.int64()), ("x", pa.int64()), ("y", pa.float64()), ("tag", pa.string()), ("part", pa.string())])
FILTER = "x < 100 and y < 0.1"  # about 1% of the rows


def random_rows(start: int, n: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table(
        {
            "id": np.arange(start, start + n),
            "x": rng.integers(0, 1000, n),
            "y": rng.random(n),
            "tag": [f"t{v:03d}" if v % 17 else None for v in rng.integers(0, 500, n)],
            "part": np.where(rng.random(n) < 0.5, "p", "q"),
        },
        schema=SCHEMA,
    )


def scattered_table(catalog: mor.Catalog, files: int = 8, rows: int = 1500, **create_args: object) -> mor.Table:
    table = catalog.create_table("db.t", schema=SCHEMA, **create_args)  # type: ignore[arg-type]
    for i in range(files):
        table.append(random_rows(i * rows, rows, seed=i))
    return table


def rows_by_id(table: mor.Table, **scan_args: object) -> list[dict]:
    return sorted(table.scan(**scan_args).to_arrow().to_pylist(), key=lambda r: r["id"])  # type: ignore[arg-type]


def pyiceberg_rows(table: mor.Table) -> list[dict]:
    data = StaticTable.from_metadata(table.metadata_location).scan().to_arrow().select(SCHEMA.names)
    return sorted(data.to_pylist(), key=lambda r: r["id"])


def planned(table: mor.Table, row_filter: str = FILTER) -> int:
    return len(table.scan(filter=row_filter).plan_files())


def target_for(table: mor.Table, files: int) -> int:
    """A target size that cuts the table's bytes into about `files` files."""
    return sum(t.data_file.file_size_in_bytes for t in table.scan().plan_files()) // files


# -- the key ---------------------------------------------------------------------------------


def test_two_columns_draw_the_z_curve() -> None:
    xs, ys = np.meshgrid(np.arange(4), np.arange(4), indexing="ij")
    key = interleave([xs.ravel().astype(np.uint64), ys.ravel().astype(np.uint64)])
    # bit j of x lands above bit j of y: (x, y) -> x1 y1 x0 y0 in the low bits
    expected = [((x >> 1 & 1) << 3) | ((y >> 1 & 1) << 2) | ((x & 1) << 1) | (y & 1) for x, y in zip(xs.ravel(), ys.ravel())]
    assert key.tolist() == expected


def test_key_orders_each_column_where_the_others_tie() -> None:
    x = pa.array([5, -3, None, 5, 7, -3, 0])
    y = pa.array(["b", "a", "a", "a", "a", None, "a"])
    key = zorder_key([x, y])
    # rows with y == "a": x order -3 < None? no: nulls rank first
    same_y = [i for i, v in enumerate(y.to_pylist()) if v == "a"]
    by_x = sorted(same_y, key=lambda i: (x[i].as_py() is not None, x[i].as_py() or 0))
    assert sorted(same_y, key=lambda i: key[i]) == by_x
    assert list(zorder_indices([x, y])) == sorted(range(7), key=lambda i: (key[i], i))  # stable


@pytest.mark.parametrize("k", [1, 5])
def test_two_to_four_columns(k: int) -> None:
    with pytest.raises(InvalidArgumentError):
        interleave([np.arange(3, dtype=np.uint64)] * k)


# -- compaction --------------------------------------------------------------------------------


@pytest.mark.parametrize("clustering", [{"zorder_by": ["x", "y"]}, {"sort_by": ["x", "y desc"]}])
def test_clustering_keeps_the_rows_and_prunes(catalog: mor.Catalog, clustering: dict) -> None:
    table = scattered_table(catalog)
    table.delete("id % 9 = 0")
    table.update({"tag": "'changed'"}, where="id % 50 = 1")
    expected = rows_by_id(table)
    before_files, before_planned = len(table.scan().plan_files()), planned(table)
    assert before_planned == before_files == 9  # random columns: every file spans them (the UPDATE wrote one)

    result = table.compact(target_file_size=target_for(table, 10), **clustering)

    assert result.rewritten_data_files == 9 and result.written_rows == len(expected)
    assert table.current_snapshot().operation == "replace"
    assert rows_by_id(table) == expected == pyiceberg_rows(table)
    assert rows_by_id(table, filter=FILTER) == [r for r in expected if r["x"] < 100 and r["y"] < 0.1]
    after_files = len(table.scan().plan_files())
    assert after_files >= 6 and all(t.delete_files == () for t in table.scan().plan_files())
    assert planned(table) * 2 <= after_files  # most files skipped
    assert all(t.data_file.sort_order_id == 0 for t in table.scan().plan_files())  # no table order matches


def test_sort_by_splits_the_range_of_the_first_column(catalog: mor.Catalog) -> None:
    table = scattered_table(catalog, files=4)
    table.compact(sort_by=["x"], target_file_size=target_for(table, 6))
    ranges = []
    for task in table.scan().plan_files():
        x = pa.parquet.read_table(task.data_file.file_path.removeprefix("file://"))["x"].to_numpy()
        assert (np.diff(x) >= 0).all()
        ranges.append((x.min(), x.max()))
    ranges.sort()
    assert all(a[1] <= b[0] for a, b in zip(ranges, ranges[1:]))  # disjoint but for shared edge values
    assert planned(table, "x < 100") <= 2


def test_sort_by_the_table_order_records_its_id(catalog: mor.Catalog) -> None:
    table = scattered_table(catalog, files=3)
    order = table.replace_sort_order("x", "y desc")
    table.replace_sort_order("id")
    table.compact(sort_by=["x", "y desc"])
    assert {t.data_file.sort_order_id for t in table.scan().plan_files()} == {order.order_id}


def test_partitioned_table_is_clustered_per_partition(catalog: mor.Catalog) -> None:
    table = scattered_table(catalog, files=6, partition_by=["part"])
    expected = rows_by_id(table)
    table.compact(zorder_by=["x", "y", "tag"], target_file_size=target_for(table, 8))
    assert rows_by_id(table) == expected == pyiceberg_rows(table)
    for task in table.scan().plan_files():
        parts = set(pa.parquet.read_table(task.data_file.file_path.removeprefix("file://"))["part"].to_pylist())
        assert parts == {task.data_file.partition[0]}
    assert planned(table, "part = 'p' and x < 100 and y < 0.1") < len(
        [t for t in table.scan().plan_files() if t.data_file.partition[0] == "p"]
    )


def test_where_limits_the_rewrite(catalog: mor.Catalog) -> None:
    table = scattered_table(catalog, files=4, partition_by=["part"])
    expected = rows_by_id(table)
    result = table.compact(where="part = 'q'", zorder_by=["x", "y"])
    assert result.rewritten_data_files == 4  # the q files only (each append wrote one per partition)
    assert rows_by_id(table) == expected


def test_v3_rows_keep_their_lineage(catalog: mor.Catalog) -> None:
    table = scattered_table(catalog, files=3, format_version=3)
    table.delete("id % 4 = 0")
    columns = [*SCHEMA.names, "_row_id", "_last_updated_sequence_number"]
    before = rows_by_id(table, columns=columns)
    table.compact(zorder_by=["y", "x"], target_file_size=target_for(table, 4))
    assert rows_by_id(table, columns=columns) == before


def test_dry_run_writes_nothing(catalog: mor.Catalog) -> None:
    table = scattered_table(catalog, files=3)
    location = table.metadata_location
    result = table.compact(zorder_by=["x", "y"], dry_run=True)
    assert result.dry_run and result.rewritten_data_files == 3 and table.metadata_location == location


@pytest.mark.parametrize(
    "clustering",
    [
        {"zorder_by": ["x"]},
        {"zorder_by": ["x", "y", "id", "tag", "part"]},
        {"zorder_by": ["x", "nope"]},
        {"zorder_by": ["x", "x"]},
        {"zorder_by": "x"},
        {"zorder_by": ["x", 3]},
        {"sort_by": []},
        {"sort_by": ["x sideways"]},
        {"sort_by": ["nope"]},
        {"sort_by": ["x"], "zorder_by": ["x", "y"]},
    ],
)
def test_bad_input_is_refused_before_anything_is_written(catalog: mor.Catalog, clustering: dict) -> None:
    table = scattered_table(catalog, files=2)
    location = table.metadata_location
    files = set(files_under(table.location))
    with pytest.raises(InvalidArgumentError):
        table.compact(**clustering)
    assert table.metadata_location == location == catalog.load_table("db.t").metadata_location
    assert set(files_under(table.location)) == files


def test_nested_columns_are_refused(catalog: mor.Catalog) -> None:
    schema = pa.schema([("id", pa.int64()), ("s", pa.struct([("a", pa.int64())]))])
    table = catalog.create_table("db.n", schema=schema)
    table.append(pa.table({"id": [1, 2], "s": [{"a": 1}, {"a": 2}]}, schema=schema))
    with pytest.raises(InvalidArgumentError):
        table.compact(zorder_by=["id", "s"])
    table.compact(zorder_by=["id", "s.a"])  # a primitive field of a struct is fine
    assert sorted(table.scan().to_arrow()["id"].to_pylist()) == [1, 2]


def test_empty_table_and_all_rows_deleted(catalog: mor.Catalog) -> None:
    table = catalog.create_table("db.t", schema=SCHEMA)
    assert table.compact(zorder_by=["x", "y"]).snapshot_id is None
    table.append(random_rows(0, 10, 0))
    table.delete("true")
    table.compact(sort_by=["x"])
    assert table.scan().to_arrow().num_rows == 0
    assert pc.sum(pa.array([t.data_file.record_count for t in table.scan().plan_files()], pa.int64())).as_py() in (None, 0)
