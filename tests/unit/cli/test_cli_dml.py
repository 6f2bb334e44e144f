"""`mor delete` and `mor update` change exactly the rows the API changes (checked on a twin
table changed through the API), print the new snapshot or "no rows matched", and leave the
table as it was on bad input."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest

import mor
from mor.cli import main

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("small", pa.int32()),
        pa.field("name", pa.string()),
        pa.field("price", pa.decimal128(10, 2)),
        pa.field("ratio", pa.float64()),
        pa.field("flag", pa.bool_()),
        pa.field("day", pa.date32()),
        pa.field("local", pa.timestamp("us")),
        pa.field("ts", pa.timestamp("us", tz="UTC")),
    ]
)
UTC = dt.UTC


def rows(ids: range) -> pa.Table:
    return pa.table(
        {
            "id": list(ids),
            "small": [i % 7 for i in ids],
            "name": [f"n{i}" for i in ids],
            "price": [Decimal(i) / 4 for i in ids],
            "ratio": [i / 3 for i in ids],
            "flag": [i % 2 == 0 for i in ids],
            "day": [dt.date(2025, 1, 1) + dt.timedelta(days=i) for i in ids],
            "local": [dt.datetime(2025, 1, 1) + dt.timedelta(hours=i) for i in ids],
            "ts": [dt.datetime(2025, 1, 1, tzinfo=UTC) + dt.timedelta(hours=i) for i in ids],
        },
        schema=SCHEMA,
    )


@pytest.fixture
def twins(warehouse: Path) -> tuple[mor.Table, mor.Table]:
    """Two identical tables with position and equality deletes: db.cli (changed through the
    CLI) and db.api (changed through the API)."""
    catalog = mor.load_catalog(warehouse)
    made = []
    for name in ("cli", "api"):
        table = catalog.create_table(f"db.{name}", schema=SCHEMA)
        table.append(rows(range(0, 40)))
        table.append(rows(range(40, 80)))
        table.delete("id in (3, 44)")
        table.delete_rows(pa.table({"id": pa.array([5, 60], pa.int64())}))
        made.append(table)
    return made[0], made[1]


def cli(warehouse: Path, capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    verb, *rest = argv
    code = main([verb, "db.cli", "--warehouse", str(warehouse), *rest])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def same_rows(a: mor.Table, b: mor.Table) -> bool:
    return a.refresh().scan().to_arrow().sort_by("id").equals(b.refresh().scan().to_arrow().sort_by("id"))


def test_delete_removes_what_the_api_removes(
    twins: tuple[mor.Table, mor.Table], warehouse: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    by_cli, by_api = twins
    code, out, err = cli(warehouse, capsys, "delete", "--where", "id < 20 and flag = true")
    assert code == 0 and err == ""
    snapshot = by_cli.refresh().current_snapshot()
    assert out == f"snapshot {snapshot.snapshot_id} (delete: +10 position deletes, +1 delete files)\n"
    expected = by_api.delete("id < 20 and flag = true")
    assert expected is not None and snapshot.operation == expected.operation == "delete"
    assert same_rows(by_cli, by_api)
    assert by_cli.scan().count() == 80 - 4 - 10  # 4 gone before; the even ids below 20 now


def test_delete_json_and_no_match(twins: tuple[mor.Table, mor.Table], warehouse: Path, capsys: pytest.CaptureFixture[str]) -> None:
    by_cli, by_api = twins
    code, out, _ = cli(warehouse, capsys, "delete", "--where", "name = 'n70' or id = 5", "--json")
    document = json.loads(out)
    assert code == 0 and document["snapshot_id"] == by_cli.refresh().current_snapshot().snapshot_id
    assert document["operation"] == "delete" and document["summary"] == by_cli.current_snapshot().summary
    by_api.delete("name = 'n70' or id = 5")
    assert same_rows(by_cli, by_api)
    before = by_cli.metadata_location
    assert cli(warehouse, capsys, "delete", "--where", "id > 1000")[:2] == (0, "no rows matched\n")
    code, out, _ = cli(warehouse, capsys, "delete", "--where", "id = 5", "--json")  # gone by key already
    assert code == 0 and json.loads(out)["snapshot_id"] is None
    assert by_cli.refresh().metadata_location == before


def test_delete_copy_on_write(twins: tuple[mor.Table, mor.Table], warehouse: Path, capsys: pytest.CaptureFixture[str]) -> None:
    by_cli, by_api = twins
    assert cli(warehouse, capsys, "delete", "--where", "id >= 70", "--mode", "copy-on-write")[0] == 0
    by_api.delete("id >= 70", mode="copy-on-write")
    assert same_rows(by_cli, by_api)
    assert by_cli.current_snapshot().summary.get("added-delete-files") is None  # rewritten, no delete file


def test_update_parses_each_type_as_the_column_holds_it(
    twins: tuple[mor.Table, mor.Table], warehouse: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    by_cli, by_api = twins
    sets = [
        "small=-12", "name='a b'", "price=149.5", "ratio=1.5e3", "flag=false", "day=2025-06-05",
        "local=2025-06-05 10:00", "ts=2025-06-05T12:00:00+02:00",
    ]  # fmt: skip
    argv = [arg for s in sets for arg in ("--set", s)]
    code, out, err = cli(warehouse, capsys, "update", *argv, "--where", "id >= 10 and id <= 12")
    assert code == 0 and err == "" and out.startswith(f"snapshot {by_cli.refresh().current_snapshot().snapshot_id} (overwrite")
    values = {
        "small": -12, "name": mor.lit("a b"), "price": Decimal("149.50"), "ratio": 1500.0, "flag": False, "day": dt.date(2025, 6, 5),
        "local": dt.datetime(2025, 6, 5, 10), "ts": dt.datetime(2025, 6, 5, 10, tzinfo=UTC),
    }  # fmt: skip
    by_api.update(values, where="id >= 10 and id <= 12")
    assert same_rows(by_cli, by_api)
    changed = by_cli.scan(filter="id >= 10 and id <= 12").to_arrow().to_pylist()
    expected = {**values, "name": "a b"}
    assert len(changed) == 3 and all({k: r[k] for k in values} == expected for r in changed)


def test_update_zone_less_time_means_utc_and_null_clears(
    twins: tuple[mor.Table, mor.Table], warehouse: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    by_cli, by_api = twins
    code, out, _ = cli(
        warehouse,
        capsys,
        "update",
        "--set",
        "ts=2025-06-05 10:00",
        "--set",
        "name=null",
        "--set",
        "small=NULL",
        "--where",
        "id = 7",
        "--json",
    )
    assert code == 0 and json.loads(out)["snapshot_id"] == by_cli.refresh().current_snapshot().snapshot_id
    by_api.update({"ts": dt.datetime(2025, 6, 5, 10, tzinfo=UTC), "name": None, "small": None}, where="id = 7")
    assert same_rows(by_cli, by_api)
    code, out, _ = cli(warehouse, capsys, "update", "--set", "name='null'", "--where", "id = 8")  # quoted: the word
    assert code == 0 and by_cli.refresh().scan(filter="id = 8").to_arrow().column("name").to_pylist() == ["null"]
    assert cli(warehouse, capsys, "update", "--set", "name='x'", "--where", "id = 5")[1] == "no rows matched\n"


def test_update_values_are_sql_text_as_in_the_api(
    twins: tuple[mor.Table, mor.Table], warehouse: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    by_cli, by_api = twins
    sets = ["small=small + 1", "name=upper(name)", "local='2025-01-15 12:00'", "price=price * 2", "day=cast(local as date)", "ratio=ratio"]
    argv = [arg for s in sets for arg in ("--set", s)]
    assert cli(warehouse, capsys, "update", *argv, "--where", "id < 10")[0] == 0
    by_api.update(dict(s.split("=", 1) for s in sets), where="id < 10")
    assert same_rows(by_cli, by_api)
    changed = by_cli.scan(filter="id = 2", columns=["small", "name", "local", "price", "day"]).to_arrow().to_pylist()
    assert changed == [
        {"small": 3, "name": "N2", "local": dt.datetime(2025, 1, 15, 12), "price": Decimal("1.00"), "day": dt.date(2025, 1, 1)}
    ]


@pytest.mark.parametrize(
    "argv, error",
    [
        (["update", "--set", "nope=1", "--where", "id = 1"], "InvalidArgumentError"),
        (["update", "--set", "small=99999999999", "--where", "id = 1"], "InvalidArgumentError"),  # beyond int32
        (["update", "--set", "small=abc", "--where", "id = 1"], "InvalidArgumentError"),
        (["update", "--set", "price=1.234", "--where", "id = 1"], "InvalidArgumentError"),  # would round
        (["update", "--set", "day=June", "--where", "id = 1"], "InvalidArgumentError"),
        (["update", "--set", "flag=maybe", "--where", "id = 1"], "InvalidArgumentError"),
        (["update", "--set", "name", "--where", "id = 1"], "InvalidArgumentError"),
        (["update", "--set", "name=a", "--set", "name=b", "--where", "id = 1"], "InvalidArgumentError"),
        (["update", "--set", "id=null", "--where", "id = 1"], "SchemaMismatchError"),  # a required column
        (["update", "--set", "name='x'", "--where", "nope = 1"], "InvalidFilterError"),
        (["update", "--set", "name=x", "--where", "id = 1"], "InvalidArgumentError"),  # a bare word names a column
        (["update", "--set", "name=upper(nope)", "--where", "id = 1"], "SchemaMismatchError"),
        (["update", "--set", "small=small +", "--where", "id = 1"], "InvalidArgumentError"),
        (["update", "--set", "small=small * 1000000000", "--where", "id = 6"], "SchemaMismatchError"),  # beyond int32, on the row
        (["update", "--set", "small='5'", "--where", "id = 1"], "SchemaMismatchError"),  # text is no number
        (["delete", "--where", "nope = 1"], "InvalidFilterError"),
        (["delete", "--where", "id <"], "InvalidFilterError"),
    ],
)
def test_bad_input_leaves_the_table_unchanged(
    twins: tuple[mor.Table, mor.Table], warehouse: Path, capsys: pytest.CaptureFixture[str], argv: list[str], error: str
) -> None:
    by_cli, _ = twins
    before = by_cli.metadata_location
    code, out, err = cli(warehouse, capsys, *argv)
    assert code == 2 and out == ""
    assert err.startswith(f"mor: {error}: ") and "Traceback" not in err, err
    assert by_cli.refresh().metadata_location == before


def test_update_needs_where_and_set(twins: tuple[mor.Table, mor.Table], warehouse: Path, capsys: pytest.CaptureFixture[str]) -> None:
    by_cli, _ = twins
    before = by_cli.metadata_location
    for argv in (["update", "--set", "name=x"], ["update", "--where", "id = 1"], ["delete"]):
        with pytest.raises(SystemExit) as exit_info:
            cli(warehouse, capsys, *argv)
        assert exit_info.value.code == 2
        assert "required" in capsys.readouterr().err
    assert by_cli.refresh().metadata_location == before


def test_update_every_row_says_so(twins: tuple[mor.Table, mor.Table], warehouse: Path, capsys: pytest.CaptureFixture[str]) -> None:
    by_cli, by_api = twins
    assert cli(warehouse, capsys, "update", "--set", "flag=true", "--where", "true")[0] == 0
    by_api.update({"flag": True}, where="true")
    assert same_rows(by_cli, by_api)
    assert by_cli.scan(filter="flag = false").count() == 0


def test_dml_on_a_v3_table_writes_deletion_vectors(warehouse: Path, capsys: pytest.CaptureFixture[str]) -> None:
    table = mor.load_catalog(warehouse).create_table("db.cli", schema=SCHEMA, format_version=3)
    table.append(rows(range(20)))
    assert cli(warehouse, capsys, "delete", "--where", "id < 5")[0] == 0
    assert cli(warehouse, capsys, "update", "--set", "name='z'", "--where", "id = 9")[0] == 0
    table.refresh()
    assert table.scan().count() == 15 and table.scan(filter="name = 'z'").to_arrow().column("id").to_pylist() == [9]
    assert table.current_snapshot().summary.get("added-dvs") == "1"


def test_update_sets_a_field_inside_a_struct(catalog: mor.Catalog, warehouse: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`--set addr.city=...`: the name `mor describe` lists, set as the API's update sets it."""
    addr = pa.struct([("city", pa.string()), ("zip", pa.int32())])
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("addr", addr)])
    table = catalog.create_table("db.nested", schema=schema)
    table.append(pa.table({"id": [1, 2], "addr": [{"city": "oslo", "zip": 1}, None]}, schema=schema))
    base = ["update", "db.nested", "--warehouse", str(warehouse)]
    assert main([*base, "--set", "addr.city=upper(addr.city)", "--set", "addr.zip=7", "--where", "true"]) == 0
    assert table.refresh().scan().to_arrow().sort_by("id").column("addr").to_pylist() == [{"city": "OSLO", "zip": 7}, None]
    assert main([*base, "--set", "addr.nope=1", "--where", "true"]) != 0
    assert "no column 'addr.nope'" in capsys.readouterr().err
