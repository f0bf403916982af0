"""The catalog of known-good models, and what a name given to ``lyra models pull`` points at.

The entries are data (``catalog.toml``, shipped in the package): one per GGUF file, each with its Hugging Face
repository, file, commit, size and sha256 as the repository's own LFS metadata records them, and the architecture
shape the GPU-memory estimate needs before the file is here. Every figure is real or absent, never guessed: an
entry without a sha256 is checked against the server's own LFS hash at download (``pull.py``). Loading checks
every entry strictly: a bad one is a bug in the package, so it fails loudly, naming the entry and the field.

``resolve`` turns what a person typed (a catalog name, or ``owner/repo:File.gguf`` with an optional ``@revision``)
into a ``PullTarget``; anything else is refused with the closest catalog names.

This module never touches the network or the models folder: it reads the package's own data and parses names.
"""

from __future__ import annotations

import difflib
import re
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

from ..errors import LyraError, NotFound
from ..roles import FILE_ROLES

POOLINGS = ("cls", "mean", "rank")
QUANTIZATIONS = ("Q4_K_M", "Q5_K_M", "Q6_K", "Q8_0", "F16", "BF16", "F32")

_NAME = re.compile(r"[a-z0-9][a-z0-9.\-]*")
_REPO = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]*/[A-Za-z0-9][A-Za-z0-9_.\-]*")
_FILE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]*\.gguf")
_REVISION = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]*")
_COMMIT = re.compile(r"[0-9a-f]{40}")
_SHA256 = re.compile(r"[0-9a-f]{64}")
# "owner/repo:path/in/repo/File.gguf@revision": the path may sit in a folder of the repository (never "..")
_REF = re.compile(r"(?P<repo>[^:@\s]+):(?P<file>[^:@\s]+)(?:@(?P<revision>[^:@\s]+))?")
_REF_HINT = "give a catalog name, or a Hugging Face file as owner/repo:File.gguf (optionally @revision)"


class UnknownModel(NotFound):
    """A name that is neither a catalog entry nor a well-formed ``owner/repo:File.gguf``."""


class CatalogInvalid(LyraError):
    """``catalog.toml`` has a bad entry: a bug in the package, never the person's doing."""


@dataclass(frozen=True)
class Shape:
    """What the GPU-memory estimate needs, from a catalog entry (config.json) or a downloaded file's GGUF header."""

    layers: int
    embedding: int
    heads: int
    kv_heads: int
    key_length: int
    value_length: int


@dataclass(frozen=True)
class CatalogModel:
    """One known-good GGUF file (fields: ``catalog.toml``'s header says where each comes from)."""

    name: str  # what `lyra models pull NAME` takes: lowercase, unique
    role: str  # "chat" | "embed" | "rerank"
    title: str
    repo: str
    file: str
    revision: str  # the commit whose file the size and sha256 describe, or "main"
    size: int  # bytes
    size_exact: bool  # False: the size its source rounded (estimates and the disk check only)
    sha256: str | None  # None: no source confirmed one; verified against the server's LFS hash at download
    quantization: str
    parameters: int
    context_length: int
    licence: str
    template: str | None  # chat: the llama-cpp-python chat format it speaks
    pooling: str | None  # embed and rerank: "cls", "mean" or "rank"
    shape: Shape
    source: str
    thinking: bool  # writes a <think> block before each reply: never recommended while Lyra shows those
    note: str


@dataclass(frozen=True)
class PullTarget:
    """What to download: a catalog entry's file, or any ``owner/repo:File.gguf`` (then nothing is known ahead)."""

    repo: str
    file: str  # the path in the repository; the local file takes its last part
    revision: str
    sha256: str | None
    size: int | None
    entry: CatalogModel | None

    @property
    def ref(self) -> str:
        """The target written the way ``resolve`` reads it back."""
        return f"{self.repo}:{self.file}@{self.revision}"

    @property
    def local_name(self) -> str:
        """The file's name in ``models_dir``: the path's last part (``resolve`` lets no part be "." or "..")."""
        return self.file.rsplit("/", 1)[-1]


@lru_cache(maxsize=1)
def load_catalog() -> tuple[CatalogModel, ...]:
    """Every entry of the package's ``catalog.toml``, in its order; raises ``CatalogInvalid`` on a bad one."""
    text = resources.files("lyra_local.modelfiles").joinpath("catalog.toml").read_text(encoding="utf-8")
    return parse_catalog(text)


def title_of_file(file: str, catalog: tuple[CatalogModel, ...] | None = None) -> str:
    """What to call a model file: its catalog entry's title, else its file name without the quantization and
    the extension ("SmolLM2-135M-Instruct.Q4_1.gguf" -> "SmolLM2 135M Instruct"). A header's own name is
    what its trainer typed ("Smollm2 135M 8k Lc100K Mix1 Ep2"), not what a person knows it by."""
    entry = next((e for e in (catalog if catalog is not None else load_catalog()) if e.file == file), None)
    if entry is not None:
        return entry.title
    stem = file.removesuffix(".gguf")
    stem = stem.rsplit(".", 1)[0] if "." in stem else stem
    return " ".join(stem.replace("_", " ").replace("-", " ").split()) or file


