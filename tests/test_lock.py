"""Installs that reproduce: ``make setup`` installs exactly ``constraints.txt``, and no import of ``lyra_local/``
comes from a distribution the lock does not pin (``scripts/lock.py``; ``make lint`` runs its import check)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from .conftest import REPO

SCRIPT = REPO / "scripts" / "lock.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("lyra_lock_script", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


lock = _load()


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=120,
                          check=False)


def test_the_virtualenv_holds_exactly_the_locked_versions() -> None:
    """What `make test` installed is the lock: the same versions, nothing more, nothing missing (as `pip freeze`)."""
    locked = lock.pins(lock.LOCK.read_text(encoding="utf-8"))
    have = lock.installed()
    assert lock.venv_drift(locked, have) == []
    # the comparison is not empty-handed: what Lyra runs on is there, at the locked version
    for name in ("fastapi", "starlette", "pydantic", "uvicorn", "numpy", "faiss-cpu", "llama-cpp-python"):
        assert have[name] == locked[name].version, name
    frozen = subprocess.run([sys.executable, "-m", "pip", "freeze", "--exclude-editable",
                             "--disable-pip-version-check"], capture_output=True, text=True, check=True).stdout
    pinned = {lock.canonical(line.split("==")[0]): line.split("==")[1] for line in frozen.splitlines() if "==" in line}
    assert pinned == have


def test_every_import_of_the_package_is_locked() -> None:
    result = run("imports")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "every import of lyra_local/ comes from a locked distribution" in result.stdout


def test_an_unlocked_or_uninstalled_import_fails_naming_it(tmp_path: Path) -> None:
    package = tmp_path / "lyra_local"
    (package / "web").mkdir(parents=True)
    (package / "web" / "app.py").write_text("import json\nimport fastapi.routing\nfrom yaml import safe_load\n"
                                            "from . import app\nimport lyra_local.web\nimport nowhere_module\n")
    locked = lock.pins("fastapi==0.165.0\n")
    providers = {"fastapi": ["fastapi"], "yaml": ["PyYAML"]}
    problems = lock.unlocked_imports(package, locked, providers)
    assert problems == [
        "nowhere_module (imported by lyra_local/web/app.py): no installed distribution provides it",
        "yaml (imported by lyra_local/web/app.py): pyyaml is not in constraints.txt",
    ]
    assert lock.unlocked_imports(package, lock.pins("fastapi==1\nPyYAML==6.0\n"),
                                 {**providers, "nowhere_module": ["nowhere"]}) == [
        "nowhere_module (imported by lyra_local/web/app.py): nowhere is not in constraints.txt"]


def test_a_lock_line_that_is_not_an_exact_pin_is_refused() -> None:
    assert lock.pins("# a comment\n\nnumpy==2.4.6  # via lyra-local\n")["numpy"].version == "2.4.6"
    pin = lock.pins("pywin32==312 ; sys_platform == 'win32'  # via mcp\n")["pywin32"]
    assert pin.marker == "sys_platform == 'win32'" and not pin.applies()
    with pytest.raises(ValueError, match="constraints.txt:2: not an exact pin"):
        lock.pins("numpy==2.4.6\nfastapi>=0.110\n")


def test_every_way_the_environment_can_differ_from_the_lock_is_named() -> None:
    locked = lock.pins("numpy==2.4.6\nfastapi==0.165.0\nrich==14.0\npywin32==312 ; sys_platform == 'win32'\n")
    have = {"numpy": "2.5.5", "fastapi": "0.165.0", "leftover": "1.0"}
    assert lock.venv_drift(locked, have) == [
        "numpy 2.5.5 is installed; the lock says 2.4.6",
        "leftover 1.0 is installed and not in the lock",
        "rich 14.0 is locked and not installed",
    ]


def test_outdated_names_what_the_newest_releases_would_move() -> None:
    locked = lock.pins("numpy==2.4.6\nfastapi==0.165.0\nold==1\n")
    newest = lock.pins("numpy==2.5.5\nfastapi==0.165.0\nnew==2\n")
    assert lock.newer(locked, newest) == ["new (new) -> 2", "numpy 2.4.6 -> 2.5.5", "old 1 -> (dropped)"]
