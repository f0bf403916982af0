"""Forgetting that really forgets.

Forgetting turns deletes them and, in the same transaction, every memory built
from them, transitively (``provenance.forget``): gists, facts, digests, the
narrative and self-state versions, the dream's world-state versions; vectors
and full-text entries go by trigger, and traces that pointed at them say
"forgotten". Work is done in small transactions (``TXN_TURNS`` turns each), so
a large forget never holds the write lock for long. Then nothing is left on
disk (``store/forget/scrub.py``). Every forget is one line of the forget ledger,
written first (``store/forget/ledger.py``), which a restore re-applies
(``forget_again``). The next dream pass rebuilds what is missing from what
remains. What to forget is chosen in ``store/forget/plan.py``.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from .. import provenance
from ..branches import doomed_asides, forget_asides
from ..db import to_iso, utc_now
from ..kinds import FORGOTTEN_TEXT, KINDS
from ..portable import forgotten_keys
from ..sessions import unname, unsource
from . import ledger
from .folding import fold
from .matching import blank_holding
from .plan import ForgetPlan
from .scrub import scrub, truncate_wal

if TYPE_CHECKING:
    from ..store import Store

log = logging.getLogger(__name__)
TXN_TURNS = 100  # turns per transaction: each stays well under a second at 1M exchanges (bench_forget.py)
YIELD_AFTER_S = 0.05  # after holding the write lock this long in all, step aside ...
YIELD_S = 0.11  # ... longer than SQLite's busy handler sleeps between tries, so a waiting writer gets in


@dataclass(frozen=True)
class Forgotten:
    """What a forget removed: sessions, turns, and the memories built from them, by kind."""

    sessions: int
    exchanges: int
    derived: dict[str, int] = field(default_factory=dict)

    @property
    def memories(self) -> int:
        return sum(self.derived.values())

    def __add__(self, other: Forgotten) -> Forgotten:
        return Forgotten(self.sessions + other.sessions, self.exchanges + other.exchanges,
                         dict(Counter(self.derived) + Counter(other.derived)))

    def describe(self) -> str:
        kinds = ", ".join(f"{n} {k}" for k, n in sorted(self.derived.items()) if n and k != "exchange")
        return (f"forgot {self.sessions} session(s) and {self.exchanges} turn(s)"
                + (f"; with them {kinds}" if kinds else ""))


class _Turns:
    """Short write transactions that step aside for other writers (chat) between them."""

    def __init__(self) -> None:
        self.held = 0.0

    def taken(self, started: float) -> None:
        self.held += time.monotonic() - started
        if self.held >= YIELD_AFTER_S:
            time.sleep(YIELD_S)
            self.held = 0.0


@dataclass(frozen=True)
class Doomed:
    """What one forget is about to delete or change, by row id (``note`` names it in the ledger first): whole
    sessions, turns, memories by kind, conversations renamed or their client-given name cleared
    (``unsourced``), the person's deletions as ``[kind, target, basis]``; ``by_text``: a forget by text."""

    session_ids: Sequence[int] = ()
    turn_ids: Sequence[int] = ()
    memories: Mapping[str, Sequence[int]] | None = None
    renamed: Sequence[int] = ()
    unsourced: Sequence[int] = ()
    dismissed: Sequence[tuple[str, str, str]] = ()
    by_text: bool = False


def note(store: Store, doomed: Doomed) -> None:
    """One forget's line of the ledger, before anything goes: ids, and the portable ids an import must not bring
    back. Off-the-record conversations are left out: no backup or export ever held them.

    Before anything goes, no upload may hold words this forget cannot reach (``store/files/uploads.py``): this
    process's imports stop and their files go; another process's import makes it refuse. Expiring
    off-the-record conversations alone needs no such care: no upload brings those."""
    remembered = store.sessions.remembered(doomed.session_ids)
    if remembered or any((doomed.turn_ids, doomed.memories, doomed.renamed, doomed.unsourced, doomed.dismissed,
                          doomed.by_text)):
        store.uploads.settle()
    on_path, aside = _doomed(store.conn(), doomed.turn_ids)
    ledger.record(store, ledger.Named(
        sessions=store.sessions.uids(remembered), turns=doomed.turn_ids, memories=doomed.memories,
        renamed=store.sessions.uids(doomed.renamed), unsourced=store.sessions.uids(doomed.unsourced),
        dismissed=doomed.dismissed, portable=forgotten_keys(store, remembered, [*on_path, *aside]),
        by_text=doomed.by_text))


