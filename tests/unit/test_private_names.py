"""DESIGN.md: nothing outside a module calls its private names. A name with a leading underscore
may be used only in the module that defines it; a module that needs another's helper gets a
public one (the helper moved, or named without the underscore)."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

from source_tree import module_sources, nodes

MOR = Path(__file__).resolve().parents[2] / "mor"


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@functools.cache
def _is_module(name: str, root: Path) -> bool:
    place = root.parent.joinpath(*name.split("."))
    return place.with_suffix(".py").is_file() or (place / "__init__.py").is_file()


def private_uses(path: Path, root: Path = MOR) -> list[str]:
    """Each private name of another of `root`'s modules that `path` imports or reads off a module
    it imported: `from mor.a import _x`, `import mor.a as m; m._x`, `from mor import a; a._x`."""
    package = root.name
    own = _module_name(path, root)
    walked = nodes(path.read_text())
    found: list[str] = []
    modules: dict[str, str] = {}  # local name -> one of root's modules
    for node in walked:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == package and alias.asname:
                    modules[alias.asname] = alias.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and node.module.split(".")[0] == package:
            if any(_private(part) for part in node.module.split(".")):
                found.append(f"{node.lineno}: from {node.module} import ...")
            for alias in node.names:
                if _private(alias.name) and node.module != own:
                    found.append(f"{node.lineno}: from {node.module} import {alias.name}")
                elif _is_module(f"{node.module}.{alias.name}", root):
                    modules[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    for node in walked:
        if isinstance(node, ast.Attribute) and _private(node.attr) and isinstance(node.value, ast.Name):
            module = modules.get(node.value.id)
            if module is not None and module != own:
                found.append(f"{node.lineno}: {module}.{node.attr}")
    return found


def test_no_module_uses_another_modules_private_names() -> None:
    found = {str(p.relative_to(MOR)): uses for p in module_sources(MOR) if (uses := private_uses(p))}
    assert found == {}


def test_the_check_finds_each_form(tmp_path: Path) -> None:
    root = tmp_path / "mor"
    (root / "a").mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "a" / "__init__.py").write_text("")
    (root / "a" / "b.py").write_text("def _x(): ...\ndef y(): ...\n")
    user = root / "user.py"
    user.write_text(
        "from mor.a.b import _x, y\n"
        "import mor.a.b as m\n"
        "from mor.a import b\n"
        "m._x(); b._x(); b.y(); y()\n"
        "class C:\n    def _own(self): return self._own\n"
    )
    assert private_uses(user, root) == ["1: from mor.a.b import _x", "4: mor.a.b._x", "4: mor.a.b._x"]
    (root / "a" / "b.py").write_text("def _x(): ...\nx = _x()\n")
    assert private_uses(root / "a" / "b.py", root) == []
