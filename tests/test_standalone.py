"""The suite stands alone: a clone with nothing beside it, as a person gets it from a git host, runs every test.

The data the tests need ships under ``tests/data/`` and is the project's own. Conversations written outside
this project (LoCoMo) are not the repository's to hold: the tests on them live in ``tests/real_data/``, which
``make test`` does not collect, and read the folder ``LYRA_REAL_DATA`` names (``make test-real-data``). A read
outside the repository needs a path that leaves it: the repository's parent (``REPO.parent``, ``parents[2]`` of a
test file), a sibling folder (``../shared``, this workplace's data), or an absolute path of one machine; the source
of the tests is checked for them. The recall and consolidation evaluations (``scripts/eval_*.py``) read the full
data sets beside the repository: they are not tests.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from .conftest import REPO

TESTS = REPO / "tests"
LEAVES_THE_REPOSITORY = re.compile(
    r"REPO\.parent"                    # the folder the clone sits in
    r"|\.parents\[[2-9]\]"             # of a file in tests/: above the repository
    r"|\.\./shared|shared/data"        # this workplace's data beside the repository
    r"|[\"']shared[\"']"               # ... built as a path: Path(...) / "shared"
    r"|[\"']/(?:work|home|Users)/")    # one machine's absolute path


def outside_reads(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if LEAVES_THE_REPOSITORY.search(line)]


def test_the_pattern_finds_the_reads_that_once_made_a_bare_clone_fail() -> None:
    old = 'LOCOMO = Path(os.environ.get("LYRA_LOCOMO", REPO.parent / "shared" / "data" / "locomo-dev.json"))'
    assert outside_reads(old) == [old]
    assert outside_reads('data = Path(__file__).resolve().parents[2] / "eval"')
    assert outside_reads('json.loads(Path("../shared/data/memorybank-en.json").read_text())')
    assert outside_reads('open("/work/shared/data/locomo-dev.json")')
    assert not outside_reads('LOCOMO = real_data("locomo-dev.json")')
    assert not outside_reads('params={"filename": "../../etc/passwd.zip"}')  # a hostile name sent, not read


def test_no_test_reads_outside_the_repository() -> None:
    found = {str(path.relative_to(REPO)): lines for path in sorted(TESTS.rglob("*"))
             if path.is_file() and path.suffix in {".py", ".sh", ".toml", ".ini", ".cfg"}
             and path != Path(__file__)
             and (lines := outside_reads(path.read_text(encoding="utf-8", errors="replace")))}
    assert found == {}, (f"tests that read outside the repository (ship what they need under tests/data/, or read "
                         f"LYRA_REAL_DATA as tests/real_data/ does): {found}")


def test_make_test_collects_no_test_on_data_written_outside_the_project() -> None:
    """Without ``LYRA_REAL_DATA`` the real-data tests are not collected (a bare clone has no data for them)."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "LYRA_REAL_DATA"}
    listed = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "tests"],
                            cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert listed.returncode == 0 and "tests/real_data/" not in listed.stdout, listed.stdout[-2000:]
    assert "test_standalone.py::" in listed.stdout  # the rest of the suite is collected
    given = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "tests/real_data"],
                           cwd=REPO, env={**env, "LYRA_REAL_DATA": str(REPO / "nowhere")}, capture_output=True,
                           text=True, timeout=120)
    assert "test_grounded_dream.py::" in given.stdout and "test_web_memory_panel.py::" in given.stdout, given.stdout


def test_a_real_data_test_without_its_data_fails_saying_what_is_missing(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from .real_data import real_data

    monkeypatch.delenv("LYRA_REAL_DATA", raising=False)
    with pytest.raises(pytest.fail.Exception, match="LYRA_REAL_DATA is not set"):
        real_data("locomo-dev.json")
    monkeypatch.setenv("LYRA_REAL_DATA", str(tmp_path))
    with pytest.raises(pytest.fail.Exception, match="locomo-dev.json is not there"):  # never a skip
        real_data("locomo-dev.json")
