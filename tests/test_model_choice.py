"""PUT /api/models/choice on the real app and the real tiny models: a choice that loads is written to lyra.toml
and serves the next turn; one that cannot load leaves lyra.toml byte for byte as it was and the old model
answering."""

from __future__ import annotations

import os
import shutil
import stat
import tomllib
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from lyra_local.config import load_settings
from lyra_local.web import create_app, model_choice

from .conftest import CHAT_GGUF, EMBED_GGUF, free_port, require_file

pytestmark = pytest.mark.models  # every test here loads the tiny chat model into the app

PERSONS_FILE = """\
# the laptop's lyra
data_dir = "data"                   # next to this file, like models/
models_dir = "models"

[models.chat]                       # replies to you
path = "SmolLM2-135M-Instruct.Q4_1.gguf"
n_ctx = 2048                        # enough for the tests
[models.chat.sampling]
temperature = 0.0
max_tokens = 8
"""
CHOICE = {"file": "copy.gguf", "n_ctx": 1024, "n_gpu_layers": 0}


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return persons_folder(tmp_path, monkeypatch)


def persons_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A person's folder: models/ with the two default GGUFs, no LYRA_* from the shell, a private config home."""
    models = tmp_path / "models"
    models.mkdir()
    for gguf in (require_file(CHAT_GGUF), require_file(EMBED_GGUF)):
        (models / gguf.name).symlink_to(gguf)
    for name in [name for name in os.environ if name.startswith("LYRA_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("LYRA_DREAM__ENABLED", "false")  # no dream pass using the models in the background
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def serve(config: Path | None) -> TestClient:
    """The real app, its models built from the settings as `lyra serve` builds them."""
    return TestClient(create_app(load_settings(config)), base_url="http://127.0.0.1")


def answers(client: TestClient) -> str:
    """A chat turn through the OpenAI-compatible API, and the stem of the model file that wrote it."""
    resp = client.post("/v1/chat/completions", json={"messages": [{"role": "user", "content": "Say hello."}],
                                                     "max_tokens": 8, "temperature": 0.0})
    assert resp.status_code == 200, resp.text
    assert resp.json()["choices"][0]["message"]["content"].strip()
    return str(client.get("/v1/models").json()["data"][0]["root"])


def choose(client: TestClient, **roles: Any) -> Any:
    return client.put("/api/models/choice", json={"roles": roles})


def test_a_copy_under_another_name_is_written_to_lyra_toml_and_answers_the_next_turn(
        home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copyfile(CHAT_GGUF, home / "models" / "copy.gguf")
    config = home / "lyra.toml"
    config.write_text(PERSONS_FILE)
    config.chmod(0o640)
    monkeypatch.setenv("LYRA_MODELS__CHAT__N_THREADS", "2")  # a variable the choice does not touch is no conflict
    with serve(config) as client:
        resp = choose(client, chat=CHOICE)
        assert resp.status_code == 200, resp.text
        body = resp.json()
        assert body["status"] == "applied" and body["config_file"] == str(config)
        assert body["roles"]["chat"] == {"backend": "local", "model": "copy.gguf", "path": str(home / "models" /
                                         "copy.gguf"), "n_ctx": 1024, "n_gpu_layers": 0}
        assert body["roles"]["summary"]["shared_with"] == "chat"
        written = config.read_text()
        assert "# the laptop's lyra" in written and "[models.chat]                       # replies to you" in written
        chat = tomllib.loads(written)["models"]["chat"]
        assert chat == {"path": "copy.gguf", "n_ctx": 1024, "n_gpu_layers": 0,
                        "sampling": {"temperature": 0.0, "max_tokens": 8}}
        assert stat.S_IMODE(config.stat().st_mode) == 0o640
        assert answers(client) == "copy"
        assert client.get("/api/settings").json()["roles"]["chat"]["model"] == "copy.gguf"
        assert client.post("/admin/reload").status_code == 200  # a later reload reads the file written
        assert client.app.state.lyra.settings.models.chat.path == Path("copy.gguf")  # type: ignore[attr-defined]


def html_page(path: Path) -> None:
    path.write_text("<!DOCTYPE html><html><body>Not Found</body></html>")


def first_megabyte(path: Path) -> None:
    with CHAT_GGUF.open("rb") as whole:
        path.write_bytes(whole.read(1 << 20))


@pytest.mark.parametrize("choice, make, says", [
    ({"file": "cut.gguf"}, first_megabyte, "is incomplete"),
    ({"file": "page.gguf"}, html_page, "is not a GGUF model file"),
    ({"file": "elsewhere.gguf"}, None, "elsewhere.gguf is not in"),
    ({"file": "../models/SmolLM2-135M-Instruct.Q4_1.gguf"}, None, "is a path"),
    ({"base_url": "http://127.0.0.1:{port}", "model": "nobody"}, None, "unreachable"),
    ({"base_url": "file:///etc/passwd", "model": "x"}, None, "must start with http:// or https://"),
    ({"file": "SmolLM2-135M-Instruct.Q4_1.gguf", "n_ctx": 10}, None, "models.chat.n_ctx"),
])
def test_a_choice_that_cannot_serve_leaves_lyra_toml_untouched_and_the_old_model_answering(
        home: Path, choice: dict[str, Any], make: Any, says: str) -> None:
    if make is not None:
        make(home / "models" / choice["file"])
    if "base_url" in choice:
        choice = {**choice, "base_url": choice["base_url"].format(port=free_port())}
    config = home / "lyra.toml"
    config.write_text(PERSONS_FILE)
    with serve(config) as client:
        assert answers(client) == "SmolLM2-135M-Instruct.Q4_1"
        state = client.app.state.lyra  # type: ignore[attr-defined]
        running = state.models
        resp = choose(client, chat=choice, rerank={"off": True})
        assert resp.status_code == 400, resp.text
        error = resp.json()["error"]
        assert error["message"].startswith(f"not applied ({config} is unchanged, the running models keep serving)")
        assert says in error["message"] and "status" not in resp.json()
        assert config.read_bytes() == PERSONS_FILE.encode()
        assert sorted(os.listdir(home)) == ["data", "lyra.toml", "models"]  # no temporary file left either
        assert state.models is running and not running.retired
        assert answers(client) == "SmolLM2-135M-Instruct.Q4_1"


def test_an_environment_variable_overriding_the_choice_is_refused_by_name(
        home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copyfile(CHAT_GGUF, home / "models" / "copy.gguf")
    config = home / "lyra.toml"
    config.write_text(PERSONS_FILE)
    monkeypatch.setenv("LYRA_MODELS__CHAT__N_CTX", "512")
    with serve(config) as client:
        running = client.app.state.lyra.models  # type: ignore[attr-defined]
        resp = choose(client, chat=CHOICE)
        assert resp.status_code == 409, resp.text
        error = resp.json()["error"]
        assert "LYRA_MODELS__CHAT__N_CTX" in error["message"] and "environment" in error["hint"]
        assert config.read_bytes() == PERSONS_FILE.encode()
        assert client.app.state.lyra.models is running  # type: ignore[attr-defined]


def test_a_config_file_that_cannot_be_written_refuses_before_any_model_loads(
        home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copyfile(CHAT_GGUF, home / "models" / "copy.gguf")
    config = home / "lyra.toml"
    config.write_text(PERSONS_FILE)
    with serve(config) as client:
        running = client.app.state.lyra.models  # type: ignore[attr-defined]
        # as Docker's read-only /config mount answers (root passes permission bits, so access() is what says it)
        monkeypatch.setattr(model_choice.os, "access", lambda path, mode: Path(path) != config)
        resp = choose(client, chat=CHOICE)
        assert resp.status_code == 400, resp.text
        assert "cannot be written here" in resp.json()["error"]["message"]
        assert config.read_bytes() == PERSONS_FILE.encode()
        assert client.app.state.lyra.models is running  # type: ignore[attr-defined]


def test_with_no_config_file_the_choice_creates_one_in_the_user_config_folder(
        home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copyfile(CHAT_GGUF, home / "models" / "copy.gguf")
    monkeypatch.setenv("LYRA_MODELS_DIR", str(home / "models"))
    monkeypatch.setenv("LYRA_DATA_DIR", str(home / "data"))
    target = home / "xdg" / "lyra" / "lyra.toml"
    with serve(None) as client:
        shown = client.get("/api/settings").json()
        assert shown["config_file"] is None and shown["config_file_target"] == str(target)
        resp = choose(client, chat=CHOICE)
        assert resp.status_code == 200, resp.text
        assert resp.json()["config_file"] == str(target)
        assert tomllib.loads(target.read_text()) == {"models": {"chat": {"backend": "local", "path": "copy.gguf",
                                                                         "n_ctx": 1024, "n_gpu_layers": 0}}}
        assert stat.S_IMODE(target.stat().st_mode) == 0o600
        shown = client.get("/api/settings").json()
        assert shown["config_file"] == shown["config_file_target"] == str(target)
        assert client.post("/admin/reload").status_code == 200  # reads the new file, the environment still on top
        settings = client.app.state.lyra.settings  # type: ignore[attr-defined]
        assert settings.config_file == target and settings.models.chat.path == Path("copy.gguf")
        assert settings.models_dir == home / "models"
