"""Each recall stage on a small conversation with the real embedding model: found with it, missed without it.

The stages that read a turn with its neighbours (``context``, ``neighbours``,
``answer``) overlap on purpose; a test of one of them switches the others off
in both runs, so what it measures is that one stage.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone

import pytest

from lyra_local.memory import Memory, RecallQuery
from lyra_local.memory.recall import without
from lyra_local.store import Store
from lyra_local.store.exchanges import NewExchange

from .test_recall_real import NUMBERED

pytestmark = pytest.mark.slow

CHATTER = [
    "The heating is clicking again, I should call the landlord.", "Work was busy, lots of meetings.",
    "I went for a walk by the river, it was calm.", "My sister called, she's stressed about work.",
    "I baked bread, it came out well.", "The bus was late twice this week.", "I slept badly, weird dreams.",
    "We watched a documentary about volcanoes.", "I finally fixed the wobbly shelf.",
    "The neighbours had a party until midnight.", "I tried a new bakery near the old town.",
    "My back is stiff from sitting all day.",
]
REPLIES = ["I see.", "That sounds calm.", "Nice, take care.", "Oh, how was it?", "Good to hear."]
START = datetime(2023, 1, 2, 18, 0, tzinfo=timezone.utc)
INVOICE = "Between meetings I finally paid the plumber, whose invoice number was 58213, and then walked the dog."


def conversation(store: Store, embedder, sessions: Sequence[Sequence[tuple[str, str]]],
                 days: Sequence[int] | None = None) -> tuple[Memory, list[list[int]]]:
    """A store with these sessions (one per given day, default a week apart), every turn embedded."""
    memory = Memory(store, embedder)
    ids = []
    for n, turns in enumerate(sessions):
        day = START + timedelta(days=(days[n] if days else 7 * n))
        session = memory.store.sessions.create(f"day {n}", created_at=day.isoformat())
        stored = memory.remember_many([NewExchange(session.id, role, text, (day + timedelta(minutes=i)).isoformat())
                                       for i, (role, text) in enumerate(turns)])
        ids.append([e.id for e in stored])
    return memory, ids


def filler(n: int, offset: int = 0) -> list[tuple[str, str]]:
    """Everyday turns, the user's and the companion's in turn."""
    return [("user", CHATTER[(offset + i) % len(CHATTER)]) if i % 2 == 0 else
            ("assistant", REPLIES[(offset + i) % len(REPLIES)]) for i in range(n)]


def top(memory: Memory, question: str, k: int, stages: tuple[str, ...] | None = None) -> list[str]:
    return [h.content for h in memory.recall(RecallQuery(question, k=k, stages=stages))]


def assert_found_only_with(stage: str, memory: Memory, question: str, text: str, k: int,
                           stages: tuple[str, ...]) -> None:
    """``text`` is in the top ``k`` for ``question`` with ``stages`` on, and not once ``stage`` is off too."""
    assert text in top(memory, question, k, stages)
    assert text not in top(memory, question, k, tuple(n for n in stages if n != stage))


@pytest.mark.parametrize(("stage", "other", "k"), [("bm25", "rare", 3), ("rare", "bm25", 5)])
def test_full_text_finds_a_number_the_vectors_blur(store: Store, embedder, stage: str, other: str, k: int) -> None:
    """The invoice number: either full-text stage alone finds it (the other and the context view are off)."""
    rng = random.Random(1)
    notes = [t.format(n=rng.randint(10000, 99999)) for _ in range(12) for t in NUMBERED]
    memory, _ = conversation(store, embedder, [[("user", t) for t in notes[i::4]] + ([("user", INVOICE)] if i == 2
                                                                                      else []) for i in range(4)])
    alone = without(other, "context")  # they read the same words
    assert_found_only_with(stage, memory, "what was 58213?", INVOICE, k, alone)


def test_context_reads_a_reply_with_the_question_it_answers(store: Store, embedder) -> None:
    answer = "Rainbow Families, they were the kindest people we met."
    asked = [("assistant", "Which adoption agency did you go with in the end?"), ("user", answer)]
    near = ["The travel agency sent us the wrong tickets.", "My family came over for dinner, they were lovely.",
            "The estate agency called about the flat.", "We met the kindest nurse at the hospital.",
            "Families from the school had a picnic, such kind people."]
    memory, _ = conversation(store, embedder, [filler(10, s) + [("user", near[s])] + (asked if s == 2 else [])
                                                  for s in range(5)])
    alone = without("answer", "neighbours", "session")  # they link the two turns too
    question = "Which adoption agency did I go with?"
    assert_found_only_with("context", memory, question, answer, 3, alone)


def test_neighbours_lift_a_turn_whose_neighbour_says_what_it_is_about(store: Store, embedder) -> None:
    reply = "Yes, the one by the lake, we stayed four nights."
    trip = [("assistant", "Did you finally go to the log cabin in the mountains?"), ("user", reply)]
    near = ["We stayed four nights at my aunt's place.", "The lake was frozen, we walked across it.",
            "We stayed two weeks at the seaside last year.", "How long did the train take? Four hours.",
            "We stayed at a hotel by the lake once."]
    memory, _ = conversation(store, embedder, [filler(10, s) + [("user", near[s])] + (trip if s == 1 else [])
                                                  for s in range(5)])
    alone = (*without("answer", "context", "session"), "neighbours")  # measured and left off; named, it works
    question = "How long did we stay at the mountain cabin?"
    assert_found_only_with("neighbours", memory, question, reply, 2, alone)


def test_speaker_prefers_what_the_named_person_said(store: Store, embedder) -> None:
    hers = "Caroline: I started pottery classes."
    talk = [("assistant", "Melanie: Caroline, I signed up for yoga classes!"), ("user", hers),
            ("assistant", "Melanie: Caroline, the yoga classes are on Mondays."), ("user", "Caroline: Nice."),
            ("assistant", "Melanie: Caroline, I also signed up for swimming classes.")]
    memory, _ = conversation(store, embedder, [talk, [("user", "Caroline: The weather was lovely."),
                                                         ("assistant", "Melanie: It really was.")], filler(10, 2)])
    question = "What classes did Caroline sign up for?"
    assert top(memory, question, 1) == [hers]  # Melanie's "signed up" says the question's words, to Caroline
    assert top(memory, question, 1, without("speaker")) != [hers]


def test_speaker_knows_a_side_by_the_nickname_the_other_calls_them(store: Store, embedder) -> None:
    """No labels, as people type: "hey mel!" makes Mel the companion's side, and "Melanie" names it too."""
    hers = "i signed up for pottery classes"
    talk = [("user", "hey mel!"), ("assistant", "Caro, I signed up for yoga classes!"), ("user", "omg nice"),
            ("user", hers), ("assistant", "Caro, the yoga classes are on Mondays."), ("user", "thanks mel!"),
            ("assistant", "Caro, I also signed up for swimming classes."), ("user", "hey mel, good luck")]
    memory, _ = conversation(store, embedder, [talk, filler(10, 2)])
    assert hers in top(memory, "What classes did Caro sign up for?", 1)
    assert hers not in top(memory, "What classes did Caro sign up for?", 1, without("speaker"))
    assert hers in top(memory, "What classes did Caroline sign up for?", 1)  # the full name of "Caro"