def forget_sessions(store: Store, session_ids: Sequence[int], *, scrubbing: bool = True,
                    ledgered: bool = True) -> Forgotten:
    """Forget whole sessions: their turns (and what was built from them) in chunks, then the sessions.

    Off-the-record sessions were never in the full-text tables or the vector indexes, so deleting only those
    needs no merge and no new snapshots: their freed pages are zeroed and the WAL truncated.
    """
    total = Forgotten(0, 0)
    turns = _Turns()
    remembered = store.sessions.remembered(session_ids)
    if ledgered:
        note(store, Doomed(session_ids=session_ids))
    for session_id in session_ids:
        while True:
            started = time.monotonic()
            with store.write() as conn:
                ids = [r[0] for r in conn.execute("SELECT id FROM exchanges WHERE session_id = ? ORDER BY id LIMIT ?",
                                                  (session_id, TXN_TURNS))]
                if ids:
                    total += _forget_turns(conn, ids)
            if ids:
                turns.taken(started)
                continue
            with store.write() as conn:
                if conn.execute("SELECT 1 FROM exchanges WHERE session_id = ?", (session_id,)).fetchone():
                    continue  # a turn arrived meanwhile: it goes the same way first
                # facts told about in the session (by the user or an agent) go with it
                learnt = [("fact", r[0]) for r in conn.execute(
                    "SELECT id FROM profile_facts WHERE source_session_id = ?", (session_id,))]
                counts = provenance.forget(conn, learnt) if learnt else {}
                counts.pop("exchange", None)
                total += _forget_turns(conn, [r[0] for r in conn.execute("SELECT id FROM asides WHERE session_id = ?",
                                                                         (session_id,))])
                gone = conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,)).rowcount
                total += Forgotten(gone, 0, counts)
                break
    if remembered and scrubbing:
        scrub(store)
    elif scrubbing:
        truncate_wal(store.conn())
    return total


def forget_idle_off_the_record(store: Store, hours: float, *, now: datetime | None = None) -> Forgotten:
    """Delete the off-the-record conversations with no turn for ``hours`` (``companion.off_the_record_hours``)."""
    before = to_iso((now or datetime.now(timezone.utc)) - timedelta(hours=hours))
    due = store.sessions.off_the_record_idle(before)
    return forget_sessions(store, due) if due else Forgotten(0, 0)


def forget_exchanges(store: Store, exchange_ids: Sequence[int], *, scrubbing: bool = True,
                     ledgered: bool = True) -> Forgotten:
    total = Forgotten(0, 0)
    turns = _Turns()
    ids = sorted(set(exchange_ids))
    if ledgered:
        note(store, Doomed(turn_ids=ids))
    for start in range(0, len(ids), TXN_TURNS):
        started = time.monotonic()
        with store.write() as conn:
            total += _forget_turns(conn, ids[start:start + TXN_TURNS])
        turns.taken(started)
    if scrubbing:
        scrub(store)
    return total


def forget_memories(store: Store, memories: Mapping[str, Sequence[int]], *, scrubbing: bool = True,
                    ledgered: bool = True) -> Forgotten:
    """Forget derived memories (and what was built on them) by kind and id; turns are never among them. A fact
    named so goes with no other value taking its place: the one it had replaced stays in the past."""
    if ledgered:
        note(store, Doomed(memories=memories))
    with store.write() as conn:
        conn.execute("UPDATE profile_facts SET superseded_at = ? WHERE superseded_at IS NULL AND id IN "
                     "(SELECT value FROM json_each(?))", (utc_now(), json.dumps(list(memories.get("fact", [])))))
        counts = provenance.forget(conn, [(kind, i) for kind, ids in memories.items() for i in ids])
    counts.pop("exchange", None)
    if scrubbing:
        scrub(store, [KINDS[kind] for kind in memories])
    return Forgotten(0, 0, counts)


def _forget_turns(conn: sqlite3.Connection, ids: Sequence[int]) -> Forgotten:
    """These turns (on the path or aside: store/branches.py), the other versions of those on the path, every turn
    that followed one of them aside, and what was built from any of them."""
    on_path, aside = _doomed(conn, ids)
    _unname_quoting(conn, [*on_path, *aside])
    counts = provenance.forget(conn, [("exchange", i) for i in [*on_path, *aside]])
    return Forgotten(0, counts.pop("exchange", 0) + forget_asides(conn, aside), counts)


def _doomed(conn: sqlite3.Connection, ids: Sequence[int]) -> tuple[list[int], list[int]]:
    """The turns of ``ids`` on a path, and every turn set aside that goes with ``ids``."""
    if not ids:
        return [], []
    on_path = [int(r[0]) for r in conn.execute("SELECT id FROM exchanges WHERE id IN (SELECT value FROM json_each(?))",
                                               (json.dumps(list(ids)),))]
    return on_path, doomed_asides(conn, on_path, sorted(set(ids) - set(on_path)))


