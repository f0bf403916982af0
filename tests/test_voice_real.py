"""The companion's own voice with the real default models: after a forced dream over Maya's conversations
(her messages as she typed them, messy on purpose), How I am (the self-narrative and reflections) and an
arc in the model's words copy no run of six words of hers. Checked here with a tokenizer of the test's own,
not voice.py's, so that a mistake there cannot hide itself."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from lyra_local.config import Settings
from lyra_local.llm.local import LocalChatModel, LocalEmbedder
from lyra_local.mind import Dreamer
from lyra_local.mind.grounding.checks import quotes_of
from lyra_local.store import Store

from .test_dream import add_session

pytestmark = [pytest.mark.slow, pytest.mark.models]
REPLY = ("That sounds like a lot to plan. Take it one step at a time, write down what matters most to you, "
         "and ask the people around you for help where you can.")
MAYA = {
    "Interview prep": ["Hi! I'm Maya. I have an interview on 2 May for a ward manager job, can you help me prepare?",
                       "i work night shifts as a nurse at st james's hospital so im always tired lol"],
    "Biscuit": ["we adopted a rescue greyhound called Biscuit last month!! he's scared of the hoover"],
    "Moving": ["I'm thinking of moving from Leeds to Edinburgh in September",
               "my sister Jess lives there already, she's a teacher", "Jess says the flats near Leith are cheaper"],
    "Weekends": ["i started a saturday pottery class w/ jess, it's so relaxing",
                 "I go swimming every morning before my shift"],
}


def copied(text: str, said: list[str], run: int = 6) -> list[str]:
    def tokens(s: str) -> list[str]:
        return re.findall(r"[a-z0-9]+", s.casefold().replace("'", "").replace("’", ""))

    hers = {tuple(ws[i:i + run]) for s in said for ws in [tokens(s)] for i in range(len(ws) - run + 1)}
    mine = tokens(text)
    return [" ".join(mine[i:i + run]) for i in range(len(mine) - run + 1) if tuple(mine[i:i + run]) in hers]


def test_how_i_am_never_copies_six_words_of_the_person(store: Store, make_settings: Callable[..., Settings],
                                                        chat_model: LocalChatModel, embedder: LocalEmbedder) -> None:
    settings = make_settings('[companion]\nuser_name = "Maya"\n[dream]\nsession_idle_s = 0\nsummary_tokens = 96\n')
    for day, (title, said) in enumerate(MAYA.items(), 1):
        add_session(store, title, f"2024-03-{day:02d}", [t for line in said for t in (line, REPLY)])
    report = Dreamer(store, chat_model, embedder, settings).run_pass(force=True)
    assert report.status == "done", report.error
    hers = [line for said in MAYA.values() for line in said]

    state = store.derived.self_state()
    assert state is not None and state["mood"]  # it reflected
    for text in [state.get("self_narrative") or "", *(state.get("reflections") or [])]:
        assert copied(text, hers) == [], text
    arc = store.derived.current_narrative()
    assert arc is not None
    if arc["method"] == "abstractive":  # an extractive arc is her words attributed to her, not Lyra's view
        assert copied(arc["content"], hers) == [], arc["content"]
    else:  # each of its sentences is a quote, verbatim, of whoever said it
        for q in quotes_of(arc["content"], 0):
            assert q.who == "Maya" and any(q.sentence in line for line in hers) or \
                q.who == "Lyra" and q.sentence in REPLY, (q, arc["content"])
