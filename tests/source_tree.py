"""mor's own source, parsed once a test process: the tests that read mor's code with `ast` (whose
names a module may use: tests/unit/test_private_names.py, tests/unit/spark/test_jvm_bridge.py,
tests/unit/catalog/test_pyiceberg_rest.py) each walk every module, and parsing them is most of
their cost."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

MOR = Path(__file__).resolve().parents[1] / "mor"


@functools.cache
def nodes(source: str) -> tuple[ast.AST, ...]:
    """Every node of the module `source`, in `ast.walk`'s order."""
    return tuple(ast.walk(ast.parse(source)))


@functools.cache
def module_sources(root: Path = MOR) -> dict[Path, str]:
    """The text of each module under `root`, by path, in path order."""
    return {path: path.read_text() for path in sorted(root.rglob("*.py"))}