def by_role(role: str, catalog: tuple[CatalogModel, ...] | None = None) -> tuple[CatalogModel, ...]:
    """The entries for ``role`` ("summary" is chat's), smallest file first: the order to try what fits."""
    wanted = "chat" if role == "summary" else role
    if wanted not in FILE_ROLES:
        raise ValueError(f"unknown role {role!r}")
    entries = load_catalog() if catalog is None else catalog
    return tuple(sorted((m for m in entries if m.role == wanted), key=lambda m: (m.size, m.name)))


def find(name: str, catalog: tuple[CatalogModel, ...] | None = None) -> CatalogModel | None:
    """The entry called ``name`` (any case), or whose file is ``name``, or None."""
    wanted = name.strip().lower()
    for entry in load_catalog() if catalog is None else catalog:
        if wanted in (entry.name, entry.file.lower()):
            return entry
    return None


def resolve(name_or_ref: str, catalog: tuple[CatalogModel, ...] | None = None) -> PullTarget:
    """A catalog name (or its file name), or ``owner/repo:File.gguf[@revision]``, as a ``PullTarget``.

    A reference to a catalog file at its own revision (or none given) carries the entry's size and sha256; at
    another revision nothing is known of it, so it is verified by the server's LFS hash like any other file."""
    entries = load_catalog() if catalog is None else catalog
    text = name_or_ref.strip()
    entry = find(text, entries)
    if entry is not None:
        return _entry_target(entry)
    if re.match(r"[a-z]+://", text, re.IGNORECASE):
        raise UnknownModel(f"{text!r} is an address: name the file as owner/repo:File.gguf instead", hint=_REF_HINT)
    if "/" in text and ":" in text:
        return _ref_target(text, entries)
    if "/" in text:
        raise UnknownModel(f"{text!r} names a repository but not its file: owner/repo:File.gguf", hint=_REF_HINT)
    raise UnknownModel(_unknown_message(text, entries), hint=_REF_HINT)


def _entry_target(entry: CatalogModel) -> PullTarget:
    return PullTarget(entry.repo, entry.file, entry.revision, entry.sha256, entry.size, entry)


def _ref_target(text: str, entries: tuple[CatalogModel, ...]) -> PullTarget:
    match = _REF.fullmatch(text)
    if match is None:
        raise UnknownModel(f"{text!r} is not owner/repo:File.gguf", hint=_REF_HINT)
    repo, path, revision = match["repo"], match["file"], match["revision"]
    problem = _ref_problem(repo, path, revision)
    if problem:
        raise UnknownModel(f"{text!r} is not a Hugging Face file reference: {problem}", hint=_REF_HINT)
    for entry in entries:
        if entry.repo.lower() == repo.lower() and entry.file == path and revision in (None, entry.revision):
            return _entry_target(entry)
    return PullTarget(repo, path, revision or "main", None, None, None)


def _ref_problem(repo: str, path: str, revision: str | None) -> str | None:
    if not _REPO.fullmatch(repo):
        return f"{repo!r} is not a repository (owner/name)"
    parts = path.split("/")
    if not _FILE.fullmatch(parts[-1]) or not all(_REVISION.fullmatch(part) for part in parts[:-1]):
        return f"{path!r} is not a .gguf file in the repository"
    if revision is not None and not _REVISION.fullmatch(revision):
        return f"{revision!r} is not a revision (a commit, branch or tag)"
    return None


def _unknown_message(text: str, entries: tuple[CatalogModel, ...]) -> str:
    names = [entry.name for entry in entries]
    if not text:
        return f"no model named; the catalog has {', '.join(names)}"
    # "qwen2.5:7b" (Ollama's way) and "qwen7b" should find qwen2.5-7b-instruct: compare without the suffixes too
    wanted = text.lower().replace(":", "-")
    short = {re.sub(r"-instruct.*$", "", name): name for name in names}
    close = difflib.get_close_matches(wanted, [*names, *short], n=3, cutoff=0.5)
    starting = [name for name in names if name.startswith(wanted)]
    suggestions = list(dict.fromkeys([*starting, *(short.get(match, match) for match in close)]))[:4]
    if suggestions:
        return f"no model called {text!r} in the catalog; did you mean {', '.join(suggestions)}?"
    return f"no model called {text!r}; the catalog has {', '.join(names)}"


# ---------------------------------------------------------------- reading catalog.toml strictly

_REQUIRED: dict[str, type] = {
    "name": str, "role": str, "title": str, "repo": str, "file": str, "revision": str, "size": int,
    "quantization": str, "parameters": int, "context_length": int, "licence": str, "shape": dict, "source": str}
_OPTIONAL: dict[str, type] = {
    "sha256": str, "size_exact": bool, "template": str, "pooling": str, "thinking": bool, "note": str}
_SHAPE_FIELDS = ("layers", "embedding", "heads", "kv_heads", "key_length", "value_length")


