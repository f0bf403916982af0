"""The registry of memory kinds: every table that holds a person's words, and what each promise means for it.

One description per kind, read by everyone who needs to know where words
live: forgetting (by provenance, by text, by date), export and import,
backups (off-the-record conversations are left out of them), re-embedding,
recall and search tiers, the branch code's stale rules and the Memory panel's
list of kinds. ``tests/test_registry.py`` lists every table and column of a
fresh database and fails on one that is not described here, so a new table
cannot land without saying how it is forgotten and exported.

Every column of a kind's table is either ``words`` (what a person, an agent
or the dream wrote: forgetting by text reaches it) or ``plain`` (ids, times,
states, counts). A table with no words at all is ``Bookkeeping`` and says why.
The deletion order is derived from ``built_from``, never written by hand.

The files around the tables (the WAL, index snapshots, uploads, a restore's
staging, temporaries) are declared beside this registry, in ``files.py``:
who may create each, whether it holds words and how it goes.

This module must never run SQL of its own beyond how a row is removed.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from graphlib import TopologicalSorter
from types import MappingProxyType
from typing import Literal

Remover = Callable[[sqlite3.Connection, list[int]], int]
OnText = Literal["forget", "rename", "blank", "none"]
SESSIONS_FILE = "sessions.jsonl"
MEMORY_FILE = "memory.json"
FORGOTTEN_TEXT = "(forgotten)"  # what a word-holding log column says once forgetting by text reached it


@dataclass(frozen=True)
class Export:
    """Where a kind's rows go in an export (``lyra export``, ``GET /api/export``) and come back from on import.

    Every column of the table is in exactly one of ``columns`` (written as it
    is), ``portable`` (a column naming a row of this data directory, written
    under another key as something that means the same elsewhere: a session's
    uid, a count of turns) or ``local`` (not written: rebuilt on import, or
    meaningless elsewhere).
    """

    file: str
    section: str
    columns: tuple[str, ...]
    portable: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    local: tuple[str, ...] = ()
    rows: Literal["all", "latest"] = "all"  # every row that counts as remembered, or the newest one only


@dataclass(frozen=True)
class Kind:
    """One kind of memory (or other holder of words): where it lives and what each promise means for it."""

    name: str
    table: str
    label: tuple[str, str]  # (one, many) as a person reads them: ("summary", "summaries")
    words: tuple[str, ...]
    plain: tuple[str, ...]
    export: Export | None = None
    private: str = ""  # why it is never exported, when ``export`` is None
    node: bool = False  # a node of the provenance graph: built from others, forgotten with them
    built_from: tuple[str, ...] = ()
    remove: Remover | None = None  # how a row of a node is forgotten
    unknown_means_any: bool = False  # written with no known sources: any forget removes it
    on_text: OnText = "none"  # what forgetting by text does to a row whose words hold the text
    same_ids_as: str | None = None  # its ids are those of another kind (a turn set aside is still that turn)
    key: str = "id"
    vector_tier: str | None = None
    fts: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))  # view -> full-text table
    time_column: str | None = None
    # SQL (alias ``t``) of the first and last moment its sources speak of, as stored times, for a kind written
    # after the fact (a summary, a digest): dated and filtered by what it tells of, not by when the dream ran.
    covers: tuple[str, str] | None = None
    session_column: str | None = None
    current: str = ""  # SQL condition (alias ``t``) of a row that counts as remembered now
    goes_stale: bool = False  # a regenerate or an edit marks it stale for the dream to write again
    json_words: bool = False  # its words column holds JSON: the words are its string values
    searchable: bool = False  # a tier of memory search
    # SQL (alias ``t``) of the text its vector and full text are made of, when more than its main text: a turn's
    # words and its photo's caption (``exchanges.embedded_text`` says the same in Python)
    indexed: str = ""

    @property
    def columns(self) -> tuple[str, ...]:
        return self.words + self.plain

    @property
    def text(self) -> str:
        """The column that holds its main text (what is embedded, searched and shown)."""
        return self.words[0]

    @property
    def indexed_text(self) -> str:
        """``indexed``, or its main text's column."""
        return self.indexed or f"t.{self.text}"

    def where_current(self, alias: str = "t") -> str:
        """``current`` written for the table alias ``alias`` ("1" when every row counts)."""
        return re.sub(r"\bt\.", f"{alias}.", self.current) if self.current else "1"


