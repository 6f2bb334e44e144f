"""Package attributes loaded on first use (PEP 562), so that importing any part of mor does not
import every module the package names (a Spark worker needs the reader, not the catalog)."""

from __future__ import annotations

import importlib
from collections.abc import Mapping, MutableMapping
from typing import Any


def load_lazily(package: str, namespace: MutableMapping[str, Any], modules: Mapping[str, str], name: str) -> Any:
    """The attribute `name` of `package` from the module `modules` names for it, kept in the
    package's `namespace` so later lookups skip this; AttributeError for a name it lacks."""
    module = modules.get(name)
    if module is None:
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    namespace[name] = value
    return value
