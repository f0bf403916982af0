"""Settings → Models' edit of lyra.toml, as pure text in and text out (no model, no server)."""

from __future__ import annotations

import os
import stat
import tomllib
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from lyra_local.config import SameAs, ServerModel, settings_from_text
from lyra_local.config_edit import ModelChoices, edit_models, env_overrides
from lyra_local.errors import BadRequest
from lyra_local.fsutil import replace_text

PERSONS_FILE = """\
# my lyra, on the laptop
data_dir = "data"                   # next to this file
models_dir = "models"

[companion]
name = "Vega"                       # she chose it

[models.chat]                       # replies to you
backend = "local"                   # in-process llama-cpp-python
path = "SmolLM2-135M-Instruct.Q4_1.gguf"
n_ctx = 2048
n_gpu_layers = 0                    # -1 offloads every layer to the GPU
n_threads = 4                       # leave two cores to the desktop
[models.chat.sampling]
temperature = 0.3

[models.summary]                    # gists, digests, reflection
backend = "server"
base_url = "http://gpu-box:8080"
model = "qwen2.5-7b-instruct"
api_key = "a-key-for-the-gpu-box"
read_timeout_s = 120
[models.summary.retry]
max_attempts = 3

[models.embed]                      # vectors for recall
path = "all-MiniLM-L6-v2.F16.gguf"
n_ctx = 512

[models.rerank]
path = "bge-reranker-v2-m3-Q8_0.gguf"
n_gpu_layers = -1

[dream]
enabled = false                     # not on battery
"""
ENV = {"LYRA_DREAM__ENABLED": "false"}


def choose(**roles: Any) -> ModelChoices:
    return ModelChoices.model_validate(roles)


def read(text: str) -> dict[str, Any]:
    return tomllib.loads(text)


def without(data: dict[str, Any], *roles: str) -> dict[str, Any]:
    return {**data, "models": {k: v for k, v in data["models"].items() if k not in roles}}


def loads_as_settings(text: str, tmp_path: Path, env: dict[str, str] | None = None) -> Any:
    """The settings lyra would read from ``text`` in ``tmp_path/lyra.toml`` (the real loader, env overlay and all)."""
    return settings_from_text(text, tmp_path / "lyra.toml", {**ENV, **(env or {})})


def test_a_new_file_for_the_chat_model_keeps_every_comment_and_every_other_key() -> None:
    out = edit_models(PERSONS_FILE, choose(chat={"file": "Qwen2.5-7B-Instruct-Q4_K_M.gguf", "n_ctx": 8192,
                                                 "n_gpu_layers": -1}))
    for line in PERSONS_FILE.splitlines():
        if "#" in line and "n_gpu_layers" not in line:
            assert line in out  # the comment lines, and keys with their comments, exactly as they were
    assert "n_gpu_layers = -1                    # -1 offloads every layer to the GPU" in out  # value new, comment kept
    chat = read(out)["models"]["chat"]
    assert chat == {"backend": "local", "path": "Qwen2.5-7B-Instruct-Q4_K_M.gguf", "n_ctx": 8192, "n_gpu_layers": -1,
                    "n_threads": 4, "sampling": {"temperature": 0.3}}  # same backend: n_threads and sampling stay
    assert without(read(out), "chat") == without(read(PERSONS_FILE), "chat")


def test_leaving_out_context_and_layers_keeps_the_roles_own() -> None:
    out = edit_models(PERSONS_FILE, choose(embed={"file": "bge-base-en-v1.5-f16.gguf"}))
    assert read(out)["models"]["embed"] == {"path": "bge-base-en-v1.5-f16.gguf", "n_ctx": 512}
    assert out.replace("bge-base-en-v1.5-f16.gguf", "all-MiniLM-L6-v2.F16.gguf") == PERSONS_FILE


def test_switching_a_role_to_a_local_file_leaves_no_key_of_the_server(tmp_path: Path) -> None:
    out = edit_models(PERSONS_FILE, choose(summary={"file": "SmolLM2-135M-Instruct.Q4_1.gguf", "n_ctx": 4096}))
    assert read(out)["models"]["summary"] == {"backend": "local", "path": "SmolLM2-135M-Instruct.Q4_1.gguf",
                                               "n_ctx": 4096}
    assert "api_key" not in out and "gpu-box" not in out and "max_attempts" not in out
    assert "[models.summary]                    # gists, digests, reflection" in out  # where it was, with its comment
    assert loads_as_settings(out, tmp_path).resolved_summary().n_ctx == 4096  # and lyra reads it


