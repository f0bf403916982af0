"""The profile's floor and gate over the project's own statements (tests/data/floor_statements.toml) and its own
proposals (tests/data/facts_cases.json): what people type about themselves, clean and messy, and what must yield
nothing (questions, wishes, other people's facts, quotes, negations, idioms). These sets are ours, a regression
test: the gate's figures on conversations we did not write are scripts/eval_facts.py's (docs/benchmarks.md).

The floor reads by grammar alone (mind/facts/floor.py): precision 1.0 on the negatives, and what it finds of the
positives is printed (``pytest -s``), with a floor under it so that it cannot quietly learn nothing."""

from __future__ import annotations

import json
import tomllib
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from lyra_local.llm.local import LocalEmbedder
from lyra_local.mind.facts.floor import proposals
from lyra_local.mind.facts.gate import KeyFit, Proposal, Turn, gate, judge_case
from lyra_local.mind.facts.statement import content_words
from lyra_local.parser import Parser

from .conftest import REPO
from .maya_export import HER_WORDS as MAYA  # Maya's own messages, verbatim and messy on purpose

CASES: dict[str, list[dict[str, Any]]] = tomllib.loads(
    (REPO / "tests" / "data" / "floor_statements.toml").read_text(encoding="utf-8"))
PROPOSED: list[dict[str, Any]] = json.loads((REPO / "tests" / "data" / "facts_cases.json").read_text("utf-8"))
SPEAKERS = {"lyra", "chatgpt"}
FLOOR_FINDS = 0.2  # of the positives: the floor is small on purpose, but never empty


@pytest.fixture(scope="module")
def fit(embedder: LocalEmbedder) -> KeyFit:
    def embed(texts: list[str]) -> npt.NDArray[np.float32]:
        return np.asarray(embedder.embed(texts), dtype=np.float32)
    return KeyFit(embed)


def floor_facts(said: str, parser: Parser, fit: KeyFit) -> list[tuple[str, str]]:
    turns = [Turn(said, True)]
    return [(j.key, j.proposal.value) for j in gate(proposals(turns, parser), turns, parse=parser, fit=fit,
                                                    names=SPEAKERS) if j.key and not j.failed]


@pytest.mark.models
def test_the_floor_reads_nothing_from_a_sentence_that_states_no_fact(parser: Parser, fit: KeyFit) -> None:
    wrong = [(case["said"], fact) for case in CASES["none"] for fact in floor_facts(case["said"], parser, fit)]
    assert wrong == []  # precision 1.0 on the negatives


@pytest.mark.models
def test_the_floor_finds_some_of_what_people_say_and_every_word_of_it_is_theirs(parser: Parser,
                                                                              fit: KeyFit) -> None:
    found = 0
    for case in CASES["yields"]:
        facts = floor_facts(case["said"], parser, fit)
        typed = {w.casefold() for w in content_words(case["said"])}
        assert all(set(content_words(value)) <= typed for _, value in facts), (case["said"], facts)
        found += any(set(content_words(value)) & set(content_words(case["value"])) for _, value in facts)
    print(f"\nthe floor finds {found} of {len(CASES['yields'])} positives")
    assert found >= FLOOR_FINDS * len(CASES["yields"])


@pytest.mark.models
def test_maya_as_the_dream_reads_her_with_no_model(parser: Parser, fit: KeyFit) -> None:
    turns = [Turn(text, True) for text in MAYA]
    kept = {(j.key, j.proposal.value) for j in gate(proposals(turns, parser), turns, parse=parser, fit=fit,
                                                   names={"maya", "lyra", "chatgpt"}) if j.key and not j.failed}
    assert ("name", "Maya") in kept
    assert not any(value.casefold() == "jess" and key != "family" for key, value in kept)  # her sister's words


@pytest.mark.models
def test_each_proposal_of_the_regression_set_is_judged_as_labelled(parser: Parser, fit: KeyFit) -> None:
    for case in PROPOSED:
        judged = judge_case(case["turns"], case["proposals"], parser=parser, embed=fit.embed)
        for proposal, verdict in zip(case["proposals"], judged, strict=True):
            if not proposal["true"]:
                assert verdict.kept == [], (proposal, verdict.key)
        kept = sum(bool(v.kept) for v, p in zip(judged, case["proposals"], strict=True) if p["true"])
        assert kept >= 0.7 * sum(p["true"] for p in case["proposals"])


