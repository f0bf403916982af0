"""The suite stands alone: a clone with nothing beside it, as a person gets it from a git host, runs every test.

The data the tests need ships under ``tests/data/``, with its licence and attribution when it is someone
else's (LoCoMo: ``tests/data/locomo/``). A read outside the repository needs a path that leaves it: the
repository's parent (``REPO.parent``, ``parents[2]`` of a test file), a sibling folder (``../shared``, this
workplace's data), or an absolute path of one machine; the source of the tests is checked for them. The
recall and consolidation evaluations (``scripts/eval_*.py``) read the full data sets beside the repository:
they are not tests.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from .conftest import REPO

TESTS = REPO / "tests"
LOCOMO = TESTS / "data" / "locomo"
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
    assert not outside_reads('LOCOMO = REPO / "tests" / "data" / "locomo" / "conv-26.json"')
    assert not outside_reads('params={"filename": "../../etc/passwd.zip"}')  # a hostile name sent, not read


def test_no_test_reads_outside_the_repository() -> None:
    found = {str(path.relative_to(REPO)): lines for path in sorted(TESTS.rglob("*"))
             if path.is_file() and path.suffix in {".py", ".sh", ".toml", ".ini", ".cfg"}
             and path != Path(__file__) and LOCOMO not in path.parents
             and (lines := outside_reads(path.read_text(encoding="utf-8", errors="replace")))}
    assert found == {}, f"tests that read outside the repository (ship what they need under tests/data/): {found}"


def test_the_locomo_slice_carries_its_licence_and_what_the_tests_read() -> None:
    licence = (LOCOMO / "LICENSE").read_text(encoding="utf-8")
    assert licence.startswith("Attribution-NonCommercial 4.0 International")
    readme = (LOCOMO / "README.md").read_text(encoding="utf-8")
    assert "CC BY-NC 4.0" in readme and "snap-research/LoCoMo" in readme and "What was changed" in readme

    sys.path.insert(0, str(REPO / "scripts"))
    from gold import observations
    from recall_sets import locomo

    (conversation,) = locomo(LOCOMO / "conv-26.json")
    assert conversation.name == "conv-26" and conversation.user == "Caroline"
    assert len(conversation.sessions) == 19  # the Memory panel's six months, May to October 2023
    assert all(len(s["messages"]) >= 8 for s in conversation.sessions)
    whole = {f"D{n}:{i}" for n in range(1, 5) for i in range(1, len(conversation.sessions[n - 1]["messages"]) + 1)}
    assert {m["source_id"] for s in conversation.sessions[:4] for m in s["messages"]} == whole
    gold = observations(LOCOMO / "conv-26.json")["conv-26"]
    assert gold and all(obs.evidence and obs.evidence <= whole for obs in gold)  # the grounded dream's judge
    raw = json.loads((LOCOMO / "conv-26.json").read_text(encoding="utf-8"))
    assert [item["sample_id"] for item in raw] == ["conv-26"]