def test_switching_a_role_to_a_server_leaves_no_key_of_the_local_model(tmp_path: Path) -> None:
    out = edit_models(PERSONS_FILE, choose(chat={"base_url": "http://gpu-box:8081/v1/", "model": "llama-3.1-8b"}))
    assert read(out)["models"]["chat"] == {"backend": "server", "base_url": "http://gpu-box:8081",
                                           "model": "llama-3.1-8b"}  # and no sampling, no n_threads
    chat = loads_as_settings(out, tmp_path).models.chat
    assert isinstance(chat, ServerModel) and chat.base_url == "http://gpu-box:8081"


def test_another_server_for_a_server_role_keeps_its_key_timeouts_and_retries() -> None:
    out = edit_models(PERSONS_FILE, choose(summary={"base_url": "https://gpu-2:8443", "model": "mistral"}))
    assert read(out)["models"]["summary"] == {
        "backend": "server", "base_url": "https://gpu-2:8443", "model": "mistral", "api_key": "a-key-for-the-gpu-box",
        "read_timeout_s": 120, "retry": {"max_attempts": 3}}


def test_summary_same_as_chat_and_rerank_off(tmp_path: Path) -> None:
    out = edit_models(PERSONS_FILE, choose(summary={"same_as": "chat"}, rerank={"off": True}))
    models = read(out)["models"]
    assert models["summary"] == {"same_as": "chat"} and "rerank" not in models
    assert "bge-reranker" not in out and "gpu-box" not in out
    settings = loads_as_settings(out, tmp_path)
    assert isinstance(settings.models.summary, SameAs) and settings.summary_shares_chat()
    assert settings.roles() == ("chat", "summary", "embed")
    assert edit_models(out, choose(rerank={"off": True})) == out  # already off: nothing to do


def test_a_new_file_holds_only_the_choice_and_says_what_it_is(tmp_path: Path) -> None:
    out = edit_models(None, choose(chat={"file": "copy.gguf", "n_ctx": 1024, "n_gpu_layers": 0},
                                   rerank={"file": "rerank.gguf"}))
    assert out.startswith("# Lyra's configuration")
    assert read(out) == {"models": {"chat": {"backend": "local", "path": "copy.gguf", "n_ctx": 1024, "n_gpu_layers": 0},
                                    "rerank": {"backend": "local", "path": "rerank.gguf"}}}
    settings = loads_as_settings(out, tmp_path)
    assert settings.models.embed.backend == "local" and settings.summary_shares_chat()  # the rest: defaults


@pytest.mark.parametrize("text", [
    'models.chat.path = "old.gguf"\nmodels.chat.n_ctx = 1024\n[server]\nport = 8001\n',  # dotted keys
    '[models.chat]\npath = "old.gguf"\n[dream]\nenabled = false\n[models.chat.sampling]\ntemperature = 0.2\n',
    '[models]\nchat = { path = "old.gguf", n_ctx = 1024 }\nembed = { path = "e.gguf" }\n',  # inline tables
    '[models.chat.sampling]\ntemperature = 0.2\n',  # the role's table only implied
    "",
])
def test_every_layout_reads_back_as_chosen(text: str) -> None:
    """tomlkit misplaces keys in some layouts; the edit is read back, and rewritten when it would read wrong."""
    choices = choose(chat={"file": "new.gguf", "n_gpu_layers": 2}, summary={"same_as": "chat"})
    before = read(text)
    after = read(edit_models(text, choices))
    chat = {"backend": "local", **before.get("models", {}).get("chat", {})}  # a new table says its backend
    assert {"backend": "local", **after["models"]["chat"]} == {**chat, "path": "new.gguf", "n_gpu_layers": 2}
    assert after["models"]["summary"] == {"same_as": "chat"}
    assert {k: v for k, v in after.items() if k != "models"} == {k: v for k, v in before.items() if k != "models"}
    rest = {k: v for k, v in before.get("models", {}).items() if k not in ("chat", "summary")}
    assert {k: v for k, v in after["models"].items() if k not in ("chat", "summary")} == rest