def parse_catalog(text: str) -> tuple[CatalogModel, ...]:
    """The entries of a catalog's TOML text, each checked; ``CatalogInvalid`` names the first bad one."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CatalogInvalid(f"catalog.toml is not valid TOML: {exc}") from None
    if set(data) != {"model"} or not isinstance(data["model"], list) or not data["model"]:
        raise CatalogInvalid("catalog.toml must hold [[model]] entries and nothing else")
    entries: list[CatalogModel] = []
    for index, raw in enumerate(data["model"], start=1):
        if not isinstance(raw, dict):
            raise CatalogInvalid(f"catalog.toml entry {index} is not a table")
        label = f"catalog.toml entry {index} ({raw.get('name', 'unnamed')!r})"
        problem = _entry_problem(raw)
        if problem:
            raise CatalogInvalid(f"{label}: {problem}")
        entry = _entry(raw)
        for earlier in entries:
            if earlier.name == entry.name or earlier.file.lower() == entry.file.lower():
                raise CatalogInvalid(f"{label}: its name or file is entry {entries.index(earlier) + 1}'s too")
        entries.append(entry)
    return tuple(entries)


def _entry(raw: dict[str, Any]) -> CatalogModel:
    return CatalogModel(
        name=raw["name"], role=raw["role"], title=raw["title"], repo=raw["repo"], file=raw["file"],
        revision=raw["revision"], size=raw["size"], size_exact=raw.get("size_exact", True),
        sha256=raw.get("sha256"), quantization=raw["quantization"], parameters=raw["parameters"],
        context_length=raw["context_length"], licence=raw["licence"], template=raw.get("template"),
        pooling=raw.get("pooling"), shape=Shape(**raw["shape"]), source=raw["source"],
        thinking=raw.get("thinking", False), note=raw.get("note", ""))


def _entry_problem(raw: dict[str, Any]) -> str | None:
    """Why an entry is bad, or None; the first reason found."""
    return (_types_problem(raw) or _identity_problem(raw) or _figures_problem(raw) or _role_problem(raw)
            or _shape_problem(raw["shape"]))


def _types_problem(raw: dict[str, Any]) -> str | None:
    unknown = sorted(set(raw) - set(_REQUIRED) - set(_OPTIONAL))
    if unknown:
        return f"unknown field(s) {', '.join(unknown)}"
    for field, kind in (_REQUIRED | _OPTIONAL).items():
        if field not in raw:
            if field in _REQUIRED:
                return f"{field} is missing"
            continue
        value = raw[field]
        # bool is an int to Python: a size of `true` is not a size
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            return f"{field} must be a {kind.__name__}, not {value!r}"
        if isinstance(value, str) and not value.strip():
            return f"{field} is empty"
    return None


def _identity_problem(raw: dict[str, Any]) -> str | None:
    if not _NAME.fullmatch(raw["name"]):
        return "name must be lowercase letters, digits, '.' and '-'"
    if raw["role"] not in FILE_ROLES:
        return f"role must be one of {', '.join(FILE_ROLES)}"
    if not _REPO.fullmatch(raw["repo"]):
        return "repo must be owner/name"
    if not _FILE.fullmatch(raw["file"]):
        return "file must be a .gguf file name (no folder)"
    if raw["revision"] != "main" and not _COMMIT.fullmatch(raw["revision"]):
        return "revision must be a 40-hex commit or main"
    if "sha256" in raw and not _SHA256.fullmatch(raw["sha256"]):
        return "sha256 must be 64 lowercase hex digits (leave it out when no source gives one)"
    return None


def _figures_problem(raw: dict[str, Any]) -> str | None:
    for field in ("size", "parameters", "context_length"):
        if raw[field] <= 0:
            return f"{field} must be positive"
    if raw["quantization"] not in QUANTIZATIONS:
        return f"quantization must be one of {', '.join(QUANTIZATIONS)}"
    if raw["quantization"].lower() not in raw["file"].lower():
        return f"the file name does not say its quantization {raw['quantization']}"
    return None


def _role_problem(raw: dict[str, Any]) -> str | None:
    if raw["role"] == "chat":
        if "template" not in raw or "pooling" in raw:
            return "a chat model has a template and no pooling"
        return None
    if "pooling" not in raw or "template" in raw or raw.get("thinking"):
        return "an embedding or re-ranking model has a pooling, no template and no thinking"
    if raw["pooling"] not in POOLINGS:
        return f"pooling must be one of {', '.join(POOLINGS)}"
    if (raw["role"] == "rerank") != (raw["pooling"] == "rank"):
        return "a re-ranker, and only a re-ranker, pools by rank"
    return None


def _shape_problem(shape: dict[str, Any]) -> str | None:
    if set(shape) != set(_SHAPE_FIELDS):
        return f"shape must have exactly {', '.join(_SHAPE_FIELDS)}"
    if not all(isinstance(shape[f], int) and not isinstance(shape[f], bool) and shape[f] > 0 for f in shape):
        return "shape's fields must be positive integers"
    if shape["heads"] % shape["kv_heads"]:
        return "shape: heads must be a multiple of kv_heads"
    return None
