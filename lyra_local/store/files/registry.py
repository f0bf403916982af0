"""The registry of files: every place outside the database's rows where a person's words can land.

``kinds.py`` declares the tables; this module declares the files around them:
the database and its WAL, the FAISS snapshots and their half-written
temporaries, uploads waiting to be imported, a restore's staging folder, a
backup being written for a download, notes naming the half-written copies a
backup or an export is writing outside the data directory (``outgoing.py``),
and, for the record, what the page keeps in the browser's storage. Each place
says who may create it, whether it can hold words, and how it goes: with its
writer, on a forget, by the recovery step after a crash, or never because it
is the truth.

The recovery step (``sweep_leftovers``) runs on every open of a data
directory (``Store.__init__``), under a data-directory lock it holds itself,
and removes what a process that ended left, never what a live one is writing:

* with the lock held exclusively, no other process has the memory open, so
  every leftover goes;
* otherwise a file made by ``locked_file`` goes only when the flock its
  writer held while it lived is free (the kernel drops it when a process dies,
  however it dies): its final name appears only once the flock is held, so a
  free flock under that name always means a writer that ended; under its
  ``.locking`` name (between its creation and the flock, microseconds) it goes
  only when older than ``GRACE_S`` as well; a restore's staging goes
  only when no restore holds the lock (a restore holds it exclusively
  throughout);
* a note naming copies written outside (``outgoing.py``) goes only when its
  writer's flock is free, even with the lock held exclusively (its writer
  need not hold the lock), and the half-written copies it names go first.

It logs one line naming what it removed. ``unexplained_files`` lists the files
of a data directory that no declaration explains: the tests fail on one.

This module never runs SQL and never removes a place declared as the truth.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import logging
import os
import re
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Literal

from ..forget.ledger import LEDGER_FILENAME
from .dirlock import LOCK_FILENAME, DataDirBusy, DirLock

log = logging.getLogger(__name__)
OUTGOING_DIR = "outgoing"  # notes naming the temporary files of copies written outside (store/files/outgoing.py)
OURS = re.compile(r".+\.partial|lyra-world-[0-9a-f]{32}\.md")  # the only names a note can make the sweep remove
GRACE_S = 60.0  # a ``.locking`` file younger than this may be between its creation and its flock: left alone
CREATING = ".locking"  # the suffix of a ``locked_file`` before its flock is held and it takes its name

Where = Literal["data_dir", "browser"]
# What the recovery step does with a place:
#   never    - it is the truth, or its writer removes it at once and it holds no words
#   dead     - made by ``locked_file``: removed once its writer's flock is free (the writer ended)
#   unstaged - a restore's folder: removed whenever no restore holds the data-directory lock
#   alone    - holds no words and carries no flock: removed only when no other process has the memory open
#   outgoing - a note of copies written outside (store/files/outgoing.py): removed once its writer's flock is free
#              (whoever holds the data-directory lock), the half-written files it names outside going first
Sweep = Literal["never", "dead", "unstaged", "alone", "outgoing"]


@dataclass(frozen=True)
class Place:
    """One place outside the database's rows where a file (or a browser storage key) can be."""

    name: str  # what it is, as the recovery step's log line names it
    pattern: str  # a glob relative to the data directory (``*``: within a folder, ``**``: any depth); browser: a key
    where: Where
    creator: str  # who may create it
    words: bool  # whether it can hold a person's words (or vectors made from them)
    removed: str  # how it goes
    sweep: Sweep = "never"


def _beside(db: str, which: str, *, wal: str, journal: str) -> tuple[Place, ...]:
    """The files SQLite keeps beside the database file ``db`` (``which``: "" or "household "), ``wal`` and
    ``journal`` saying how its write-ahead log and its rollback journal go."""
    return (Place(f"the {which}database's write-ahead log", f"{db}-wal", "data_dir", "SQLite", True, wal),
            Place(f"the {which}WAL's shared-memory index", f"{db}-shm", "data_dir", "SQLite", False,
                  "removed by SQLite when the last connection closes"),
            Place(f"a rollback journal of the {which}database", f"{db}-journal", "data_dir", "SQLite", True, journal))


