"""Online backups of the memory, and restoring one without bringing back what was forgotten since.

A backup is a consistent copy of the database (``store/files/backups.py``: without
off-the-record conversations or this machine's task notes); the FAISS
indexes are not copied: they are rebuilt from it. A restore takes the data
directory's lock exclusively (``store/files/dirlock.py``), keeps the memory it
replaces **outside** the data directory (beside the backup, unless told
where: a copy inside would be a second memory that later forgets never
reach), and then forgets again, from the forget ledger, everything forgotten
after the backup was made (``store/forget/ledger.py``), saying so.

Every copy this module writes inside the data directory is a place declared in
``store/files/registry.py``: the restore's staging folder (removed when the restore
ends, or by the recovery step after a restore that was killed) and a backup
being written for a download (unlinked once open). A backup or a kept memory
is never written inside the data directory.
"""

from __future__ import annotations

import os
import shutil
import uuid
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import BinaryIO

from ..errors import LyraError
from ..pause_points import pause_point
from ..store import Store
from ..store.files.backups import check, copy_into, live_servers, raise_sequences, sequences
from ..store.files.dirlock import DataDirBusy, DirLock, find_holders
from ..store.files.outgoing import writing_outside
from ..store.files.registry import locked_file, sweep_leftovers
from ..store.forget.erase import Reforgotten, forget_again
from ..store.store import DB_FILENAME, INDEX_DIRNAME

STAGING = ".restoring"  # where a backup is made ready inside the data directory, removed whatever happens
DOWNLOAD_PREFIX = ".backup-"  # a backup being written for a download, inside the data directory


@dataclass(frozen=True)
class Restored:
    """What a restore did: where the replaced memory is kept (``None``: there was none) and what it forgot again."""

    kept: Path | None
    again: Reforgotten


def backup(store: Store, dest: Path) -> int:
    """Write a consistent copy of the database to ``dest`` (which must not exist); returns its size."""
    dest = dest.expanduser().resolve()
    if dest.exists():
        raise LyraError(f"{dest} already exists", hint="choose a new file name; a backup never overwrites")
    if dest.is_relative_to(store.data_dir.expanduser().resolve()):
        raise LyraError(f"{dest} is inside the data directory",
                        hint="write the backup outside it: later forgets never reach a copy kept there")
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(dest.name + ".partial")
    tmp.unlink(missing_ok=True)
    with writing_outside(store.data_dir, tmp):  # killed in here, the next open of the memory removes tmp
        try:
            copy_into(store, tmp)
            check(tmp)
            pause_point("backup-written")
            os.replace(tmp, dest)
        finally:
            tmp.unlink(missing_ok=True)
    return dest.stat().st_size


def backup_file(store: Store) -> BinaryIO:
    """A consistent copy of the database, as an open file no path names any more (a download streams it).

    It is written in the data directory (``.backup-*``, a ``locked_file``: a server killed meanwhile leaves it
    to the recovery step, where a copy in the system's temporary folder would stay for good) and unlinked as
    soon as it is whole and open.
    """
    path = store.data_dir / f"{DOWNLOAD_PREFIX}{uuid.uuid4().hex}.db"
    with locked_file(path):
        copy_into(store, path)  # VACUUM INTO takes the empty file locked_file made
        check(path)
        return path.open("rb")  # locked_file unlinks it on the way out


def restore(source: Path, data_dir: Path, *, force: bool = False, keep: Path | None = None) -> Restored:
    """Replace the data directory's database with a backup; the replaced one is kept at ``keep`` (default: beside
    the backup), never inside the data directory.

    Holds the data-directory lock exclusively throughout, so no process has the
    memory open while its file is swapped (one that starts meanwhile waits);
    refuses, naming them, while any process holds it. ``force`` only overrides
    the heartbeat check (a server that died without saying so), never the lock.
    """
    source = source.expanduser().resolve()
    if not source.is_file():
        raise LyraError(f"no backup at {source}")
    check(source)
    data_dir = data_dir.expanduser().resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    target = data_dir / DB_FILENAME
    kept = _kept_path(source, data_dir, keep) if target.exists() else None
    lock = DirLock(data_dir)
    if not lock.try_exclusive():
        holders = find_holders(data_dir)
        raise DataDirBusy(f"the memory in {data_dir} is open in {'; '.join(map(str, holders)) or 'another process'}",
                          hint="stop those processes (`lyra serve`, `lyra dream --loop`, ...) first: a restore "
                               "never replaces a database another process has open; --force does not override this")
    try:
        sweep_leftovers(data_dir, lock)  # a restore killed earlier left its staging: it goes first
        handed_out: dict[str, int] = {}
        if kept is not None:
            store = Store(data_dir, lock=lock)  # under our exclusive hold: it must not take the lock shared
            try:
                running = [] if force else live_servers(store)
                if running:
                    raise LyraError(f"the memory is in use by {', '.join(running)}",
                                    hint="stop `lyra serve` (and `lyra dream`) first, or pass --force")
                handed_out = sequences(store)
                copy_into(store, kept)
            finally:
                store.close()
        again = _forget_again_staged(source, data_dir, handed_out)
        pause_point("restore-staged")
        for suffix in ("-wal", "-shm"):
            (data_dir / f"{DB_FILENAME}{suffix}").unlink(missing_ok=True)
        os.replace(data_dir / STAGING / DB_FILENAME, target)
        shutil.rmtree(data_dir / INDEX_DIRNAME, ignore_errors=True)  # derived: rebuilt from the restored rows
    finally:
        shutil.rmtree(data_dir / STAGING, ignore_errors=True)
        lock.release()
    return Restored(kept, again)


def _forget_again_staged(source: Path, data_dir: Path, handed_out: dict[str, int]) -> Reforgotten:
    """The backup, in a staging folder of the data directory, made ready before it replaces anything: its id
    sequences above every id the replaced memory handed out, and what was forgotten after it was made forgotten
    again (a failure here leaves the memory as it was, and the staging folder goes)."""
    staging = data_dir / STAGING
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    shutil.copyfile(source, staging / DB_FILENAME)
    store = Store(staging)
    try:
        raise_sequences(store, handed_out)
        return forget_again(store, ledger_dir=data_dir)
    finally:
        store.close()


def _free(path: Path) -> Path:
    """``path``, or the first of ``name~2.db``, ``name~3.db``... that does not exist yet."""
    n = 1
    while path.exists():
        n += 1
        path = path.with_name(f"{path.stem.rsplit('~', 1)[0]}~{n}{path.suffix}")
    return path


def _kept_path(source: Path, data_dir: Path, keep: Path | None) -> Path:
    """Where the replaced memory goes: a new file outside the data directory, in a folder that exists."""
    path = keep.expanduser().resolve() if keep is not None else _free(
        source.parent / f"{data_dir.name}-before-restore-{datetime.now():%Y%m%d-%H%M%S}.db")
    if path.is_relative_to(data_dir):
        raise LyraError(f"{path} is inside the data directory",
                        hint="keep the replaced memory outside it (--keep PATH): later forgets never reach a copy "
                             "kept there")
    if path.exists():
        raise LyraError(f"{path} already exists", hint="choose a new file name with --keep PATH")
    if not path.parent.is_dir() or not os.access(path.parent, os.W_OK):
        raise LyraError(f"cannot write the replaced memory to {path.parent}",
                        hint="choose where to keep it with --keep PATH")
    return path
