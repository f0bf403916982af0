"""The household backup: the whole box in one tar, for disaster recovery, plainly marked as everyone's memory.

Only the owner makes one (``GET /api/household/backup``, ``lyra backup
--household DEST``), and nobody else may: it holds every person's memory.
So that nobody mistakes it for their own backup, the file is called
``lyra-household-EVERYONE-<date>.tar`` and opens with a ``README.txt`` that
says what it holds, then a ``manifest.json`` (who is in it, which file is
whose memory). Then ``household.db`` (people, hashed secrets and tokens, the
household memory: SQLite's online backup, one consistent snapshot) and each
person's database as ``lyra backup`` copies it (``store/files/backups.py``
``copy_into``: one read transaction's snapshot, without off-the-record
conversations). The indexes are not copied: they are rebuilt from the rows.

Every copy is made the way a download's is (``transfer/backup.py``
``backup_file``: a declared ``.backup-*.db`` in the data directory, unlinked
as soon as it is open), and the tar is streamed from those open files, so no
copy stays behind however the backup ends. The tar itself is never written
inside the data directory (a later forget would not reach it there).

``restore_household`` puts the whole box back into a new, empty data
directory; it never merges into a household that exists.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import sqlite3
import tarfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import BinaryIO

from .. import __version__
from ..errors import LyraError
from ..pause_points import pause_point
from ..store import Store
from ..store.files.backups import check
from ..store.files.dirlock import DataDirBusy, DirLock, find_holders
from ..store.files.outgoing import writing_outside
from ..store.files.registry import locked_file
from ..store.household import FILENAME as HOUSEHOLD_FILE
from ..store.household import PEOPLE_DIRNAME, Household, Person
from ..store.store import DB_FILENAME
from .backup import DOWNLOAD_PREFIX, STAGING, backup_file

FORMAT = "lyra-household-backup"
VERSION = 1
README = "README.txt"
MANIFEST = "manifest.json"
BLOCK = tarfile.BLOCKSIZE
RECORD = tarfile.RECORDSIZE
CHUNK = 1024 * 1024
MEMBER_NAME = re.compile(rf"^(?:{re.escape(DB_FILENAME)}|{PEOPLE_DIRNAME}/[0-9a-f]{{1,32}}/{re.escape(DB_FILENAME)})$")


class HouseholdBackupError(LyraError):
    """A household backup that cannot be made or restored here."""


@dataclass
class Member:
    """One file of the tar: its name inside, its size, and where its bytes come from (an open file)."""

    name: str
    size: int
    data: BinaryIO


def file_name(now: datetime | None = None) -> str:
    return f"lyra-household-EVERYONE-{(now or datetime.now()):%Y-%m-%d}.tar"


def memory_name(person: Person) -> str:
    """Where a person's memory sits in the tar (and in the data directory): their home, then ``lyra.db``."""
    return f"{person.home}/{DB_FILENAME}" if person.home else DB_FILENAME


def snapshot(household: Household, store_of: Callable[[Person], Store], made_by: Person) -> list[Member]:
    """Consistent copies of the household database and of every person's memory, open and unnamed on disk,
    with the README and the manifest first. The caller closes them (``tar_chunks`` does, once streamed)."""
    members: list[Member] = []
    try:
        members.append(_open_member(HOUSEHOLD_FILE, household_copy(household)))
        people = household.people()  # after the household's copy: whoever is listed is in it
        for person in people:
            members.append(_open_member(memory_name(person), backup_file(store_of(person))))
    except BaseException:
        for member in members:
            member.data.close()
        raise
    now = datetime.now(timezone.utc)
    manifest = {"format": FORMAT, "version": VERSION, "lyra": __version__,
                "created_at": now.isoformat(timespec="seconds"), "made_by": made_by.name,
                "holds": "the memory of EVERY person of this household",
                "household": HOUSEHOLD_FILE,
                "people": [{"id": p.id, "name": p.name, "kind": p.kind, "owner": p.owner, "memory": memory_name(p)}
                           for p in people]}
    return [_bytes_member(README, readme(people, made_by, now).encode("utf-8")),
            _bytes_member(MANIFEST, (json.dumps(manifest, indent=2, ensure_ascii=False) + "\n").encode("utf-8")),
            *members]


