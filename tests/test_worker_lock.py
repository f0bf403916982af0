"""A `lyra dream --loop` worker asleep between passes: it heartbeats, and `lyra restore` will not pull
the database from under it (a real worker process, the real CLI)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lyra_local.cli import main
from lyra_local.store import Store

from .conftest import MODELS_DIR, REPO, base_env
from .test_export_backup import backed_up


def use(monkeypatch: pytest.MonkeyPatch, data: Path) -> dict[str, str]:
    env = {"LYRA_DATA_DIR": str(data), "LYRA_MODELS_DIR": str(MODELS_DIR), "LYRA_DREAM__ENABLED": "false",
           "LYRA_COORDINATION__STALE_AFTER_S": "5"}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("LYRA_CONFIG", raising=False)
    return env


def sitrep(capsys: pytest.CaptureFixture[str]) -> dict[str, dict[str, str]]:
    capsys.readouterr()
    assert main(["sitrep", "--json"]) == 0
    return {i["id"]: i for i in json.loads(capsys.readouterr().out)["instances"]}


@pytest.mark.slow
@pytest.mark.models  # `lyra dream` refuses to start without the model files
def test_a_sleeping_dream_worker_heartbeats_and_stops_a_restore_until_it_exits(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    env = {**base_env(tmp_path), **use(monkeypatch, data)}
    backed_up(data, "before the backup", tmp_path / "b.db")
    store = Store(data)
    store.sessions.create("after the backup")
    store.close()

    log = (tmp_path / "worker.log").open("w")
    worker = subprocess.Popen([sys.executable, "-m", "lyra_local", "dream", "--loop", "300", "--quiet"], env=env,
                              cwd=REPO, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while not [i for i in sitrep(capsys).values() if i["kind"] == "dream" and i["state"] == "running"]:
            assert worker.poll() is None and time.monotonic() < deadline, (tmp_path / "worker.log").read_text()
            time.sleep(0.3)
        time.sleep(8)  # past stale_after_s (5 s): only heartbeats between passes keep it "running"
        dream = [i for i in sitrep(capsys).values() if i["kind"] == "dream"]
        assert [i["state"] for i in dream] == ["running"], dream
        assert dream[0]["summary"] == "lyra dream --loop 300"

        assert main(["restore", str(tmp_path / "b.db"), "--force"]) == 2
        err = capsys.readouterr().err
        assert f"pid {worker.pid} (dream {dream[0]['id']}: lyra dream --loop 300)" in err, err
        assert "--force does not override this" in err
        store = Store(data)
        assert [s.name for s in store.sessions.list()] == ["after the backup", "before the backup"]
        store.close()
        assert not list(tmp_path.glob("data-before-restore-*"))  # refused before touching anything
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=30)
        log.close()
    assert worker.returncode == 0, (tmp_path / "worker.log").read_text()
    assert sitrep(capsys)[dream[0]["id"]]["state"] == "done"

    assert main(["restore", str(tmp_path / "b.db"), "--force"]) == 0
    store = Store(data)
    assert [s.name for s in store.sessions.list()] == ["before the backup"]
    store.close()
    assert len(list(tmp_path.glob("data-before-restore-*"))) == 1
