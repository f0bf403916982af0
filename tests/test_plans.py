"""A plan is for a date read against the day it was said, and shown as past once that date has gone by."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timezone

import pytest

from lyra_local.config import Settings
from lyra_local.memory import Memory
from lyra_local.memory.gather import gather
from lyra_local.memory.plans import planned
from lyra_local.mind.facts.about import cards
from lyra_local.store import Store
from lyra_local.store.exchanges import NewExchange

from .fakes import FakeEmbedder

SAID = datetime(2024, 4, 2, 21, 15, tzinfo=timezone.utc)


@pytest.mark.parametrize(("text", "label"), [
    ("moving to Edinburgh in September", "September 2024"),  # the next September, not the last one
    ("an interview on 2 May", "2 May 2024"),
    ("a trip next April", "April 2025"),
    ("volunteer at shelters next month", "May 2024"),
    ("the move is tomorrow", "3 April 2024"),
    ("in three weeks", "23 April 2024 – 29 April 2024"),
    ("back to Leeds in 2025", "2025"),
])
def test_a_plan_is_for_the_date_it_names_counted_from_the_day_it_was_said(text: str, label: str) -> None:
    plan = planned([text], SAID, now=SAID)
    assert plan is not None and plan.label == label and not plan.past


def test_a_plan_whose_date_has_gone_by_is_past_and_one_with_no_date_is_none() -> None:
    assert planned(["moving in September"], SAID, now=datetime(2024, 9, 30, 23, tzinfo=timezone.utc)).past is False
    assert planned(["moving in September"], SAID, now=datetime(2024, 10, 1, tzinfo=timezone.utc)).past is True
    assert planned(["to move in together", "we decided so"], SAID, now=SAID) is None
    assert planned(["to move in together", "we move in September"], SAID, now=SAID).label == "September 2024"


def _a_plan_said_in_2024(store: Store) -> int:
    session = store.sessions.create("moving", created_at=SAID.isoformat())
    said = store.exchanges.add(NewExchange(session.id, "user", "I'm moving from Leeds to Edinburgh in September",
                                           SAID.isoformat()))
    gist = store.derived.put_gist(session.id, "Maya, 2 April 2024: “I'm moving …”", said.id, method="extractive")
    [fact] = store.derived.apply_facts(gist, [("plans", "move to Edinburgh", said.id)], SAID.isoformat())
    return fact.id


def test_about_you_says_when_a_plan_was_for_and_that_its_date_has_passed(store: Store) -> None:
    fact_id = _a_plan_said_in_2024(store)
    [card] = cards(store)[0]
    assert (card.id, card.planned_for, card.plan_past) == (fact_id, "September 2024", True)


def test_the_companion_is_told_the_plans_date_has_passed(store: Store,
                                                          make_settings: Callable[..., Settings]) -> None:
    _a_plan_said_in_2024(store)
    settings = make_settings("")
    memory = Memory(store, FakeEmbedder(), zone=settings.companion.zone)
    now = store.sessions.create("now")
    inputs = gather(memory, settings.companion, now.id, "hello", None)
    assert inputs.profile == [("plans", "move to Edinburgh (planned for September 2024; that date has passed)")]