FILES: tuple[Place, ...] = (
    # -- the truth ------------------------------------------------------------------------------------------
    Place("the database", "lyra.db", "data_dir", "Store (store/db.py)", True,
          "never: it is the truth; a forget deletes rows with secure_delete, so their pages are zeroed"),
    *_beside("lyra.db", "", wal="truncated by every forget (store/forget/scrub.py); removed by SQLite when the last "
                                 "connection closes",
             journal="removed by SQLite when its transaction ends, or rolled back at the next open after a crash"),
    Place("the data-directory lock", LOCK_FILENAME, "data_dir", "DirLock (store/files/dirlock.py)", False,
          "never: a process waiting on it must not lock a file nobody else sees"),
    Place("the forget ledger", LEDGER_FILENAME, "data_dir", "every forget (store/forget/ledger.py)", False,
          "never: it holds ids and hashes only, and a restore needs every line"),
    # -- the household (store/household.py) ---------------------------------------------------------------
    Place("the household database", "household.db", "data_dir", "Household (store/household.py)", True,
          "never: it is the truth for who lives here; a removed person's rows and the household-memory versions "
          "they wrote are deleted with secure_delete (store/household/schema.py TABLES)"),
    *_beside("household.db", "household ",
             wal="removed by SQLite when the last connection closes; checkpointed by a removal",
             journal="removed by SQLite when its transaction ends"),
    Place("another person's memory: a data directory of its own", "people/**", "data_dir",
          "AppState.store_of (web/app.py): a Store opened in people/<id>/, which this registry explains in turn",
          True, "forgotten and then deleted whole when the owner removes the person (AppState.remove_person); "
                "never swept from the first person's memory"),
    # -- caches ---------------------------------------------------------------------------------------------
    Place("an index snapshot", "index/*.faiss", "data_dir", "VectorIndex.save (store/vectors.py)", True,
          "deleted by a forget for the tiers it touched (store/forget/scrub.py), written again from SQLite; "
          "deleted by a restore"),
    Place("an index snapshot's sidecar", "index/*.json", "data_dir", "VectorIndex.save", False,
          "with its snapshot"),
    Place("a half-written index snapshot", "index/*.tmp", "data_dir", "VectorIndex.save, through locked_file",
          True, "renamed over the snapshot when whole, unlinked if the write fails; deleted by a forget; "
                "swept once its writer ended", "dead"),
    Place("a file being created, before its writer's flock is held", f"**/*{CREATING}", "data_dir",
          "locked_file (uploads, snapshot temporaries, download backups, outgoing notes)", True,
          "renamed to its name within microseconds; swept once older than GRACE_S with its flock free", "dead"),
    Place("a half-written sidecar", "index/*.json.partial", "data_dir", "VectorIndex.save (fsutil.atomic_write_text)",
          False, "renamed over the sidecar at once; swept when no other process has the memory open", "alone"),
    # -- on their way in or out -----------------------------------------------------------------------------
    Place("an upload", "imports/*", "data_dir", "PUT /api/import (store/files/uploads.py), through locked_file", True,
          "unlinked when its import ends, when the server stops, and by a forget (which stops the import "
          "first); swept once its server ended", "dead"),
    Place("a restore's staging", ".restoring/**", "data_dir", "lyra restore (transfer/backup.py), under the "
          "exclusive lock", True, "removed when the restore ends, however it ends; swept at the next open after "
          "a restore that was killed", "unstaged"),
    Place("a backup being written for a download", ".backup-*.db", "data_dir",
          "GET /api/backup (transfer/backup.py), through locked_file", True,
          "unlinked as soon as the copy is whole and open for the download; swept once its server ended", "dead"),
    Place("the rollback journal of a backup being written", ".backup-*.db-journal", "data_dir",
          "SQLite, while the backup's off-the-record rows are left out (transfer/backup.py)", True,
          "removed by SQLite when that transaction ends; it carries no flock of ours, so swept only when no other "
          "process has the memory open (a live writer's journal unlinked would fail its commit)", "alone"),
    Place("a note naming the half-written copies a backup, an export or `lyra world edit` is writing outside "
          "the data directory", f"{OUTGOING_DIR}/*.json", "data_dir",
          "lyra backup, lyra export, the household backup, lyra world edit (store/files/outgoing.py), "
          "through locked_file",
          False, "paths only; unlinked when its copy is whole or failed; swept once its writer ended, with the "
                 "half-written files it names (only names of ours: OURS)", "outgoing"),
    # -- written by a person's tools, holding no words -------------------------------------------------------
    Place("the configuration, kept in the data directory", "lyra.toml", "data_dir",
          "the person; Settings -> Models (web/model_choice.py)", False,
          "never: the person's settings (model choices, names they chose), not what was said"),
    Place("the configuration being rewritten", ".lyra.toml.*.tmp", "data_dir", "fsutil.replace_text", False,
          "renamed over lyra.toml at once, unlinked if the write fails"),
    Place("model files, where models_dir is inside the data directory", "models/**", "data_dir",
          "lyra models fetch and pull, Settings -> Models' downloads (partials in models/.pull/), the person", False,
          "never: models, not memory (a pull's partial stays to be resumed, or goes with the next pull)"),
    Place("the terminal chat's log", "logs/chat.log*", "data_dir", "lyra chat (cli/terminal.py FileLogs)", False,
          "never: log lines name ids, counts and causes, never what was said; moved to chat.log.1 past 1 MB"),
    Place("the doctor's write probe", ".write-test", "data_dir", "lyra doctor (diagnostics.py)", False,
          "unlinked right after it is written"),
    # -- the browser: declared for the record (the page owns them; nothing on disk here) --------------------
    Place("the API token the person typed", "lyra-token", "browser", "static/api.js (localStorage)", False,
          "never by Lyra: the person's browser keeps it until its site data is cleared"),
    Place("the first-run banner dismissed", "lyra-first-run-dismissed", "browser", "static/first-run.js (localStorage)",
          False, "never by Lyra"),
    Place("a tab's own record: its trash and its open off-the-record conversation", "lyra-tab:*", "browser",
          "static/tabs.js (localStorage)", False, "ids and moments only, never words; removed by its tab when "
          "the trash empties and nothing is open, or by another tab once its owner is provably gone (its Web Lock "
          "is free) or, where the page has no Web Locks (plain http on a LAN), once an entry is 5 s past the "
          "moment its own tab would have forgotten it"),
    Place("the trash list an older page shared between tabs", "lyra-trash", "browser",
          "static/sessions.js of older versions (localStorage)", False, "ids only; removed by the tab that "
          "finishes or restores what it lists"),
)


