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

Whatever bytes a file holds, this module raises nothing but ``ModelFileInvalid``
(one odd file in ``models_dir`` once made the model list answer 500). It
never recurses, copies no more than a short name out of the file, and walks a
bounded number of array items, so a hostile header costs at most a few seconds
and a few kilobytes. Where llama.cpp refuses a header (``ggml/src/gguf.cpp``,
``llama-model-loader.cpp``) this reader refuses it too, with the reason: an
array of arrays, an alignment that is not a ``UINT32`` power of two, a key
llama.cpp reads given another type than the one it reads it as, a tensor name
of 64 bytes or more, more than four dimensions.
"""

from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gguf

from ..errors import LyraError

MAGIC = b"GGUF"
VERSIONS = (2, 3)
# No real model comes near these (a few dozen metadata keys; at most thousands of tensors; a vocabulary and its
# merges under a million texts); beyond, garbage, and a hostile header could keep the reader busy for seconds
# (about 1.4 s per million entries walked) in every command that lists the models.
MOST_KEYS = 1 << 16
MOST_TENSORS = 1 << 20
MOST_WALKED = 1 << 21  # texts in arrays, stepped over one by one
MOST_KEY_BYTES = 1 << 16  # a key or a text value this reader keeps (ggml's own writer allows 65,535)
MOST_NAME_BYTES = 63  # llama.cpp's GGML_MAX_NAME is 64, with the final NUL
MOST_DIMS = 4  # GGML_MAX_DIMS
MOST_CANDIDATES = 256  # "<arch>.context_length" keys kept before the architecture is known (a model has one)
MOST_LAYERS = 4096  # "blk.N" indices whose bytes are kept one by one (a 405B has 126 layers): bounded memory
_INTS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 10: "<Q", 11: "<q"}
_SCALARS = {**_INTS, 6: "<f", 7: "<?", 12: "<d"}
_STRING, _ARRAY, _UINT32, _UINT64 = 8, 9, 4, 10
_TYPE_NAMES = {0: "UINT8", 1: "INT8", 2: "UINT16", 3: "INT16", 4: "UINT32", 5: "INT32", 6: "FLOAT32", 7: "BOOL",
               8: "STRING", 9: "ARRAY", 10: "UINT64", 11: "INT64", 12: "FLOAT64"}
# The keys this reader keeps, and the one type llama.cpp reads each as (a key of another type fails its load);
# the suffixed ones (UINT32 both) are the architecture's.
_WANTED = {"general.architecture": _STRING, "general.name": _STRING, "general.file_type": _UINT32,
           "general.alignment": _UINT32, "tokenizer.chat_template": _STRING}
_WANTED_SUFFIXES = (".context_length", ".pooling_type")  # of the architecture: "llama.context_length"
# The architecture's shape, for the memory estimate (``fit.py``). llama.cpp reads some of these as a number or a
# per-layer array (``head_count_kv`` of OpenELM), so they are taken when they are a number and otherwise left
# unknown: never a reason to refuse a file.
_SHAPE_SUFFIXES = (".block_count", ".embedding_length", ".attention.head_count", ".attention.head_count_kv",
                   ".attention.key_length", ".attention.value_length")
_VOCABULARY = "tokenizer.ggml.tokens"  # its length is the vocabulary's size (the output layer's width)
_U64 = struct.Struct("<Q")
# Each metadata entry takes at least 13 bytes (key length, type, a one-byte value), each tensor 24 (name
# length, dimension count, type, offset): a count the rest of the file cannot hold is refused before any loop.
_LEAST_ENTRY, _LEAST_TENSOR = 13, 24


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
    # The architecture's shape (None where the header does not say, or says it per layer) and where the weights'
    # bytes lie, for the GPU-memory estimate (``fit.py``).
    block_count: int | None = None
    embedding_length: int | None = None
    head_count: int | None = None
    head_count_kv: int | None = None  # absent: as many as head_count (no grouped-query attention)
    key_length: int | None = None  # absent: embedding_length / head_count
    value_length: int | None = None
    vocabulary: int | None = None
    block_bytes: int = 0  # the repeating layers ("blk.N.*"), which n_gpu_layers offloads one by one
    # each layer's bytes, blk.0 first, when the tensors name every one of block_count (else empty): a Q4_K_M keeps
    # its last eighth of layers at Q6_K, and llama.cpp offloads the last layers first
    layer_bytes: tuple[int, ...] = ()
    output_bytes: int = 0  # the output layer, offloaded first (the token embeddings when tied)

    @property
    def role_hint(self) -> str:
        """The role this file looks made for: chat, embed or rerank."""
        if self.pooling == "RANK":
            return "rerank"
        if self.pooling is not None or self.architecture in ("bert", "nomic-bert", "jina-bert-v2"):
            return "embed"
        return "chat"


_HINT = "download the file again (compare its size or checksum with the source), or pick another model"


class _Header:
    """A cursor over the mapped file that says "incomplete" instead of reading past its end."""

    def __init__(self, data: mmap.mmap, path: Path) -> None:
        self.data = data
        self.end = len(data)
        self.path = path
        self.at = 0
        self.walked = 0  # array items stepped over one by one, against MOST_WALKED

    def invalid(self, detail: str, hint: str = _HINT) -> ModelFileInvalid:
        return ModelFileInvalid(f"{self.path}: {detail}", hint=hint)

    def incomplete(self, detail: str = "the file ends inside its header") -> ModelFileInvalid:
        return ModelFileInvalid(f"{self.path} is incomplete: {detail} (a download cut short?)", hint=_HINT)

    def take(self, fmt: str) -> Any:
        size = struct.calcsize(fmt)
        if self.at + size > self.end:
            raise self.incomplete()
        value = struct.unpack_from(fmt, self.data, self.at)[0]
        self.at += size
        return value

    def skip(self, length: int) -> None:
        if length > self.end - self.at:
            raise self.incomplete()
        self.at += length

    def string(self, what: str, most: int = MOST_KEY_BYTES) -> str:
        """A string of at most ``most`` bytes (a longer one is refused before a byte is copied)."""
        length = self.take("<Q")
        if length > most:
            raise self.invalid(f"{what} is {length:,} bytes long, more than the {most:,} it may have")
        if length > self.end - self.at:
            raise self.incomplete()
        raw = bytes(self.data[self.at:self.at + length])
        self.at += length
        return raw.decode("utf-8", errors="replace")

    def skip_value(self, key: str, kind: int) -> None:
        if kind in _SCALARS:
            self.skip(struct.calcsize(_SCALARS[kind]))
        elif kind == _STRING:
            self.skip(self.take("<Q"))
        elif kind == _ARRAY:
            self.skip_array(key)
        else:
            raise self.invalid(f"its metadata {key!r} has unknown type {kind}")

    def skip_array(self, key: str) -> None:
        item, count = self.take("<I"), self.take("<Q")
        if item in _SCALARS:
            self.skip(count * struct.calcsize(_SCALARS[item]))
        elif item == _ARRAY:  # gguf.cpp reads no array of arrays; walking one would be a recursion
            raise self.invalid(f"its metadata {key!r} is an array of arrays, which llama.cpp does not read")
        elif item != _STRING:
            raise self.invalid(f"its metadata {key!r} is an array of unknown type {item}")
        elif count * 8 > self.end - self.at:  # each string takes at least its 8-byte length
            raise self.incomplete(f"the file ends inside its header ({count:,} items to read)")
        else:
            self.walked += count
            if self.walked > MOST_WALKED:
                raise self.invalid(f"its header holds more than {MOST_WALKED:,} texts in arrays, which no "
                                   "model has")
            self._skip_strings(count)

    def _skip_strings(self, count: int) -> None:
        """Step over ``count`` strings: the vocabulary, so a tight loop (a 150k-token one in about 30 ms)."""
        unpack, data, at, end = _U64.unpack_from, self.data, self.at, self.end
        for _ in range(count):
            if at + 8 > end:
                raise self.incomplete()
            at += 8 + unpack(data, at)[0]
        if at > end:
            raise self.incomplete()
        self.at = at


def read_gguf(path: Path) -> GGUFSummary:
    """The file's summary; ``ModelFileInvalid`` saying why if llama.cpp could not load it."""
    try:
        size = path.stat().st_size
        if size < 24:
            raise ModelFileInvalid(f"{path} is not a GGUF model file ({size} bytes)", hint=_HINT)
        with path.open("rb") as handle:
            try:
                data = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
            except ValueError as exc:  # emptied since its size was read
                raise ModelFileInvalid(f"cannot read {path}: {exc}", hint="is it being written? try again") from exc
            with data:
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
    if tensor_count > MOST_TENSORS or kv_count > MOST_KEYS:
        raise h.invalid(f"its header claims {tensor_count:,} tensors and {kv_count:,} metadata entries, which no "
                        "model has")
    if kv_count * _LEAST_ENTRY + tensor_count * _LEAST_TENSOR > h.end - h.at:
        raise h.incomplete(f"the file ends inside its header ({tensor_count:,} tensors and {kv_count:,} metadata "
                           f"entries claimed, more than its {size:,} bytes can hold)")
    meta = _metadata(h, kv_count)
    arch = _typed(h, meta, "general.architecture") or "unknown"
    alignment = _typed(h, meta, "general.alignment", 32)
    if alignment == 0 or alignment & (alignment - 1):
        raise h.invalid(f"its general.alignment {alignment:,} is not a power of two, which llama.cpp requires")
    sums = _tensor_sums(h, tensor_count)
    start = -(-h.at // alignment) * alignment  # the tensor data starts after the header, aligned
    if start + sums.furthest > size:
        raise h.incomplete(f"tensor {sums.reaches!r} ends at byte {start + sums.furthest:,} of a {size:,}-byte file")
    shape = _shape(meta, arch)
    return GGUFSummary(
        path=h.path, size=size, version=version, architecture=arch, name=_typed(h, meta, "general.name"),
        parameters=sums.parameters, quantization=_quantization(_typed(h, meta, "general.file_type")),
        context_length=_typed(h, meta, f"{arch}.context_length") or None,
        chat_template=bool(_typed(h, meta, "tokenizer.chat_template")),
        pooling=_pooling(_typed(h, meta, f"{arch}.pooling_type")), tensors=tensor_count,
        **shape, vocabulary=_number(meta, _VOCABULARY), block_bytes=sums.block_bytes,
        layer_bytes=sums.layer_bytes(shape["block_count"] or 0), output_bytes=sums.output())


@dataclass
class _TensorSums:
    """What the tensor table adds up to, kept as sums (per layer: at most MOST_LAYERS of them) and the furthest
    end, so that a header of millions of tensors takes no memory."""

    parameters: int = 0
    furthest: int = 0
    reaches: str = ""  # the tensor that ends furthest
    block_bytes: int = 0
    output_bytes: int = 0
    embeddings_bytes: int = 0
    tied: bool = True
    per_layer: dict[int, int] = field(default_factory=dict)

    def add(self, name: str, elements: int, length: int, end: int) -> None:
        self.parameters += elements
        if end > self.furthest:
            self.furthest, self.reaches = end, name
        if name.startswith("blk."):
            self.block_bytes += length
            index = name[4:].partition(".")[0]
            if index.isascii() and index.isdigit() and int(index) < MOST_LAYERS:
                self.per_layer[int(index)] = self.per_layer.get(int(index), 0) + length
        elif name.startswith("output"):  # output.weight, output_norm.*
            self.output_bytes += length
            self.tied = self.tied and name != "output.weight"
        elif name == "token_embd.weight":
            self.embeddings_bytes = length

    def layer_bytes(self, layers: int) -> tuple[int, ...]:
        """Each layer's bytes when the indices are distinct, as many as the layers, none beyond (each of blk.0 …
        blk.(layers - 1)); else none."""
        if 0 < layers == len(self.per_layer) and max(self.per_layer) < layers:
            return tuple(self.per_layer[i] for i in range(layers))
        return ()

    def output(self) -> int:
        """The output layer's bytes. A decoder (it has an output norm) without output.weight ties its output to
        the token embeddings, and llama.cpp puts a copy of them on the output's device; an encoder has no output
        layer."""
        return self.output_bytes + (self.embeddings_bytes if self.tied and self.output_bytes else 0)


def _tensor_sums(h: _Header, tensor_count: int) -> _TensorSums:
    """One pass over the tensor table."""
    sums = _TensorSums()
    for _ in range(tensor_count):
        name, elements, block, offset = _tensor_info(h)
        length = elements * block[1] // block[0]
        sums.add(name, elements, length, offset + length)
    return sums


def _shape(meta: dict[str, tuple[int, Any]], arch: str) -> dict[str, int | None]:
    """The architecture's shape keys that hold a number (a per-layer array, or none, is unknown: None)."""
    names = ("block_count", "embedding_length", "head_count", "head_count_kv", "key_length", "value_length")
    return {name: _number(meta, f"{arch}.{suffix[1:]}") for name, suffix in zip(names, _SHAPE_SUFFIXES, strict=True)}


def _number(meta: dict[str, tuple[int, Any]], key: str) -> int | None:
    kind, value = meta.get(key, (None, None))
    return value if kind in _INTS and isinstance(value, int) and value > 0 else None


def _metadata(h: _Header, kv_count: int) -> dict[str, tuple[int, Any]]:
    """The wanted keys' types and values (a number, a short text; the chat template as whether it has any
    text: it can be long, and only that is shown); the rest skipped. ``_typed`` checks a type once it is known
    to matter: ``llama.rope.scaling.original_context_length`` is not the context length of a ``bert``."""
    meta: dict[str, tuple[int, Any]] = {}
    candidates = 0
    for _ in range(kv_count):
        key = h.string("a metadata key")
        kind = h.take("<I")
        wanted = key in _WANTED
        if not wanted and key.endswith(_WANTED_SUFFIXES + _SHAPE_SUFFIXES) and candidates < MOST_CANDIDATES:
            wanted, candidates = True, candidates + 1
        if key == _VOCABULARY and kind == _ARRAY and h.at + 12 <= h.end:
            # an array is its items' type (UINT32), then their count (UINT64): the count, read before skipping
            meta[key] = _UINT64, _U64.unpack_from(h.data, h.at + 4)[0]
            h.skip_value(key, kind)
        elif not wanted:
            h.skip_value(key, kind)
        elif kind in _INTS:
            meta[key] = kind, h.take(_INTS[kind])
        elif kind == _STRING and key in ("general.architecture", "general.name"):
            meta[key] = kind, h.string(f"its metadata {key!r}")
        elif kind == _STRING:
            length = h.take("<Q")
            h.skip(length)
            meta[key] = kind, length > 0
        else:
            h.skip_value(key, kind)
            meta[key] = kind, None
    return meta


def _typed(h: _Header, meta: dict[str, tuple[int, Any]], key: str, default: Any = None) -> Any:
    """``key``'s value, if it is of the one type llama.cpp reads it as (another fails llama.cpp's load)."""
    if key not in meta:
        return default
    kind, value = meta[key]
    wanted = _WANTED.get(key, _UINT32)
    if kind != wanted:
        raise h.invalid(f"its metadata {key!r} is {_TYPE_NAMES.get(kind, f'of unknown type {kind}')}, where "
                        f"llama.cpp reads a {_TYPE_NAMES[wanted]}")
    return value


def _tensor_info(h: _Header) -> tuple[str, int, tuple[int, int], int]:
    """Name, element count, (block size, bytes per block) of its type, offset; refused as gguf.cpp refuses."""
    name = h.string("a tensor name", MOST_NAME_BYTES)
    dims = h.take("<I")
    if dims > MOST_DIMS:
        raise h.invalid(f"tensor {name!r} claims {dims} dimensions; llama.cpp reads at most {MOST_DIMS}")
    shape = [h.take("<Q") for _ in range(dims)]
    kind = h.take("<I")
    try:
        block = gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType(kind)]
    except (ValueError, KeyError):
        raise h.invalid(f"tensor {name!r} has type {kind}, unknown to this llama.cpp",
                        hint="upgrade Lyra, or pick a model quantized for an older llama.cpp") from None
    if shape and shape[0] % block[0]:
        raise h.invalid(f"tensor {name!r} has {shape[0]:,} elements per row, not a multiple of its type's block "
                        f"of {block[0]}")
    elements = 1
    for n in shape:
        elements *= n
    return name, elements, block, h.take("<Q")


def _quantization(file_type: int | None) -> str | None:
    """The file type's name; ``None`` when absent, or a number newer than this gguf package knows."""
    if file_type is None:
        return None
    try:
        return gguf.LlamaFileType(file_type).name.removeprefix("MOSTLY_").removeprefix("ALL_")
    except ValueError:
        return None


def _pooling(value: int | None) -> str | None:
    try:
        return gguf.PoolingType(value).name if value is not None else None
    except ValueError:
        return None
