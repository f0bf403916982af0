"""What a GGUF file says about itself, and whether it is whole, read from its header without loading it.

A model manager lists the files a person could pick and refuses a broken one
before llama.cpp meets it: a file that is not GGUF, a version llama.cpp does
not read, or a download cut short (a tensor's data reaching past the end of the
file). The header is read through a memory map, and arrays (the vocabulary) are
skipped rather than decoded, so a 5 GB model is summed up in milliseconds.

The layout (ggml's ``docs/gguf.md``): magic ``GGUF``, version, tensor count,
metadata count; the metadata as key, type, value; then each tensor's name,
dimensions, type and offset; the tensor data starts at the next multiple of
``general.alignment`` (32 by default).
"""

from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gguf

from ..errors import LyraError

MAGIC = b"GGUF"
VERSIONS = (2, 3)
MOST_ENTRIES = 1 << 24  # no real model has more metadata or tensors: beyond this the header is garbage
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9
_WANTED = ("general.architecture", "general.name", "general.file_type", "general.alignment",
           "tokenizer.chat_template")
_WANTED_SUFFIXES = (".context_length", ".pooling_type")


class ModelFileInvalid(LyraError):
    """A model file that llama.cpp could not load: not GGUF, an unknown version, or incomplete."""

    status_code = 400


@dataclass(frozen=True)
class GGUFSummary:
    """What a person choosing a model wants to know about one file."""

    path: Path
    size: int
    version: int
    architecture: str
    name: str | None
    parameters: int
    quantization: str | None  # "Q4_K_M", "F16"
    context_length: int | None  # what the model was trained for
    chat_template: bool
    pooling: str | None  # embedding and re-ranking models say how they pool ("MEAN", "RANK")
    tensors: int

    @property
    def role_hint(self) -> str:
        """The role this file looks made for: chat, embed or rerank."""
        if self.pooling == "RANK":
            return "rerank"
        if self.pooling is not None or self.architecture in ("bert", "nomic-bert", "jina-bert-v2"):
            return "embed"
        return "chat"


class _Header:
    """A cursor over the mapped file that says "incomplete" instead of reading past its end."""

    def __init__(self, data: mmap.mmap, path: Path) -> None:
        self.data = data
        self.path = path
        self.at = 0

    def take(self, fmt: str) -> Any:
        size = struct.calcsize(fmt)
        if self.at + size > len(self.data):
            raise _incomplete(self.path, "the file ends inside its header")
        value = struct.unpack_from(fmt, self.data, self.at)[0]
        self.at += size
        return value

    def string(self) -> str:
        length = self.take("<Q")
        if self.at + length > len(self.data):
            raise _incomplete(self.path, "the file ends inside its header")
        raw = bytes(self.data[self.at:self.at + length])
        self.at += length
        return raw.decode("utf-8", errors="replace")

    def skip_string(self) -> None:
        length = self.take("<Q")  # read first: ``self.at += self.take(...)`` would add to the old offset
        self.at += length

    def value(self, kind: int, keep: bool) -> Any:
        if kind in _SCALARS:
            return self.take(_SCALARS[kind])
        if kind == _STRING:
            return self.string() if keep else self.skip_string()
        if kind == _ARRAY:
            item, count = self.take("<I"), self.take("<Q")
            if item in _SCALARS:
                self.at += count * struct.calcsize(_SCALARS[item])
                if self.at > len(self.data):
                    raise _incomplete(self.path, "the file ends inside its header")
            elif count * 8 > len(self.data) - self.at:  # each string or array takes at least 8 bytes
                raise _incomplete(self.path, f"the file ends inside its header ({count:,} items to read)")
            else:
                for _ in range(count):
                    self.value(item, keep=False)
            return None
        raise ModelFileInvalid(f"{self.path}: unknown metadata type {kind} in the header", hint=_HINT)


_HINT = "download the file again (compare its size or checksum with the source), or pick another model"


def _incomplete(path: Path, detail: str) -> ModelFileInvalid:
    return ModelFileInvalid(f"{path} is incomplete: {detail} (a download cut short?)", hint=_HINT)