@dataclass(frozen=True)
class Bookkeeping:
    """A table that holds no person's words: ids, counts, states, vectors or settings, and why."""

    table: str
    columns: tuple[str, ...]
    why: str


# -- how a row is forgotten ---------------------------------------------------------------------


def delete_rows(table: str, key: str = "id") -> Remover:
    def remove(conn: sqlite3.Connection, ids: list[int]) -> int:
        return int(conn.execute(f"DELETE FROM {table} WHERE {key} IN (SELECT value FROM json_each(?))",
                                (json.dumps(ids),)).rowcount)
    return remove


def remove_facts(conn: sqlite3.Connection, ids: list[int]) -> int:
    """Delete facts; the history chain skips over them.

    A fact that one of them had superseded becomes current again unless a later
    surviving fact superseded it too.
    """
    removed = 0
    for fact_id in sorted(ids, reverse=True):
        row = conn.execute("SELECT superseded_by, superseded_at FROM profile_facts WHERE id = ?", (fact_id,)).fetchone()
        if row is None:
            continue
        conn.execute("UPDATE profile_facts SET superseded_by = ?, superseded_at = ? WHERE superseded_by = ?",
                     (row[0], row[1], fact_id))
        removed += conn.execute("DELETE FROM profile_facts WHERE id = ?", (fact_id,)).rowcount
    return removed


def keep_traces(conn: sqlite3.Connection, ids: list[int]) -> int:
    """Traces stay with their reply; it is their pointers to forgotten memories that go (``provenance.forget``)."""
    return 0


# -- what a derived memory tells of ------------------------------------------------------------------

_GIST_TURNS = "FROM exchanges e WHERE e.session_id = t.session_id AND e.id <= t.covers_upto"
# A digest's period key (day 2023-09-11, ISO week 2023-W37, month 2023-09) as its first and last day; an ISO week
# starts on the Monday of the week holding 4 January.
_PERIOD_START = ("(CASE t.granularity WHEN 'day' THEN t.period WHEN 'month' THEN t.period || '-01' "
                 "ELSE date(substr(t.period, 1, 4) || '-01-04', 'weekday 0', '-6 days', "
                 "((CAST(substr(t.period, 7) AS INTEGER) - 1) * 7) || ' days') END)")
_PERIOD_LAST = (f"date({_PERIOD_START}, CASE t.granularity WHEN 'day' THEN '+1 day' WHEN 'week' THEN '+7 days' "
                "ELSE '+1 month' END, '-1 day')")
GIST_COVERS = (f"(SELECT min(e.created_at) {_GIST_TURNS})", f"(SELECT max(e.created_at) {_GIST_TURNS})")
DIGEST_COVERS = (f"({_PERIOD_START} || 'T00:00:00.000000+00:00')", f"({_PERIOD_LAST} || 'T23:59:59.999999+00:00')")


# -- the registry -------------------------------------------------------------------------------

_TURN = ("id", "session_id", "role", "created_at", "tokens", "source_id", "ending", "author")