def _pattern_re(pattern: str) -> re.Pattern[str]:
    """A place's glob as a regular expression over a path relative to the data directory (``/`` separated)."""
    out = ""
    for part in re.split(r"(\*\*/|\*\*|\*|\?)", pattern):
        out += {"**/": "(?:.*/)?", "**": ".*", "*": "[^/]*", "?": "[^/]"}.get(part, re.escape(part))
    return re.compile(out)


_MATCHERS = tuple((p, _pattern_re(p.pattern)) for p in FILES if p.where == "data_dir")


def explaining(data_dir: Path, path: Path) -> Place | None:
    """The declared place a file of the data directory is, or None."""
    rel = path.relative_to(data_dir).as_posix()
    return next((place for place, matcher in _MATCHERS if matcher.fullmatch(rel)), None)


def unexplained_files(data_dir: Path) -> list[Path]:
    """Every file under ``data_dir`` (hidden ones and those in folders included; links not followed) that no
    declared place explains. A test helper: an undeclared file is a place forgetting may never reach."""
    found: list[Path] = []
    for root, dirs, names in os.walk(data_dir):
        dirs.sort()
        for name in sorted(names):
            path = Path(root) / name
            if explaining(data_dir, path) is None:
                found.append(path)
    return found


# -- files whose writer can be told alive or dead -----------------------------------------------------------


@contextlib.contextmanager
def locked_file(path: Path) -> Iterator[BinaryIO]:
    """Create ``path`` (it must not exist) and hold an exclusive flock on it while the block runs, so the
    recovery step can tell a live writer's file from a dead one's. On the way out the file is unlinked (if it
    is still there under that name) before it is closed: a free flock always means its writer ended."""
    creating = path.with_name(path.name + CREATING)
    fd = os.open(creating, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    out = os.fdopen(fd, "wb")
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            _take_name(creating, path)
        finally:
            creating.unlink(missing_ok=True)  # renamed away where the file system has no hard links
        yield out
    finally:
        with contextlib.suppress(FileNotFoundError):
            if os.path.samestat(os.stat(path), os.fstat(fd)):  # not a file renamed over it since
                os.unlink(path)
        out.close()


def _take_name(creating: Path, path: Path) -> None:
    """Give the locked file its name: a hard link never replaces a file (as O_EXCL); on a file system without
    hard links (exFAT, some FUSE mounts) a rename after a check, whose race only a second writer of the same
    unique name could lose."""
    try:
        os.link(creating, path)
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK, errno.ENOSYS):
            raise
        if path.exists():
            raise FileExistsError(errno.EEXIST, "File exists", str(path)) from exc
        os.rename(creating, path)