def readme(people: list[Person], made_by: Person, now: datetime) -> str:
    names = ", ".join(p.name for p in people)
    return (
        "THIS FILE HOLDS EVERYONE'S MEMORY.\n\n"
        f"It is a whole-household backup of Lyra, made on {now:%Y-%m-%d %H:%M} UTC by {made_by.name} (the owner):\n"
        f"the household database and the complete memory of every person who lives with this Lyra ({names}):\n"
        "everything each of them said to Lyra and everything Lyra built from it.\n\n"
        "Anyone who can read this file can read all of that. Keep it as safe as the box itself, never share it,\n"
        "and delete it once it is no longer needed: what anyone forgets in Lyra from now on is NOT forgotten\n"
        "in this copy. (For your own memory alone, use your own backup: `lyra backup FILE`, or Export.)\n\n"
        "To restore the whole box into a new, empty data directory:\n"
        "    lyra restore --household THIS_FILE\n"
    )


def household_copy(household: Household) -> BinaryIO:
    """A consistent copy of ``household.db`` (SQLite's online backup), open and already unlinked."""
    path = household.data_dir / f"{DOWNLOAD_PREFIX}{uuid.uuid4().hex}.db"
    with locked_file(path):
        source, dest = sqlite3.connect(household.path), sqlite3.connect(path)
        try:
            source.backup(dest)
        finally:
            dest.close()
            source.close()
        # Not opened again to check it: the copy keeps the WAL mode of its source, and any connection to it would
        # leave a -wal and -shm beside it. The restore checks every database before it places one.
        return path.open("rb")  # locked_file unlinks it on the way out


def tar_size(members: list[Member]) -> int:
    body = sum(BLOCK + _padded(m.size) for m in members) + 2 * BLOCK
    return _padded(body, RECORD)


def tar_chunks(members: list[Member]) -> Iterator[bytes]:
    """The tar, a piece at a time (a header, then the file in chunks): a whole box never sits in memory.
    Every member's file is closed when it ends, however it ends."""
    written = 0
    try:
        for member in members:
            info = tarfile.TarInfo(member.name)
            info.size, info.mode, info.mtime = member.size, 0o600, int(time.time())
            header = info.tobuf(format=tarfile.USTAR_FORMAT)
            yield header
            sent = 0
            while sent < member.size:
                block = member.data.read(min(CHUNK, member.size - sent))
                if not block:
                    raise HouseholdBackupError(f"{member.name} ended early while it was copied")
                sent += len(block)
                yield block
            padding = _padded(member.size) - member.size
            yield b"\0" * padding
            written += len(header) + member.size + padding
        end = _padded(written + 2 * BLOCK, RECORD) - written
        yield b"\0" * end
    finally:
        for member in members:
            member.data.close()


def write_household_backup(household: Household, store_of: Callable[[Person], Store], made_by: Person,
                           folder: Path) -> Path:
    """Write the household backup into ``folder`` (outside the data directory) as a new file; returns it."""
    folder = folder.expanduser().resolve()
    if folder.is_relative_to(household.data_dir.expanduser().resolve()):
        raise HouseholdBackupError(f"{folder} is inside the data directory",
                                   hint="write the household backup outside it: later forgets never reach a "
                                        "copy kept there")
    if folder.exists() and not folder.is_dir():
        raise HouseholdBackupError(f"{folder} is a file", hint="give the folder to write the backup into")
    folder.mkdir(parents=True, exist_ok=True)
    dest = _free(folder / file_name())
    tmp = dest.with_name(dest.name + ".partial")
    with writing_outside(household.data_dir, tmp):  # killed in here, the next open of the household removes tmp
        try:
            members = snapshot(household, store_of, made_by)
            with os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600), "wb") as out:
                for chunk in tar_chunks(members):
                    out.write(chunk)
                out.flush()
                os.fsync(out.fileno())
            pause_point("backup-written")
            os.replace(tmp, dest)
        finally:
            tmp.unlink(missing_ok=True)
    return dest


