"""Temporal digests: day -> week -> month roll-ups of the session gists.

Planning is pure: each digest records the ``basis`` it was built from (a hash
of its sources and their versions), so a pass rebuilds exactly the periods
whose sources changed and deletes those left with none. Days come from the
session's real date (its first turn), so imported history lands in its month.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timezone, tzinfo

from ...store import Store
from ...store import dream_sources as dreamwork
from ...store.db import local_day
from ...store.periods import GRANULARITIES, period_keys
from ...store.provenance import Ref
from ..dream import prompts
from ..dream.scribe import Scribe
from ..grounding.checks import day_of


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


def plan_digests(sources: Sequence[GistSource], existing: Mapping[tuple[str, str], str],
                 left_out: Collection[str] = ()) -> DigestPlan:
    """Which digests to (re)build, days before weeks before months, and which to delete. The days ``left_out``
    (whose digest the person deleted) are rolled up into no week or month."""
    days: dict[str, list[GistSource]] = defaultdict(list)
    for source in sources:
        days[source.day].append(source)
    day_basis = {day: _hash([f"{s.gist_id}@{s.version}" for s in group]) for day, group in days.items()}
    wanted: dict[tuple[str, str], tuple[str, tuple[str, ...]]] = {}
    for day, group in days.items():
        wanted[("day", day)] = (day_basis[day], tuple(str(s.gist_id) for s in group))
    rollups: dict[tuple[str, str], list[str]] = defaultdict(list)
    for day in (d for d in days if d not in left_out):
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


def gist_sources(store: Store, zone: tzinfo = timezone.utc) -> list[GistSource]:
    """Each gist with the day its session began, in the person's time zone."""
    return [GistSource(g.gist_id, local_day(g.began_at, zone), g.version) for g in dreamwork.gist_starts(store)]


def existing_bases(store: Store) -> dict[tuple[str, str], str]:
    """Basis of every digest; a stale one gets an empty basis so it is rebuilt."""
    return dreamwork.digest_bases(store)


def plan(store: Store, zone: tzinfo = timezone.utc) -> DigestPlan:
    """What to (re)build and delete; a digest the person wrote stays, one they deleted waits for new sources, and
    the weeks and months over a day they deleted are built from the other days (or go, with none left)."""
    sources, existing = gist_sources(store, zone), existing_bases(store)
    planned = plan_digests(sources, existing)
    theirs = store.corrections.their_digests()
    deleted = store.corrections.dismissed("digest", adopt={f"{j.granularity}:{j.period}": j.basis
                                                             for j in planned.jobs})
    left_out = {j.period for j in planned.jobs if j.granularity == "day" and deleted.get(f"day:{j.period}") == j.basis}
    if left_out:
        planned = plan_digests(sources, existing, left_out)
    jobs = [j for j in planned.jobs if (j.granularity, j.period) not in theirs
            and deleted.get(f"{j.granularity}:{j.period}") != j.basis]
    return DigestPlan(jobs, [key for key in planned.obsolete if key not in theirs])


def period_words(granularity: str, period: str) -> str:
    """A period as a summary writes it: "5 March 2024", "the week of 4 March 2024", "March 2024"."""
    if granularity == "day":
        return day_of(date.fromisoformat(period))
    if granularity == "week":
        year, week = period.split("-W")
        return f"the week of {day_of(date.fromisocalendar(int(year), int(week), 1))}"
    month = date.fromisoformat(f"{period}-01")
    return day_of(month).split(" ", 1)[1]


def digest_material(store: Store, job: DigestJob) -> tuple[list[tuple[str, str]], list[Ref]]:
    """The digest's pieces as (text, how each was written) — a day's gists, or a week's or month's days —
    and the refs they are.

    Each piece the model reads carries its day ("Moving plans, 10 March 2024: …", "11 March 2024: …"), so a
    relative time in it ("next April") can be read from when it was said; the checks read the day too, so a
    draft may write it. An extract's quotes carry their own days and are rolled up as written."""
    if job.granularity == "day":
        rows = dreamwork.gists_of_day(store, [int(i) for i in job.sources])
        kind = "gist"
        day = period_words("day", job.period)
        labels = [f"{label}, {day}" for label, _, _, _ in rows]
    else:
        rows = dreamwork.day_digests(store, job.sources)
        kind = "digest"
        labels = [period_words("day", label) for label, _, _, _ in rows]
    if not rows:
        raise LookupError(f"the sources of the {job.granularity} digest {job.period} are gone")
    # One piece is the digest as it is (``write_digest``): no label is written into it.
    pieces = [(content if method == "extractive" or len(rows) == 1 else f"{label}: {content}", method)
              for label, (_, content, _, method) in zip(labels, rows, strict=True)]
    return pieces, [(kind, int(r.id)) for r in rows]


def write_digest(scribe: Scribe, job: DigestJob, pieces: list[tuple[str, str]]) -> str:
    """The model's roll-up of the pieces (one piece is taken as it is)."""
    if len(pieces) == 1:
        return pieces[0][0]
    return scribe.reduce(prompts.DIGEST, [text for text, _ in pieces], period=job.period, granularity=job.granularity)