@pytest.mark.models
@pytest.mark.parametrize(("said", "value", "why"), [
    ("are you a nurse?", "nurse", "question"), ("I'm not a nurse", "nurse", "negation"),
    ("I want to be a nurse one day", "nurse", "hypothetical"), ("I was a nurse", "nurse", "past"),
    ("my sister is a nurse", "nurse", "someone_else"), ("Anna wrote: I live in Leeds", "Leeds", "someone_else"),
    ("I'm a nurse... NOT", "nurse", "taken_back"), ("moving to Leeds in September!", "Leeds", "plan"),
])
def test_the_gate_says_why_a_quote_asserts_nothing_of_the_person(parser: Parser, fit: KeyFit, said: str,
                                                                  value: str, why: str) -> None:
    key = "home city" if value == "Leeds" else "job"
    [verdict] = gate([Proposal(key, value, said)], [Turn(said, True)], parse=parser, fit=fit)
    assert verdict.failed == why


@pytest.mark.models
def test_a_quote_the_person_did_not_write_is_refused(parser: Parser, fit: KeyFit) -> None:
    turns = [Turn("lol my week was mad", True), Turn("As a teacher, I love chemistry.", False)]
    [mine, theirs] = gate([Proposal("job", "teacher", "I'm a teacher"), Proposal("job", "teacher", "As a teacher")],
                          turns, parse=parser, fit=fit)
    assert (mine.failed, theirs.failed) == ("quote_not_found", "quote_not_theirs")


@pytest.mark.models
@pytest.mark.parametrize(("said", "key", "value"), [
    ("Gonna volunteer at shelters next month. Can't wait!", "plans", "volunteer at shelters"),
    ("I do watercolor painting to keep me busy. Something happened two weeks ago!", "hobbies",
     "watercolor painting"),
    ("wanted to let you know I sing in a choir now!", "hobbies", "choir"),
    ("Hi Maria, since we last chatted, I'm volunteering as a mentor for a local school.", "hobbies",
     "mentor for a local school"),
    ("I've started learning how to play the piano", "hobbies", "piano"),
    ("a gift from my grandma in my home country, Sweden.", "origin", "Sweden"),
])
def test_the_gate_keeps_what_reads_like_a_refusal_but_is_said_of_the_person(parser: Parser, fit: KeyFit, said: str,
                                                                             key: str, value: str) -> None:
    """The twins of the refusals above, from LoCoMo's wording: an eager "Can't wait!" takes nothing back, nor
    does a past told of something else; the listener told is no reporter; a greeting's name parsed as a subject
    is no subject; learning how to play is playing; "my home country, Sweden" names the speaker's own."""
    [verdict] = gate([Proposal(key, value, said)], [Turn(said, True)], parse=parser, fit=fit)
    assert verdict.kept == [(key, value)], verdict.failed


@pytest.mark.models
@pytest.mark.parametrize(("said", "key", "value", "why"), [
    ("I'm a nurse. Not anymore.", "job", "nurse", "taken_back"),
    ("my dog Rex. he passed last year", "pet", "dog Rex", "taken_back"),
    ("you said I'm a nurse", "job", "nurse", "someone_else"),
    ("I want to learn how to play the piano", "hobbies", "piano", "hypothetical"),
])
def test_the_twins_that_still_refuse(parser: Parser, fit: KeyFit, said: str, key: str, value: str, why: str) -> None:
    [verdict] = gate([Proposal(key, value, said)], [Turn(said, True)], parse=parser, fit=fit)
    assert verdict.failed == why


@pytest.mark.models
def test_a_quote_typed_with_other_apostrophes_is_read_where_it_stands(parser: Parser, fit: KeyFit) -> None:
    """A model quotes "I'm" where the person typed "I’m": the gate reads the value where it stands in the turn,
    not at the turn's start ("I’m not a nurse anymore. I'm a teacher now" is a teacher)."""
    turn = "lol I’m not a nurse anymore, long story. anyway I’m a teacher now"
    [verdict] = gate([Proposal("job", "teacher", "anyway I'm a teacher now")], [Turn(turn, True)], parse=parser,
                     fit=fit)
    assert verdict.kept == [("job", "teacher")], verdict.failed
