"""The GGUF files a person could pick for a role: every one in ``models_dir``, summed up or with why it is broken."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..oserrors import named_os_errors
from .gguf_header import GGUFSummary, ModelFileInvalid, read_gguf


@dataclass(frozen=True)
class ModelFile:
    """One file: its header's summary, or the reason llama.cpp could not load it."""

    name: str
    size: int
    summary: GGUFSummary | None
    problem: str | None


def model_files(models_dir: Path) -> list[ModelFile]:
    """The ``*.gguf`` files directly in ``models_dir``, by name (a download in progress, ``*.partial``, is not
    one yet; the unconverted sources in ``sources/`` are not models)."""
    if not models_dir.is_dir():
        return []
    # scandir, not glob: pathlib's glob takes a folder it may not read for an empty one; this names the cause
    with named_os_errors(models_dir, "models_dir ($LYRA_MODELS_DIR)"), os.scandir(models_dir) as listing:
        names = [item.name for item in listing if item.name.endswith(".gguf")]
    entries = []
    for path in sorted((models_dir / name for name in names), key=lambda p: p.name.lower()):
        if not path.is_file():
            continue
        try:
            summary = read_gguf(path)
            entries.append(ModelFile(path.name, summary.size, summary, None))
        except ModelFileInvalid as exc:  # the reader raises nothing else, whatever the file holds
            entries.append(ModelFile(path.name, size_now(path), None, exc.message))
    return entries


def file_size(size: int) -> str:
    """A file's size as Hugging Face, a browser's download and ``ls -h --si`` show it, in decimal units ("4.7 GB",
    "98 MB"): every size of a model file Lyra prints. Memory (a GPU's, the RAM) is ``devices.gb``'s, in the
    binary units cards are sold in, so a 4.7 GB file takes 4.4 of a card's GB: two scales, each for its thing."""
    return f"{size / 1e9:.1f} GB" if size >= 1e9 else f"{size / 1e6:.0f} MB" if size >= 1e6 else f"{size:,} bytes"


def size_now(path: Path) -> int:
    """The file's size, 0 for one removed since it was listed (a listing's entry then says it cannot be read; a
    partial download's resume finished or a discard ran meanwhile)."""
    try:
        return path.stat().st_size
    except OSError:
        return 0
