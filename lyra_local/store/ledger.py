"""The forget ledger: what was forgotten, by id (never a word of it), so restoring a backup forgets it again.

A backup made before a forget holds what was forgotten; restoring it would
bring that back without a word. Every forget appends one line here *before*
it deletes anything: the sessions (by uid), the turns and the memories (by
id) it forgets, and the conversations it renames. An id names one row for
good in a data directory: ids are never reused, and a restore raises the
restored memory's id sequences above every id the memory it replaces ever
handed out (``store/backups.py``), so a line means the same row in every
backup of this memory. Each line names its **lineage** (the memory's
creation: ``Store.lineage``), so a backup of another memory restored here is
never touched by this one's lines. Restoring a backup re-applies every line
of its lineage; a line about rows the backup never had, or no longer has,
removes nothing.

Each line also names the forgotten turns and conversations by their
portable ids (``store/portable.py``), so importing an export made before the
forget does not bring them back either. The ledger lives in the data
directory (``forgotten.jsonl``) and holds no text: a forgotten word is in
none of its bytes.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .db import utc_now

if TYPE_CHECKING:
    from .store import Store

LEDGER_FILENAME = "forgotten.jsonl"


@dataclass(frozen=True)
class Entry:
    """One forget: sessions by uid, turns and memories by id, renamed conversations by uid."""

    lineage: str
    at: str
    sessions: tuple[str, ...] = ()
    turns: tuple[int, ...] = ()
    memories: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    renamed: tuple[str, ...] = ()
    portable: tuple[str, ...] = ()  # the forgotten turns' and sessions' portable ids, for imports

    @property
    def empty(self) -> bool:
        return not (self.sessions or self.turns or any(self.memories.values()) or self.renamed or self.portable)


def path(data_dir: Path) -> Path:
    return data_dir / LEDGER_FILENAME


def record(store: Store, *, sessions: Sequence[str] = (), turns: Sequence[int] = (),
           memories: Mapping[str, Sequence[int]] | None = None, renamed: Sequence[str] = (),
           portable: Sequence[str] = ()) -> None:
    """Append what is about to be forgotten (durably: a crash after this still leaves the line)."""
    entry = Entry(store.lineage(), utc_now(), tuple(sessions), tuple(sorted(set(turns))),
                  {k: tuple(sorted(set(v))) for k, v in (memories or {}).items() if v}, tuple(renamed),
                  tuple(sorted(set(portable))))
    if entry.empty:
        return
    line = json.dumps({"lineage": entry.lineage, "at": entry.at, "sessions": list(entry.sessions),
                       "turns": list(entry.turns), "memories": {k: list(v) for k, v in entry.memories.items()},
                       "renamed": list(entry.renamed), "portable": list(entry.portable)}, sort_keys=True)
    with path(store.data_dir).open("a", encoding="utf-8") as out:
        out.write(line + "\n")
        out.flush()
        os.fsync(out.fileno())


def entries(data_dir: Path, lineage: str | None = None) -> Iterator[Entry]:
    """The ledger's lines (of one lineage, if given), oldest first; a damaged line is skipped: it names nothing
    for sure."""
    ledger = path(data_dir)
    if not ledger.is_file():
        return
    with ledger.open(encoding="utf-8") as lines:
        for line in lines:
            try:
                raw: dict[str, Any] = json.loads(line)
                if not isinstance(raw, dict) or (lineage is not None and raw.get("lineage") != lineage):
                    continue
                yield Entry(str(raw.get("lineage")), str(raw.get("at", "")), tuple(map(str, raw.get("sessions", []))),
                            tuple(int(i) for i in raw.get("turns", [])),
                            {str(k): tuple(int(i) for i in v) for k, v in dict(raw.get("memories", {})).items()},
                            tuple(map(str, raw.get("renamed", []))), tuple(map(str, raw.get("portable", []))))
            except (ValueError, TypeError):
                continue


def forgotten_portable(data_dir: Path) -> frozenset[str]:
    """Every portable id ever forgotten here (turns, and ``session:<uid>`` / ``source:<source>:<id>``): an import
    never brings one back."""
    return frozenset(p for entry in entries(data_dir) for p in entry.portable)
