"""The store alone speaks SQL: report every SQL call outside ``lyra_local/store/``.

Walks a package (``lyra_local`` under the repository root, or the folder given),
parses each ``.py`` file with ``ast`` and names every call of an attribute
``execute``, ``executemany`` or ``executescript`` in a file outside its
``store/`` folder, as ``file:line``. Exits 1 if there is any, 0 otherwise;
``make lint`` runs it. A comment or a string that says ``execute(`` does not
count: only calls do. Code that needs a row asks a ``store/`` method for it.

    python scripts/check_sql_in_store.py [PACKAGE_DIR]
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

SQL_CALLS = frozenset({"execute", "executemany", "executescript"})
STORE = "store"
DEFAULT_PACKAGE = Path(__file__).resolve().parent.parent / "lyra_local"


def sql_calls(source: str, filename: str) -> Iterator[int]:
    """The line of every call of an attribute named like a SQL call, in source order."""
    tree = ast.parse(source, filename=filename)
    lines = [node.lineno for node in ast.walk(tree)
             if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in SQL_CALLS]
    yield from sorted(lines)


def offences(package: Path) -> list[str]:
    """``file:line`` of every SQL call outside ``<package>/store/``, files in path order."""
    found = []
    for path in sorted(package.rglob("*.py")):
        relative = path.relative_to(package)
        if relative.parts[0] == STORE:
            continue
        shown = path.relative_to(package.parent)
        found += [f"{shown}:{line}" for line in sql_calls(path.read_text(encoding="utf-8"), str(path))]
    return found


def main(argv: list[str]) -> int:
    package = Path(argv[0]) if argv else DEFAULT_PACKAGE
    if not package.is_dir():
        print(f"error: no package folder {package}", file=sys.stderr)
        return 2
    found = offences(package.resolve())
    for where in found:
        print(f"{where}: SQL outside {package.name}/{STORE}/ (move it into a store method)")
    if found:
        print(f"{len(found)} SQL call(s) outside {package.name}/{STORE}/", file=sys.stderr)
        return 1
    print(f"no SQL outside {package.name}/{STORE}/")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
