"""The bulk path: conversations in, embedded in batches, whole conversations per transaction.

A batch of conversations is embedded in one go (the fast path of the
embedder), then written in one transaction: a crash loses at most the batch
in flight, never part of a conversation. Conversations already stored are
recognised by their ids (session uid, or source and source id; messages by
their source id, else by position), so an interrupted import simply runs
again, and a newer export adds only what is new.
"""

from __future__ import annotations

import sqlite3
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import numpy as np

from ..llm.base import Embedder, Vectors
from ..store import Session, Store
from ..store.exchanges import NewExchange, embedded_text
from ..store.forget import ledger
from ..store.portable import NewAside, add_asides, known_ids, origin, session_keys
from .memory_file import has_derived_memory, restore_memory
from .records import ImportedConversation, ImportedMessage, ImportFormatError, ImportProblem
from .sources import Source

BATCH_MESSAGES = 256
Progress = Callable[[int, int], None]


@dataclass
class ImportReport:
    sessions_new: int = 0
    sessions_updated: int = 0
    sessions_unchanged: int = 0
    messages: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    problems: list[ImportProblem] = field(default_factory=list)
    embed_s: float = 0.0
    total_s: float = 0.0

    @property
    def messages_per_s(self) -> float:
        return self.messages / self.total_s if self.total_s else 0.0

    def summary(self) -> dict[str, object]:
        return {"sessions_new": self.sessions_new, "sessions_updated": self.sessions_updated,
                "sessions_unchanged": self.sessions_unchanged, "messages": self.messages,
                "skipped": dict(self.skipped), "problems": [str(p) for p in self.problems],
                "seconds": round(self.total_s, 2), "embed_seconds": round(self.embed_s, 2)}


@dataclass
class _Pending:
    conversation: ImportedConversation
    session: Session | None
    messages: list[ImportedMessage]  # the ones to store
    asides: list[NewAside] = field(default_factory=list)


def import_conversations(store: Store, embedder: Embedder, items: Iterable[ImportedConversation | ImportProblem],
                         *, progress: Progress | None = None, batch_messages: int = BATCH_MESSAGES) -> ImportReport:
    """Store what is new in ``items``; ``progress(done, total)`` counts the input's messages."""
    started = time.perf_counter()
    problems: list[ImportProblem] = []
    conversations: list[ImportedConversation] = []
    for item in items:
        if isinstance(item, ImportProblem):
            problems.append(item)
        else:
            conversations.append(item)
    run = _Import(store, embedder, sum(len(c.messages) for c in conversations), progress, batch_messages)
    run.report.problems.extend(problems)
    for c in conversations:
        run.add(c)
    if run.batch:
        run.flush()
    run.tick()
    run.report.total_s = time.perf_counter() - started
    return run.report


class _Import:
    """One import in progress: the report, how many of the input's messages are done, and the batch waiting to
    be embedded and written. ``add`` takes a conversation, ``flush`` stores the batch."""

    def __init__(self, store: Store, embedder: Embedder, total: int, progress: Progress | None,
                 batch_messages: int) -> None:
        self.store = store
        self.embedder = embedder
        self.total = total
        self.progress = progress
        self.batch_messages = batch_messages
        self.report = ImportReport()
        self.processed = 0
        self.forgotten = ledger.forgotten_portable(store.data_dir)
        self.here = origin(store)
        self.batch: list[_Pending] = []
        self.seen: set[tuple[str, str]] = set()

    def tick(self) -> None:
        if self.progress:
            self.progress(self.processed, self.total)

    def add(self, c: ImportedConversation) -> None:
        """Queue what ``c`` adds to the memory (a whole conversation, or its turns not stored yet)."""
        key = (c.source, c.source_id) if c.source_id else ("uid", c.uid or "")
        if key[1] and key in self.seen:
            self.report.problems.append(ImportProblem(f"\u201c{c.name}\u201d", "appears twice in the input; "
                                                      "the first copy was imported"))
            self.processed += len(c.messages)
            return
        self.seen.add(key)
        self.report.skipped.update(c.skipped)
        given = len(c.messages)
        whole = _drop_forgotten(c, self.forgotten, self.report)
        self.processed += given - len(c.messages)  # what was left out counts as done
        if whole:
            return
        session = _existing(self.store, c)
        new, asides, older = _new_turns(self.store, session, c)
        if older:
            self.report.skipped["messages older than the ones already imported"] += older
        if session is not None and not new and not asides:
            self.report.sessions_unchanged += 1
            self.processed += len(c.messages)
            self.tick()
            return
        self.batch.append(_Pending(c, session, new, asides))
        if sum(len(p.messages) for p in self.batch) >= self.batch_messages:
            self.flush()

    def flush(self) -> None:
        """Embed the batch in one go, then write it in one transaction: whole conversations, or nothing of them."""
        t0 = time.perf_counter()
        texts = [embedded_text(m.content, m.caption) for p in self.batch for m in p.messages]
        # A batch of conversations with nothing left to store (images only) needs no model at all.
        vectors = self.embedder.embed(texts) if texts else np.zeros((0, 0), dtype=np.float32)
        self.report.embed_s += time.perf_counter() - t0
        row = 0
        with self.store.write() as conn:
            for p in self.batch:
                row += self._write(conn, p, vectors[row:row + len(p.messages)])
        for p in self.batch:
            self.report.messages += len(p.messages)
            self.report.sessions_new += p.session is None
            self.report.sessions_updated += p.session is not None
            self.processed += len(p.conversation.messages)
        self.batch.clear()
        self.tick()

    def _write(self, conn: sqlite3.Connection, p: _Pending, vectors: Vectors) -> int:
        """Store one conversation's new turns and asides; how many of the batch's vectors were its own."""
        c = p.conversation
        given = len(p.messages)
        if p.session is not None and not self.store.sessions.exists(p.session.id, conn=conn):
            # forgotten while we embedded: what it adds to must not come back
            self.report.problems.append(ImportProblem(f"\u201c{c.name}\u201d", "its session was forgotten "
                                                      "while importing; its new messages were not imported"))
            p.messages, p.asides = [], []
            return given
        session = p.session or self.store.sessions.create(c.name, created_at=c.created_at, source=c.source,
                                                          source_id=c.source_id, uid=c.uid, conn=conn)
        news = [NewExchange(session.id, m.role, m.content, m.created_at, source_id=m.source_id,
                            author=m.author, ending=m.ending, caption=m.caption) for m in p.messages]
        self.store.exchanges.insert(conn, news, vectors, self.embedder.name)
        add_asides(conn, self.here, session.id, p.asides)  # after the path: each follows a turn already there
        return given


