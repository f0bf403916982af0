"""The household backup: the owner's whole-box backup, plainly marked as everyone's memory, refused
to anyone else, never written inside the data directory, and restored whole into a new, empty data directory."""

from __future__ import annotations

import io
import json
import os
import tarfile
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from lyra_local.cli import main
from lyra_local.config import Settings
from lyra_local.errors import LyraError
from lyra_local.llm.registry import Models
from lyra_local.store.household import Household
from lyra_local.web import create_app

from .conftest import MODELS_DIR
from .fakes import FakeChatModel, FakeEmbedder

CONFIG = '[companion]\nuser_name = "Ada"\n'
ADA, SAM = ("Ada", "ada-password-1"), ("Sam", "sam-password-1")


def app_for(settings: Settings) -> FastAPI:
    """The real app on fake models."""
    models = Models(settings, chat=FakeChatModel(), embed=FakeEmbedder())  # type: ignore[arg-type]
    return create_app(settings, models=models)


def chat(client: TestClient, text: str) -> None:
    done = client.post("/v1/chat/completions", json={"model": "lyra", "messages": [{"role": "user", "content": text}]})
    assert done.status_code == 200, done.text


def log_in(app: FastAPI, name: str, secret: str) -> TestClient:
    client = TestClient(app, base_url="http://127.0.0.1")
    assert client.post("/api/auth/login", json={"name": name, "secret": secret}).status_code == 200
    return client


@pytest.fixture
def household(make_settings: Callable[..., Settings]) -> Iterator[tuple[FastAPI, TestClient, TestClient]]:
    """Ada (the owner) and Sam, each with a conversation of their own; yields the app and both logged in."""
    app = app_for(make_settings(CONFIG))
    with TestClient(app, base_url="http://127.0.0.1") as ada:
        assert ada.put("/api/me/secret", json={"secret": ADA[1]}).status_code == 200
        added = ada.post("/api/people", json={"name": SAM[0], "kind": "adult", "secret": SAM[1]})
        assert added.status_code == 200, added.text
        sam = log_in(app, *SAM)
        chat(ada, "ADA-MARKER my roses need pruning")
        chat(sam, "SAM-MARKER my bike has a flat tyre")
        yield app, ada, sam


def members(data: bytes) -> dict[str, bytes]:
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        names = tar.getnames()
        got = {m.name: tar.extractfile(m).read() for m in tar.getmembers()}  # type: ignore[union-attr]
    assert names[:2] == ["README.txt", "manifest.json"]  # what it is comes first
    return got


def test_the_owner_downloads_everyone_marked_as_such_and_nobody_else_may(
        household: tuple[FastAPI, TestClient, TestClient], tmp_path: Path) -> None:
    app, ada, sam = household
    refused = sam.get("/api/household/backup")
    assert refused.status_code == 403 and refused.json()["error"]["type"] == "Forbidden", refused.text
    assert TestClient(app, base_url="http://127.0.0.1").get("/api/household/backup").status_code == 401

    got = ada.get("/api/household/backup")
    assert got.status_code == 200, got.text
    assert got.headers["content-type"] == "application/x-tar"
    assert f'filename="lyra-household-EVERYONE-{datetime.now():%Y-%m-%d}.tar"' in got.headers["content-disposition"]
    assert int(got.headers["content-length"]) == len(got.content)
    files = members(got.content)
    readme = files["README.txt"].decode()
    assert readme.startswith("THIS FILE HOLDS EVERYONE'S MEMORY.") and "Ada, Sam" in readme
    assert "lyra restore --household" in readme
    manifest = json.loads(files["manifest.json"])
    sam_id = next(p["id"] for p in manifest["people"] if p["name"] == "Sam")
    assert manifest["format"] == "lyra-household-backup" and manifest["made_by"] == "Ada"
    assert [(p["name"], p["owner"], p["memory"]) for p in manifest["people"]] == [
        ("Ada", True, "lyra.db"), ("Sam", False, f"people/{sam_id}/lyra.db")]
    assert set(files) == {"README.txt", "manifest.json", "household.db", "lyra.db", f"people/{sam_id}/lyra.db"}
    assert b"ADA-MARKER" in files["lyra.db"] and b"SAM-MARKER" not in files["lyra.db"]
    assert b"SAM-MARKER" in files[f"people/{sam_id}/lyra.db"] and b"ADA-MARKER" not in files[f"people/{sam_id}/lyra.db"]
    data_dir = app.state.lyra.settings.data_dir
    assert not [p for p in data_dir.rglob("*") if p.name.startswith(".backup-")]  # no copy stays behind


