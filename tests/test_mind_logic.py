"""Pure logic of the dream cycle: chunking, digest planning, the timeline ladder, drives, quiet hours."""

from __future__ import annotations

from datetime import date, datetime, time, timedelta, timezone

import pytest

from lyra_local.config import DreamSettings
from lyra_local.memory.keys import normalize_key
from lyra_local.memory.timeline import Entry, render_timeline
from lyra_local.mind.dream.drives import Backlog, PendingSession, compute_drives, is_ripe
from lyra_local.mind.dream.scheduler import in_quiet_hours
from lyra_local.mind.summaries.chunks import input_budget, pack, split_to
from lyra_local.mind.summaries.digests import GistSource, plan_digests
from lyra_local.store.db import to_iso


def words(text: str) -> int:
    return len(text.split())


@pytest.mark.parametrize("budget", [5, 12, 40])
def test_pack_keeps_order_and_budget_and_splits_what_is_too_long(budget: int) -> None:
    texts = [f"turn {i} " + "word " * (i % 7) for i in range(30)] + ["long " * 100]
    chunks = pack(texts, budget, words)
    assert all(sum(words(t) + 1 for t in chunk) <= budget or len(chunk) == 1 for chunk in chunks)
    assert all(words(t) <= budget for chunk in chunks for t in chunk)
    assert " ".join(" ".join(c) for c in chunks).split() == " ".join(texts).split()


def test_split_to_cuts_at_whitespace_within_the_limit() -> None:
    pieces = split_to("alpha beta gamma delta epsilon zeta eta theta", 3, words)
    assert pieces == ["alpha beta gamma", "delta epsilon zeta", "eta theta"]


def test_budget_comes_from_the_models_context() -> None:
    assert input_budget(2048, 256, "do it", words) == 2048 - 256 - 2 - 48
    assert input_budget(8192, 256, "do it", words) > input_budget(2048, 256, "do it", words)


def test_plan_rebuilds_only_what_changed_and_deletes_what_lost_its_sources() -> None:
    sources = [GistSource(1, "2024-03-04", "v1"), GistSource(2, "2024-03-04", "v1"), GistSource(3, "2024-04-20", "v1")]
    first = plan_digests(sources, {})
    keys = [(j.granularity, j.period) for j in first.jobs]
    assert keys == [("day", "2024-03-04"), ("day", "2024-04-20"), ("week", "2024-W10"), ("week", "2024-W16"),
                    ("month", "2024-03"), ("month", "2024-04")]
    built = {(j.granularity, j.period): j.basis for j in first.jobs}
    assert plan_digests(sources, built).jobs == []
    changed = [GistSource(1, "2024-03-04", "v2"), *sources[1:]]
    assert [(j.granularity, j.period) for j in plan_digests(changed, built).jobs] == [
        ("day", "2024-03-04"), ("week", "2024-W10"), ("month", "2024-03")]
    gone = plan_digests(sources[:2], built)
    assert gone.jobs == [] and gone.obsolete == [("day", "2024-04-20"), ("month", "2024-04"), ("week", "2024-W16")]


def ladder_entries(today: date) -> list[Entry]:
    out = []
    for i in range(10):
        d = today - timedelta(days=i)
        out.append(Entry("day", d.isoformat(), f"day {i} " + "x " * 8))
    for i in range(8):
        year, week, _ = (today - timedelta(weeks=i)).isocalendar()
        out.append(Entry("week", f"{year}-W{week:02d}", f"week {i} " + "x " * 8))
    for i in range(12):
        first = date(today.year, today.month, 1)
        month = (first.month - 1 - i) % 12 + 1
        year = first.year + (first.month - 1 - i) // 12
        out.append(Entry("month", f"{year}-{month:02d}", f"month {i} " + "x " * 8))
    return out


def test_timeline_prefers_recent_detail_and_older_coarse_digests() -> None:
    entries = ladder_entries(date(2024, 6, 20))
    everything = render_timeline(entries, 10_000, words)
    kinds = [e.granularity for e in everything]
    assert kinds == sorted(kinds, key=["month", "week", "day"].index)  # oldest (coarse) first, days last
    assert sum(k == "day" for k in kinds) == 10
    tight = render_timeline(entries, 150, words)
    assert sum(words(e.line()) + 1 for e in tight) <= 150
    assert "day" not in [e.granularity for e in tight] or len(tight) < len(everything)
    assert any(e.granularity == "month" for e in tight)  # recent days fold into coarser digests first
    tiny = render_timeline(entries, 26, words)  # two month lines of 13
    assert [e.granularity for e in tiny] == ["month", "month"] and tiny[-1].period == "2024-06"


def test_timeline_on_an_empty_store_is_empty() -> None:
    assert render_timeline([], 100, words) == []


def pending(sid: int, new: int, minutes_ago: float, *, gist: bool = False, stale: bool = False) -> PendingSession:
    at = to_iso(datetime(2024, 6, 1, 12, tzinfo=timezone.utc) - timedelta(minutes=minutes_ago))
    return PendingSession(sid, new, new, at, gist, stale)


def test_ripeness_quiet_long_enough_or_enough_new_turns_or_stale_or_forced() -> None:
    settings = DreamSettings(session_idle_s=900, resummarize_after=20)
    now = datetime(2024, 6, 1, 12, tzinfo=timezone.utc)
    assert is_ripe(pending(1, 2, 20), now, settings)
    assert not is_ripe(pending(1, 2, 5), now, settings)
    assert is_ripe(pending(1, 25, 1), now, settings)
    assert is_ripe(pending(1, 1, 1, gist=True, stale=True), now, settings)
    assert is_ripe(pending(1, 1, 1), now, settings, force=True)


def test_drives_rise_with_their_signals_and_stability_reads_how_caught_up() -> None:
    calm = compute_drives(Backlog())
    assert calm == {"continuity": 0, "coherence": 0, "curiosity": 0, "stability": 1}
    busy = compute_drives(Backlog(pending=(pending(1, 6, 30), pending(2, 4, 30)), ripe=(1, 2), unprofiled=2,
                                  digest_jobs=3, narrative_due=True, novel_turns=10, novel_gists=2))
    assert all(0 < busy[d] < 1 for d in ("continuity", "coherence", "curiosity"))
    more = compute_drives(Backlog(pending=(pending(1, 6, 30),) * 4, ripe=(1, 2, 3, 4)))
    assert more["continuity"] > busy["continuity"]
    assert busy["stability"] < calm["stability"]


@pytest.mark.parametrize(("spec", "now", "quiet"), [
    ("23:00-07:00", time(23, 30), True), ("23:00-07:00", time(6, 59), True), ("23:00-07:00", time(7, 0), False),
    ("13:00-14:00", time(13, 30), True), ("13:00-14:00", time(12, 0), False), (None, time(3, 0), False)])
def test_quiet_hours_may_wrap_midnight(spec: str | None, now: time, quiet: bool) -> None:
    assert in_quiet_hours(spec, now) is quiet


@pytest.mark.parametrize(("raw", "key"), [("User's Home_City:", "home city"), ("  Job ", "job"),
                                          ("my-partner", "partner"), ("the user pet", "pet")])
def test_keys_are_normalized_so_updates_find_their_fact(raw: str, key: str) -> None:
    assert normalize_key(raw) == key