def _drop_forgotten(c: ImportedConversation, forgotten: frozenset[str], report: ImportReport) -> bool:
    """Leave out what was forgotten here (``store/forget/ledger.py``): an export made before a forget must not bring it
    back. True when the whole conversation was forgotten."""
    if not forgotten:
        return False
    if forgotten.intersection(session_keys(c.uid, c.source, c.source_id)):
        report.skipped["forgotten conversation"] += 1
        c.messages, c.asides = [], []
        return True
    kept = [m for m in c.messages if not m.source_id or m.source_id not in forgotten]
    asides = [a for a in c.asides if a.source_id not in forgotten]
    report.skipped["forgotten message"] += len(c.messages) - len(kept) + len(c.asides) - len(asides)
    c.messages, c.asides = kept, asides
    return False


def _existing(store: Store, c: ImportedConversation) -> Session | None:
    if c.uid:
        found = store.sessions.find(uid=c.uid)
        if found is not None:
            return found
    if c.source_id:
        return store.sessions.find(source=c.source, source_id=c.source_id)
    return None


def _new_turns(store: Store, session: Session | None,
               c: ImportedConversation) -> tuple[list[ImportedMessage], list[NewAside], int]:
    """Messages and versions set aside not stored yet: by portable id (``store/portable.py``: on the path or set
    aside here) where they have one, else the messages past the stored count; and how many unknown messages
    come before the last one stored. Those are left out: a turn is added at the end of its conversation, so
    one that an earlier import did not take (an image-only message, before placeholders) would land out of
    order."""
    if session is None:
        return list(c.messages), list(c.asides), 0
    known = known_ids(store, session.id)
    asides = [a for a in c.asides if a.source_id not in known]
    if any(m.source_id for m in c.messages):
        last = max((i for i, m in enumerate(c.messages) if m.source_id and m.source_id in known), default=-1)
        older = sum(1 for m in c.messages[:last] if not m.source_id or m.source_id not in known)
        return [m for m in c.messages[last + 1:] if not m.source_id or m.source_id not in known], asides, older
    return list(c.messages[store.exchanges.count_in(session.id):]), asides, 0


def import_source(store: Store, embedder: Embedder, source: Source,
                  progress: Progress | None = None) -> tuple[ImportReport, str | None]:
    """Import a source's conversations, then its derived memory if it has one and the store has none."""
    report = import_conversations(store, embedder, source.read(), progress=progress)
    memory = source.memory()
    if memory is None:
        return report, None
    if has_derived_memory(store):
        return report, (f"the derived memory of {source.path.name} was not applied: this data directory has its "
                        "own summaries and profile; the dream cycle builds them for the imported sessions")
    if report.skipped["forgotten conversation"] or report.skipped["forgotten message"]:
        return report, (f"the derived memory of {source.path.name} was not applied: it was built from what you "
                        "forgot here; the dream cycle builds it again from what was imported")
    try:
        restored = restore_memory(store, embedder, memory)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ImportFormatError(f"the memory file of {source.path} is not usable: {exc}",
                                hint="it is written by `lyra export`") from exc
    return report, "memory restored: " + ", ".join(f"{n} {k}" for k, n in restored.items())
