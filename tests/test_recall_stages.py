"""Recall stages on a real store with the scripted fake embedder: the session (gist) stage and the answer stage."""

from __future__ import annotations

from lyra_local.memory import Memory, RecallQuery
from lyra_local.memory.recall import including, without
from lyra_local.memory.stages import split_repeats
from lyra_local.store.exchanges import NewExchange

VAGUE = ["It was lovely.", "We walked a lot.", "The food was good.", "I slept well."]


def _with_a_trip(memory: Memory) -> tuple[int, int]:
    """Twenty chatty sessions, and one whose turns are vague but whose gist says what it was about.

    Returns that session's id and its first turn's."""
    for n in range(20):
        session = memory.store.sessions.create(f"day {n}")
        memory.remember_many([NewExchange(session.id, "user", f"note {n}: {t} at work",
                                          f"2024-05-{n + 1:02d}T{9 + i:02d}:00:00+00:00")  # hours apart: no burst
                              for i, t in enumerate(("busy", "meetings", "lunch", "emails"))])
    trip = memory.store.sessions.create("trip")
    told = [f"2024-06-0{n + 1}T20:00:00+00:00" for n in range(len(VAGUE))]  # told on four evenings, not as a burst
    turns = memory.remember_many([NewExchange(trip.id, "user", t, at) for t, at in zip(VAGUE, told, strict=True)])
    gist = "Sam was on a hiking holiday in the Dolomites."
    memory.store.derived.put_gist(trip.id, gist, turns[-1].id, memory.embedder.embed([gist])[0], memory.embedder.name)
    return trip.id, turns[0].id


def test_the_session_stage_brings_the_turns_of_the_session_whose_gist_matches(memory: Memory) -> None:
    trip, _ = _with_a_trip(memory)
    question = "what did I do on my hiking holiday in the Dolomites"
    with_gists = memory.recall(RecallQuery(question, k=4, stages=including("gists")))
    # The fake embedder reads function words: "what did I do ... my" is as near a profile key's question ("Do I
    # have a pet?") as no real model puts it, and the statement stage would search the trip's "I" turns.
    plain = memory.recall(RecallQuery(question, k=4, stages=without("statement")))
    from_trip = [h for h in with_gists if h.session_id == trip]
    assert with_gists[0].session_id == trip and len(from_trip) >= 3
    assert all("gists" in h.stages for h in from_trip)
    assert trip not in {h.session_id for h in plain}


def test_the_session_stage_respects_the_filters(memory: Memory) -> None:
    trip, _ = _with_a_trip(memory)
    hits = memory.recall(RecallQuery("hiking holiday in the Dolomites", k=10, stages=including("gists"), exclude_session_id=trip))
    assert hits and trip not in {h.session_id for h in hits}


def test_the_answer_stage_follows_the_companions_question(memory: Memory) -> None:
    session = memory.store.sessions.create("life")
    memory.remember_many([NewExchange(session.id, "user", f"note {n}: the cat slept all day") for n in range(30)])
    memory.remember_many([NewExchange(session.id, role, text) for role, text in [
        ("user", "We adopted a kitten!"), ("assistant", "What did you name the kitten?"),
        ("user", "Pixel, the kids chose it."), ("assistant", "Lovely.")]])
    # The context stages also read a turn with the one before it; without them, only the answer stage links the two.
    alone = without("context", "neighbours")
    hits = memory.recall(RecallQuery("kitten name", k=3, stages=alone))
    answer = next(h for h in hits if h.content.startswith("Pixel"))
    assert "answer" in answer.stages
    off = tuple(name for name in alone if name != "answer")
    assert not any(h.content.startswith("Pixel") for h in memory.recall(RecallQuery("kitten name", k=3, stages=off)))


def test_repeats_go_after_the_distinct_and_reading_stops_once_enough_are_found() -> None:
    texts = ["Work was busy today.", "work was busy today!!", "I baked bread.", "Work was busy, today", "A walk."]
    read: list[str] = []

    def text(t: str) -> str:
        read.append(t)
        return t

    assert split_repeats(texts, text) == (["Work was busy today.", "I baked bread.", "A walk."],
                                          ["work was busy today!!", "Work was busy, today"])
    read.clear()
    first, rest = split_repeats(texts, text, enough=2)
    assert first == ["Work was busy today.", "I baked bread."]  # the same first two as reading them all
    assert rest == ["work was busy today!!", "Work was busy, today", "A walk."] and len(read) == 3
