"""File helpers shared by every writer of model files, indexes, manifests and lyra.toml."""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import tempfile
from pathlib import Path


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 22), b""):
            digest.update(block)
    return digest.hexdigest()


def atomic_write_text(path: Path, text: str) -> None:
    """Write to a temporary name and rename, so readers see the old file or the new one, never half."""
    tmp = path.with_name(path.name + ".partial")
    tmp.write_text(text)
    os.replace(tmp, path)


def replace_text(path: Path, text: str) -> None:
    """Replace ``path``'s contents all at once, keeping its permissions (a new file gets 0600: a config may hold
    a token); the folder is created if need be.

    A symlink (a dotfiles manager's) is followed and its target replaced, so the link stays. The temporary
    file sits in the same folder, so the rename never crosses file systems; it is flushed to disk first, so a
    crash leaves the old file or the new one.
    """
    path = path.resolve()
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = stat.S_IMODE(path.stat().st_mode) if path.exists() else 0o600
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as out:  # the line endings it was given
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