KINDS: Mapping[str, Kind] = MappingProxyType({k.name: k for k in (
    Kind("session", "sessions", ("conversation", "conversations"),
         words=("name", "source_id"), plain=("id", "uid", "created_at", "updated_at", "source", "remember"),
         export=Export(SESSIONS_FILE, "sessions", ("name", "created_at", "source", "source_id"),
                       MappingProxyType({"uid": "id"}), ("id", "updated_at", "remember")),
         on_text="rename", time_column="updated_at", current="t.remember = 1"),
    Kind("exchange", "exchanges", ("turn", "turns"),
         words=("content", "caption"), plain=(*_TURN, "remembered"),
         export=Export(SESSIONS_FILE, "messages", ("role", "content", "caption", "created_at", "author", "ending"),
                       MappingProxyType({"source_id": "source_id", "session_id": "session"}),
                       ("id", "tokens", "remembered")),
         node=True, remove=delete_rows("exchanges"), on_text="forget", vector_tier="exchange",
         fts=MappingProxyType({"turn": "exchanges_fts", "context": "exchange_context_fts"}),
         time_column="created_at", session_column="session_id", current="t.remembered = 1", searchable=True,
         indexed="t.content || coalesce(char(10) || t.caption, '')"),
    Kind("aside", "asides", ("version set aside", "versions set aside"),
         words=("content", "caption"), plain=(*_TURN, "parent_id", "trace", "trace_tokens", "trace_created_at",
                                              "vector", "vector_model", "set_aside_seq"),
         export=Export(SESSIONS_FILE, "asides", ("role", "content", "caption", "created_at", "author", "ending",
                                                 "set_aside_seq"),
                       MappingProxyType({"source_id": "source_id", "parent_id": "parent", "session_id": "session"}),
                       ("id", "tokens", "trace", "trace_tokens", "trace_created_at", "vector", "vector_model")),
         on_text="forget", same_ids_as="exchange", time_column="created_at", session_column="session_id"),
    Kind("gist", "gists", ("summary", "summaries"),
         words=("content",), plain=("id", "session_id", "covers_upto", "created_at", "updated_at", "stale",
                                    "profiled_upto", "method"),
         export=Export(MEMORY_FILE, "gists", ("content", "created_at", "updated_at", "method"),
                       MappingProxyType({"session_id": "session", "covers_upto": "covers_turns"}),
                       ("id", "stale", "profiled_upto")),
         node=True, built_from=("exchange",), remove=delete_rows("gists"), on_text="forget", vector_tier="gist",
         fts=MappingProxyType({"turn": "gists_fts"}), time_column="updated_at", covers=GIST_COVERS,
         session_column="session_id", current="t.stale = 0", goes_stale=True, searchable=True),
    Kind("fact", "profile_facts", ("fact", "facts"),
         words=("key", "value"), plain=("id", "source_session_id", "author", "created_at", "superseded_by",
                                        "superseded_at", "stale", "observed_at"),
         export=Export(MEMORY_FILE, "profile", ("key", "value", "author", "created_at", "observed_at",
                                                "superseded_at"),
                       MappingProxyType({"source_session_id": "session", "superseded_by": "superseded_by"}),
                       ("id", "stale")),
         node=True, built_from=("gist", "exchange"), remove=remove_facts, on_text="forget",
         time_column="observed_at", current="t.stale = 0", searchable=True),
    Kind("digest", "digests", ("timeline digest", "timeline digests"),
         words=("content",), plain=("id", "granularity", "period", "source_count", "created_at", "updated_at",
                                    "stale", "basis", "method"),
         export=Export(MEMORY_FILE, "digests", ("granularity", "period", "content", "source_count", "basis",
                                                "created_at", "updated_at", "method"), local=("id", "stale")),
         node=True, built_from=("gist", "digest"), remove=delete_rows("digests"), unknown_means_any=True,
         on_text="forget", vector_tier="digest", time_column="period", covers=DIGEST_COVERS, current="t.stale = 0",
         goes_stale=True, searchable=True),
    Kind("narrative", "narrative", ("arc", "arcs"),
         words=("content",), plain=("id", "created_at", "stale", "basis", "method"),
         export=Export(MEMORY_FILE, "narrative", ("content", "created_at", "basis", "method"), local=("id", "stale"),
                       rows="latest"),
         node=True, built_from=("fact", "digest", "narrative"), remove=delete_rows("narrative"),
         unknown_means_any=True, on_text="forget", time_column="created_at", current="t.stale = 0",
         goes_stale=True),
    Kind("self_state", "self_state", ("self-state", "self-states"),
         words=("state",), plain=("id", "created_at"), json_words=True,
         export=Export(MEMORY_FILE, "self_state", ("state", "created_at"), local=("id",), rows="latest"),
         node=True, built_from=("gist", "narrative", "self_state"), remove=delete_rows("self_state"),
         unknown_means_any=True, on_text="forget", time_column="created_at"),
    Kind("world", "world_state", ("core memory version", "core memory versions"),
         words=("content", "reason"), plain=("id", "author", "status", "created_at", "decided_at", "decided_by"),
         export=Export(MEMORY_FILE, "world", ("content", "author", "reason", "status", "created_at", "decided_at",
                                              "decided_by"), local=("id",)),
         node=True, built_from=("fact", "narrative", "world"), remove=delete_rows("world_state"),
         unknown_means_any=True, on_text="forget", time_column="created_at"),
    Kind("trace", "context_traces", ("context trace", "context traces"),
         words=(), plain=("exchange_id", "trace", "tokens", "created_at"), key="exchange_id",
         private="which memories a reply's context used, by id: rebuilt by nothing, meaningful only here",
         node=True, built_from=("exchange", "gist", "digest"), remove=keep_traces),
    Kind("dismissed", "dismissed", ("deleted memory", "deleted memories"),
         words=(), plain=("kind", "target", "basis", "dismissed_at"), key="target",
         export=Export(MEMORY_FILE, "dismissed", ("kind", "dismissed_at"),
                       MappingProxyType({"target": "target", "basis": "basis"}))),
    Kind("instance", "instances", ("running task", "running tasks"),
         words=("summary", "result"), plain=("id", "kind", "pid", "host", "started_at", "heartbeat_at",
                                             "completed_at", "status"),
         private="what runs on this machine now (servers, dream workers, agents' tasks)", on_text="blank"),
    Kind("instance_note", "instance_log", ("task note", "task notes"),
         words=("message",), plain=("id", "instance_id", "at"),
         private="progress notes of the tasks running on this machine", on_text="blank"),
    Kind("lock", "locks", ("lock", "locks"),
         words=("note",), plain=("resource", "holder", "acquired_at", "expires_at"), key="resource",
         private="leases held now by processes and agents on this machine", on_text="blank"),
    Kind("dream_pass", "dream_passes", ("dream pass", "dream passes"),
         words=("error",), plain=("id", "instance_id", "started_at", "finished_at", "forced", "status",
                                  "backlog_before", "drives_before", "backlog_after", "drives_after", "actions"),
         private="the dream's own record of its passes (counts and drives; a failure's message may quote anything)",
         on_text="blank"),
)})