def _unname_quoting(conn: sqlite3.Connection, turn_ids: Sequence[int]) -> None:
    """A conversation named after its first message (the web UI names a new one so) loses that name with it.

    The name goes only when it is how that message begins, folded: a name the
    person or a client chose ("Terminal", a ChatGPT title) stays. Each session's
    first turn is found through its index (a first turn is the lowest id on its
    path or set aside), never by reading the session.
    """
    rows = conn.execute(
        "WITH doomed(id, session_id, content) AS (SELECT id, session_id, content FROM exchanges WHERE id IN "
        "(SELECT value FROM json_each(:ids)) UNION ALL SELECT id, session_id, content FROM asides WHERE id IN "
        "(SELECT value FROM json_each(:ids))), "
        "firsts(session_id, first) AS (SELECT s.session_id, min(coalesce((SELECT min(id) FROM exchanges "
        "WHERE session_id = s.session_id), 1e18), coalesce((SELECT min(id) FROM asides WHERE session_id = "
        "s.session_id), 1e18)) FROM (SELECT DISTINCT session_id FROM doomed) s) "
        "SELECT n.id, n.name, d.content FROM doomed d JOIN firsts f ON f.session_id = d.session_id "
        "AND d.id = f.first JOIN sessions n ON n.id = d.session_id", {"ids": json.dumps(list(turn_ids))}).fetchall()
    unname(conn, [int(r[0]) for r in rows if _quotes(str(r[1]), str(r[2]))])


def _quotes(name: str, message: str) -> bool:
    """Whether ``name`` is how ``message`` begins (whitespace and case aside)."""
    name, message = fold(" ".join(name.split())), fold(" ".join(message.split()))
    return bool(name) and message.startswith(name)


def forget(store: Store, plan: ForgetPlan) -> Forgotten:
    """Carry out a plan — one line of the ledger first, then whole sessions, single turns, the memories that hold
    the text, names and logs — and leave nothing on disk (``scrub``, once). A text that no row holds any more is
    still scrubbed for: the words of a memory edited or deleted since can linger in full-text segments and the
    WAL until then."""
    unsourced = store.sessions.holding_source(plan.renamed, plan.matching) if plan.matching else []
    note(store, Doomed(session_ids=plan.session_ids, turn_ids=plan.exchange_ids, memories=plan.memories,
                       renamed=plan.renamed, unsourced=unsourced, by_text=bool(plan.matching)))
    done = Forgotten(0, 0)
    if plan.session_ids:
        done += forget_sessions(store, plan.session_ids, scrubbing=False, ledgered=False)
    if plan.exchange_ids:
        done += forget_exchanges(store, plan.exchange_ids, scrubbing=False, ledgered=False)
    if any(plan.memories.values()):
        done += forget_memories(store, plan.memories, scrubbing=False, ledgered=False)
    if plan.renamed or plan.matching:
        with store.write() as conn:  # the new names say only when each conversation began
            unname(conn, plan.renamed)
            unsource(conn, unsourced)
            if plan.matching:
                blank_holding(conn, plan.matching, FORGOTTEN_TEXT)
    scrub(store)
    return done


@dataclass(frozen=True)
class Reforgotten:
    """What a restore forgot again: the rows, how many forgets made after the backup removed something, and how
    many of those were by text (the ledger keeps no text: what held it only in the backup is not known)."""

    done: Forgotten
    forgets: int
    by_text: int


def forget_again(store: Store, *, ledger_dir: Path | None = None) -> Reforgotten:
    """After a restore: forget again what the ledger says was forgotten in this memory's lineage (from a backup
    made before a forget, it is back). Rows go again for every line (harmless where they are gone); renames,
    cleared names and deletions only for the lines written after the backup was made (``ledger.POSITION_KEY``):
    the person may have undone one made before. ``ledger_dir``: where the ledger is (a restore makes the backup
    ready in a folder of its own)."""
    since = int(store.get_meta(ledger.POSITION_KEY) or 0)
    total, forgets, by_text = Forgotten(0, 0), 0, 0
    for entry in list(ledger.entries(ledger_dir or store.data_dir, store.lineage())):  # not noted again
        done = Forgotten(0, 0)
        sessions = store.sessions.ids_of(entry.sessions)
        if sessions:
            done += forget_sessions(store, sessions, scrubbing=False, ledgered=False)
        turns = store.exchanges.present(entry.turns)
        if turns:
            done += forget_exchanges(store, turns, scrubbing=False, ledgered=False)
        memories = {k: list(ids) for k, ids in entry.memories.items() if k in KINDS and KINDS[k].node
                    and k != "exchange"}
        if any(memories.values()):
            done += forget_memories(store, memories, scrubbing=False, ledgered=False)
        changed = bool(done.sessions or done.exchanges or done.memories)
        if entry.index >= since and (entry.renamed or entry.unsourced or entry.dismissed):
            with store.write() as conn:
                changed |= bool(unname(conn, store.sessions.ids_of(entry.renamed)))
                changed |= bool(unsource(conn, store.sessions.ids_of(entry.unsourced)))
                changed |= store.corrections.dismiss_again(conn, entry.dismissed)
        if entry.index >= since and changed:
            forgets += 1
            by_text += entry.by_text
        total += done
    scrub(store)
    return Reforgotten(total, forgets, by_text)
