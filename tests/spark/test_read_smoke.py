from __future__ import annotations

import pyarrow as pa

import mor


def test_reads_merged_rows_with_metadata_columns(spark, catalog, read_mor):
    table = catalog.create_table("db.t", schema=pa.schema([("id", pa.int64()), ("name", pa.string())]))
    table.append(pa.table({"id": list(range(100)), "name": [f"n{i}" for i in range(100)]}))
    table.delete("id < 10")
    df = read_mor("db.t", metadata_columns="true")
    rows = sorted(df.collect(), key=lambda r: r.id)
    assert [r.id for r in rows] == list(range(10, 100))
    assert [r["_pos"] for r in rows] == list(range(10, 100))
    assert {r["_file"] for r in rows} == {t.data_file.file_path for t in table.scan().plan_files()}
