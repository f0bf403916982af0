"""The statement stage with the scripted fake embedder: which key a question asks, whose turns answer it (the
person's, not the companion's; the named speaker's), a turn that asks states nothing, the profile fact's own
turn, and the search showing what the stage found. The real model's behaviour is in
``test_questions_find_statements_real.py``."""

from __future__ import annotations

import pytest

from lyra_local.memory import Memory, RecallQuery
from lyra_local.memory.questions import KeyVectors
from lyra_local.memory.recall import including
from lyra_local.memory.search import Candidate, matched_by, matches
from lyra_local.memory.stages import STAGES, Stage, chosen
from lyra_local.store import Store
from lyra_local.store.exchanges import NewExchange

from .fakes import FakeEmbedder

FILLER = ["The bus was late twice.", "We baked bread today.", "Rain again, all week.", "The cat sat on the mat."]


@pytest.fixture
def memory(store: Store) -> Memory:
    """A memory on the fake embedder with room enough that two words seldom share a dimension (64 would make
    "Rain again, all week." a quarter of the way to "I work as this; it is my job.")."""
    return Memory(store, FakeEmbedder(dim=1024))


def remember(memory: Memory, turns: list[tuple[str, str]]) -> dict[str, int]:
    session = memory.store.sessions.create("chat", created_at="2024-05-01T09:00:00+00:00")
    stored = memory.remember_many([NewExchange(session.id, role, text, f"2024-05-01T{9 + i:02d}:00:00+00:00")
                                   for i, (role, text) in enumerate(turns)])
    return {e.content: e.id for e in stored}


def stated(memory: Memory, question: str) -> set[str]:
    return {h.content for h in memory.recall(RecallQuery(question, k=20)) if "statement" in h.stages}


def test_a_question_near_a_keys_asks_names_that_key_and_the_keys_are_embedded_once() -> None:
    embedder = FakeEmbedder()
    keys = KeyVectors(embedder.embed)
    asked = keys.asked(embedder.embed(["what is my job?"])[0], 0.55)
    assert asked is not None and asked.key == "job" and asked.closeness > 0.99
    assert keys.asked(embedder.embed(["the bus was late twice"])[0], 0.55) is None
    assert len(embedder.calls) == 3  # the two questions, and every key's sentences in one batch


def test_the_persons_statement_is_lifted_not_the_companions_nor_a_question(memory: Memory) -> None:
    mine = "I work as a chemistry teacher; it is my job."
    theirs = "I work as your assistant; it is my job to help."
    asking = "Is it my job to work as this?"
    remember(memory, [("user", t) for t in FILLER] + [("user", mine), ("assistant", theirs), ("user", asking)])
    assert stated(memory, "What is my job?") == {mine}
    assert stated(memory, "The bus was late twice.") == set()  # no key asked: the stage stays out


def test_a_question_naming_a_speaker_is_answered_by_that_speakers_turns(memory: Memory) -> None:
    caroline = "Caroline: I work as a counsellor; it is my job."
    melanie = "Melanie: I work as a painter; it is my job."
    remember(memory, [("user", caroline), ("assistant", melanie), ("user", "Caroline: The weather was lovely.")])
    assert stated(memory, "What is Melanie's job?") == {melanie}


def test_the_turn_a_profile_fact_was_read_from_is_a_candidate(memory: Memory) -> None:
    said = "Chemistry, at Leeds Grammar, since 2019."  # no word of the job's statements
    ids = remember(memory, [("user", t) for t in FILLER] + [("assistant", "What do you teach?"), ("user", said)])
    assert said not in stated(memory, "What is my job?")
    session = memory.store.exchanges.get(ids[said]).session_id
    gist = memory.store.derived.put_gist(session, "They teach chemistry in Leeds.", ids[said])
    memory.store.derived.apply_facts(gist, [("pet", "a cat", ids[said])], "2024-05-01T12:00:00+00:00")
    assert said not in stated(memory, "What is my job?")  # a fact of another key
    memory.store.derived.apply_facts(gist, [("occupation", "chemistry teacher", ids[said])],
                                     "2024-05-01T12:00:00+00:00")
    assert said in stated(memory, "What is my job?")


def test_a_turn_that_states_what_is_asked_is_shown_by_the_search_under_the_floor() -> None:
    assert matched_by(False, 0.1, 0.3, stated=True) == "meaning"
    assert matched_by(False, 0.1, 0.3) is None
    assert matches([Candidate(1, False, 0.1, stated=True), Candidate(2, False, 0.1, previous=1)], 0.3) == {
        1: "meaning", 2: "reply"}


def test_the_gathering_stages_run_before_the_others() -> None:
    def gathers(stage: Stage) -> bool:
        return type(stage).gather is not Stage.gather

    for names in (None, including("gists"), ["diversity", "statement", "dense"]):
        order = [gathers(stage) for stage in chosen(names)]
        assert order == sorted(order, reverse=True), names
    assert [stage.name for stage in chosen(["diversity", "statement", "dense"])] == ["dense", "statement", "diversity"]
    assert "statement" in [stage.name for stage in STAGES]
