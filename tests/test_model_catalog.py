"""The catalog of known-good models (modelfiles/catalog.toml): it loads, every entry is well-formed and plausible
(its file size against its parameters and quantization, its shape against the memory figures docs/gpu.md
states), a bad entry fails loudly naming itself, and ``resolve`` takes names and owner/repo:File.gguf[@rev]
and refuses the rest with the closest names."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from lyra_local.config import DEFAULT_CHAT_FILE, DEFAULT_EMBED_FILE
from lyra_local.errors import LyraError
from lyra_local.modelfiles import catalog
from lyra_local.roles import FILE_ROLES
from lyra_local.modelfiles.catalog import CatalogInvalid, UnknownModel, by_role, load_catalog, parse_catalog, resolve

# Bytes per parameter a GGUF of each quantization has: the K-quants keep some tensors (embeddings, output) at
# higher precision, and small models have more of those, hence the ranges (Q4_K_M: 4.5-5.8 bits per weight).
BYTES_PER_PARAMETER = {"Q4_K_M": (0.55, 0.72), "Q8_0": (1.0, 1.2), "F16": (1.95, 2.1)}
ENTRY = """\
[[model]]
name = "tiny-chat"
role = "chat"
title = "Tiny chat"
repo = "owner/Tiny-GGUF"
file = "tiny-Q4_K_M.gguf"
revision = "main"
size = 1000
quantization = "Q4_K_M"
parameters = 1600
context_length = 2048
licence = "mit"
template = "chatml"
shape = { layers = 2, embedding = 64, heads = 4, kv_heads = 2, key_length = 16, value_length = 16 }
source = "made up for a test"
"""


def test_the_catalog_loads_with_every_role_and_unique_names_and_files() -> None:
    entries = load_catalog()
    assert {entry.role for entry in entries} == set(FILE_ROLES)
    names = [entry.name for entry in entries]
    assert len(set(names)) == len(names)
    assert len({entry.file.lower() for entry in entries}) == len(entries)
    assert all(name == name.lower() for name in names)


@pytest.mark.parametrize("entry", load_catalog(), ids=lambda entry: entry.name)
def test_every_entry_is_well_formed(entry: catalog.CatalogModel) -> None:
    assert entry.file.endswith(".gguf") and "/" not in entry.file
    assert re.fullmatch(r"[\w.-]+/[\w.-]+", entry.repo)
    assert entry.revision == "main" or re.fullmatch(r"[0-9a-f]{40}", entry.revision)
    assert entry.sha256 is None or re.fullmatch(r"[0-9a-f]{64}", entry.sha256)
    assert entry.quantization.lower() in entry.file.lower()
    assert entry.source and entry.licence and entry.title
    if entry.sha256 is None:  # an entry without a checksum says why, and that the server's hash is the check
        assert "LFS hash at download" in entry.source
    if entry.role == "chat":
        assert entry.template and entry.pooling is None
    else:
        assert entry.template is None and not entry.thinking
        assert entry.pooling == "rank" if entry.role == "rerank" else entry.pooling in ("cls", "mean")


@pytest.mark.parametrize("entry", load_catalog(), ids=lambda entry: entry.name)
def test_every_size_is_plausible_for_its_parameters_and_quantization(entry: catalog.CatalogModel) -> None:
    low, high = BYTES_PER_PARAMETER[entry.quantization]
    assert low <= entry.size / entry.parameters <= high, entry.size / entry.parameters
    shape = entry.shape
    assert shape.heads % shape.kv_heads == 0
    # a transformer's layers alone hold about 12 x embedding^2 parameters (attention + MLP): the shape and the
    # parameter count must describe the same model, to within the vocabulary and the MLP's width
    assert 0.3 < 12 * shape.layers * shape.embedding**2 / entry.parameters < 1.5


def test_the_shapes_give_the_kv_cache_docs_gpu_md_states() -> None:
    """docs/gpu.md: 128 KiB per token for Llama 3.1 8B, 56 KiB for Qwen 2.5 7B (f16, keys and values)."""
    def kv_per_token(name: str) -> int:
        shape = resolve(name).entry.shape  # type: ignore[union-attr]
        return shape.layers * shape.kv_heads * (shape.key_length + shape.value_length) * 2

    assert kv_per_token("llama-3.1-8b-instruct") == 128 * 1024
    assert kv_per_token("qwen2.5-7b-instruct") == 56 * 1024


def test_by_role_orders_smallest_first_and_summary_is_chat() -> None:
    for role in FILE_ROLES:
        entries = by_role(role)
        assert entries and all(entry.role == role for entry in entries)
        assert [entry.size for entry in entries] == sorted(entry.size for entry in entries)
    assert by_role("summary") == by_role("chat")
    with pytest.raises(ValueError):
        by_role("vision")


def test_the_demo_models_are_not_in_the_catalog() -> None:
    """The catalog lists known-good models; the 135M demo and the MiniLM come from PyPI wheels (fetch.py) and
    are demonstrations, so nothing may recommend them from here."""
    files = {entry.file.lower() for entry in load_catalog()}
    assert DEFAULT_CHAT_FILE.lower() not in files and DEFAULT_EMBED_FILE.lower() not in files
    for name in ("smollm2-135m-instruct", DEFAULT_CHAT_FILE, DEFAULT_EMBED_FILE):
        with pytest.raises(UnknownModel):
            resolve(name)


def test_thinking_models_are_marked() -> None:
    thinking = {entry.name for entry in load_catalog() if entry.thinking}
    assert thinking == {"qwen3-8b", "qwen3-14b", "qwen3-32b"}
    assert not resolve("qwen3-4b-instruct-2507").entry.thinking  # type: ignore[union-attr]


# ---------------------------------------------------------------- resolve


def test_resolve_a_name_in_any_case_or_its_file_name() -> None:
    target = resolve("  Qwen2.5-7B-Instruct ")
    entry = target.entry
    assert entry is not None and entry.name == "qwen2.5-7b-instruct"
    assert (target.repo, target.file, target.revision) == (entry.repo, entry.file, entry.revision)
    assert (target.sha256, target.size) == (entry.sha256, entry.size)
    assert resolve("qwen2.5-7b-instruct-q4_k_m.gguf") == target
    assert resolve(target.ref) == target  # the written-out reference reads back as the same target
    assert target.local_name == "Qwen2.5-7B-Instruct-Q4_K_M.gguf"


def test_resolve_a_catalog_file_by_reference_keeps_its_checksum_unless_another_revision_is_asked() -> None:
    entry = resolve("bge-reranker-v2-m3").entry
    assert entry is not None
    assert resolve(f"{entry.repo}:{entry.file}").entry == entry
    assert resolve(f"{entry.repo.lower()}:{entry.file}@{entry.revision}").entry == entry
    other = resolve(f"{entry.repo}:{entry.file}@main")
    assert (other.revision, other.sha256, other.size, other.entry) == ("main", None, None, None)


def test_resolve_any_hugging_face_file() -> None:
    target = resolve("someone/Some-Model-GGUF:Some-Model-Q5_K_M.gguf")
    assert (target.repo, target.file, target.revision) == ("someone/Some-Model-GGUF", "Some-Model-Q5_K_M.gguf",
                                                           "main")
    assert (target.sha256, target.size, target.entry) == (None, None, None)
    pinned = resolve("someone/Some-Model-GGUF:Q4_K_M/part.gguf@0123abc")
    assert (pinned.file, pinned.revision, pinned.local_name) == ("Q4_K_M/part.gguf", "0123abc", "part.gguf")
    assert pinned.ref == "someone/Some-Model-GGUF:Q4_K_M/part.gguf@0123abc" and resolve(pinned.ref) == pinned


@pytest.mark.parametrize("typed, said", [
    ("qwen7b", "did you mean qwen2.5-7b-instruct"),
    ("qwen2.5:7b", "did you mean qwen2.5-7b-instruct"),
    ("nomic", "did you mean nomic-embed-text-v1.5"),
    ("zzzz", "the catalog has llama-3.2-3b-instruct"),
    ("", "no model named"),
    ("someone/Some-Model-GGUF", "names a repository but not its file"),
    ("someone/Some-Model-GGUF:model.bin", "not a .gguf file"),
    ("someone/Some-Model-GGUF:../../etc/passwd.gguf", "not a .gguf file"),
    ("someone/../x:m.gguf", "not a repository"),
    ("someone/x:m.gguf@bad rev", "is not owner/repo:File.gguf"),
    ("someone/x:m.gguf@../main", "not a revision"),
    ("https://huggingface.co/someone/x/resolve/main/m.gguf", "is an address"),
])
def test_resolve_refuses_anything_else_with_a_clear_message(typed: str, said: str) -> None:
    with pytest.raises(UnknownModel) as refused:
        resolve(typed)
    assert said in refused.value.message
    assert isinstance(refused.value, LyraError) and refused.value.status_code == 404
    assert "owner/repo:File.gguf" in (refused.value.hint or "")


# ---------------------------------------------------------------- a bad catalog fails loudly, naming the entry


@pytest.mark.parametrize("change, said", [
    (('size = 1000\n', 'size = 1000\nsha256 = "00"\n'), "sha256 must be 64 lowercase hex digits"),
    (('file = "tiny-Q4_K_M.gguf"', 'file = "tiny-Q4_K_M.bin"'), "file must be a .gguf"),
    (('repo = "owner/Tiny-GGUF"', 'repo = "Tiny-GGUF"'), "repo must be owner/name"),
    (('role = "chat"', 'role = "vision"'), "role must be one of"),
    (('revision = "main"', 'revision = "v1"'), "revision must be a 40-hex commit"),
    (('size = 1000', 'size = true'), "size must be a int"),
    (('size = 1000', 'size = -1'), "size must be positive"),
    (('licence = "mit"\n', ''), "licence is missing"),
    (('source = "made up for a test"', 'source = "made up"\ncolour = "red"'), "unknown field(s) colour"),
    (('template = "chatml"', 'template = "chatml"\npooling = "mean"'), "a chat model has a template and no pooling"),
    (('kv_heads = 2', 'kv_heads = 3'), "heads must be a multiple of kv_heads"),
    (('quantization = "Q4_K_M"', 'quantization = "Q8_0"'), "does not say its quantization"),
])
def test_a_bad_entry_fails_naming_it(change: tuple[str, str], said: str) -> None:
    old, new = change
    text = ENTRY.replace(old, new)
    assert text != ENTRY
    with pytest.raises(CatalogInvalid) as refused:
        parse_catalog(text)
    assert "entry 1 ('tiny-chat')" in refused.value.message and said in refused.value.message


def test_a_good_entry_parses_and_a_duplicate_does_not() -> None:
    (entry,) = parse_catalog(ENTRY)
    assert (entry.name, entry.sha256, entry.size_exact, entry.thinking, entry.note) == ("tiny-chat", None, True,
                                                                                        False, "")
    with pytest.raises(CatalogInvalid, match=r"entry 2 \('tiny-chat'\).*entry 1"):
        parse_catalog(ENTRY + ENTRY)
    with pytest.raises(CatalogInvalid, match="only"):
        parse_catalog(ENTRY.replace('role = "chat"', 'role = "rerank"').replace('template = "chatml"',
                                                                                 'pooling = "mean"'))
    with pytest.raises(CatalogInvalid, match="nothing else"):
        parse_catalog('title = "x"\n' + ENTRY)
    assert resolve("tiny-chat", (entry,)).entry == replace(entry)


def test_a_model_file_is_called_by_its_catalog_title_or_its_file_name() -> None:
    entry = load_catalog()[0]
    assert catalog.title_of_file(entry.file) == entry.title
    assert catalog.title_of_file("SmolLM2-135M-Instruct.Q4_1.gguf") == "SmolLM2 135M Instruct"
    assert catalog.title_of_file("all-MiniLM-L6-v2.F16.gguf") == "all MiniLM L6 v2"
    assert catalog.title_of_file("plain.gguf") == "plain"