def test_a_named_date_looks_among_that_periods_turns(store: Store, embedder) -> None:
    march = "Made a big pot of lentil soup for the neighbours."
    cooked = ["I cooked a huge dinner for my parents.", "I cooked pasta with fresh tomatoes.",
              "I cooked dumplings from scratch.", "I cooked a curry, far too spicy.", "I cooked risotto."]
    sessions = [filler(8, s) + [("user", march if s == 1 else cooked[s % 5])] for s in range(6)]
    memory, _ = conversation(store, embedder, sessions, days=[10, 65, 90, 120, 160, 200])  # 2023: Mar 8, Jun 10
    question = "What did I cook in March?"  # no year: the latest March with memories, 2023
    assert top(memory, question, 1)[0] == march
    assert top(memory, question, 1, without("date"))[0] != march


def test_a_date_finds_a_turn_told_later_that_speaks_of_it(store: Store, embedder) -> None:
    told = "Yesterday I went to a support group for the first time, it was powerful."
    other = "I went to a support group meeting again, they are good people."
    sessions = [filler(6, 0) + [("user", other)], filler(6, 1), filler(6, 2) + [("user", told)], filler(6, 3)]
    memory, _ = conversation(store, embedder, sessions, days=[0, 60, 126, 140])  # told on 8 May 2023
    question = "Where did I go on 7 May 2023?"
    assert top(memory, question, 1)[0] == told
    assert top(memory, question, 1, without("date"))[0] != told


