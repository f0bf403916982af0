"""Recall with the real embedding model (all-MiniLM-L6-v2 through llama.cpp)."""

from __future__ import annotations

import random

import pytest

from lyra_local.memory import Memory, RecallQuery
from lyra_local.memory.recall import without
from lyra_local.store import Store
from lyra_local.store.exchanges import NewExchange

pytestmark = pytest.mark.slow

DISTRACTORS = [
    "I met an old friend for coffee near the station this morning.",
    "My friend from university called to talk about her new job.",
    "We had dinner with a friend who just moved back from abroad.",
    "A colleague recommended a great book about habits.",
    "My neighbour helped me carry the new sofa upstairs.",
    "I chatted with a friend about our plans for the summer holidays.",
    "An old school friend sent me photos from our class trip.",
    "My cousin visited and we walked along the river all afternoon.",
    "I finally replied to my friend's long email about the wedding.",
    "A friend lent me her camera for the weekend trip.",
]
NUMBERED = [
    "I met an old friend for coffee, she said her flat number is {n}.",
    "The train to the coast left from platform 4, ticket {n}.",
    "My neighbour's wifi password ends with {n}, he told me at dinner.",
    "We spent the afternoon painting the kitchen; the paint code was {n}.",
    "The library book I borrowed has barcode {n} and is about habits.",
    "Booked the dentist again, reference {n}, for next Tuesday morning.",
    "Ran 8 kilometres along the river; my watch logged {n} steps.",
    "Mum called about the garden; the seed packet said batch {n}.",
]
TARGET = "Between meetings I finally paid the plumber, whose invoice number was 58213, and then walked the dog."


@pytest.mark.parametrize("question", ["58213", "what was 58213?"])
def test_hybrid_finds_a_rare_number_that_dense_recall_misses(store: Store, embedder, question: str) -> None:
    memory = Memory(store, embedder)
    session = memory.store.sessions.create("life")
    rng = random.Random(1)
    items = [NewExchange(session.id, "user", t.format(n=rng.randint(10000, 99999))) for _ in range(40) for t in NUMBERED]
    memory.remember_many([*items, NewExchange(session.id, "user", TARGET)])

    dense = [h.content for h in memory.recall(RecallQuery(question, k=10, mode="dense"))]
    hybrid = memory.recall(RecallQuery(question, k=10))
    assert TARGET not in dense
    assert hybrid[0].content == TARGET and "bm25" in hybrid[0].stages


def test_meaning_is_found_without_shared_words(store: Store, embedder) -> None:
    memory = Memory(store, embedder)
    session = memory.store.sessions.create("life")
    memory.remember_many([NewExchange(session.id, "user", t) for t in DISTRACTORS + [
        "Our dog Bruno got sick and we spent the night at the vet."]])
    hits = memory.recall(RecallQuery("pet illness emergency", k=3))
    assert hits[0].content.startswith("Our dog Bruno") and "dense" in hits[0].stages
    no_dense = memory.recall(RecallQuery("pet illness emergency", k=3, stages=without("dense")))
    assert not any(h.content.startswith("Our dog Bruno") for h in no_dense)


CONVERSATION = [
    ("user", "Long week. We adopted a cat on Saturday!"), ("assistant", "How lovely! What did you name him?"),
    ("user", "Pixel, the kids chose it."), ("assistant", "What a lovely name."),
]
CHATTER = ["The heating is clicking again, I should call the landlord.", "Work was busy, lots of meetings.",
           "I went for a walk by the river, it was calm.", "My sister called, she's stressed about work.",
           "The neighbours' cat got into our garden again.", "I baked bread, it came out well."]
REPLIES = ["I see.", "That sounds calm.", "Nice, take care.", "How did that feel?"]  # a companion asks sometimes


def test_the_turn_answering_a_hit_is_recalled_with_its_stage(store: Store, embedder) -> None:
    """The name is in the reply to the companion's question, a turn that shares no word with the question."""
    memory = Memory(store, embedder)
    rng = random.Random(3)
    for day in range(30):
        session = memory.store.sessions.create(f"day {day}")
        turns = [(role, rng.choice(CHATTER if role == "user" else REPLIES)) for role in ("user", "assistant") * 4]
        if day == 17:
            turns[2:6] = CONVERSATION
        memory.remember_many([NewExchange(session.id, role, text) for role, text in turns])
    question = "What is my cat called?"
    alone = without("context", "neighbours")  # they read a turn with the one before it too
    with_answers = memory.recall(RecallQuery(question, k=5, stages=alone))
    off = [h.content for h in memory.recall(RecallQuery(question, k=5, stages=without("context", "neighbours", "answer")))]
    found = next(h for h in with_answers if h.content.startswith("Pixel"))
    assert "answer" in found.stages
    assert not any(text.startswith("Pixel") for text in off)


def test_everyday_words_do_not_outvote_the_vectors(store: Store, embedder) -> None:
    """A question of common words ('work', 'now') trusts its full-text matches less than a dense hit."""
    memory = Memory(store, embedder)
    session = memory.store.sessions.create("life")
    common = [f"Work was {adj} now and then, {n} meetings." for n in range(60) for adj in ("busy", "slow")]
    target = "First week at my new job in a small bike shop, very different."
    memory.remember_many([NewExchange(session.id, "user", t) for t in [*common, target]])
    question = "Where do I work now?"
    trusted = [h.content for h in memory.recall(RecallQuery(question, k=3))]
    flat = [h.content for h in memory.recall(RecallQuery(question, k=3, stages=without("lexical_trust")))]
    assert trusted[0] == target and flat[0] != target
