"""Mutated GGUF headers for fuzzing the header reader (``tests/test_gguf_fuzz.py``, ``scripts/fuzz.py``).

A seed is a valid file: one written by hand (``gguf_bytes``), or a real
model's header with its tensor data left as a hole (a sparse file of the real
size: the reader checks each tensor's end against the size, and no data is
copied). A mutation changes one metadata entry where a converter would go
wrong (its type, a length, nesting it in arrays) and then bytes anywhere (flips,
odd integers, insertions, cuts). The property (``check_gguf``): the reader
returns a summary a JSON answer can carry, or raises ``ModelFileInvalid``;
nothing else, within a few seconds and a few megabytes.
"""

from __future__ import annotations

import json
import struct
import time
import tracemalloc
from dataclasses import asdict, dataclass
from pathlib import Path

from hypothesis import strategies as st

from lyra_local.modelfiles.gguf_header import GGUFSummary, ModelFileInvalid, read_gguf

from .gguf_bytes import ARRAY, STRING, data_offset, gguf_bytes, header, kv, kv_spans, kv_str, kv_u32, u32, u64

MOST_SECONDS = 5.0
MOST_TRACED = 8 * 1024**2  # bytes the reader may allocate (the mapped file is not counted: it is not copied)
ODD_INTS = [0, 1, 2, 3, 4, 7, 8, 9, 12, 13, 31, 33, 64, 0x7F, 0xFF, 0xFFFF, 0x7FFFFFFF, 0xFFFFFFFF, 1 << 32,
            1 << 40, (1 << 63) - 1, 1 << 63, (1 << 64) - 1]


Span = tuple[int, int, int, int]  # a metadata entry's start, type field, value, and type


@dataclass(frozen=True)
class Seed:
    """``head``: the bytes written; ``size``: the file's size (past ``head`` a hole of zeros, sparse on disk);
    ``spans``: where each metadata entry of ``head`` lies."""

    name: str
    head: bytes
    size: int
    spans: tuple[Span, ...] = ()

    def __repr__(self) -> str:  # hypothesis prints a strategy's arguments: not a 2 MB header
        return f"Seed({self.name!r}, {len(self.head):,} header bytes)"

    @classmethod
    def of(cls, name: str, head: bytes, size: int | None = None) -> Seed:
        spans = tuple((s.start, s.type_at, s.value_at, s.kind) for s in kv_spans(head))
        return cls(name, head, len(head) if size is None else size, spans)


def built_seeds() -> list[Seed]:
    """Valid files written by hand: a chat model, an embedder with its pooling, version 2, an empty header."""
    bert = [kv_str("general.architecture", "bert"), kv_u32("bert.context_length", 512),
            kv_u32("bert.pooling_type", 1), kv_u32("general.alignment", 64),
            kv("tokenizer.ggml.token_type", ARRAY, u32(5) + u64(4) + struct.pack("<4i", 0, 1, 1, 0))]
    v2 = gguf_bytes()
    v2 = v2[:4] + u32(2) + v2[8:]
    return [Seed.of("built-chat", gguf_bytes()), Seed.of("built-bert", gguf_bytes(bert, alignment=64)),
            Seed.of("built-v2", v2), Seed.of("built-empty", header([], []))]


def real_seed(path: Path, most: int = 4 * 1024**2) -> Seed:
    """A real model's header, read from its first ``most`` bytes: its tensor data becomes a hole of the same
    size."""
    with path.open("rb") as handle:
        head = handle.read(most)
    return Seed.of(path.name, head[:data_offset(head)], path.stat().st_size)


def write_seed(path: Path, head: bytes, size: int) -> Path:
    with path.open("wb") as out:
        out.write(head)
        out.truncate(max(size, len(head)))  # past the header, a hole: no disk, no copy
    return path


