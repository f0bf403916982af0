"""Files and functions small enough to read in one sitting: report every one over the limit.

Walks a package (``lyra_local`` under the repository root, or the folder given) and names every
``.py`` file longer than ``MAX_FILE_LINES`` lines and every function (nested ones too, methods
included) longer than ``MAX_FUNCTION_LINES``, from its ``def`` line to its last line, as
``file:line``. Exits 1 if there is any, 0 otherwise; ``make lint`` runs it. The limits are the
point where a reader stops holding the whole thing in mind (docs/architecture.md, "Size limits").

    python scripts/check_sizes.py [PACKAGE_DIR]
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

MAX_FILE_LINES = 450
MAX_FUNCTION_LINES = 60
DEFAULT_PACKAGE = Path(__file__).resolve().parent.parent / "lyra_local"

# Files, relative to the package's parent, whose offences are not reported: none. A file being split may
# be listed here for the time it takes, with the reason beside it; the list is meant to stay empty.
ALLOWED: frozenset[str] = frozenset()


def long_functions(source: str, filename: str) -> Iterator[tuple[int, str, int]]:
    """(line, name, length) of every function longer than the limit, in source order."""
    tree = ast.parse(source, filename=filename)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > MAX_FUNCTION_LINES:
                found.append((node.lineno, node.name, length))
    yield from sorted(found)


def offences(package: Path) -> list[str]:
    """``file:line: what`` for every file and function over its limit, files in path order."""
    found = []
    for path in sorted(package.rglob("*.py")):
        shown = path.relative_to(package.parent).as_posix()
        if shown in ALLOWED:
            continue
        source = path.read_text(encoding="utf-8")
        lines = len(source.splitlines())
        if lines > MAX_FILE_LINES:
            found.append(f"{shown}:1: {lines} lines (the limit is {MAX_FILE_LINES}): split it by concern")
        for line, name, length in long_functions(source, str(path)):
            found.append(f"{shown}:{line}: {name} is {length} lines (the limit is {MAX_FUNCTION_LINES})")
    return found


def main(argv: list[str]) -> int:
    package = Path(argv[1]) if len(argv) > 1 else DEFAULT_PACKAGE
    found = offences(package)
    for offence in found:
        print(offence)
    stale = sorted(name for name in ALLOWED if not (package.parent / name).is_file())
    for name in stale:
        print(f"note: {name} is allowed to be long but is gone: take it off ALLOWED in {Path(__file__).name}")
    if not found:
        print(f"no file over {MAX_FILE_LINES} lines, no function over {MAX_FUNCTION_LINES}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