def restore_household(source: Path, data_dir: Path) -> list[Person]:
    """Put a household backup back into ``data_dir``, which must hold no memory yet; returns who is back.

    Only the files a household backup holds are read (never a path the archive names), each checked to be an
    intact database before anything is put in place; a person's memory is placed only for a person the
    restored household has, the household database last. Holds the data directory's lock throughout."""
    source = source.expanduser().resolve()
    if not source.is_file():
        raise HouseholdBackupError(f"no household backup at {source}")
    data_dir = data_dir.expanduser().resolve()
    found = [name for name in (HOUSEHOLD_FILE, DB_FILENAME, PEOPLE_DIRNAME) if (data_dir / name).exists()]
    if found:
        raise HouseholdBackupError(f"{data_dir} already holds a memory ({', '.join(found)}): a household backup "
                                   "restores into a new, empty data directory only",
                                   hint="point data_dir (LYRA_DATA_DIR) at a new folder, or restore your own "
                                        "memory with `lyra restore FILE`")
    data_dir.mkdir(parents=True, exist_ok=True)
    lock = DirLock(data_dir)
    if not lock.try_exclusive():
        holders = find_holders(data_dir)
        raise DataDirBusy(f"{data_dir} is open in {'; '.join(map(str, holders)) or 'another process'}",
                          hint="stop those processes first")
    staging = data_dir / STAGING
    try:
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir()
        _unpack(source, staging)
        staged = Household(staging)  # migrates one made by an earlier release
        try:
            people = staged.people()
        finally:
            staged.close()
        for person in people:
            name = memory_name(person)
            if (staging / name).exists():
                (data_dir / name).parent.mkdir(parents=True, exist_ok=True)
                os.replace(staging / name, data_dir / name)
        os.replace(staging / HOUSEHOLD_FILE, data_dir / HOUSEHOLD_FILE)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        lock.release()
    return people


def _unpack(source: Path, staging: Path) -> None:
    """The backup's databases into ``staging``, each checked; anything but a household backup is refused."""
    try:
        with tarfile.open(source, "r:*") as tar:
            members = {m.name: m for m in tar.getmembers()}
            manifest = _manifest(tar, members.get(MANIFEST))
            if HOUSEHOLD_FILE not in members:
                raise HouseholdBackupError(f"{source} holds no {HOUSEHOLD_FILE}", hint="use another backup")
            databases = {name: member for name, member in members.items() if name not in (README, MANIFEST)}
            for name, member in databases.items():  # all of them, before anything is written
                if not member.isfile() or not (name == HOUSEHOLD_FILE or MEMBER_NAME.match(name)):
                    raise HouseholdBackupError(f"{source} holds {name!r}, which no household backup holds",
                                               hint="use a file written by `lyra backup --household`")
            for name, member in databases.items():
                target = staging / name
                target.parent.mkdir(parents=True, exist_ok=True)
                data = tar.extractfile(member)
                assert data is not None, "a regular file has data"
                with data, target.open("xb") as out:
                    shutil.copyfileobj(data, out, CHUNK)
                check(target)
    except (tarfile.TarError, EOFError) as exc:
        raise HouseholdBackupError(f"{source} is not a household backup: {exc}",
                                   hint="use a file written by `lyra backup --household`") from exc
    version = manifest.get("version")
    if not isinstance(version, int) or version > VERSION:
        raise HouseholdBackupError(f"{source} was made by a newer Lyra ({manifest.get('lyra')})",
                                   hint="restore it with that version or a later one")


def _manifest(tar: tarfile.TarFile, member: tarfile.TarInfo | None) -> dict[str, object]:
    data = tar.extractfile(member) if member is not None and member.isfile() else None
    try:
        manifest = json.load(data) if data is not None else None
    except ValueError:
        manifest = None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise HouseholdBackupError("this is not a household backup (no manifest of one)",
                                   hint="use a file written by `lyra backup --household`; your own backup "
                                        "restores with `lyra restore FILE`")
    return manifest


def _open_member(name: str, data: BinaryIO) -> Member:
    return Member(name, os.fstat(data.fileno()).st_size, data)


def _bytes_member(name: str, data: bytes) -> Member:
    return Member(name, len(data), io.BytesIO(data))


def _padded(size: int, unit: int = BLOCK) -> int:
    return -(-size // unit) * unit


def _free(path: Path) -> Path:
    """``path``, or the first of ``name~2.tar``, ``name~3.tar``... that does not exist yet (never overwrite)."""
    n = 1
    while path.exists() or path.with_name(path.name + ".partial").exists():
        n += 1
        path = path.with_name(f"{path.stem.rsplit('~', 1)[0]}~{n}{path.suffix}")
    return path
