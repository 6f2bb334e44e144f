"""PySpark's and py4j's private names (`spark._jvm`, `df._jdf`, `hasattr(spark, "_jsparkSession")`,
`reader._df(...)`, ...) appear in mor/spark/jvm_bridge.py alone, so a PySpark release that
renames one breaks a single module. The source text is read with `ast`: no SparkSession."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from pathlib import Path

from source_tree import module_sources, nodes

MOR = Path(__file__).resolve().parents[3] / "mor"
BRIDGE = MOR / "spark" / "jvm_bridge.py"

# PySpark names the py4j handle of an object's Java twin `_j<name>`. An attribute of that form
# that mor does not define itself (mor has `_joined`, `_json_object`) is one of those; the ones
# PySpark uses most, and its other private members mor has needed, are caught even so.
JAVA_HANDLE = re.compile(r"_j[a-zA-Z]")
PYSPARK_PRIVATE = {
    "_jvm", "_jsc", "_jdf", "_jconf", "_jsparkSession", "_jreader", "_jwrite", "_jwriter", "_jcatalog", "_jrdd", "_jc",
    "_df", "_sc", "_gateway", "_to_java_column", "_to_seq",
}  # fmt: skip
ATTRIBUTE_FUNCTIONS = {"getattr", "hasattr", "setattr", "delattr"}


def defined_names(sources: Iterable[str]) -> set[str]:
    """Every name these modules define: functions, classes, arguments, variables, attributes
    they assign (`self._x = ...`), import aliases."""
    names: set[str] = set()
    for source in sources:
        for node in nodes(source):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
            elif isinstance(node, ast.arg):
                names.add(node.arg)
            elif isinstance(node, ast.alias) and node.asname:
                names.add(node.asname)
    return names


def private_uses(source: str, mor_names: set[str]) -> list[str]:
    """`line: name` of each use of a private PySpark/py4j name: an attribute (`x._jvm`), a name
    given as text to getattr/hasattr/setattr/delattr, a private name imported from pyspark or
    py4j."""

    def private(name: str) -> bool:
        return name in PYSPARK_PRIVATE or (JAVA_HANDLE.match(name) is not None and name not in mor_names)

    found = []
    for node in nodes(source):
        name = None
        if isinstance(node, ast.Attribute) and private(node.attr):
            name = node.attr
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ATTRIBUTE_FUNCTIONS and len(node.args) > 1:
            text = node.args[1]
            if isinstance(text, ast.Constant) and isinstance(text.value, str) and private(text.value):
                name = text.value
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in {"pyspark", "py4j"}:
            name = next((a.name for a in node.names if a.name.startswith("_")), None)
        if name is not None:
            found.append(f"{node.lineno}: {name}")
    return found


def test_no_module_but_the_bridge_uses_pyspark_or_py4j_private_names() -> None:
    modules = {str(path.relative_to(MOR)): source for path, source in module_sources(MOR).items() if path != BRIDGE}
    mor_names = defined_names(modules.values())
    uses = {module: private_uses(source, mor_names) for module, source in modules.items()}
    assert {module: names for module, names in uses.items() if names} == {}


def test_the_bridge_is_where_they_are() -> None:
    assert private_uses(BRIDGE.read_text(), set()), "the bridge moved, or needs no private name any more: update this test"


def test_the_check_sees_each_way_of_reaching_them() -> None:
    source = """
from pyspark.sql.column import _to_java_column
conf = spark._jsc.hadoopConfiguration()
connect = not hasattr(spark, "_jsparkSession")
df = reader._df(reader._jreader.parquet(paths))
stopped = getattr(spark.sparkContext, '_jsc', None) is None
udf = f._judf_placeholder
"""
    found = sorted(private_uses(source, set()))
    assert found == ["2: _to_java_column", "3: _jsc", "4: _jsparkSession", "5: _df", "5: _jreader", "6: _jsc", "7: _judf_placeholder"]


def test_names_mor_defines_pass_unless_they_are_pysparks() -> None:
    mine = "class A:\n    def __init__(self):\n        self._joined = 1\n        self._jvm = 2\n\ndef _json_object(): ...\n"
    uses = "a._joined\nm._json_object\na._jvm\n"
    assert private_uses(uses, defined_names([mine])) == ["3: _jvm"]