BOOKKEEPING: Mapping[str, Bookkeeping] = MappingProxyType({b.table: b for b in (
    Bookkeeping("_migrations", ("name", "applied_at"), "which schema migrations ran"),
    Bookkeeping("meta", ("key", "value"), "the store's settings and cursors: the embedding model in use, "
                                          "background backfill marks, this memory's lineage"),
    Bookkeeping("embeddings", ("tier", "model", "item_id", "vector"),
                "vectors of the rows of the kinds with a vector tier; deleted by trigger with their row"),
    Bookkeeping("vector_log", ("seq", "tier", "model", "item_id", "op"), "ids whose vectors changed, for the "
                                                                         "FAISS indexes to catch up"),
    Bookkeeping("provenance", ("kind", "item_id", "source_kind", "source_id"), "what each memory was built from, "
                                                                               "by kind and id"),
    Bookkeeping("consolidation_log", ("id", "at", "kind", "target", "detail", "instance_id"),
                "the dream's log of ids, counts and states: every text key is stripped as it is written "
                "(provenance.LOG_TEXT_KEYS)"),
)})


def _deletion_order() -> tuple[str, ...]:
    """Nodes with what is built from them first, so a row goes before what it was built from."""
    graph = {k.name: {s for s in k.built_from if s != k.name} for k in KINDS.values() if k.node}
    return tuple(reversed(tuple(TopologicalSorter(graph).static_order())))


NODES: tuple[str, ...] = tuple(k.name for k in KINDS.values() if k.node)
ORDER = _deletion_order()  # dependents first
FTS_TABLES = tuple(table for k in KINDS.values() for table in k.fts.values())
STALE_KINDS = tuple(k for k in KINDS.values() if k.goes_stale)
SEARCH_TIERS = tuple(k.name for k in KINDS.values() if k.searchable)
# What the dream builds from what was said, in words: summaries, facts, digests, the arc, the self-state, the core
# memory (a context trace is built too, but of ids only).
DERIVED = tuple(k.name for k in KINDS.values() if k.built_from and k.words)


def of_tier(tier: str) -> Kind:
    """The kind whose rows make up a vector tier."""
    found = [k for k in KINDS.values() if k.vector_tier == tier]
    if len(found) != 1:
        raise ValueError(f"no single kind for the vector tier {tier!r}")
    return found[0]


def with_session() -> tuple[Kind, ...]:
    """Kinds whose rows belong to one conversation (they go with it, and with it out of a backup)."""
    return tuple(k for k in KINDS.values() if k.session_column)