def test_a_strong_session_lifts_its_other_turns(store: Store, embedder) -> None:
    story = [("user", "We flew to Lisbon on Friday for my birthday."), ("assistant", "Happy birthday! Enjoy it."),
             ("user", "We ate custard tarts every day, six each.")]
    food = ["I had a sandwich at work.", "We ate pasta at the new place.", "I ate too much cake at the party.",
            "We ate soup, it was cold outside.", "I had noodles for lunch.", "We ate pizza on the sofa."]
    memory, _ = conversation(store, embedder, [filler(8, s) + [("user", food[s])] + (story if s == 2 else [])
                                                  for s in range(6)])
    alone = without("answer", "neighbours", "context")
    question = "What did we eat on my birthday in Lisbon?"
    tarts = story[2][1]
    assert_found_only_with("session", memory, question, tarts, 3, alone)


def test_now_prefers_the_newer_of_two_matching_turns(store: Store, embedder) -> None:
    old = "I live in Munich now, near the park."
    new = "I live in Hamburg, near the harbour."
    memory, _ = conversation(store, embedder, [filler(6, 0) + [("user", old)], filler(6, 1), filler(6, 2),
                                                  filler(6, 3) + [("user", new)]], days=[0, 200, 400, 600])
    assert top(memory, "Where do I live now?", 1)[0] == new
    assert top(memory, "Where do I live now?", 1, without("current"))[0] == old


def test_repeats_go_after_distinct_hits(store: Store, embedder) -> None:
    repeated = "Work was busy today, lots of meetings."
    distinct = "Work was hard today: my manager cancelled the project I led."
    memory, _ = conversation(store, embedder, [[("user", repeated)] * 12 + [("user", distinct)]])
    question = "What happened at work?"
    assert distinct in top(memory, question, 2)
    assert distinct not in top(memory, question, 2, without("diversity"))


def test_a_burst_counts_once_among_the_first_hits(store: Store, embedder) -> None:
    """"we went hiking" / "hiking the rockies was unreal" / ...: one thought sent as a burst seconds apart
    takes one place; another day's hike comes before the burst's second message."""
    memory = Memory(store, embedder)
    day = START
    burst = ["we went hiking in the rockies!!", "hiking up to the glacier lake was unreal",
             "my hiking boots are totally wrecked lol"]
    first = store.sessions.create("trip", created_at=day.isoformat())
    memory.remember_many([NewExchange(first.id, "user", text, (day + timedelta(seconds=5 * i)).isoformat())
                          for i, text in enumerate(burst)])
    later = day + timedelta(days=30)
    second = store.sessions.create("weekend", created_at=later.isoformat())
    turns = [*filler(6), ("user", "I did a long hike on Mount Tam on Saturday."), ("assistant", "Nice!")]
    memory.remember_many([NewExchange(second.id, role, text, (later + timedelta(minutes=i)).isoformat())
                          for i, (role, text) in enumerate(turns)])
    question = "Where did I go hiking?"
    assert "I did a long hike on Mount Tam on Saturday." in top(memory, question, 2)
    assert set(top(memory, question, 2, without("bursts"))) <= set(burst)
