"""The derived memory as one JSON file (``memory.json`` of an export), and back.

The rows come from and go to ``store/memory_dump.py``; this module owns the
file: its format tag and version, stable text, and embedding what is restored.
Restoring is only done into a data directory without derived memory of its own
(a fresh one): merging two profiles is the dream cycle's job.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..llm.base import Embedder
from ..store import Store, memory_dump
from .memory_schema import checked

FORMAT = "lyra-memory"
VERSION = 2  # 2: how each summary, digest and arc was written (``method``), and the person's deletions
READS = (1, 2)


def dump_memory(store: Store) -> dict[str, Any]:
    return {"format": FORMAT, "version": VERSION, **memory_dump.dump(store)}


def memory_json(store: Store) -> str:
    """The file's text: stable key order, so two exports of the same memory are identical."""
    return json.dumps(dump_memory(store), ensure_ascii=False, indent=1, sort_keys=True) + "\n"


def write_memory(store: Store, path: Path) -> None:
    path.write_text(memory_json(store), encoding="utf-8")


def has_derived_memory(store: Store) -> bool:
    return memory_dump.has_derived(store)


def restore_memory(store: Store, embedder: Embedder, data: dict[str, Any]) -> dict[str, int]:
    """Write a dumped memory into ``store`` (in one transaction), embedding gists and digests again."""
    if data.get("format") != FORMAT or data.get("version") not in READS:
        raise ValueError(f"not a {FORMAT} file of version {' or '.join(map(str, READS))}")
    data = checked(data)  # a ValueError naming what is wrong, before anything is embedded or written
    gists = memory_dump.restorable_gists(store, data)
    gist_vectors = embedder.embed([g["content"] for g in gists])
    digest_vectors = embedder.embed([d["content"] for d in data["digests"]])
    return memory_dump.restore(store, data, gist_vectors, digest_vectors, embedder.name)
