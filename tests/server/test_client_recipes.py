"""The recipes `mor serve` prints when it starts (mor/server/clients.py) work as printed: mor's,
pyiceberg's and DuckDB's run here against the server that printed them, and the README's
offline DuckDB block too. (mor in Spark: tests/spark/test_rest_spark.py; Iceberg's Spark:
tests/interop/test_rest_java.py.)"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from servers.rest import _read_url

README = Path(__file__).resolve().parents[2] / "README.md"
LAST_RECIPE_LINE = "    iceberg.rest-catalog.warehouse="  # Trino's, printed last


@pytest.fixture(scope="module")
def printed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, str]]]:
    """A server over a warehouse folder named `warehouse` (the README's name): its URL and the
    recipes it printed, by engine."""
    warehouse = tmp_path_factory.mktemp("recipes") / "warehouse"
    log = tmp_path_factory.mktemp("recipes-log") / "serve.log"
    command = [sys.executable, "-m", "mor", "serve", "--warehouse", str(warehouse), "--port", "0"]
    with open(log, "w") as err:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=err, text=True)
    try:
        url = _read_url(process, log)
        assert process.stdout is not None
        lines = []
        while not (lines and lines[-1].startswith(LAST_RECIPE_LINE)):
            line = process.stdout.readline()
            assert line, f"mor serve stopped printing; its log:\n{log.read_text()}"
            lines.append(line.rstrip("\n"))
        yield url, recipes_of(lines)
    finally:
        process.terminate()
        process.wait(timeout=30)
        if process.stdout is not None:
            process.stdout.close()


def recipes_of(lines: list[str]) -> dict[str, str]:
    """`engine:` headers, each followed by its lines indented four spaces."""
    recipes: dict[str, list[str]] = {}
    for line in lines[1:]:  # after "clients, ready to paste:"
        if line.startswith("    "):
            recipes[list(recipes)[-1]].append(line[4:])
        else:
            recipes[line.rstrip(":")] = []
    return {engine: "\n".join(body) for engine, body in recipes.items()}


def run(recipe: str) -> dict[str, Any]:
    scope: dict[str, Any] = {}
    exec(recipe, scope)  # the recipe as printed
    return scope


def test_serve_prints_a_recipe_per_engine(printed: tuple[str, dict[str, str]]) -> None:
    url, recipes = printed
    assert url.startswith("http://127.0.0.1:")
    assert [engine.split(" ")[0] for engine in recipes] == ["mor", "mor", "pyiceberg", "duckdb", "spark", "trino"]
    assert all(url in text for text in recipes.values())


def test_mors_pyicebergs_and_duckdbs_recipes_reach_one_table(printed: tuple[str, dict[str, str]]) -> None:
    url, recipes = printed
    ours = run(recipes["mor"])["catalog"]
    ours.create_namespace("db")
    table = ours.create_table("db.events", schema=pa.schema([("id", pa.int64())]))
    table.append(pa.table({"id": list(range(10))}))
    table.delete("id < 3")

    theirs = run(recipes["pyiceberg"])["catalog"]
    assert sorted(theirs.load_table("db.events").scan().to_arrow()["id"].to_pylist()) == list(range(3, 10))

    readme_block = re.search(r"DuckDB needs no network.*?```python\n(.*?)```", README.read_text(), re.S)
    assert readme_block, "the README's offline DuckDB block"
    code = readme_block.group(1).replace("http://127.0.0.1:8181", url)
    con = run(code.replace("print(", "answer = ("))["con"]
    assert con.execute("SELECT count(*) FROM mor.db.events").fetchone() == (7,)
    attach = [line for line in recipes["duckdb"].splitlines() if not line.startswith("--")]
    con.execute("DETACH mor")
    con.execute("\n".join(attach))  # the printed ATTACH, on the same connection
    assert con.execute("SELECT min(id) FROM mor.db.events").fetchone() == (3,)


def test_serve_refuses_before_touching_the_disk(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A setting it cannot use or a port it cannot take: an error, and no new warehouse."""
    from mor.cli import main

    bad_setting = ["--property", "server.vend.s3.role-arn=not-an-arn"]
    assert main(["serve", "--warehouse", str(tmp_path / "a"), "--port", "0", *bad_setting]) == 2
    assert "server.vend.s3.role-arn" in capsys.readouterr().err and not (tmp_path / "a").exists()
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = str(taken.getsockname()[1])
        assert main(["serve", "--warehouse", str(tmp_path / "b"), "--port", port]) == 2
    assert "cannot listen" in capsys.readouterr().err and not (tmp_path / "b").exists()
