"""pyiceberg's private names are read in two adapters alone, one per layer that needs them (the
layers keep expr and catalog apart): mor/catalog/pyiceberg_rest.py (the REST client's signed-in
session, how it writes a namespace or an identifier into a path) and
mor/expr/pyiceberg_evaluators.py (its metrics, manifest and partition evaluators). The names
they read still exist in the installed pyiceberg with the shapes they expect."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

from pyiceberg.catalog.rest import RestCatalog
from source_tree import module_sources, nodes

MOR = Path(__file__).resolve().parents[3] / "mor"
ADAPTERS = {MOR / "catalog" / "pyiceberg_rest.py", MOR / "expr" / "pyiceberg_evaluators.py"}  # one per layer that needs them
PYICEBERG_PRIVATE = {
    "_session", "_encode_namespace_path", "_split_identifier_for_path", "_contains_nulls_only", "_contains_nans_only", "_is_nan",
}  # fmt: skip


def private_uses(source: str) -> list[str]:
    """`line: name` of each read of one of pyiceberg's private names, or a private name imported
    from pyiceberg."""
    found = []
    for node in nodes(source):
        if isinstance(node, ast.Attribute) and node.attr in PYICEBERG_PRIVATE:
            found.append(f"{node.lineno}: {node.attr}")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "pyiceberg":
            found += [f"{node.lineno}: {a.name}" for a in node.names if a.name.startswith("_")]
    return found


def test_only_the_adapter_reads_pyiceberg_private_names() -> None:
    found = {
        str(p.relative_to(MOR)): uses for p, source in module_sources(MOR).items() if p not in ADAPTERS and (uses := private_uses(source))
    }
    assert found == {}
    assert all(private_uses(a.read_text()) for a in ADAPTERS)  # the adapters are where they are: the check sees them


def test_the_check_sees_each_form() -> None:
    source = "from pyiceberg.catalog.rest import _x\nrest._session.request()\nc._encode_namespace_path(n)\n"
    assert sorted(private_uses(source)) == ["1: _x", "2: _session", "3: _encode_namespace_path"]


def test_the_names_the_adapters_read_exist_in_this_pyiceberg() -> None:
    from pyiceberg.expressions import visitors

    for name in ("_ExpressionEvaluator", "_InclusiveMetricsEvaluationVisitor", "_ManifestEvalVisitor", "_StrictMetricsEvaluator"):
        assert isinstance(getattr(visitors, name), type), name
    for method in ("_contains_nulls_only", "_contains_nans_only", "_is_nan"):
        assert callable(getattr(visitors._InclusiveMetricsEvaluationVisitor, method)), method
    assert list(inspect.signature(RestCatalog._encode_namespace_path).parameters) == ["self", "namespace"]
    assert list(inspect.signature(RestCatalog._split_identifier_for_path).parameters)[:3] == ["self", "identifier", "kind"]
    assert "self._session" in inspect.getsource(RestCatalog)  # the signed-in session, made in __init__