def writer_ended(path: Path) -> bool:
    """Whether the flock a ``locked_file`` writer holds on ``path`` is free (for a ``.locking`` name, also older
    than ``GRACE_S``: younger, its writer may not have taken the lock yet). False when it is gone."""
    grace_s = GRACE_S if path.name.endswith(CREATING) else 0.0
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                return False
            raise
        return time.time() - os.fstat(fd).st_mtime >= grace_s
    finally:
        os.close(fd)  # drops our probe's flock


# -- the recovery step --------------------------------------------------------------------------------------

Standing = Literal["alone", "shared", "restoring"]


@contextlib.contextmanager
def _standing(data_dir: Path, lock: DirLock | None) -> Iterator[Standing]:
    """Hold the data-directory lock for the sweep and say who else may be there: nobody ("alone"), processes
    with the memory open ("shared"), or a restore holding it exclusively ("restoring")."""
    if lock is not None and lock.mode == "exclusive":
        yield "alone"
        return
    probe = DirLock(data_dir)
    try:
        if probe.try_exclusive():
            yield "alone"
            return
        try:
            probe.acquire_shared(wait_s=0)
        except DataDirBusy:
            yield "restoring"
            return
        yield "shared"
    finally:
        probe.release()


def _due(place: Place, path: Path, standing: Standing) -> bool:
    if place.sweep == "dead":
        return standing == "alone" or writer_ended(path)
    if place.sweep == "outgoing":  # its writer need not hold the data-directory lock (the household backup)
        return writer_ended(path)
    if place.sweep == "unstaged":
        return standing != "restoring"
    return place.sweep == "alone" and standing == "alone"


def _remove(path: Path) -> int:
    """Remove a file or a folder; returns the bytes it held."""
    if path.is_dir() and not path.is_symlink():
        size = sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())
        shutil.rmtree(path)
        return size
    size = path.lstat().st_size
    path.unlink()
    return size


def _outside_named(note: Path) -> list[Path]:
    """The half-written copies a dead writer's note names that are still there and are ours to remove: regular
    files at absolute paths with a temporary name of ours (a note that cannot be read names none)."""
    try:
        named = json.loads(note.read_bytes())
    except (OSError, ValueError):
        return []
    paths = [Path(p) for p in named if isinstance(p, str)] if isinstance(named, list) else []
    return [p for p in paths if p.is_absolute() and OURS.fullmatch(p.name) and p.is_file() and not p.is_symlink()]


def sweep_leftovers(data_dir: Path, lock: DirLock | None = None) -> list[Path]:
    """Remove what a process that ended left in ``data_dir`` (uploads, a restore's staging, half-written
    snapshots and backups), never what a live one is writing; returns what it removed and logs one line.

    ``lock``: a ``DirLock`` this process already holds exclusively (a restore); else the sweep takes its own.
    A file it cannot remove is named in the log and left (opening the memory matters more).
    """
    if not data_dir.is_dir():
        return []
    removed: list[tuple[Place, Path, int]] = []
    outside: list[tuple[Path, int]] = []
    failed: list[str] = []
    with _standing(data_dir, lock) as standing:
        for place, _ in _MATCHERS:
            if place.sweep == "never":
                continue
            folder = place.pattern.endswith("/**")
            candidates = [data_dir / place.pattern[:-3]] if folder else sorted(data_dir.glob(place.pattern))
            for path in candidates:
                if not (path.exists() or path.is_symlink()) or not _due(place, path, standing):
                    continue
                try:
                    if place.sweep == "outgoing":
                        outside += [(copy, _remove(copy)) for copy in _outside_named(path)]
                    removed.append((place, path, _remove(path)))
                except OSError as exc:
                    failed.append(f"{path.relative_to(data_dir)} ({exc.strerror or exc})")
    if outside:
        log.warning("removed the half-written copies of %s a process that ended left outside it: %s", data_dir,
                    "; ".join(f"{copy} ({size:,} bytes)" for copy, size in outside))
    if removed:
        log.warning("removed what a process that ended left in %s: %s", data_dir,
                    "; ".join(f"{path.relative_to(data_dir)} ({place.name}, {size:,} bytes)"
                              for place, path, size in removed))
    if failed:
        log.warning("could not remove what a process that ended left in %s: %s", data_dir, "; ".join(failed))
    return [path for _, path, _ in removed]
