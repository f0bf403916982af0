"""The lock (``constraints.txt``): read it, and check the code and the virtualenv against it.

``constraints.txt`` pins every distribution, direct and indirect, for every
Python Lyra supports (``make lock`` writes it with ``uv pip compile
--universal``; a line's marker says where it applies). Two checks read it:

- ``imports``: every module ``lyra_local/`` imports (outside the standard
  library and Lyra itself) comes from a distribution the lock pins, so a new
  dependency cannot land unlocked. ``make lint`` runs it.
- ``venv``: the running environment holds exactly the pinned versions of the
  lines that apply to it, no more and no fewer (``tests/test_lock.py`` runs it
  for ``make test``'s install).

``outdated NEWEST`` lists what a lock resolved for the newest releases
(``make outdated`` writes one) would change.

    python scripts/lock.py imports [PACKAGE_DIR]
    python scripts/lock.py venv
    python scripts/lock.py outdated NEWEST
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from packaging.markers import Marker
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent
LOCK = ROOT / "constraints.txt"
PACKAGE = ROOT / "lyra_local"
OWN = "lyra-local"
# pip's own tools: a venv has them without asking, and pip freeze leaves them out too
TOOLS = frozenset({"pip", "setuptools", "wheel", "distribute"})
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?==([^\s;#]+)\s*(?:;\s*([^#]+?))?\s*(?:#.*)?$")


canonical = canonicalize_name  # a distribution's name as PEP 503 compares them


@dataclass(frozen=True)
class Pin:
    name: str
    version: str
    marker: str | None

    def applies(self) -> bool:
        """Whether this line is for the running interpreter and platform."""
        return self.marker is None or Marker(self.marker).evaluate()


def pins(text: str) -> dict[str, Pin]:
    """Every ``name==version [; marker]`` line of a lock, by canonical name; a line of another form is refused, so
    a hand edit that loosens a pin cannot pass unseen."""
    found: dict[str, Pin] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        match = PIN.match(line)
        if match is None:
            raise ValueError(f"constraints.txt:{number}: not an exact pin: {line!r}")
        name, version, marker = match.groups()
        found[canonical(name)] = Pin(canonical(name), version, marker)
    return found


def imported_modules(source: str, filename: str) -> Iterator[str]:
    """The top-level name of every absolute import in a file."""
    for node in ast.walk(ast.parse(source, filename=filename)):
        if isinstance(node, ast.Import):
            yield from (alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module.split(".")[0]


def third_party(package: Path) -> dict[str, list[str]]:
    """Module -> the files that import it, for every module outside the standard library and the package."""
    found: dict[str, list[str]] = {}
    for path in sorted(package.rglob("*.py")):
        for module in imported_modules(path.read_text(encoding="utf-8"), str(path)):
            if module not in sys.stdlib_module_names and module != package.name and module != "__future__":
                shown = str(path.relative_to(package.parent))
                if shown not in found.setdefault(module, []):
                    found[module].append(shown)
    return found


def unlocked_imports(package: Path, locked: dict[str, Pin],
                     providers: dict[str, list[str]] | None = None) -> list[str]:
    """One line for every imported module that no locked distribution provides (the installed distributions say
    which module is whose: ``importlib.metadata.packages_distributions``)."""
    known = dict(metadata.packages_distributions()) if providers is None else providers
    problems = []
    for module, files in sorted(third_party(package).items()):
        dists = [canonical(d) for d in known.get(module, [])]
        if not dists:
            problems.append(f"{module} (imported by {files[0]}): no installed distribution provides it")
        elif not any(d in locked for d in dists):
            problems.append(f"{module} (imported by {files[0]}): {', '.join(dists)} is not in constraints.txt")
    return problems


def installed(dists: Iterable[metadata.Distribution] | None = None) -> dict[str, str]:
    """Canonical name -> version of every distribution in the running environment but pip's tools and Lyra."""
    found: dict[str, str] = {}
    for dist in metadata.distributions() if dists is None else dists:
        name = canonical(dist.metadata["Name"])
        if name not in TOOLS and name != OWN:
            found[name] = dist.version
    return found


def venv_drift(locked: dict[str, Pin], have: dict[str, str]) -> list[str]:
    """One line for every way the environment differs from the lines of the lock that apply to it (pip's tools
    are not compared: ``installed`` leaves them out, as pip freeze does, though a dependency may lock one: spaCy
    asks for setuptools)."""
    wanted = {name: pin.version for name, pin in locked.items() if pin.applies() and name not in TOOLS}
    problems = [f"{name} {version} is installed; the lock says {wanted[name]}"
                for name, version in sorted(have.items()) if name in wanted and wanted[name] != version]
    problems += [f"{name} {version} is installed and not in the lock" for name, version in sorted(have.items())
                 if name not in locked]
    problems += [f"{name} {wanted[name]} is locked and not installed" for name in sorted(wanted) if name not in have]
    return problems


def newer(locked: dict[str, Pin], newest: dict[str, Pin]) -> list[str]:
    """``name locked -> newest`` for every pin a resolution of the newest releases moves, adds or drops."""
    lines = [f"{name} {locked[name].version if name in locked else '(new)'} -> "
             f"{newest[name].version if name in newest else '(dropped)'}"
             for name in sorted(set(locked) | set(newest))
             if (locked.get(name) and locked[name].version) != (newest.get(name) and newest[name].version)]
    return lines


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("imports", "venv", "outdated") or (argv[0] == "outdated" and len(argv) != 2):
        print("usage: python scripts/lock.py imports [PACKAGE_DIR] | venv | outdated NEWEST", file=sys.stderr)
        return 2
    locked = pins(LOCK.read_text(encoding="utf-8"))
    if argv[0] == "outdated":
        moves = newer(locked, pins(Path(argv[1]).read_text(encoding="utf-8")))
        print("\n".join(moves) if moves else "the lock holds the newest releases")
        return 0
    if argv[0] == "imports":
        package = Path(argv[1]).resolve() if len(argv) > 1 else PACKAGE
        problems = unlocked_imports(package, locked)
        ok = f"every import of {package.name}/ comes from a locked distribution"
    else:
        problems = venv_drift(locked, installed())
        ok = f"{sys.prefix} holds exactly the locked versions"
    for line in problems:
        print(line)
    if problems:
        print("`make lock` adds a new dependency to constraints.txt; `make setup` installs the locked versions",
              file=sys.stderr)
        return 1
    print(ok)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
