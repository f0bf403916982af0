"""What the dream reads from the store: its backlog, the sources of digests, reflection and the arc.

The dream's planning (``mind/``) is pure: it hashes bases, plans roll-ups and
weighs drives from what these functions read, and every SQL statement it needs
lives here. "Remembered now" is each kind's own condition in the registry
(``store/kinds.py``), never written again by hand. This module only reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from .kinds import KINDS
from .store import Store

_TURN = KINDS["exchange"]
_SESSION = KINDS["session"]
_GIST = KINDS["gist"]
_FACT = KINDS["fact"]
_DIGEST = KINDS["digest"]


# -- the backlog ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Unsummarized:
    """A remembered session whose gist is not the person's, with how many of its turns the gist does not cover."""

    session_id: int
    has_gist: bool
    stale: bool  # its gist was left stale (by a regenerate, an edit or forgetting)
    new_turns: int
    total_turns: int
    last_at: str | None  # its last turn's time; None only for a session with no turns (none of them new)


def unsummarized_sessions(store: Store) -> list[Unsummarized]:
    """Every remembered session the person did not summarize themselves, least recently active first. A gist they
    deleted covers the turns it covered then (``dismissed``): only turns said since count as new."""
    rows = store.conn().execute(
        "SELECT s.id, g.id IS NOT NULL AS has_gist, coalesce(g.stale, 0) AS stale, "
        "(SELECT count(*) FROM exchanges e WHERE e.session_id = s.id "
        "   AND (g.stale = 1 OR e.id > coalesce(g.covers_upto, CAST(d.basis AS INTEGER), 0))) AS new_turns, "
        "(SELECT count(*) FROM exchanges e WHERE e.session_id = s.id) AS total_turns, "
        "(SELECT max(created_at) FROM exchanges e WHERE e.session_id = s.id) AS last_at "
        "FROM sessions s LEFT JOIN gists g ON g.session_id = s.id "
        "LEFT JOIN dismissed d ON d.kind = 'gist' AND d.target = CAST(s.id AS TEXT) "
        f"WHERE coalesce(g.method, '') != 'user' AND {_SESSION.where_current('s')} ORDER BY last_at, s.id")
    return [Unsummarized(r["id"], bool(r["has_gist"]), bool(r["stale"]), r["new_turns"], r["total_turns"],
                         r["last_at"]) for r in rows]


def stale_count(store: Store, kinds: Sequence[str]) -> int:
    """How many rows of these kinds are marked stale, waiting for the dream to write them again."""
    conn = store.conn()
    return sum(int(conn.execute(f"SELECT count(*) FROM {KINDS[k].table} WHERE stale = 1").fetchone()[0])
               for k in kinds)


# -- digests -------------------------------------------------------------------------------------


class GistStart(NamedTuple):
    """A current gist, its version and when its session began (its first turn, else the session's creation)."""

    gist_id: int
    version: str  # the gist's updated_at
    began_at: str


class Piece(NamedTuple):
    """One source of a digest: a gist (labelled by its session's name) or a day's digest (by its day)."""

    label: str
    content: str
    id: int
    method: str


def gist_starts(store: Store) -> list[GistStart]:
    """Every current gist with the time its session began."""
    rows = store.conn().execute(
        "SELECT g.id, g.updated_at, (SELECT min(created_at) FROM exchanges e WHERE e.session_id = g.session_id) AS "
        f"first, s.created_at FROM gists g JOIN sessions s ON s.id = g.session_id WHERE {_GIST.where_current('g')}")
    return [GistStart(r[0], r[1], r[2] or r[3]) for r in rows]


def digest_bases(store: Store) -> dict[tuple[str, str], str]:
    """The basis of every digest by (granularity, period); a stale one's is empty, so that it is rebuilt."""
    rows = store.conn().execute("SELECT granularity, period, CASE WHEN stale = 1 THEN '' ELSE basis END FROM digests")
    return {(r[0], r[1]): r[2] for r in rows}


def gists_of_day(store: Store, gist_ids: Sequence[int]) -> list[Piece]:
    """These gists (current or not), each labelled by its session's name, by id."""
    marks = ",".join("?" * len(gist_ids))
    rows = store.conn().execute(f"SELECT s.name, g.content, g.id, g.method FROM gists g JOIN sessions s "
                                f"ON s.id = g.session_id WHERE g.id IN ({marks}) ORDER BY g.id",
                                [int(i) for i in gist_ids]).fetchall()
    return [Piece(*r) for r in rows]


def day_digests(store: Store, periods: Sequence[str]) -> list[Piece]:
    """The current day digests of these days, each labelled by its day, by day."""
    marks = ",".join("?" * len(periods))
    rows = store.conn().execute(f"SELECT t.period, t.content, t.id, t.method FROM digests t WHERE t.granularity = "
                                f"'day' AND {_DIGEST.where_current()} AND t.period IN ({marks}) ORDER BY t.period",
                                list(periods)).fetchall()
    return [Piece(*r) for r in rows]


# -- reflection ----------------------------------------------------------------------------------


def latest_marks(store: Store) -> tuple[int, str]:
    """The last remembered turn's id and the last update of a current gist (0 and '' when there is none)."""
    conn = store.conn()
    turn = conn.execute(f"SELECT coalesce(max(t.id), 0) FROM exchanges t WHERE {_TURN.where_current()}").fetchone()
    gist = conn.execute(f"SELECT coalesce(max(t.updated_at), '') FROM gists t WHERE {_GIST.where_current()}"
                        ).fetchone()
    return int(turn[0]), str(gist[0])


def count_since(store: Store, turn_id: int, gist_updated: str) -> tuple[int, int]:
    """Remembered turns after the turn ``turn_id``, and current gists updated after ``gist_updated``."""
    conn = store.conn()
    turns = conn.execute(f"SELECT count(*) FROM exchanges t WHERE t.id > ? AND {_TURN.where_current()}",
                         (turn_id,)).fetchone()[0]
    gists = conn.execute(f"SELECT count(*) FROM gists t WHERE {_GIST.where_current()} AND t.updated_at > ?",
                         (gist_updated,)).fetchone()[0]
    return int(turns), int(gists)


def gists_updated_since(store: Store, since: str, limit: int = 8) -> list[tuple[int, str]]:
    """(id, text) of the current gists updated after ``since``, the latest ``limit``, most recent first."""
    rows = store.conn().execute(f"SELECT t.id, t.content FROM gists t WHERE {_GIST.where_current()} "
                                "AND t.updated_at > ? ORDER BY t.updated_at DESC LIMIT ?", (since, limit))
    return [(int(r[0]), str(r[1])) for r in rows]


# -- the arc -------------------------------------------------------------------------------------


def arc_sources(store: Store) -> tuple[list[int], list[tuple[str, str, str]]]:
    """What an arc is built from: the ids of the standing facts, and (granularity, period, basis) of every current
    digest (in no particular order)."""
    conn = store.conn()
    facts = [int(r[0]) for r in conn.execute(
        f"SELECT t.id FROM profile_facts t WHERE t.superseded_at IS NULL AND {_FACT.where_current()}")]
    digests = [(str(r[0]), str(r[1]), str(r[2])) for r in conn.execute(
        f"SELECT t.granularity, t.period, t.basis FROM digests t WHERE {_DIGEST.where_current()}")]
    return facts, digests
