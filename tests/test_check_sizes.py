"""Files and functions stay small: ``scripts/check_sizes.py`` (run by ``make lint``) passes on the tree and fails,
naming the file, the line and the size, on a package with a file or a function over its limit."""

from __future__ import annotations

import subprocess
from pathlib import Path

from .conftest import REPO, run_script

CHECKER = REPO / "scripts" / "check_sizes.py"


def check(*args: str) -> subprocess.CompletedProcess[str]:
    return run_script(CHECKER, *args)


def test_the_tree_is_within_the_limits() -> None:
    result = check()
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no file over 450 lines, no function over 60" in result.stdout


def test_a_long_file_and_a_long_function_fail_naming_them(tmp_path: Path) -> None:
    package = tmp_path / "lyra_local"
    (package / "mind").mkdir(parents=True)
    (package / "short.py").write_text("def fine():\n" + "    x = 1\n" * 59)  # 60 lines: at the limit
    (package / "mind" / "long.py").write_text("X = 1\n" * 451)
    (package / "mind" / "nested.py").write_text(
        "class Outer:\n    def method(self):\n" + "        x = 1\n" * 60)  # a method of 61 lines
    result = check(str(package))
    assert result.returncode == 1
    assert result.stdout.splitlines() == [
        "lyra_local/mind/long.py:1: 451 lines (the limit is 450): split it by concern",
        "lyra_local/mind/nested.py:2: method is 61 lines (the limit is 60)",
    ]
