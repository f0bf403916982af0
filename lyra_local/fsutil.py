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
    tmp.unlink(missing_ok=True)
    private_file(tmp)  # 0600 (an index's description beside the memory), or the mode of the file it replaces
    if path.exists():
        os.chmod(tmp, stat.S_IMODE(path.stat().st_mode))
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


# -- private by default: what holds someone's memory is readable by this account only ------------------------
PRIVATE_UMASK = 0o077  # `lyra` sets it at start (cli/__init__.py): whatever the process creates is private
PRIVATE_DIR, PRIVATE_FILE = 0o700, 0o600


def private_dir(path: Path) -> Path:
    """``path`` as a folder: it and every folder above it that is created now get 0700; a folder already there
    keeps its mode (``loosened`` reports one opened by hand)."""
    missing = []
    for folder in (path, *path.parents):
        if folder.is_dir():
            break
        missing.append(folder)
    for folder in reversed(missing):
        with contextlib.suppress(FileExistsError):
            folder.mkdir(mode=PRIVATE_DIR)
            os.chmod(folder, PRIVATE_DIR)  # mkdir's mode is masked by the umask, never widened: set it exactly
    if missing and not path.is_dir():
        path.mkdir()  # a file where the folder should be: raise as mkdir does
    return path


def private_file(path: Path) -> Path:
    """Create ``path`` empty with mode 0600 if it does not exist, so that whatever writes it next (SQLite, and
    the WAL and shared-memory files SQLite gives the database's mode; ``VACUUM INTO``; a tar) keeps it private
    whatever the umask."""
    with contextlib.suppress(FileExistsError):
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, PRIVATE_FILE)
        try:
            os.fchmod(fd, PRIVATE_FILE)
        finally:
            os.close(fd)
    return path


def loosened(folder: Path, most: int = 100_000) -> list[Path]:
    """Everything in ``folder`` (itself included) that another account on the machine may read or enter: what
    Lyra makes is 0700/0600, so these were opened by hand (or made by an older Lyra)."""
    found: list[Path] = []
    seen = 0
    for root, dirs, files in os.walk(folder):
        for name in (".", *dirs, *files):
            path = Path(root) if name == "." else Path(root) / name
            if name == "." and Path(root) != folder:
                continue  # each folder is reported once, as an entry of its parent
            seen += 1
            with contextlib.suppress(FileNotFoundError):
                if path.is_symlink():
                    continue
                if stat.S_IMODE(path.stat().st_mode) & 0o077:
                    found.append(path)
            if seen >= most:
                return found
    return found


def loosened_note(folder: Path, shown: int = 10) -> str | None:
    """A warning naming what of ``folder`` other accounts can read (``loosened``), or None when nothing."""
    found = loosened(folder)
    if not found:
        return None
    names = ", ".join(str(p) for p in found[:shown]) + (f" and {len(found) - shown} more" if len(found) > shown
                                                        else "")
    return (f"{len(found)} file(s) or folder(s) of the memory in {folder} can be read by other accounts on this "
            f"machine (opened by hand, or made by a Lyra from before the memory was kept private): {names}; make "
            f"them private again: chmod -R go-rwx {folder}")
