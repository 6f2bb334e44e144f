"""The command line on an S3 warehouse: `--warehouse s3://...`, `--uri` for the catalog
database and `--property KEY=VALUE` for the S3 settings."""

from __future__ import annotations

from pathlib import Path

import pytest

from mor.cli import main


def s3_args(s3_server, warehouse: str, tmp_path: Path) -> list[str]:
    args = ["--warehouse", warehouse, "--uri", f"sqlite:///{tmp_path}/catalog.db"]
    for key, value in s3_server.properties.items():
        args += ["--property", f"{key}={value}"]
    return args


def test_quickstart_scan_and_maintenance_on_s3(s3_server, s3_warehouse: str, tmp_path: Path, capsys) -> None:
    args = s3_args(s3_server, s3_warehouse, tmp_path)
    assert main(["quickstart", *args]) == 0
    out = capsys.readouterr().out
    assert f"table demo.events at {s3_warehouse}/demo.db/events" in out
    assert "pyiceberg: same row count" in out  # pyiceberg read it through the same properties
    assert main(["scan", "demo.events", *args, "--filter", "id = 24"]) == 0
    assert "-1.0" in capsys.readouterr().out  # the upserted row
    assert main(["compact", "demo.events", *args, "--min-delete-ratio", "0.0001"]) == 0
    assert "rewrote" in capsys.readouterr().out
    assert main(["scan", "demo.events", *args, "--filter", "id = 25"]) == 0
    assert capsys.readouterr().out.strip().splitlines()[1:] == []  # deleted by key: still gone


def test_an_s3_warehouse_without_a_catalog_uri_is_a_clear_error(s3_server, s3_warehouse: str, capsys) -> None:
    assert main(["scan", "demo.events", "--warehouse", s3_warehouse]) == 2
    assert "give uri=" in capsys.readouterr().err


def test_a_property_without_a_value_is_a_usage_error(capsys) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["scan", "db.t", "--property", "s3.endpoint"])
    assert exit_info.value.code == 2
    assert "a property is KEY=VALUE" in capsys.readouterr().err
