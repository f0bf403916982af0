"""The facts floor over the project's own statements (tests/data/floor_statements.toml): what people type about
themselves, clean and messy, each with the one fact it must yield, and what must yield none (questions, wishes,
other people's facts, quotes, negations, idioms). Precision 1.0 and recall >= 0.9 (issue 37); the per-key figures
are printed (``pytest -s``)."""

from __future__ import annotations

import tomllib
from collections import Counter
from typing import Any

import pytest

from lyra_local.mind.clauses import clauses, refusal, retraction
from lyra_local.mind.grounding import forms, words
from lyra_local.mind.profile import KEYS, canonical_key, grounded_facts
from lyra_local.mind.statements import capitalized, content_words, floor_facts, signature

from .conftest import REPO
from .maya_export import HER_WORDS as MAYA  # Maya's own messages, verbatim and messy on purpose

CASES: dict[str, list[dict[str, Any]]] = tomllib.loads(
    (REPO / "tests" / "data" / "floor_statements.toml").read_text(encoding="utf-8"))
SPEAKERS = {"lyra", "chatgpt"}


def test_the_set_is_big_enough_and_every_key_is_in_the_vocabulary() -> None:
    assert len(CASES["yields"]) >= 40 and len(CASES["none"]) >= 40
    assert all(canonical_key(case["key"]) == case["key"] and case["key"] in KEYS for case in CASES["yields"])


def test_the_floor_is_exact_on_the_set_and_finds_nine_in_ten() -> None:
    found, right, wrong, wanted = Counter[str](), Counter[str](), [], Counter[str]()
    for case in CASES["yields"]:
        wanted[case["key"]] += 1
        truth = {(case["key"], case["value"]), *(tuple(f) for f in case.get("also", []))}
        for fact in floor_facts(case["said"], SPEAKERS):
            if fact in truth:
                found[fact[0]] += fact == (case["key"], case["value"])
                right[fact[0]] += 1
            else:
                wrong.append((case["said"], fact))
    for case in CASES["none"]:
        wrong.extend((case["said"], fact) for fact in floor_facts(case["said"], SPEAKERS))
    print("\nkey        | found / wanted | wrong")
    for key in sorted(wanted):
        print(f"{key:10} | {found[key]:>5} / {wanted[key]:<6} | {sum(f[0] == key for _, f in wrong)}")
    recall = sum(found.values()) / sum(wanted.values())
    precision = sum(right.values()) / (sum(right.values()) + len(wrong))
    print(f"precision {precision:.3f}, recall {recall:.3f} ({sum(found.values())} of {sum(wanted.values())})")
    assert wrong == []  # precision 1.0: no fact the sentence does not state
    assert recall >= 0.9


def test_every_word_of_a_floor_value_is_one_the_person_typed() -> None:
    """"bf Sam", not "boyfriend Sam": the checks downstream count a value word no source says as invented."""
    for case in CASES["yields"]:
        typed = {f for w in words(case["said"]) for f in forms(w)}
        for key, value in floor_facts(case["said"], SPEAKERS):
            assert all(forms(w) & typed for w in content_words(value)), (case["said"], key, value)


@pytest.mark.parametrize("case", CASES["none"], ids=lambda c: c["said"][:40])
def test_a_sentence_that_states_no_fact_of_the_persons_yields_none(case: dict[str, Any]) -> None:
    assert floor_facts(case["said"], SPEAKERS) == [], case["why"]


def test_maya_through_grounded_facts_as_the_dream_reads_her() -> None:
    kept, failed = grounded_facts([], MAYA, {"maya", "lyra", "chatgpt"})
    facts = {key: value for key, value, _ in kept}
    assert facts == {
        "name": "Maya", "events": "interview on 2 May", "job": "nurse at st james's hospital",
        "pet": "a greyhound named Biscuit", "home city": "Leeds", "plans": "moving to Edinburgh in September",
        "sister": "Jess", "hobbies": "pottery",  # the first hobby said; swimming comes second in one conversation
    }
    assert failed == []
    assert {key for key, _, turn in kept if MAYA[turn].startswith("Jess says")} == set()  # her sister's words


def test_a_speakers_name_is_never_another_facts_value() -> None:
    assert floor_facts("my sister Maya lives in Leeds", {"maya"}) == []
    assert floor_facts("Hi! I'm Maya.", {"maya"}) == [("name", "Maya")]  # the person's own name is their name


@pytest.mark.parametrize(("said", "why"), [
    ("are you a nurse?", "question"), ("should i move to leeds", "question"), ("if I were a nurse", "hypothetical"),
    ("I'm not a nurse", "negation"), ("I used to work as a chef", "past"), ("she said I'm a teacher", "reported"),
])
def test_each_clause_says_why_it_states_no_fact(said: str, why: str) -> None:
    assert [refusal(c) for c in clauses(said)] == [why]


def test_a_lowercase_turn_is_cut_into_its_thoughts_and_its_shorthand_spelt_out() -> None:
    assert clauses("im so tired lol w/ my bf sam 😂 should i move") == ["I'm so tired", "with my bf sam",
                                                                         "should I move"]


def test_a_signature_is_a_name_after_a_sentence_not_a_lists_last_item() -> None:
    assert signature("See you next week!\n- Tom") == "Tom"
    assert signature("Shopping:\n- Eggs\n- Milk") is None and signature("- Tom") is None


def test_a_clause_is_taken_back_by_what_follows_it_or_quoted_by_what_comes_before() -> None:
    said = clauses("I'm a nurse lol jk")
    assert said == ["I'm a nurse", "jk"] and retraction(said, 0)
    assert not retraction(clauses("I'm a nurse lol. I love it"), 0)  # a later clause of its own takes nothing back
    assert retraction(clauses("Anna wrote: I live in Leeds"), 0)
    assert clauses("> I'm a nurse\nthat was her") == ["that was her"]  # a quoted line is no clause of theirs


def test_a_lowercase_name_needs_the_persons_capital_or_a_naming_cue() -> None:
    assert capitalized("took Rufus out. Smh my dog rufus") == {"rufus"}  # "Smh" starts a sentence: no name
    assert floor_facts("my dog rufus is mad", SPEAKERS) == []
    assert floor_facts("took Rufus out, my dog rufus is mad", SPEAKERS) == [("pet", "a dog named Rufus")]
    assert floor_facts("call me jo", SPEAKERS) == [("name", "Jo")]  # a cue, and no word of the lexicon's
    assert floor_facts("call me sober", SPEAKERS) == []
