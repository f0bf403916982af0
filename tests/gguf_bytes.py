"""GGUF headers written by hand, byte by byte, for tests that need one no converter would write.

``gguf_file`` writes a small valid file (metadata, one tensor, its data);
the ``kv_*`` helpers write one metadata entry each, and ``nested_array`` the
array inside an array inside ... that llama.cpp refuses. ``kv_spans`` finds
where each metadata entry of a valid header lies, so a fuzzer can change one
entry's type, length or nesting rather than only random bytes.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

UINT32, INT32, FLOAT32, BOOL, STRING, ARRAY, UINT64, FLOAT64 = 4, 5, 6, 7, 8, 9, 10, 12
_SIZES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}


def u32(n: int) -> bytes:
    return struct.pack("<I", n)


def u64(n: int) -> bytes:
    return struct.pack("<Q", n)


def text(value: str) -> bytes:
    raw = value.encode()
    return u64(len(raw)) + raw


def kv(key: str, kind: int, payload: bytes) -> bytes:
    return text(key) + u32(kind) + payload


def kv_str(key: str, value: str) -> bytes:
    return kv(key, STRING, text(value))


def kv_u32(key: str, value: int) -> bytes:
    return kv(key, UINT32, u32(value))


def kv_f64(key: str, value: float) -> bytes:
    return kv(key, FLOAT64, struct.pack("<d", value))


def kv_strings(key: str, values: list[str]) -> bytes:
    return kv(key, ARRAY, u32(STRING) + u64(len(values)) + b"".join(text(v) for v in values))


def nested_array(key: str, depth: int) -> bytes:
    """An array holding an array holding ... ``depth`` deep, the innermost one empty."""
    return kv(key, ARRAY, (u32(ARRAY) + u64(1)) * (depth - 1) + u32(UINT32) + u64(0))


def header(kvs: list[bytes], tensors: list[tuple[str, list[int], int, int]], version: int = 3) -> bytes:
    """Magic, version, counts, the given metadata entries, then each tensor's (name, shape, type, offset)."""
    out = b"GGUF" + u32(version) + u64(len(tensors)) + u64(len(kvs)) + b"".join(kvs)
    for name, shape, kind, offset in tensors:
        out += text(name) + u32(len(shape)) + b"".join(u64(n) for n in shape) + u32(kind) + u64(offset)
    return out


def valid_kvs(arch: str = "llama") -> list[bytes]:
    """What a small chat model's header says: the keys Lyra reads, a vocabulary, a float, a bool."""
    return [kv_str("general.architecture", arch), kv_str("general.name", "Tiny Test"),
            kv_u32("general.file_type", 0), kv_u32(f"{arch}.context_length", 2048),
            kv_strings("tokenizer.ggml.tokens", ["<s>", "</s>", "a", "b", "hello", "wörld"]),
            kv("tokenizer.ggml.scores", ARRAY, u32(FLOAT32) + u64(3) + struct.pack("<3f", 0.0, -1.5, 2.0)),
            kv("tokenizer.ggml.add_bos_token", BOOL, b"\x01"),
            kv_str("tokenizer.chat_template", "{% for m in messages %}{{ m.content }}{% endfor %}")]


def gguf_bytes(kvs: list[bytes] | None = None, alignment: int = 32) -> bytes:
    """A whole valid file: the header, padding to ``alignment``, and one 4x8 F32 tensor's data."""
    head = header(valid_kvs() if kvs is None else kvs, [("token_embd.weight", [8, 4], 0, 0)])
    padded = head + b"\0" * (-len(head) % alignment)
    return padded + struct.pack("<32f", *range(32))


def gguf_file(path: Path, kvs: list[bytes] | None = None) -> Path:
    path.write_bytes(gguf_bytes(kvs))
    return path


@dataclass(frozen=True)
class KVSpan:
    """Where one metadata entry lies: its key's length field, its type field, its value, and its end."""

    start: int
    type_at: int
    value_at: int
    end: int
    kind: int


def kv_spans(data: bytes) -> list[KVSpan]:
    """The metadata entries of a valid header (version 2 or 3), in order; stops at the first it cannot read."""
    kv_count = struct.unpack_from("<Q", data, 16)[0]
    at, spans = 24, []
    try:
        for _ in range(kv_count):
            start = at
            at += 8 + struct.unpack_from("<Q", data, at)[0]
            kind = struct.unpack_from("<I", data, at)[0]
            type_at, at = at, at + 4
            value_at = at
            at = _skip(data, at, kind)
            spans.append(KVSpan(start, type_at, value_at, at, kind))
    except (struct.error, KeyError):
        pass
    return spans


def data_offset(data: bytes) -> int:
    """Where a valid header's tensor data starts: after the metadata and the tensors' infos, aligned (32, or
    ``general.alignment``)."""
    spans = kv_spans(data)
    at, alignment = spans[-1].end if spans else 24, 32
    for span in spans:
        if data[span.start + 8:span.type_at] == b"general.alignment":
            alignment = struct.unpack_from("<I", data, span.value_at)[0]
    for _ in range(struct.unpack_from("<Q", data, 8)[0]):
        at += 8 + struct.unpack_from("<Q", data, at)[0]
        at += 4 + 8 * struct.unpack_from("<I", data, at)[0] + 4 + 8
    return -(-at // alignment) * alignment


def _skip(data: bytes, at: int, kind: int) -> int:
    if kind == STRING:
        return at + 8 + struct.unpack_from("<Q", data, at)[0]
    if kind == ARRAY:
        item, count = struct.unpack_from("<IQ", data, at)
        at += 12
        if item in _SIZES:
            return at + count * _SIZES[item]
        for _ in range(count):
            at = _skip(data, at, item)
        return at
    return at + _SIZES[kind]
