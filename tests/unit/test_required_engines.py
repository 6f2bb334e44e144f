"""In CI (MOR_REQUIRE_ENGINES=1, set by .ci/run) a test whose judging engine cannot be imported
fails; elsewhere it skips (tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

CONFTEST = Path(__file__).resolve().parents[1] / "conftest.py"
MODULE_LEVEL = 'import pytest\nengine = pytest.importorskip("no_such_engine_for_mor")\ndef test_judged(): pass\n'
IN_A_TEST = 'import pytest\ndef test_judged():\n    pytest.importorskip("no_such_engine_for_mor")\n'


@pytest.mark.parametrize("source", [MODULE_LEVEL, IN_A_TEST], ids=["module", "test"])
@pytest.mark.parametrize("required", [False, True])
def test_a_missing_engine_skips_or_fails(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, source: str, required: bool) -> None:
    monkeypatch.setenv("MOR_REQUIRE_ENGINES", "1" if required else "0")
    pytester.makeconftest(CONFTEST.read_text())
    pytester.makepyfile(test_judged=source)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-p", "no:xdist")
    outcomes = result.parseoutcomes()
    if required:
        assert outcomes.get("failed", 0) + outcomes.get("errors", 0) + outcomes.get("error", 0) == 1, outcomes
        assert "no_such_engine_for_mor" in result.stdout.str()
    else:
        assert outcomes == {"skipped": 1}, outcomes
