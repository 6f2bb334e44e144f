"""Issue 55: no two files of mor import each other, directly or around a loop. An import anywhere
in a file counts (at the top, under TYPE_CHECKING, inside a function): each is a tie a reader
has to follow, and a loop of them means neither file can be understood, or moved, alone."""

from __future__ import annotations

import ast
from pathlib import Path

from source_tree import MOR, module_sources, nodes


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(MOR.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(sources: dict[Path, str]) -> dict[str, set[str]]:
    """Each module of `sources` -> the others of them it imports. `from mor.a import b` ties to
    the module mor.a.b where there is one, else to mor.a; a package's `__init__` is a module too."""
    names = {_module_name(path): path for path in sources}
    graph: dict[str, set[str]] = {name: set() for name in names}
    for name, path in names.items():
        for node in nodes(sources[path]):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in names else node.module for a in node.names]
            graph[name] |= {t for t in targets if t in names and t != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.append(member)
                        if member == node:
                            break
                    if len(group) > 1:
                        found.append(sorted(group))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return found


def test_no_files_of_mor_import_each_other_in_a_loop() -> None:
    assert cycles(import_graph(module_sources())) == []


def test_the_check_finds_a_loop_through_a_type_checking_import() -> None:
    root = MOR.parent
    sources = {
        root / "mor" / "x" / "a.py": "from mor.x.b import B\n",
        root / "mor" / "x" / "b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from mor.x import c\n",
        root / "mor" / "x" / "c.py": "def f():\n    import mor.x.a\n",
        root / "mor" / "x" / "d.py": "from mor.x.a import A\n",
    }
    assert cycles(import_graph(sources)) == [["mor.x.a", "mor.x.b", "mor.x.c"]]
