"""The bulk path: conversations in, embedded in batches, whole conversations per transaction.

A batch of conversations is embedded in one go (the fast path of the
embedder), then written in one transaction: a crash loses at most the batch
in flight, never part of a conversation. Conversations already stored are
recognised by their ids (session uid, or source and source id; messages by
their source id, else by position), so an interrupted import simply runs
again, and a newer export adds only what is new.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import numpy as np

from ..llm.base import Embedder
from ..store import Session, Store, ledger
from ..store.exchanges import NewExchange
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
    report = ImportReport()
    conversations: list[ImportedConversation] = []
    for item in items:
        if isinstance(item, ImportProblem):
            report.problems.append(item)
        else:
            conversations.append(item)
    total = sum(len(c.messages) for c in conversations)
    processed = 0
    forgotten = ledger.forgotten_portable(store.data_dir)
    here = origin(store)
    batch: list[_Pending] = []
    seen: set[tuple[str, str]] = set()

    def tick() -> None:
        if progress:
            progress(processed, total)

    def flush() -> None:
        nonlocal processed
        t0 = time.perf_counter()
        texts = [m.content for p in batch for m in p.messages]
        # A batch of conversations with nothing left to store (images only) needs no model at all.
        vectors = embedder.embed(texts) if texts else np.zeros((0, 0), dtype=np.float32)
        report.embed_s += time.perf_counter() - t0
        row = 0
        with store.write() as conn:  # whole conversations, or nothing of them
            for p in batch:
                c = p.conversation
                if p.session is not None and not store.sessions.exists(p.session.id, conn=conn):
                    # forgotten while we embedded: what it adds to must not come back
                    report.problems.append(ImportProblem(f"\u201c{c.name}\u201d", "its session was forgotten "
                                                         "while importing; its new messages were not imported"))
                    row += len(p.messages)
                    p.messages, p.asides = [], []
                    continue
                session = p.session or store.sessions.create(c.name, created_at=c.created_at, source=c.source,
                                                             source_id=c.source_id, uid=c.uid, conn=conn)
                news = [NewExchange(session.id, m.role, m.content, m.created_at, source_id=m.source_id,
                                    author=m.author, ending=m.ending) for m in p.messages]
                store.exchanges.insert(conn, news, vectors[row:row + len(news)], embedder.name)
                add_asides(conn, here, session.id, p.asides)  # after the path: each follows a turn already there
                row += len(news)
        for p in batch:
            report.messages += len(p.messages)
            report.sessions_new += p.session is None
            report.sessions_updated += p.session is not None
            processed += len(p.conversation.messages)
        batch.clear()
        tick()

    for c in conversations:
        key = (c.source, c.source_id) if c.source_id else ("uid", c.uid or "")
        if key[1] and key in seen:
            report.problems.append(ImportProblem(f"\u201c{c.name}\u201d", "appears twice in the input; "
                                                 "the first copy was imported"))
            processed += len(c.messages)
            continue
        seen.add(key)
        report.skipped.update(c.skipped)
        given = len(c.messages)
        whole = _drop_forgotten(c, forgotten, report)
        processed += given - len(c.messages)  # what was left out counts as done
        if whole:
            continue
        session = _existing(store, c)
        new, asides, older = _new_turns(store, session, c)
        if older:
            report.skipped["messages older than the ones already imported"] += older
        if session is not None and not new and not asides:
            report.sessions_unchanged += 1
            processed += len(c.messages)
            tick()
            continue
        batch.append(_Pending(c, session, new, asides))
        if sum(len(p.messages) for p in batch) >= batch_messages:
            flush()
    if batch:
        flush()
    tick()
    report.total_s = time.perf_counter() - started
    return report


def _drop_forgotten(c: ImportedConversation, forgotten: frozenset[str], report: ImportReport) -> bool:
    """Leave out what was forgotten here (``store/ledger.py``): an export made before a forget must not bring it
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
