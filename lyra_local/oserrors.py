"""Naming the cause of an OS error: the one mapping from an ``OSError`` or ``sqlite3.Error`` to a ``StorageError``.

A full disk reaches Lyra in many shapes: ``ENOSPC`` from a file write,
SQLite's "database or disk is full", and its bare "disk I/O error" when the
shared-memory file of the write-ahead log cannot grow. A read-only mount, a
folder this user may not write and a folder that is gone are as varied. Every
boundary (the store when it opens and writes, the CLI, the API, a chat turn)
asks ``storage_error`` what an error means, so the person reads the cause, the
path and what to do, and never "try again" or "another process" for a full disk.

SQLite's own wording does not name the disk; where it is ambiguous (an I/O
error, a file it cannot open), the file system holding ``path`` is looked at
(``os.statvfs``) to tell. This module only reads the file system; it never
writes, retries or deletes anything.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sqlite3
import tempfile
from collections.abc import Iterator
from pathlib import Path

from .errors import DiskFull, ReadOnlyStorage, StorageError, StorageMissing, StoragePermission

# Below this many free bytes an unexplained I/O error is put down to the full disk: SQLite grows its
# shared-memory file by 32 KiB and writes pages of 4 KiB, so a disk this close to full fails it.
FULL_BELOW = 1 << 20

# SQLite's primary result codes (the low byte of ``sqlite3.Error.sqlite_errorcode``).
SQLITE_PERM, SQLITE_READONLY, SQLITE_IOERR, SQLITE_FULL, SQLITE_CANTOPEN = 3, 8, 10, 13, 14
SQLITE_READONLY_DBMOVED = SQLITE_READONLY | (4 << 8)

_OS_CAUSES = {errno.ENOSPC: "full", errno.EDQUOT: "full", errno.EROFS: "read-only", errno.EACCES: "permission",
              errno.EPERM: "permission", errno.ENOENT: "missing", errno.ENOTDIR: "missing"}
KEPT = "nothing stored was lost"
DATA_DIR = "data_dir ($LYRA_DATA_DIR)"  # the setting a hint names, unless the folder is another setting's


def storage_error(exc: BaseException, path: Path | str | None = None, setting: str = DATA_DIR) -> StorageError | None:
    """What ``exc`` means for the files of the memory at ``path`` (an ``OSError``'s own file name wins), or None
    when it is not a storage cause this module can name (a constraint, a bug, a locked database)."""
    if isinstance(exc, StorageError):
        return exc
    if isinstance(exc, OSError):
        where = Path(os.fsdecode(exc.filename)) if exc.filename else _as_path(path)
        cause = _OS_CAUSES.get(exc.errno or 0)
        detail = exc.strerror or str(exc)
        if _outside(where, path):  # a file the person named (an input, a destination): no setting to change
            setting = ""
        if cause == "full" and exc.filename:  # the file's own disk said so, whatever it has free by now
            return named("full", where, detail, sure=True, setting=setting)
    elif isinstance(exc, sqlite3.Error):
        where = _as_path(path)
        cause = _sqlite_cause(exc, where)
        detail = str(exc)
    else:
        return None
    return None if cause is None else named(cause, where, detail, setting=setting)


@contextlib.contextmanager
def named_os_errors(path: Path | str | None, setting: str = DATA_DIR) -> Iterator[None]:
    """Within the block, an OS or SQLite error whose cause ``storage_error`` names is raised as that
    ``StorageError`` (the original as its ``__cause__``); any other goes up unchanged. ``setting``: the setting
    that names the folder, for the hint (the data directory unless said)."""
    try:
        yield
    except (OSError, sqlite3.Error) as exc:
        named_error = storage_error(exc, path, setting)
        if named_error is None:
            raise
        raise named_error from exc


def named(cause: str, where: Path | None, detail: str, *, sure: bool = False, setting: str = DATA_DIR) -> StorageError:
    """The error for ``cause`` ("full", "read-only", "permission", "missing") at ``where``, with what to do;
    ``sure``: ``where``'s own disk is the full one (else a full disk with room left is SQLite's temporary one);
    ``setting``: the setting naming the folder, offered as another way out ("": a path the person gave)."""
    shown = str(where) if where is not None else "a file of the memory"
    at = None if where is None else str(where)
    if cause == "full":
        free = free_bytes(where)
        if not sure and free is not None and free >= FULL_BELOW:  # the memory's disk has room: another one is full
            return DiskFull(f"a disk is full ({detail}), not the one holding {shown} ({_size(free)} free)",
                            path=at, hint=f"free some space where this command writes (the destination you gave, or "
                                          f"the temporary folder {tempfile.gettempdir()}), then try again; {KEPT}")
        said = f"{_size(free)} free" if free is not None else detail
        return DiskFull(f"the disk holding {shown} is full ({said})", path=at,
                        hint=f"free some space on it, then try again; {KEPT}")
    if cause == "read-only":
        elsewhere = f"set {setting} to a writable folder" if setting else "choose a path on another disk"
        return ReadOnlyStorage(f"{shown} is on a read-only file system ({detail})",
                               path=at, hint=f"remount it read-write, or {elsewhere}; {KEPT}")
    if cause == "permission":
        elsewhere = f"set {setting} to a folder it owns" if setting else "choose a path it may use"
        return StoragePermission(f"permission denied on {shown} for {_user()} ({detail})",
                                 path=at, hint=f"give that user read and write access to it, or {elsewhere}")
    blocker = _file_in_the_way(where)
    said = f"{blocker} is a file where a folder should be" if blocker is not None else f"{shown} does not exist"
    if not setting:
        return StorageMissing(f"{said} ({detail})", path=at, hint="check the path you gave")
    return StorageMissing(f"{said} ({detail})", path=at,
                          hint=f"create the folder (or move the file out of the way), or set {setting} to a folder "
                               "that exists")


def disk_is_full(path: Path) -> bool:
    """Whether the file system holding ``path`` is (about) full: under ``FULL_BELOW`` bytes or no inode free."""
    try:
        st = os.statvfs(_existing(path))
    except OSError:
        return False
    return st.f_bavail * st.f_frsize < FULL_BELOW or (st.f_files > 0 and st.f_favail == 0)


def free_bytes(path: Path | None) -> int | None:
    """Bytes this user may still write on the file system holding ``path`` (None: unknown)."""
    if path is None:
        return None
    try:
        st = os.statvfs(_existing(path))
    except OSError:
        return None
    return st.f_bavail * st.f_frsize if st.f_favail != 0 or st.f_files == 0 else 0


def _sqlite_cause(exc: sqlite3.Error, where: Path | None) -> str | None:
    code = getattr(exc, "sqlite_errorcode", None)
    if code is None:
        return None
    primary = code & 0xFF
    if primary == SQLITE_FULL:
        return "full"
    if code == SQLITE_READONLY_DBMOVED:
        return "missing"  # the database file was deleted or moved under an open connection
    if primary in (SQLITE_READONLY, SQLITE_IOERR, SQLITE_CANTOPEN, SQLITE_PERM):
        return _cause_on_disk(where) or ("read-only" if primary == SQLITE_READONLY else None)
    return None


def _cause_on_disk(where: Path | None) -> str | None:
    """Why SQLite could not open or write at ``where``, as the file system holding it shows."""
    if where is None:
        return None
    if _file_in_the_way(where) is not None:
        return "missing"
    try:
        st = os.statvfs(_existing(where))
    except OSError:
        return None
    if st.f_flag & os.ST_RDONLY:
        return "read-only"
    if disk_is_full(where):
        return "full"
    if not where.exists():
        return "missing"
    if not os.access(where, os.R_OK | os.W_OK) or (where.is_dir() and not os.access(where, os.X_OK)):
        return "permission"
    return None


def _existing(path: Path) -> Path:
    """``path`` or its nearest ancestor that exists (what ``statvfs`` can look at)."""
    for candidate in (path, *path.parents):
        try:
            if candidate.exists():
                return candidate
        except OSError:
            continue
    return Path("/")


def _file_in_the_way(where: Path | None) -> Path | None:
    """The file that stands where ``where`` (a folder) or one of its folders should be, if one does."""
    if where is None:
        return None
    found = _existing(where)
    return found if found.exists() and not found.is_dir() else None


def _outside(where: Path | None, folder: Path | str | None) -> bool:
    """Whether ``where`` is a file outside ``folder`` (the folder a setting names); unknown is not outside."""
    if where is None or folder is None:
        return False
    try:
        return not where.resolve().is_relative_to(Path(folder).expanduser().resolve())
    except (OSError, RuntimeError):  # a link loop: say what the setting offers
        return False


def _as_path(path: Path | str | None) -> Path | None:
    return None if path is None else Path(path)


def _size(count: int | None) -> str:
    if count is None:
        return "unknown space"
    if count < 1000:
        return f"{count} bytes"
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if count >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{count} bytes"


def _user() -> str:
    try:
        import pwd

        return f"user {pwd.getpwuid(os.geteuid()).pw_name}"
    except (ImportError, KeyError):
        return f"uid {os.geteuid()}"
