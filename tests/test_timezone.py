"""The person's own dates: ``companion.timezone`` decides which day a turn belongs to."""

from __future__ import annotations

from collections.abc import Callable
from datetime import tzinfo
from zoneinfo import ZoneInfo

import pytest

from lyra_local.config import Settings
from lyra_local.errors import ConfigError
from lyra_local.memory import Memory, RecallQuery
from lyra_local.memory.gather import gather
from lyra_local.mind.summaries import digests
from lyra_local.store import Store
from lyra_local.store.exchanges import NewExchange

from .fakes import FakeEmbedder

LATE = "2024-06-03T22:30:00+00:00"  # Monday night in London's summer time is Tuesday morning in Tokyo


def test_an_unknown_zone_is_refused_and_none_means_this_machines(make_settings: Callable[..., Settings]) -> None:
    with pytest.raises(ConfigError, match="timezone"):
        make_settings('[companion]\ntimezone = "Mars/Olympus_Mons"\n')
    assert isinstance(make_settings("").companion.zone, tzinfo)
    assert make_settings('[companion]\ntimezone = "Asia/Tokyo"\n').companion.zone == ZoneInfo("Asia/Tokyo")


def a_late_turn(store: Store) -> None:
    """A session with one turn at ``LATE`` (3 June in UTC, 4 June in Tokyo), and its gist."""
    session = store.sessions.create("late", created_at=LATE)
    with store.write() as conn:
        store.exchanges.insert(conn, [NewExchange(session.id, "user", "We finally booked the flights to Osaka.", LATE)],
                               None, None)
    store.derived.put_gist(session.id, "Sam booked flights to Osaka.", 1)


@pytest.mark.parametrize(("zone", "day"), [("UTC", "2024-06-03"), ("Asia/Tokyo", "2024-06-04"),
                                           ("America/Los_Angeles", "2024-06-03")])
def test_a_session_lands_in_the_day_of_the_persons_zone(store: Store, zone: str, day: str) -> None:
    a_late_turn(store)
    plan = digests.plan(store, ZoneInfo(zone))
    assert {(j.granularity, j.period) for j in plan.jobs if j.granularity == "day"} == {("day", day)}


@pytest.mark.parametrize(("zone", "found"), [("Asia/Tokyo", True), ("UTC", False)])
def test_a_date_in_a_question_is_the_persons_day(store: Store, zone: str, found: bool) -> None:
    a_late_turn(store)
    memory = Memory(store, FakeEmbedder(), zone=ZoneInfo(zone))
    memory.reembed()
    hits = memory.recall(RecallQuery("what did I do on June 4, 2024?", k=5))
    assert any("date" in h.stages for h in hits) is found


def test_recalled_memories_carry_the_persons_date(store: Store, make_settings: Callable[..., Settings]) -> None:
    a_late_turn(store)
    settings = make_settings('[companion]\ntimezone = "Asia/Tokyo"\nrecalled_turns = 3\n')
    memory = Memory(store, FakeEmbedder(), zone=settings.companion.zone)
    memory.reembed()
    now = store.sessions.create("now")
    inputs = gather(memory, settings.companion, now.id, "flights to Osaka", memory.embedder.embed(["flights"])[0])
    assert [(i.text, i.when) for i in inputs.recalled] == [("We finally booked the flights to Osaka.", "2024-06-04")]
