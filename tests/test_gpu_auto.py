"""``n_gpu_layers = "auto"``, the default of the local roles: resolved for every role together when a model
loads, said in the log and by `lyra doctor`; -1/0/N keep their meaning; Settings → Models keeps "auto"."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest

from lyra_local.config import LocalModel, settings_from_text
from lyra_local.config_edit import ModelChoices, edit_models
from lyra_local.errors import ConfigError
from lyra_local.llm.local import LocalChatModel, gpu_offload_supported
from lyra_local.llm.registry import Models, catalog_ctx, catalog_fits, describe_offload, offload_plan
from lyra_local.modelfiles import devices, fit
from lyra_local.modelfiles.catalog import load_catalog

from .conftest import CHAT_GGUF, MODELS_DIR, base_env, require_file

TWELVE_GB = json.dumps([{"name": "RTX 4070", "total_mib": 12282, "free_mib": 11500}])


def settings(toml: str = "", **env: str):  # type: ignore[no-untyped-def]
    return settings_from_text(toml, None, {"LYRA_DATA_DIR": "/tmp/lyra-gpu-auto", "LYRA_MODELS_DIR": str(MODELS_DIR),
                                           **env})


def test_auto_is_the_default_of_local_roles_and_numbers_keep_their_meaning() -> None:
    default = settings()
    for role in ("chat", "embed"):
        spec = default.role_spec(role)
        assert isinstance(spec, LocalModel) and spec.n_gpu_layers == "auto"
    chosen = settings("[models.chat]\nn_gpu_layers = -1\n[models.embed]\nn_gpu_layers = 0\n",
                      LYRA_MODELS__CHAT__N_CTX="4096")
    assert (chosen.models.chat.n_gpu_layers, chosen.models.embed.n_gpu_layers) == (-1, 0)  # type: ignore[union-attr]
    assert settings(LYRA_MODELS__CHAT__N_GPU_LAYERS="12").models.chat.n_gpu_layers == 12  # type: ignore[union-attr]
    assert settings('[models.chat]\nn_gpu_layers = "auto"\n').models.chat.n_gpu_layers == "auto"  # type: ignore[union-attr]
    for wrong in ("-2", "all", "1.5", "true"):
        with pytest.raises(ConfigError) as refused:
            settings(LYRA_MODELS__CHAT__N_GPU_LAYERS=wrong)
        assert ('models.chat.n_gpu_layers: Value error, must be "auto" (as many layers as fit), -1 (all), 0 (none) '
                "or a number of layers (from LYRA_MODELS__CHAT__N_GPU_LAYERS)") in refused.value.message


def test_settings_models_apply_writes_and_keeps_auto() -> None:
    text = '[models.chat]\npath = "a.gguf"\nn_gpu_layers = 0  # on the CPU\n'
    out = edit_models(text, ModelChoices.model_validate({"chat": {"file": "b.gguf", "n_gpu_layers": "auto"}}))
    assert 'n_gpu_layers = "auto"  # on the CPU' in out
    kept = edit_models(out, ModelChoices.model_validate({"chat": {"file": "c.gguf"}}))
    assert 'n_gpu_layers = "auto"' in kept and 'path = "c.gguf"' in kept
    with pytest.raises(ValueError):
        ModelChoices.model_validate({"chat": {"file": "b.gguf", "n_gpu_layers": "all"}})


@pytest.mark.models  # reads the default models' headers
def test_the_plan_places_every_local_role_on_a_made_up_gpu() -> None:
    require_file(CHAT_GGUF)
    machine = devices.probe({devices.FAKE_DEVICES_ENV: TWELVE_GB})
    plan = offload_plan(settings(), machine)
    assert set(plan) == {"chat", "summary", "embed"}
    assert plan["chat"].n_gpu_layers == plan["embed"].n_gpu_layers == -1
    assert plan["chat"].reason.startswith("auto → 31 of 31 layers on the RTX 4070 (")
    assert "2,048-token KV cache" in plan["chat"].reason
    assert plan["embed"].reason.startswith("auto → 7 of 7 layers on the RTX 4070 (") and "no KV cache" in plan[
        "embed"].reason
    assert plan["summary"].reason == f"chat's model: {plan['chat'].reason}"
    fixed = offload_plan(settings(LYRA_MODELS__EMBED__N_GPU_LAYERS="0"), machine)
    assert (fixed["embed"].n_gpu_layers, fixed["embed"].auto) == (0, False)
    # what the others take, to size a chat model to choose: the summary on chat's model goes with it
    others = offload_plan(settings(), machine, without=("chat",))
    assert set(others) == {"embed"}
    assert fit.gpu_bytes(others) == others["embed"].placement.gpu_bytes > 0  # type: ignore[union-attr]
    chat_bytes = plan["chat"].placement.gpu_bytes  # type: ignore[union-attr]
    assert fit.gpu_bytes(plan) == fit.gpu_bytes(others) + chat_bytes  # chat's model counted once, not twice


@pytest.mark.models  # reads the default models' headers
def test_the_catalog_is_sized_at_each_roles_context_beside_the_other_roles() -> None:
    """`lyra models catalog` and Settings → Models read the same ``catalog_fits``: each entry at its role's
    n_ctx (a server's too), never beyond the model's trained context, in what the other roles leave."""
    require_file(CHAT_GGUF)
    machine = devices.probe({devices.FAKE_DEVICES_ENV: TWELVE_GB})
    chosen = settings('[models.rerank]\nbackend = "server"\nbase_url = "http://127.0.0.1:9"\nn_ctx = 1024\n',
                      LYRA_MODELS__CHAT__N_CTX="65536")
    for entry, placement in catalog_fits(chosen, machine):
        n_ctx = {"chat": 65536, "embed": chosen.role_spec("embed").n_ctx, "rerank": 1024}[entry.role]
        assert catalog_ctx(chosen, entry) == min(n_ctx, entry.context_length), entry.name
        used = fit.gpu_bytes(offload_plan(chosen, machine, without=(entry.role,)))
        assert used > 0 and placement == fit.place(fit.need_of_entry(entry, catalog_ctx(chosen, entry)), machine,
                                                   gpu_used=used), entry.name
    alone = dict(catalog_fits(None, machine, n_ctx=4096))
    assert all(p == fit.place(fit.need_of_entry(e, 4096), machine) for e, p in alone.items())


@pytest.mark.models
def test_auto_on_this_build_is_what_its_offload_allows(caplog: pytest.LogCaptureFixture) -> None:
    require_file(CHAT_GGUF)
    offload = gpu_offload_supported()
    described = describe_offload(settings())
    if not offload:
        assert described == {role: ("chat's model: " if role == "summary" else "")
                             + "auto → 0: this llama.cpp build has no GPU offload"
                             for role in ("chat", "summary", "embed")}
    models = Models(settings())
    try:
        chat = models.chat
        assert isinstance(chat, LocalChatModel)
        with caplog.at_level(logging.INFO, logger="lyra_local.llm.local"):
            chat.load()  # the real model, with what auto chose
        said = [r.getMessage() for r in caplog.records if "n_gpu_layers" in r.getMessage()]
        assert said == [f"models.chat: n_gpu_layers {described['chat']}"]
        assert chat.count_tokens("hello") > 0
    finally:
        models.close()


@pytest.mark.models
def test_a_model_loaded_alone_resolves_auto_for_itself(caplog: pytest.LogCaptureFixture) -> None:
    spec = settings().models.chat
    assert isinstance(spec, LocalModel)
    model = LocalChatModel(require_file(CHAT_GGUF), spec)  # outside a registry, as the test fixtures build it
    with caplog.at_level(logging.INFO, logger="lyra_local.llm.local"):
        layers = model._model.gpu_layers()
    assert layers == (0 if not gpu_offload_supported() else -1)
    assert any("models.chat: n_gpu_layers auto → " in r.getMessage() for r in caplog.records)


def run_doctor(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    full = {**base_env(tmp_path), "LYRA_DATA_DIR": str(tmp_path / "data"), "LYRA_MODELS_DIR": str(MODELS_DIR),
            "LYRA_DREAM__ENABLED": "false", **env}
    return subprocess.run([sys.executable, "-m", "lyra_local", "doctor", "--no-load"], env=full,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.slow
@pytest.mark.models
def test_doctor_reports_the_machine_what_auto_chose_and_a_model_for_it(tmp_path: Path) -> None:
    require_file(CHAT_GGUF)
    done = run_doctor(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    if not gpu_offload_supported():
        assert "[ok] models.chat n_gpu_layers: auto → 0: this llama.cpp build has no GPU offload" in done.stdout
        assert "[ok] models.embed n_gpu_layers: auto → 0: this llama.cpp build has no GPU offload" in done.stdout
    else:
        assert "[ok] models.chat n_gpu_layers: auto → 31 of 31 layers on " in done.stdout
    assert "[ok] machine: " in done.stdout
    assert "[warn] chat model: the chat model is the demo model (SmolLM2-135M-Instruct.Q4_1.gguf)" in done.stdout
    assert "`lyra models pull " in done.stdout

    what_if = run_doctor(tmp_path, LYRA_GPU_DEVICES=TWELVE_GB)
    assert what_if.returncode == 0, what_if.stdout + what_if.stderr
    assert "[ok] machine: RTX 4070, 12 GB (11 GB free) (from LYRA_GPU_DEVICES (made up" in what_if.stdout
    assert "[ok] models.chat n_gpu_layers: auto → 31 of 31 layers on the RTX 4070 (" in what_if.stdout
    advice = next(line for line in what_if.stdout.splitlines() if "[warn] chat model:" in line)
    assert "fits your 12 GB GPU" in advice
    named = next(entry for entry in load_catalog() if f"pull {entry.name}`" in advice)
    assert f"{named.size / 1e9:.1f} GB download" in advice  # a file's size in decimal GB, as the download shows

    small = json.dumps([{"name": "Tiny GPU", "total_mib": 1024, "free_mib": 960}])  # 192 MiB beyond the margin
    crowded = run_doctor(tmp_path, LYRA_GPU_DEVICES=small)
    assert "[ok] models.embed n_gpu_layers: auto → 7 of 7 layers on the Tiny GPU" in crowded.stdout
    partly = next(line for line in crowded.stdout.splitlines() if "models.chat n_gpu_layers" in line)
    assert partly.startswith("  [warn] models.chat n_gpu_layers: auto → ") and " of 31 layers on the Tiny GPU" in partly
    assert "fix: a smaller model or quantization, or a shorter n_ctx" in crowded.stdout

    chosen = tmp_path / "lyra.toml"
    chosen.write_text('[models.chat]\npath = "SmolLM2-135M-Instruct.Q4_1.gguf"\nn_gpu_layers = 0\n'
                      "[models.embed]\nn_gpu_layers = 0\n")
    fixed = run_doctor(tmp_path, LYRA_CONFIG=str(chosen))
    assert "n_gpu_layers: auto" not in fixed.stdout  # only what auto chose is reported


def test_a_model_that_fits_only_partly_says_so_louder(caplog: pytest.LogCaptureFixture) -> None:
    spec = settings().models.chat
    assert isinstance(spec, LocalModel)
    partly = fit.Offload("chat", 20, True, fit.Placement("partial", 20, 31, 1, "partly on the GPU (20 of 31 layers)"),
                         "auto → 20 of 31 layers on the RTX 4070 (…)")
    model = LocalChatModel(MODELS_DIR / "any.gguf", spec, offload=partly)  # the registry's choice, nothing loaded
    with caplog.at_level(logging.INFO, logger="lyra_local.llm.local"):
        assert model._model.gpu_layers() == 20
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [
        (logging.WARNING, "models.chat: n_gpu_layers auto → 20 of 31 layers on the RTX 4070 (…)")]
