"""The REST catalog server these tests talk to: `mor serve`'s application in this process
(tests/servers/inprocess_rest.py), one per test, on a fresh warehouse."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from servers.inprocess_rest import RestServer, serving_in_process


@pytest.fixture
def rest_server(tmp_path: Path) -> Iterator[RestServer]:
    with serving_in_process(tmp_path / "warehouse") as server:
        yield server
