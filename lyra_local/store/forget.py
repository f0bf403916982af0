"""Forgetting that really forgets.

Forgetting turns deletes them and, in the same transaction, every memory built
from them, transitively (``provenance.forget``): gists, facts, digests, the
narrative and self-state versions, the dream's world-state versions; vectors
and full-text entries go by trigger, and traces that pointed at them say
"forgotten". Work is done in small transactions (``TXN_TURNS`` turns each), so
a large forget never holds the write lock for long. Then nothing is left on
disk: the full-text index is merged so the deleted entries are gone (FTS5's
``secure-delete`` is switched on too where SQLite has it), ``secure_delete``
has zeroed the freed pages, the FAISS snapshots on disk are deleted (the
indexes in memory drop the vectors now and are compacted in the background), and the WAL is checkpointed and truncated.
The next dream pass rebuilds what is missing from what remains.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING

from ..errors import BadRequest
from . import ledger, provenance
from .branches import doomed_asides, forget_asides
from .db import BUSY_TIMEOUT_MS, to_iso
from .folding import fold
from .kinds import FORGOTTEN_TEXT, FTS_TABLES, KINDS
from .matching import blank_holding, derived_holding, holds, logs_holding, needle, rows_holding
from .portable import forgotten_keys
from .sessions import unname

if TYPE_CHECKING:
    from .store import Store

log = logging.getLogger(__name__)
TXN_TURNS = 100  # turns per transaction: each stays well under a second at 1M exchanges (bench_forget.py)
SECURE_DELETE_SQLITE = (3, 44, 0)  # FTS5 'secure-delete' appeared in 3.44
YIELD_AFTER_S = 0.05  # after holding the write lock this long in all, step aside ...
YIELD_S = 0.11  # ... longer than SQLite's busy handler sleeps between tries, so a waiting writer gets in
CHECKPOINT_WAIT_MS = 50  # the longest a truncating checkpoint keeps writers waiting, per try


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


def forget_sessions(store: Store, session_ids: Sequence[int], *, scrubbing: bool = True,
                    ledgered: bool = True) -> Forgotten:
    """Forget whole sessions: their turns (and what was built from them) in chunks, then the sessions.

    Off-the-record sessions were never in the full-text tables or the vector indexes, so deleting only those
    needs no merge and no new snapshots: their freed pages are zeroed and the WAL truncated.
    """
    total = Forgotten(0, 0)
    turns = _Turns()
    remembered = store.sessions.uids(session_ids, remembered=True)  # off the record: never in a backup
    if ledgered:
        ledger.record(store, sessions=remembered, portable=forgotten_keys(store, store.sessions.ids_of(remembered)))
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
        on_path, aside = _doomed(store.conn(), ids)
        ledger.record(store, turns=ids, portable=forgotten_keys(store, turn_ids=[*on_path, *aside]))
    for start in range(0, len(ids), TXN_TURNS):
        started = time.monotonic()
        with store.write() as conn:
            total += _forget_turns(conn, ids[start:start + TXN_TURNS])
        turns.taken(started)
    if scrubbing:
        scrub(store)
    return total


def _forget_turns(conn: sqlite3.Connection, ids: Sequence[int]) -> Forgotten:
    """These turns (on the path or aside: store/branches.py), the other versions of those on the path, every turn
    that followed one of them aside, and what was built from any of them."""
    on_path, aside = _doomed(conn, ids)
    _unname_quoting(conn, [*on_path, *aside])
    counts = provenance.forget(conn, [("exchange", i) for i in [*on_path, *aside]])
    return Forgotten(0, counts.pop("exchange", 0) + forget_asides(conn, aside), counts)


def _doomed(conn: sqlite3.Connection, ids: Sequence[int]) -> tuple[list[int], list[int]]:
    """The turns of ``ids`` on a path, and every turn set aside that goes with ``ids``."""
    on_path = [int(r[0]) for r in conn.execute("SELECT id FROM exchanges WHERE id IN (SELECT value FROM json_each(?))",
                                               (json.dumps(list(ids)),))]
    return on_path, doomed_asides(conn, on_path, sorted(set(ids) - set(on_path)))


def _unname_quoting(conn: sqlite3.Connection, turn_ids: Sequence[int]) -> None:
    """A conversation named after its first message (the web UI names a new one so) loses that name with it.

    The name goes only when it is how that message begins, folded: a name the
    person or a client chose ("Terminal", a ChatGPT title) stays.
    """
    rows = conn.execute(
        "WITH doomed(id, session_id, content) AS (SELECT id, session_id, content FROM exchanges WHERE id IN "
        "(SELECT value FROM json_each(:ids)) UNION ALL SELECT id, session_id, content FROM asides WHERE id IN "
        "(SELECT value FROM json_each(:ids))) "
        "SELECT s.id, s.name, d.content FROM doomed d JOIN sessions s ON s.id = d.session_id "
        "WHERE d.id = (SELECT min(id) FROM (SELECT id FROM exchanges WHERE session_id = s.id UNION ALL "
        "SELECT id FROM asides WHERE session_id = s.id))", {"ids": json.dumps(list(turn_ids))}).fetchall()
    unname(conn, [int(r[0]) for r in rows if _quotes(str(r[1]), str(r[2]))])


def _quotes(name: str, message: str) -> bool:
    """Whether ``name`` is how ``message`` begins (whitespace and case aside)."""
    name, message = fold(" ".join(name.split())), fold(" ".join(message.split()))
    return bool(name) and message.startswith(name)


# -- nothing left on disk -----------------------------------------------------------------


def scrub(store: Store) -> None:
    """Remove what deleted rows leave behind: full-text segments, index snapshots, the WAL."""
    conn = store.conn()
    for fts in FTS_TABLES:
        log.info("full-text index %s merged in %.2f s", fts, merge_fts(store, fts))
    for index in store.loaded_indexes():
        index.sync()  # the vectors leave the index in memory now (HNSW: filtered, compacted in the background)
    drop_snapshots(store)
    truncate_wal(conn)


def truncate_wal(conn: sqlite3.Connection, *, tries: int = 600) -> bool:
    """Checkpoint and truncate the WAL, so no frame with forgotten text stays in it.

    A truncating checkpoint holds the write lock while it waits for readers; it
    waits a short moment at a time, and lets writers in between tries, so chat
    is never held up for long. False if readers never let it finish (the WAL is
    truncated again at the next forget, and removed when the last process closes).
    """
    conn.execute(f"PRAGMA busy_timeout = {CHECKPOINT_WAIT_MS}")
    try:
        for _ in range(tries):
            busy = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
            if not busy:
                return True
            time.sleep(0.02)
        return False
    finally:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")


def merge_fts(store: Store, fts: str) -> float:
    """Merge the full-text index into one segment, so the entries of deleted rows are gone from the file.

    FTS5's incremental ``merge`` would hold the write lock for less time, but with
    another process writing meanwhile it corrupted the index on SQLite 3.40
    (reproduced at 100k rows); ``optimize`` does it in one transaction. Where
    SQLite has FTS5's ``secure-delete`` (3.44+), deletes remove their entries at
    once and no merge is needed. Returns the seconds the write lock was held.
    """
    conn = store.conn()
    started = time.monotonic()
    with store.write():
        if sqlite3.sqlite_version_info >= SECURE_DELETE_SQLITE:  # later deletes purge at once
            conn.execute(f"INSERT INTO {fts}({fts}, rank) VALUES ('secure-delete', 1)")
        conn.execute(f"INSERT INTO {fts}({fts}) VALUES ('optimize')")
    return time.monotonic() - started


def drop_snapshots(store: Store) -> None:
    """Delete every FAISS snapshot on disk (caches: rebuilt from SQLite, saved again once compacted)."""
    if not store.index_dir.exists():
        return
    for path in store.index_dir.iterdir():
        if path.suffix in (".faiss", ".json", ".tmp"):
            path.unlink(missing_ok=True)
    for index in store.loaded_indexes():
        index.forget_snapshot()


def forget_again(store: Store) -> tuple[Forgotten, int]:
    """After a restore: forget again what the ledger says was forgotten in this memory's lineage (from a backup
    made before a forget, it is back). Returns what went, and how many forgets removed something."""
    total, forgets = Forgotten(0, 0), 0
    for entry in list(ledger.entries(store.data_dir, store.lineage())):  # its lines are already there: not again
        done = Forgotten(0, 0)
        sessions = store.sessions.ids_of(entry.sessions)
        if sessions:
            done += forget_sessions(store, sessions, scrubbing=False, ledgered=False)
        turns = store.exchanges.present(entry.turns)
        if turns:
            done += forget_exchanges(store, turns, scrubbing=False, ledgered=False)
        memories = {k: ids for k, ids in entry.memories.items() if k in KINDS and KINDS[k].node and k != "exchange"}
        if any(memories.values()):
            done += forget_memories(store, {k: list(v) for k, v in memories.items()}, scrubbing=False,
                                    ledgered=False)
        with store.write() as conn:
            renamed = unname(conn, store.sessions.ids_of(entry.renamed, named=True))
        forgets += bool(done.sessions or done.exchanges or done.memories or renamed)
        total += done
    scrub(store)
    return total, forgets


# -- choosing what to forget ------------------------------------------------------------------


@dataclass(frozen=True)
class ForgetPlan:
    """What a forget would remove: whole sessions, single turns of other sessions, memories whose own words hold
    the text asked for, and the conversations whose name holds it (renamed); ``matching`` reaches the logs too."""

    session_ids: list[int]
    exchange_ids: list[int]
    memories: dict[str, list[int]] = field(default_factory=dict)
    renamed: list[int] = field(default_factory=list)
    matching: str | None = None

    logs: int = 0  # rows of the task notes, locks and failed passes that hold the text (they say "(forgotten)")

    @property
    def empty(self) -> bool:
        return not (self.session_ids or self.exchange_ids or any(self.memories.values()) or self.renamed
                    or self.logs)


def plan_forget(store: Store, *, sessions: Sequence[str] = (), before: str | None = None,
                matching: str | None = None) -> ForgetPlan:
    """Select by session (a reference ``lyra sessions`` shows: ``Sessions.resolve``), by date (turns before
    it), or by text: every turn (on the path or set aside), memory and conversation name whose words hold it,
    folded (``store/folding.py``) over every column the registry says holds words."""
    if matching is not None and not needle(matching):
        raise BadRequest("say what text to forget", hint="an empty text would match everything")
    conn = store.conn()
    whole = {store.sessions.resolve(ref).id for ref in sessions}
    clauses = []
    if before:
        clauses.append("created_at < :before")
    if matching:
        clauses.append(holds(KINDS["exchange"], alias="t"))
    args = {"before": before, "needle": needle(matching or "")}
    turns: set[int] = set()
    if clauses:
        where = " OR ".join(clauses)
        by_session: dict[int, set[int]] = {}
        for turn, sid in conn.execute(f"SELECT id, session_id FROM exchanges t WHERE {where}", args):
            by_session.setdefault(sid, set()).add(turn)
        for sid, ids in by_session.items():
            if sid in whole:
                continue
            if store.exchanges.count_in(sid) == len(ids):  # a session left with no turn goes whole
                whole.add(sid)
            else:
                turns |= ids
        # versions set aside (store/branches.py) that match go too
        turns |= {int(r[0]) for r in conn.execute(f"SELECT id, session_id FROM asides t WHERE {where}", args)
                  if r[1] not in whole}
    if not matching:
        return ForgetPlan(sorted(whole), sorted(turns))
    renamed = [int(i) for i in rows_holding(conn, KINDS["session"], matching) if int(i) not in whole]
    return ForgetPlan(sorted(whole), sorted(turns), derived_holding(conn, matching), renamed, matching,
                      logs_holding(conn, matching))


def forget(store: Store, plan: ForgetPlan) -> Forgotten:
    """Carry out a plan: whole sessions, single turns, the memories that hold the text, then names and logs;
    then nothing is left on disk (``scrub``, once). A text that no row holds any more is still scrubbed for: the
    words of a memory edited or deleted since can linger in full-text segments and the WAL until then."""
    done = Forgotten(0, 0)
    if plan.session_ids:
        done += forget_sessions(store, plan.session_ids, scrubbing=False)
    if plan.exchange_ids:
        done += forget_exchanges(store, plan.exchange_ids, scrubbing=False)
    if any(plan.memories.values()):
        done += forget_memories(store, plan.memories, scrubbing=False)
    if plan.renamed or plan.matching:
        with store.write() as conn:  # the new names say only when each conversation began
            ledger.record(store, renamed=unname(conn, plan.renamed))
            if plan.matching:
                blank_holding(conn, plan.matching, FORGOTTEN_TEXT)
    scrub(store)
    return done


def forget_memories(store: Store, memories: dict[str, list[int]], *, scrubbing: bool = True,
                    ledgered: bool = True) -> Forgotten:
    """Forget derived memories (and what was built on them) by kind and id; turns are never among them."""
    if ledgered:
        ledger.record(store, memories=memories)
    with store.write() as conn:
        counts = provenance.forget(conn, [(kind, i) for kind, ids in memories.items() for i in ids])
    counts.pop("exchange", None)
    if scrubbing:
        scrub(store)
    return Forgotten(0, 0, counts)