@pytest.mark.parametrize("name", ["../secret.gguf", "sub/model.gguf", "/etc/passwd", "..\\x.gguf", "..", "",
                                  "model.bin", "model.gguf.partial", ".hidden.gguf", "x\n.gguf"])
def test_anything_but_a_plain_gguf_name_is_refused(name: str) -> None:
    with pytest.raises(BadRequest) as refused:
        edit_models(PERSONS_FILE, choose(chat={"file": name}))
    assert refused.value.status_code == 400 and "/api/models/files" in (refused.value.hint or "")


@pytest.mark.parametrize("url", ["ftp://gpu-box:8080", "gpu-box:8080", "file:///etc/passwd", ""])
def test_a_model_server_is_reached_over_http_only(url: str) -> None:
    with pytest.raises(BadRequest, match="must start with http:// or https://"):
        edit_models(PERSONS_FILE, choose(embed={"base_url": url, "model": "bge"}))


@pytest.mark.parametrize("roles", [
    {"chat": {"same_as": "chat"}},  # only summary may share chat's model
    {"embed": {"off": True}},  # only the re-ranker is optional
    {"rerank": {"off": False}},
    {"voice": {"file": "x.gguf"}},  # no such role
    {"chat": {"path": "x.gguf"}},  # neither a file nor a server
    {"chat": {"file": "x.gguf", "n_ctx": "4096"}},  # strict: a number is a number
    {"chat": {"file": "x.gguf", "base_url": "http://x"}},  # one or the other
    {"chat": {"base_url": "http://x"}},  # a server needs its model's name
])
def test_a_choice_of_the_wrong_shape_is_refused_before_anything_else(roles: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        choose(**roles)


def test_an_environment_variable_that_overrides_the_choice_is_named(tmp_path: Path) -> None:
    choices = choose(chat={"file": "copy.gguf", "n_ctx": 4096}, rerank={"off": True})
    out = edit_models(PERSONS_FILE, choices)
    env = {"LYRA_MODELS__CHAT__N_CTX": "1024", "LYRA_MODELS__CHAT__N_THREADS": "2",
           "LYRA_MODELS__RERANK__PATH": "kept.gguf", "LYRA_MODELS__EMBED__N_CTX": "256"}
    candidate = loads_as_settings(out, tmp_path, env)
    assert env_overrides(choices, candidate, {**ENV, **env}) == [
        "LYRA_MODELS__CHAT__N_CTX", "LYRA_MODELS__CHAT__N_THREADS", "LYRA_MODELS__RERANK__PATH"]
    agreeing = {"LYRA_MODELS__CHAT__N_CTX": "4096", "LYRA_MODELS__CHAT__N_THREADS": "2"}
    assert env_overrides(choices, loads_as_settings(out, tmp_path, agreeing), agreeing) == []


def test_relative_folders_in_a_candidate_resolve_against_the_file_it_will_be(tmp_path: Path) -> None:
    settings = settings_from_text(PERSONS_FILE, tmp_path / "conf" / "lyra.toml", ENV)
    assert settings.models_dir == tmp_path / "conf" / "models" and settings.data_dir == tmp_path / "conf" / "data"
    assert settings.config_file == tmp_path / "conf" / "lyra.toml"


def test_the_file_is_replaced_whole_with_its_permissions_and_through_a_symlink(tmp_path: Path) -> None:
    real = tmp_path / "dotfiles" / "lyra.toml"
    real.parent.mkdir()
    real.write_text("old\n")
    real.chmod(0o640)
    link = tmp_path / "lyra.toml"
    link.symlink_to(real)
    replace_text(link, "new\n")
    assert link.is_symlink() and real.read_text() == "new\n" and stat.S_IMODE(real.stat().st_mode) == 0o640
    assert sorted(os.listdir(real.parent)) == ["lyra.toml"]  # no temporary file left behind
    created = tmp_path / "xdg" / "lyra" / "lyra.toml"
    replace_text(created, "fresh\n")  # the folder is made; a new config may hold a token: only its owner reads it
    assert created.read_text() == "fresh\n" and stat.S_IMODE(created.stat().st_mode) == 0o600


def test_two_dots_inside_a_plain_name_are_a_name_not_a_step_up() -> None:
    assert 'path = "llama-3..Q4_K_M.gguf"' in edit_models(PERSONS_FILE, choose(chat={"file": "llama-3..Q4_K_M.gguf"}))