def test_a_household_backup_restores_the_whole_box_into_a_new_data_directory(
        household: tuple[FastAPI, TestClient, TestClient], tmp_path: Path,
        make_settings: Callable[..., Settings]) -> None:
    _, ada, _ = household
    backup = tmp_path / "box.tar"
    backup.write_bytes(ada.get("/api/household/backup").content)
    new_dir = tmp_path / "new-box"
    config = tmp_path / "lyra.toml"
    env = {"LYRA_DATA_DIR": str(new_dir), "LYRA_MODELS_DIR": str(MODELS_DIR)}
    with patched_env(env):
        assert main(["--config", str(config), "restore", "--household", str(backup)]) == 0
        assert main(["--config", str(config), "restore", "--household", str(backup)]) == 2  # never merged into
    restored = app_for(make_settings(CONFIG, LYRA_DATA_DIR=str(new_dir)))
    with TestClient(restored, base_url="http://127.0.0.1") as anonymous:
        assert anonymous.get("/api/sessions").status_code == 401  # two people: everyone logs in, as before
        for (name, secret), marker, other in ((ADA, "ADA-MARKER", "SAM-MARKER"), (SAM, "SAM-MARKER", "ADA-MARKER")):
            person = log_in(restored, name, secret)
            sessions = person.get("/api/sessions").json()["sessions"]
            assert len(sessions) == 1
            messages = person.get(f"/api/sessions/{sessions[0]['id']}/messages").text
            assert marker in messages and other not in messages
    assert not (new_dir / ".restoring").exists()


def test_lyra_backup_household_as_the_owner_only_and_never_inside_the_data_directory(
        household: tuple[FastAPI, TestClient, TestClient], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    app, _, _ = household
    data_dir = app.state.lyra.settings.data_dir
    config = tmp_path / "lyra.toml"
    sam = app.state.lyra.household.by_name("Sam")
    sams = app.state.lyra.household.tokens.create(sam.id, "cli")[1]  # proves --person Sam (people.prove)
    with patched_env({"LYRA_DATA_DIR": str(data_dir), "LYRA_MODELS_DIR": str(MODELS_DIR), "LYRA_TOKEN": sams}):
        assert main(["--config", str(config), "--person", "Sam", "backup", "--household", str(tmp_path / "out")]) == 2
        assert "only the owner" in capsys.readouterr().err
    with patched_env({"LYRA_DATA_DIR": str(data_dir), "LYRA_MODELS_DIR": str(MODELS_DIR)}):
        assert main(["--config", str(config), "backup", "--household", str(data_dir / "backups")]) == 2
        assert "inside the data directory" in capsys.readouterr().err
        assert main(["--config", str(config), "backup", "--household", str(tmp_path / "out")]) == 0
        first = capsys.readouterr().out
        assert main(["--config", str(config), "backup", "--household", str(tmp_path / "out")]) == 0
    name = f"lyra-household-EVERYONE-{datetime.now():%Y-%m-%d}"
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [f"{name}.tar", f"{name}~2.tar"]  # never overwritten
    assert "EVERYONE's memory" in first and "(2 people)" in first
    files = members((tmp_path / "out" / f"{name}.tar").read_bytes())
    assert b"SAM-MARKER" in b"".join(files.values()) and b"ADA-MARKER" in files["lyra.db"]
    assert not (data_dir / "backups").exists()
    assert not [p for p in data_dir.rglob("*") if p.name.startswith(".backup-")]


def test_restore_household_refuses_what_is_not_a_household_backup(tmp_path: Path) -> None:
    from lyra_local.transfer.household_backup import HouseholdBackupError, restore_household

    plain = tmp_path / "plain.tar"
    with tarfile.open(plain, "w") as tar:
        info = tarfile.TarInfo("../escape.db")
        info.size = 3
        tar.addfile(info, io.BytesIO(b"abc"))
    with pytest.raises(HouseholdBackupError, match="not a household backup"):
        restore_household(plain, tmp_path / "new")
    forged = tmp_path / "forged.tar"
    manifest = json.dumps({"format": "lyra-household-backup", "version": 1}).encode()
    with tarfile.open(forged, "w") as tar:
        for name, data in (("manifest.json", manifest), ("household.db", b"x"), ("../escape.db", b"abc")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    with pytest.raises(HouseholdBackupError, match="'../escape.db', which no household backup holds"):
        restore_household(forged, tmp_path / "new")
    assert not (tmp_path / "escape.db").exists() and not (tmp_path / "new" / "household.db").exists()
    damaged = tmp_path / "damaged.tar"
    with tarfile.open(damaged, "w") as tar:
        for name, data in (("manifest.json", manifest), ("household.db", b"not a database at all")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    with pytest.raises(LyraError, match="household.db is not a Lyra database"):
        restore_household(damaged, tmp_path / "new")
    assert sorted(p.name for p in (tmp_path / "new").iterdir()) == [".lock"]  # nothing placed, no staging left
    Household(tmp_path / "used").close()
    with pytest.raises(HouseholdBackupError, match="already holds a memory"):
        restore_household(forged, tmp_path / "used")


class patched_env:
    """``os.environ`` with ``env`` and no other LYRA_* variable, for the length of a block."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.saved: dict[str, str] = {}

    def __enter__(self) -> None:
        self.saved = dict(os.environ)
        for name in [n for n in os.environ if n.startswith("LYRA_")]:
            del os.environ[name]
        os.environ.update(self.env)

    def __exit__(self, *exc: object) -> None:
        os.environ.clear()
        os.environ.update(self.saved)
