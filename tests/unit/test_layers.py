"""The layers of DESIGN.md that import-linter cannot check (its contracts in pyproject.toml
check mor's own packages and whole external packages): the format, planning, commit and
catalog layers are pure logic over plain data, so none of their modules imports pyarrow's
compute kernels, even inside a function."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

MOR = Path(__file__).resolve().parents[2] / "mor"
PURE = ["format", "planning", "commit", "catalog"]


def _imports(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
            out |= {f"{node.module}.{a.name}" for a in node.names}
    return out


@pytest.mark.parametrize("layer", PURE)
def test_pure_layers_import_no_pyarrow_compute(layer: str) -> None:
    found = {
        str(path.relative_to(MOR)): sorted(i for i in _imports(path) if i.startswith("pyarrow.compute"))
        for path in sorted((MOR / layer).rglob("*.py"))
    }
    assert {k: v for k, v in found.items() if v} == {}


def test_the_check_sees_an_import_inside_a_function(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("def f():\n    import pyarrow.compute as pc\n    return pc\n")
    assert "pyarrow.compute" in _imports(module)
