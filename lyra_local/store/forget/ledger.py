"""The forget ledger: what was forgotten, by id (never a word of it), so restoring a backup forgets it again.

A backup made before a forget holds what was forgotten; restoring it would
bring that back without a word. Every forget appends one line here *before*
it deletes anything: the sessions (by uid), the turns and the memories (by
id) it forgets, and the conversations it renames. An id names one row for
good in a data directory: ids are never reused, and a restore raises the
restored memory's id sequences above every id the memory it replaces ever
handed out (``store/files/backups.py``), so a line means the same row in every
backup of this memory. Each line names its **lineage** (the memory's
creation: ``Store.lineage``), so a backup of another memory restored here is
never touched by this one's lines. Restoring a backup re-applies every line
of its lineage; a line about rows the backup never had, or no longer has,
removes nothing.

Each line also names the forgotten turns and conversations by their
portable ids (``store/portable.py``), so importing an export made before the
forget does not bring them back either. A deletion the person made as a
correction (a summary, a digest, the arc) is a line too, with its
``dismissed`` record (ids and hashes), so it stays deleted after a restore.
A backup records how many lines the ledger had when it was made
(``meta.ledger_position``): renames and deletions are re-applied only from
that line on (one made later may have been undone by the person since);
forgetting rows again is harmless whatever the line. The ledger lives in the
data directory (``forgotten.jsonl``) and holds no text, only ids and hashes:
a forgotten word is in none of its bytes.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...oserrors import named_os_errors
from ..db import utc_now

if TYPE_CHECKING:
    from ..store import Store

LEDGER_FILENAME = "forgotten.jsonl"
POSITION_KEY = "ledger_position"  # in a backup: how many lines the ledger had when it was made


@dataclass(frozen=True)
class Entry:
    """One forget: sessions by uid, turns and memories by id, conversations renamed (and their client-given
    name cleared: ``unsourced``) by uid, deletions as ``[kind, target, basis]``; ``index``: its line."""

    lineage: str
    at: str
    sessions: tuple[str, ...] = ()
    turns: tuple[int, ...] = ()
    memories: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    renamed: tuple[str, ...] = ()
    unsourced: tuple[str, ...] = ()
    dismissed: tuple[tuple[str, str, str], ...] = ()
    portable: tuple[str, ...] = ()  # the forgotten turns' and sessions' portable ids, for imports
    by_text: bool = False  # a forget by text: what held the text then, and only that, is named
    index: int = -1

    @property
    def empty(self) -> bool:
        return not (self.sessions or self.turns or any(self.memories.values()) or self.renamed or self.portable
                    or self.dismissed)


def path(data_dir: Path) -> Path:
    return data_dir / LEDGER_FILENAME


@dataclass(frozen=True)
class Named:
    """What one forget names, as ``record`` is given it (``Entry``'s fields but its lineage and time, in any
    order and with repeats: ``record`` sorts them and drops the repeats)."""

    sessions: Sequence[str] = ()
    turns: Sequence[int] = ()
    memories: Mapping[str, Sequence[int]] | None = None
    renamed: Sequence[str] = ()
    unsourced: Sequence[str] = ()
    dismissed: Sequence[tuple[str, str, str]] = ()
    portable: Sequence[str] = ()
    by_text: bool = False


def record(store: Store, named: Named) -> None:
    """Append what is about to be forgotten, durably (a crash after this still leaves the line) and whole: one
    write on an append-only descriptor under an exclusive lock, so lines from two processes never interleave."""
    entry = Entry(store.lineage(), utc_now(), tuple(named.sessions), tuple(sorted(set(named.turns))),
                  {k: tuple(sorted(set(v))) for k, v in (named.memories or {}).items() if v}, tuple(named.renamed),
                  tuple(named.unsourced), tuple((d[0], d[1], d[2]) for d in named.dismissed),
                  tuple(sorted(set(named.portable))), named.by_text)
    if entry.empty:
        return
    raw = {k: v for k, v in asdict(entry).items() if k != "index"}
    line = (json.dumps(raw, sort_keys=True) + "\n").encode()
    ledger = path(store.data_dir)
    with named_os_errors(ledger):  # a full disk refuses the forget before anything is deleted, and says so
        fd = os.open(ledger, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            _append_whole(fd, line, ledger)
        finally:
            os.close(fd)  # the lock goes with it


def _append_whole(fd: int, line: bytes, ledger: Path) -> None:
    """Append ``line`` and sync it, or leave the ledger as it was: a disk that fills mid-write takes a line's
    first bytes and refuses the rest, and half a line would stand in the way of every later one."""
    start = os.lseek(fd, 0, os.SEEK_END)
    try:
        if os.write(fd, line) != len(line):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(ledger))
        os.fsync(fd)
    except OSError:
        os.ftruncate(fd, start)
        raise


def position(data_dir: Path) -> int:
    """How many lines the ledger has now."""
    ledger = path(data_dir)
    if not ledger.is_file():
        return 0
    with ledger.open("rb") as lines:
        return sum(1 for _ in lines)


def entries(data_dir: Path, lineage: str | None = None) -> Iterator[Entry]:
    """The ledger's lines (of one lineage, if given), oldest first; a damaged line is skipped: it names nothing
    for sure."""
    ledger = path(data_dir)
    if not ledger.is_file():
        return
    with ledger.open(encoding="utf-8") as lines:
        for index, line in enumerate(lines):
            try:
                raw: dict[str, Any] = json.loads(line)
                if not isinstance(raw, dict) or (lineage is not None and raw.get("lineage") != lineage):
                    continue
                yield Entry(str(raw.get("lineage")), str(raw.get("at", "")), tuple(map(str, raw.get("sessions", []))),
                            tuple(int(i) for i in raw.get("turns", [])),
                            {str(k): tuple(int(i) for i in v) for k, v in dict(raw.get("memories", {})).items()},
                            tuple(map(str, raw.get("renamed", []))), tuple(map(str, raw.get("unsourced", []))),
                            tuple((str(d[0]), str(d[1]), str(d[2])) for d in raw.get("dismissed", [])),
                            tuple(map(str, raw.get("portable", []))), bool(raw.get("by_text")), index)
            except (ValueError, TypeError, IndexError):
                continue


def forgotten_portable(data_dir: Path) -> frozenset[str]:
    """Every portable id ever forgotten here (turns, and ``session:<uid>`` / ``source:<hash>``): an import
    never brings one back."""
    return frozenset(p for entry in entries(data_dir) for p in entry.portable)