def read_gguf(path: Path) -> GGUFSummary:
    """The file's summary; ``ModelFileInvalid`` saying why if llama.cpp could not load it."""
    try:
        size = path.stat().st_size
        if size < 24:
            raise ModelFileInvalid(f"{path} is not a GGUF model file ({size} bytes)", hint=_HINT)
        with path.open("rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
            return _summarize(_Header(data, path), size)
    except OSError as exc:
        raise ModelFileInvalid(f"cannot read {path}: {exc.strerror or exc}",
                               hint="check the path and the file's permissions") from exc


def _summarize(h: _Header, size: int) -> GGUFSummary:
    if bytes(h.data[:4]) != MAGIC:
        raise ModelFileInvalid(f"{h.path} is not a GGUF model file (it starts with {bytes(h.data[:4])!r})",
                               hint="llama.cpp loads GGUF files; convert the model, or pick a .gguf file")
    h.at = 4
    version = h.take("<I")
    if version not in VERSIONS:
        raise ModelFileInvalid(f"{h.path} is GGUF version {version}; llama.cpp reads versions 2 and 3",
                               hint="convert it again with a current llama.cpp")
    tensor_count, kv_count = h.take("<Q"), h.take("<Q")
    if tensor_count > MOST_ENTRIES or kv_count > MOST_ENTRIES:
        raise ModelFileInvalid(f"{h.path}: its header claims {tensor_count:,} tensors and {kv_count:,} metadata "
                               "entries, which no model has", hint=_HINT)
    meta: dict[str, Any] = {}
    for _ in range(kv_count):
        key = h.string()
        keep = key in _WANTED or key.endswith(_WANTED_SUFFIXES)
        meta[key] = h.value(h.take("<I"), keep)
    tensors = [_tensor_info(h) for _ in range(tensor_count)]
    alignment = int(meta.get("general.alignment") or 32)
    start = -(-h.at // alignment) * alignment
    parameters = 0
    for name, elements, kind, offset in tensors:
        end = start + offset + _tensor_bytes(h.path, name, elements, kind)
        if end > size:
            raise _incomplete(h.path, f"tensor {name!r} ends at byte {end:,} of a {size:,}-byte file")
        parameters += elements
    arch = str(meta.get("general.architecture") or "unknown")
    return GGUFSummary(
        path=h.path, size=size, version=version, architecture=arch,
        name=meta.get("general.name"), parameters=parameters,
        quantization=_quantization(meta.get("general.file_type")),
        context_length=meta.get(f"{arch}.context_length"),
        chat_template=bool(meta.get("tokenizer.chat_template")),
        pooling=_pooling(meta.get(f"{arch}.pooling_type")), tensors=len(tensors))


def _tensor_info(h: _Header) -> tuple[str, int, int, int]:
    name = h.string()
    dims = h.take("<I")
    if dims > 8:
        raise ModelFileInvalid(f"{h.path}: tensor {name!r} claims {dims} dimensions", hint=_HINT)
    elements = 1
    for _ in range(dims):
        elements *= h.take("<Q")
    return name, elements, h.take("<I"), h.take("<Q")


def _tensor_bytes(path: Path, name: str, elements: int, kind: int) -> int:
    try:
        block, type_size = gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType(kind)]
    except (ValueError, KeyError) as exc:
        raise ModelFileInvalid(f"{path}: tensor {name!r} has type {kind}, unknown to this llama.cpp",
                               hint="upgrade Lyra, or pick a model quantized for an older llama.cpp") from exc
    return elements * type_size // block


def _quantization(file_type: Any) -> str | None:
    try:
        return gguf.LlamaFileType(int(file_type)).name.removeprefix("MOSTLY_").removeprefix("ALL_")
    except (TypeError, ValueError):
        return None


def _pooling(value: Any) -> str | None:
    try:
        return gguf.PoolingType(int(value)).name if value is not None else None
    except ValueError:
        return None
