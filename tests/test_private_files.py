"""Everyone's memory is readable by this account only, whatever the umask: the data directory and
every folder in it 0700, ``household.db``, each person's ``lyra.db`` (and their WAL), the indexes, backups and
exports 0600; at start the server names what was opened by hand.

The real `lyra serve` process and the real `lyra` commands, run under the usual umask 022.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from .conftest import MODELS_DIR, base_env, serve_lyra

pytestmark = [pytest.mark.slow, pytest.mark.models]  # lyra serve and commands load the real models
CONFIG = '[companion]\nuser_name = "Ada"\n[dream]\nenabled = false\n'


@pytest.fixture
def usual_umask() -> Iterator[None]:
    previous = os.umask(0o022)  # what the processes below inherit: a box's usual default
    try:
        yield
    finally:
        os.umask(previous)


def open_to_others(folder: Path) -> list[str]:
    """Everything under ``folder`` (itself included) that another account may read or enter."""
    paths = [folder, *folder.rglob("*")]
    return sorted(str(p.relative_to(folder.parent)) for p in paths
                  if not p.is_symlink() and stat.S_IMODE(p.stat().st_mode) & 0o077)


def lyra(env: dict[str, str], config: Path, *args: str) -> None:
    done = subprocess.run([sys.executable, "-m", "lyra_local", "--config", str(config), *args], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_the_memory_is_this_accounts_alone_whatever_the_umask(tmp_path: Path, usual_umask: None) -> None:
    data, out = tmp_path / "data", tmp_path / "out"
    env = {**base_env(tmp_path), "LYRA_DATA_DIR": str(data), "LYRA_MODELS_DIR": str(MODELS_DIR)}
    with serve_lyra(tmp_path, env, CONFIG) as served, httpx.Client(base_url=served.url, timeout=60) as ada, \
            httpx.Client(base_url=served.url, timeout=60) as ben:
        assert ada.put("/api/me/secret", json={"secret": "ada-password-1"}).status_code == 200
        assert ada.post("/api/people", json={"name": "Ben", "kind": "child", "secret": "4821"}).status_code == 200
        assert ben.post("/api/auth/login", json={"name": "Ben", "secret": "4821"}).status_code == 200
        for client in (ada, ben):
            assert client.post("/api/sessions", json={"name": "a diary"}).status_code == 201
        # what proves `lyra --person NAME` in a household of several (people.prove)
        tokens = {name: client.post("/api/tokens", json={"name": "cli"}).json()["secret"]
                  for name, client in (("Ada", ada), ("Ben", ben))}
        config = served.config
    assert list(data.glob("people/*/lyra.db"))  # Ben's memory is there
    lyra(env, config, "backup", "--household", str(out / "backups"))
    lyra({**env, "LYRA_TOKEN": tokens["Ada"]}, config, "--person", "Ada", "export", str(out / "export"))
    lyra({**env, "LYRA_TOKEN": tokens["Ben"]}, config, "--person", "Ben", "backup", str(out / "ben.db"))
    assert open_to_others(data) == []
    made = [*(out / "backups").iterdir(), *(out / "export").iterdir(), out / "ben.db"]
    assert len(made) == 4 and [p.name for p in made if stat.S_IMODE(p.stat().st_mode) != 0o600] == []

    (data / "household.db").chmod(0o644)  # loosened by hand: said at the next start
    with serve_lyra(tmp_path, env, CONFIG) as served:
        pass
    said = served.log.read_text()
    assert "household.db" in said and "chmod -R go-rwx" in said
