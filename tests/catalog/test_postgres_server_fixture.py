"""The test server's own failure mode: without PostgreSQL the fixture fails, saying what to install."""

from __future__ import annotations

import pytest
from servers import postgres


def test_missing_postgresql_is_named_with_the_package_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(postgres.shutil, "which", lambda name: None)
    monkeypatch.setattr(postgres.glob, "glob", lambda pattern: [])
    with pytest.raises(RuntimeError, match="PostgreSQL not found.*apt-get install postgresql"):
        postgres.find_bin_dir()
