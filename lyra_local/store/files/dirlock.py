"""The data-directory lock: every process with the memory open holds it shared.

``lyra restore`` replaces ``lyra.db`` under the feet of whoever has it open; a
heartbeat cannot tell whether a ``lyra dream --loop`` worker sleeping between
passes still holds the file (it would go on writing into the unlinked
database). An ``flock`` on ``<data_dir>/.lock`` can: each ``Store`` takes it
shared for its lifetime (the kernel drops it when the process dies, however it
dies), and restore takes it exclusively, without waiting, or refuses and names
the processes that hold it. This module never deletes the lock file: a process
waiting on the old inode would then lock a file nobody else sees.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import socket
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

from ...errors import LyraError
from ...oserrors import storage_error

LOCK_FILENAME = ".lock"
SHARED_WAIT_S = 60.0  # a restore holds the lock exclusively for as long as copying one file takes
POLL_S = 0.1


class DataDirBusy(LyraError):
    """The data directory is held by another process in a way that forbids what was asked."""

    status_code = 503


@dataclass(frozen=True)
class Holder:
    """A process holding the lock, with what the instance registry (or /proc) says it is."""

    pid: int
    what: str

    def __str__(self) -> str:
        return f"pid {self.pid} ({self.what})"


class DirLock:
    """One open file description of the lock file, locked shared or exclusive."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.path = data_dir / LOCK_FILENAME
        self._fd: int | None = None
        self.mode: str | None = None

    def acquire_shared(self, wait_s: float = SHARED_WAIT_S) -> None:
        """Hold the lock shared; waits (bounded) while a restore holds it exclusively."""
        fd = self._open()
        deadline = time.monotonic() + wait_s
        while not _try(fd, fcntl.LOCK_SH):
            if time.monotonic() >= deadline:
                self._close()
                holders = ", ".join(str(h) for h in find_holders(self.data_dir)) or "another process"
                raise DataDirBusy(f"{self.data_dir} stayed locked by {holders} for {wait_s:.0f}s",
                                  hint="a `lyra restore` holds it while it replaces the database; try again")
            time.sleep(POLL_S)
        self.mode = "shared"

    def try_exclusive(self) -> bool:
        """Hold the lock exclusively if no other open file description holds it; never waits."""
        fd = self._open()
        if _try(fd, fcntl.LOCK_EX):
            self.mode = "exclusive"
            return True
        self._close()
        return False

    @property
    def held(self) -> bool:
        return self.mode is not None

    def release(self) -> None:
        """Unlock and close (idempotent)."""
        self._close()

    def _open(self) -> int:
        if self._fd is None:
            try:
                # O_CLOEXEC (Python's default): a child process must not inherit our hold.
                self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            except OSError as exc:  # a full disk, a read-only mount, a folder this user may not write
                raise storage_error(exc, self.path) or LyraError(
                    f"cannot open the lock file {self.path}: {exc}",
                    hint="the data directory must be writable by this user") from exc
        return self._fd

    def _close(self) -> None:
        fd, self._fd, self.mode = self._fd, None, None
        if fd is not None:
            os.close(fd)  # closing the only descriptor of this open file description unlocks it


def _try(fd: int, op: int) -> bool:
    try:
        fcntl.flock(fd, op | fcntl.LOCK_NB)
        return True
    except OSError as exc:
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            return False
        raise


def find_holders(data_dir: Path, *, exclude_pid: int | None = None) -> list[Holder]:
    """The processes holding (or waiting on) the lock, described by the instance registry where it can."""
    pids = holder_pids(data_dir / LOCK_FILENAME) - ({exclude_pid} if exclude_pid is not None else set())
    names = _registered(data_dir, pids)
    return [Holder(pid, names.get(pid) or _cmdline(pid)) for pid in sorted(pids)]


def holder_pids(lock_path: Path) -> set[int]:
    """Pids with a flock on ``lock_path`` (``/proc/locks``) or the file open (``/proc/*/fd``)."""
    try:
        st = lock_path.stat()
    except OSError:
        return set()
    pids: set[int] = set()
    with contextlib.suppress(OSError):
        for line in Path("/proc/locks").read_text().splitlines():
            parts = line.replace("->", "").split()
            # "1: FLOCK  ADVISORY  READ  1234 fe:00:2146669 0 EOF"
            if len(parts) >= 6 and parts[1] == "FLOCK" and _same_file(parts[5], st):
                pid = int(parts[4])
                if pid > 0:  # 0: a process outside our pid namespace
                    pids.add(pid)
    with contextlib.suppress(OSError), os.scandir("/proc") as procs:
        pids.update(int(p.name) for p in procs if p.name.isdigit() and _has_open(p.path, str(lock_path.resolve())))
    return pids


def _has_open(proc: str, target: str) -> bool:
    """Whether the process at ``/proc/<pid>`` has ``target`` open (False where we may not look)."""
    try:
        with os.scandir(f"{proc}/fd") as fds:
            for fd in fds:
                with contextlib.suppress(OSError):
                    if os.readlink(fd.path) == target:
                        return True
    except OSError:
        pass
    return False


def _same_file(device_inode: str, st: os.stat_result) -> bool:
    try:
        major, minor, inode = device_inode.split(":")
        return (int(major, 16), int(minor, 16), int(inode)) == (os.major(st.st_dev), os.minor(st.st_dev),
                                                                 st.st_ino)
    except ValueError:
        return False


def _registered(data_dir: Path, pids: set[int]) -> dict[int, str]:
    """What the running instances of this host with these pids say they are (read-only, best effort)."""
    db = data_dir / "lyra.db"
    if not pids or not db.is_file():
        return {}
    names: dict[int, str] = {}
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=2)
        try:
            marks = ", ".join("?" * len(pids))
            rows = conn.execute(f"SELECT pid, kind, id, summary FROM instances WHERE completed_at IS NULL "
                                f"AND host = ? AND pid IN ({marks}) ORDER BY started_at",
                                [socket.gethostname(), *sorted(pids)]).fetchall()
        finally:
            conn.close()
    except sqlite3.Error:
        return {}
    for pid, kind, instance_id, summary in rows:  # a server also registers its dream cycle: name both
        said = f"{kind} {instance_id}: {summary}"
        names[int(pid)] = f"{names[int(pid)]}; {said}" if int(pid) in names else said
    return names


def _cmdline(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return "unknown process"
    return " ".join(part.decode("utf-8", "replace") for part in raw.split(b"\0") if part)[:200] or "unknown process"
