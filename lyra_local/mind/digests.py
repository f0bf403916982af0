"""Temporal digests: day -> week -> month roll-ups of the session gists.

Planning is pure: each digest records the ``basis`` it was built from (a hash
of its sources and their versions), so a pass rebuilds exactly the periods
whose sources changed and deletes those left with none. Days come from the
session's real date (its first turn), so imported history lands in its month.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime

from ..store import Store
from ..store.periods import GRANULARITIES, period_keys
from . import prompts
from .scribe import Scribe


@dataclass(frozen=True)
class GistSource:
    gist_id: int
    day: str  # the session's date, YYYY-MM-DD
    version: str  # the gist's updated_at


@dataclass(frozen=True)
class DigestJob:
    granularity: str
    period: str
    basis: str
    sources: tuple[str, ...]  # gist ids (days) or day periods (weeks, months)


@dataclass(frozen=True)
class DigestPlan:
    jobs: list[DigestJob]
    obsolete: list[tuple[str, str]]


def _hash(parts: Sequence[str]) -> str:
    return hashlib.sha1("\n".join(sorted(parts)).encode()).hexdigest()[:16]


def plan_digests(sources: Sequence[GistSource], existing: Mapping[tuple[str, str], str]) -> DigestPlan:
    """Which digests to (re)build, days before weeks before months, and which to delete."""
    days: dict[str, list[GistSource]] = defaultdict(list)
    for source in sources:
        days[source.day].append(source)
    day_basis = {day: _hash([f"{s.gist_id}@{s.version}" for s in group]) for day, group in days.items()}
    wanted: dict[tuple[str, str], tuple[str, tuple[str, ...]]] = {}
    for day, group in days.items():
        wanted[("day", day)] = (day_basis[day], tuple(str(s.gist_id) for s in group))
    rollups: dict[tuple[str, str], list[str]] = defaultdict(list)
    for day in days:
        keys = period_keys(datetime.combine(date.fromisoformat(day), datetime.min.time()))
        for granularity in ("week", "month"):
            rollups[(granularity, keys[granularity])].append(day)
    for key, members in rollups.items():
        wanted[key] = (_hash([f"{d}@{day_basis[d]}" for d in members]), tuple(sorted(members)))
    order = {g: i for i, g in enumerate(GRANULARITIES)}
    jobs = [DigestJob(g, p, basis, srcs) for (g, p), (basis, srcs) in wanted.items() if existing.get((g, p)) != basis]
    jobs.sort(key=lambda j: (order[j.granularity], j.period))
    obsolete = sorted(key for key in existing if key not in wanted)
    return DigestPlan(jobs, obsolete)


def gist_sources(store: Store) -> list[GistSource]:
    rows = store.conn().execute(
        "SELECT g.id, g.updated_at, (SELECT min(created_at) FROM exchanges e WHERE e.session_id = g.session_id) AS "
        "first, s.created_at FROM gists g JOIN sessions s ON s.id = g.session_id WHERE g.stale = 0")
    return [GistSource(r[0], (r[2] or r[3])[:10], r[1]) for r in rows]


def existing_bases(store: Store) -> dict[tuple[str, str], str]:
    """Basis of every digest; a stale one gets an empty basis so it is rebuilt."""
    rows = store.conn().execute("SELECT granularity, period, CASE WHEN stale = 1 THEN '' ELSE basis END FROM digests")
    return {(r[0], r[1]): r[2] for r in rows}


def plan(store: Store) -> DigestPlan:
    return plan_digests(gist_sources(store), existing_bases(store))


def write_digest(scribe: Scribe, store: Store, job: DigestJob) -> str:
    """The digest's text: the one source as it is, or the model's roll-up of several."""
    conn = store.conn()
    if job.granularity == "day":
        marks = ",".join("?" * len(job.sources))
        rows = conn.execute(f"SELECT s.name, g.content FROM gists g JOIN sessions s ON s.id = g.session_id "
                            f"WHERE g.id IN ({marks}) ORDER BY g.id", [int(i) for i in job.sources]).fetchall()
        pieces = [content if len(rows) == 1 else f"{name}: {content}" for name, content in rows]
    else:
        marks = ",".join("?" * len(job.sources))
        rows = conn.execute(f"SELECT period, content FROM digests WHERE granularity = 'day' AND stale = 0 "
                            f"AND period IN ({marks}) ORDER BY period", job.sources).fetchall()
        pieces = [content if len(rows) == 1 else f"{period}: {content}" for period, content in rows]
    if not pieces:
        raise LookupError(f"the sources of the {job.granularity} digest {job.period} are gone")
    return scribe.reduce(prompts.DIGEST, pieces, period=job.period, granularity=job.granularity)