@st.composite
def mutated(draw: st.DrawFn, seeds: list[Seed]) -> tuple[bytes, int, list[str]]:
    """A seed with one entry changed where converters go wrong, then bytes changed anywhere; and what was done."""
    seed = draw(st.sampled_from(seeds))
    data, hole, done = bytearray(seed.head), seed.size - len(seed.head), [seed.name]
    spans = list(seed.spans)
    if spans and draw(st.booleans()):
        span = draw(st.sampled_from(spans))
        done.append(_entry_mutation(draw, data, span))
    for _ in range(draw(st.integers(0, 4))):
        done.append(_byte_mutation(draw, data, spans))
    if draw(st.integers(0, 9)) == 0:  # now and then cut short: a download that stopped
        cut = draw(st.integers(0, len(data)))
        del data[cut:]
        hole = 0
        done.append(f"cut at {cut}")
    return bytes(data), len(data) + hole, done


def _entry_mutation(draw: st.DrawFn, data: bytearray, span: Span) -> str:
    start, type_at, value_at, kind = span
    what = draw(st.sampled_from(["nest", "type", "length", "key"]))
    if what == "nest":  # the value inside an array inside an array ...: 1 deep is valid GGUF, 2+ llama.cpp refuses
        depth = draw(st.sampled_from([1, 2, 3, 64, 5000]))
        data[type_at:value_at] = u32(ARRAY) + (u32(ARRAY) + u64(1)) * (depth - 1) + u32(kind) + u64(1)
        return f"nest entry at {start} {depth} deep"
    if what == "type":
        new = draw(st.integers(0, 14) | st.sampled_from([0xFFFFFFFF, 1 << 31]))
        data[type_at:type_at + 4] = u32(new)
        return f"entry at {start} typed {new}"
    if what == "length" and kind in (STRING, ARRAY):
        at = value_at if kind == STRING else value_at + 4
        value = draw(st.sampled_from(ODD_INTS))
        data[at:at + 8] = u64(value)
        return f"entry at {start} length {value}"
    value = draw(st.sampled_from(ODD_INTS))
    data[start:start + 8] = u64(value)
    return f"key at {start} length {value}"


def _byte_mutation(draw: st.DrawFn, data: bytearray, spans: list[Span]) -> str:
    marks = sorted(p for p in {4, 8, 16, *(p for s in spans for p in s[:3])} if p < len(data))
    anywhere = st.integers(0, max(len(data) - 1, 0))
    at = draw(st.sampled_from(marks) | anywhere if marks else anywhere)
    what = draw(st.sampled_from(["flip", "u32", "u64", "insert", "delete"]))
    if what == "flip" and data:
        data[at] ^= draw(st.integers(1, 255))
    elif what in ("u32", "u64"):
        width = 4 if what == "u32" else 8
        value = draw(st.sampled_from(ODD_INTS)) & ((1 << (8 * width)) - 1)
        data[at:at + width] = value.to_bytes(width, "little")
    elif what == "insert":
        data[at:at] = draw(st.binary(min_size=1, max_size=16))
    else:
        del data[at:at + draw(st.integers(1, 16))]
    return f"{what} at {at}"


def _read(path: Path) -> GGUFSummary | None:
    try:
        return read_gguf(path)
    except ModelFileInvalid as exc:
        assert exc.message and str(path) in exc.message
        return None


def check_gguf(path: Path, data: bytes, size: int, *, trace: bool = True) -> GGUFSummary | None:
    """The property: a summary a JSON answer can carry, or ``ModelFileInvalid``; in under 5 s, and (``trace``,
    a second read: tracing every allocation makes a read about 15 times slower) in little memory."""
    write_seed(path, data, size)
    started = time.perf_counter()
    summary = _read(path)
    seconds = time.perf_counter() - started
    assert seconds < MOST_SECONDS, f"read_gguf took {seconds:.1f} s"
    if trace:
        tracemalloc.start()
        try:
            again = _read(path)
        finally:
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
        assert peak < MOST_TRACED, f"read_gguf allocated {peak:,} bytes"
        assert again == summary
    if summary is not None:
        shown = {k: v for k, v in asdict(summary).items() if k != "path"}
        json.dumps(shown, allow_nan=False)  # what GET /api/models/files answers with
        assert isinstance(summary.architecture, str) and summary.role_hint in ("chat", "embed", "rerank")
        assert summary.name is None or isinstance(summary.name, str)
        assert summary.context_length is None or isinstance(summary.context_length, int)
        assert summary.parameters >= 0 and summary.size == path.stat().st_size
    return summary
