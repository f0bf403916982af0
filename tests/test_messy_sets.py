"""The robustness sets (``scripts/messy_sets.py``): people's typing, with every evidence label kept."""

from __future__ import annotations

import sys

from .conftest import REPO

sys.path.insert(0, str(REPO / "scripts"))
from messy_sets import bursts, locomo_messy, nickname, origin, retype  # noqa: E402
from recall_sets import MemorySet, Question  # noqa: E402


def clean_set() -> MemorySet:
    said = ("Caroline: I went to a support group yesterday. It was so powerful and the stories were inspiring. "
            "I felt accepted.")
    messages = [{"role": "user", "content": said, "created_at": "2023-05-08T13:56:00+00:00", "source_id": "D1:1"},
                {"role": "assistant", "content": "Melanie: Wow, Caroline! That's great.",
                 "created_at": "2023-05-08T13:56:01+00:00", "source_id": "D1:2"}]
    session = {"id": "s1", "name": "conv session 1", "created_at": "2023-05-08T13:56:00+00:00",
               "messages": messages}
    questions = [Question(f"When did Caroline go to the support group? ({n})", "temporal", frozenset({"D1:1"}))
                 for n in range(20)]
    return MemorySet("conv", "Caroline", [session], questions)


def test_a_long_turn_becomes_a_burst_whose_messages_all_lead_back_to_it() -> None:
    messy = locomo_messy([clean_set()])[0]
    messages = messy.sessions[0]["messages"]
    theirs = [m for m in messages if origin(m["source_id"]) == "D1:1"]
    assert len(theirs) == 3 and all(m["role"] == "user" for m in theirs)
    assert [m["created_at"] for m in theirs] == sorted(m["created_at"] for m in theirs)
    assert not any(m["content"].startswith(("Caroline:", "Melanie:")) for m in messages)  # no labels
    assert "Caro" in messages[-1]["content"] and "Caroline" not in messages[-1]["content"]  # a nickname


def test_the_questions_keep_their_evidence_and_half_use_the_nickname() -> None:
    messy = locomo_messy([clean_set()])[0]
    assert all(q.evidence == frozenset({"D1:1"}) for q in messy.questions)
    by_nickname = sum("Caro " in q.text for q in messy.questions)
    assert 3 <= by_nickname <= 17


def test_the_set_is_the_same_on_every_run() -> None:
    assert locomo_messy([clean_set()]) == locomo_messy([clean_set()])
    assert retype("Are you going to the party tonight?", "k", casual=True) == \
        retype("Are you going to the party tonight?", "k", casual=True)


def test_short_turns_stay_whole_and_tiny_sentences_join_the_next() -> None:
    assert bursts("Hey Mel! Good to see you!") == ["Hey Mel! Good to see you!"]
    assert bursts("Wow! I went to the lake with the kids yesterday. It was lovely and calm, we swam all day.") == \
        ["Wow! I went to the lake with the kids yesterday.", "It was lovely and calm, we swam all day."]
    assert nickname("Melanie") == "Mel" and nickname("Bartholomew") == "Bar"
