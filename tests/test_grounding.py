"""Grounding of what the dream writes: the checks, the extractive floor (quotes, verbatim, under who said them and
when), grounded facts, and the dream using them."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pytest

from lyra_local.config import Settings
from lyra_local.llm.base import GenerationOptions, Message
from lyra_local.mind import Dreamer
from lyra_local.mind.grounding import checks as g
from lyra_local.store import Store

from .fakes import FakeChatModel, FakeEmbedder
from .test_dream import add_session

TURNS = ["Caroline: I went to a LGBTQ support group yesterday and it was so powerful.",
         "Melanie: Wow, that's cool, Caroline! What happened that was so awesome?",
         "Caroline: The transgender stories were so inspiring, I was so happy and thankful for all the support.",
         "Melanie: Glad you found a helpful group. I'm swamped with the kids and work right now.",
         "Caroline: I want to study counseling and help people who went through the same things."]


def words_count(text: str) -> int:
    return len(text.split())


@pytest.fixture()
def sources(embedder) -> list[g.Source]:
    vectors = embedder.embed(TURNS)
    return [g.Source(t, g.split_speaker(t)[0], v) for t, v in zip(TURNS, vectors, strict=True)]


def check(text: str, sources: Sequence[g.Source], embedder, **kw: object) -> g.Verdict:
    def embed(texts: list[str]) -> np.ndarray:
        return np.asarray(embedder.embed(texts), dtype=np.float32)
    return g.check(text, sources, embed, budget=int(kw.get("budget", 200)), count=words_count,
                   names=["Caroline", "Lyra"])[0]


@pytest.mark.slow
@pytest.mark.parametrize(("draft", "failed"), [
    ("The user: Caroline: Hey Mel! Lyra: Melanie: Hi Caroline!", "speaker_lines"),
    ("Carolina adopted two cats in 2019 and moved to Lisbon.", "unsupported_terms"),
    ("Caroline plans to buy a sailing boat next summer and cross the Atlantic ocean.", "unsupported_sentences"),
    ("Here are the summaries from 2023-05. Write a digest of that month.", "unsupported_terms"),
])
def test_a_draft_that_invents_or_transcribes_fails(sources, embedder, draft: str, failed: str) -> None:
    verdict = check(draft, sources, embedder)
    assert failed in verdict.failed and not verdict.ok


@pytest.mark.slow
def test_an_invented_sentence_is_dropped_from_an_otherwise_faithful_summary(sources, embedder) -> None:
    def embed(texts: list[str]) -> np.ndarray:
        return np.asarray(embedder.embed(texts), dtype=np.float32)

    draft = ("Caroline went to an LGBTQ support group and found the transgender stories inspiring. "
             "Caroline wants to study counseling. Melanie bought a sailing boat in Lisbon.")
    verdict, kept = g.check(draft, sources, embed, budget=200, count=words_count, names=["Caroline"], keep=0.5)
    assert verdict.ok and verdict.counts["sentences_dropped"] == 1
    assert "Lisbon" not in kept and "Caroline wants to study counseling." in kept


@pytest.mark.slow
def test_a_faithful_summary_passes(sources, embedder) -> None:
    draft = ("Caroline went to an LGBTQ support group and found the transgender stories inspiring. "
             "Melanie was glad and said she was swamped with the kids and work. Caroline wants to study counseling.")
    assert check(draft, sources, embedder).ok


def test_too_long_fails_the_budget(sources, embedder) -> None:
    verdict = check(" ".join(["Caroline went to an LGBTQ support group."] * 20), sources, embedder, budget=50)
    assert "budget" in verdict.failed and verdict.counts["tokens"] > 50


@pytest.mark.slow
def test_the_floor_quotes_central_sentences_verbatim_in_order_without_repeats_within_budget(embedder) -> None:
    turns = [g.Said(None, t, when="8 May 2023") for t in [TURNS[0], *TURNS]]  # the first said twice
    quotes = g.candidate_quotes(turns)

    def embed(texts: list[str]) -> np.ndarray:
        return np.asarray(embedder.embed(texts), dtype=np.float32)

    text = g.extractive(quotes, embed, budget=80, count=words_count)
    kept = g.quotes_of(text, 0)
    assert 2 <= len(kept) and words_count(text) <= 80
    assert " ".join(q.render() for q in kept) == text  # quotes, and nothing else
    assert "Caroline, 8 May 2023: “I went to a LGBTQ support group yesterday and it was so powerful.”" in text
    assert len({q.sentence for q in kept}) == len(kept)
    turns_of = [{"content": t, "n": n} for n, t in enumerate(TURNS)]
    cites = [g.cited(q.render(), turns_of) for q in kept]
    assert all(len(c) == 1 for c in cites)  # each quotes one turn, verbatim, under its speaker
    assert [q.who for q in kept] == [g.split_speaker(c[0]["content"])[0] for c in cites]
    assert [c[0]["n"] for c in cites] == sorted(c[0]["n"] for c in cites)
    few = g.quotes_of(g.extractive(quotes, embed, budget=10_000, count=words_count, most=3), 0)
    assert len(few) == 3  # a handful of key sentences, not the budget's worth of transcript


def test_an_extract_cites_the_turns_it_quotes_and_a_summary_cites_them_all() -> None:
    turns = [{"content": "I'm thinking of moving from Leeds to Edinburgh in September"},
             {"content": "That's a big move! Here is what to weigh:\n1. **Rent**: flats in Edinburgh cost more."},
             {"content": "my sister Jess lives there already [shares a photo: Jess] she's a teacher"}]
    quoted = ("Maya, 10 March 2024: “I'm thinking of moving from Leeds to Edinburgh in September” "
              "ChatGPT, 10 March 2024: “Rent: flats in Edinburgh cost more.”")
    assert g.cited(quoted, turns) == [turns[0], turns[1]]
    assert g.cited("Maya, 10 March 2024: “she's a teacher”", turns) == [turns[2]]
    assert g.cited("Maya plans a move north and has family there.", turns) == turns  # not an extract
    assert g.cited("Sam said, “I'm thinking of moving from Leeds to Edinburgh in September”", turns) == [turns[0]]
    edited = ("Maya is thinking of moving from Leeds to Edinburgh in September. "  # the floor's before it quoted
              "Maya's sister Jess lives there already, she's a teacher.")
    assert g.cited(edited, turns) == [turns[0], turns[2]]


def test_a_roll_up_reads_quotes_back_unchanged_and_the_former_forms_as_they_were_said() -> None:
    text = ("Maya, 8 May 2023: “i'm thinking of moving to leeds next april, the shifts here are killing me” "
            "ChatGPT, 8 May 2023: “Add a worked example to your cover letter: panels remember one.” "
            "The user, 9 May 2023: “Update: I got the job!”")
    quotes = g.quotes_of(text, 3, {"ChatGPT": 0.5})
    assert [(q.who, q.when, q.sentence, q.weight, q.order) for q in quotes] == [
        ("Maya", "8 May 2023", "i'm thinking of moving to leeds next april, the shifts here are killing me", 1.0,
         (3, 0)),
        ("ChatGPT", "8 May 2023", "Add a worked example to your cover letter: panels remember one.", 0.5, (3, 1)),
        ("The user", "9 May 2023", "Update: I got the job!", 1.0, (3, 2))]
    assert " ".join(q.render() for q in quotes) == text
    mixed = "Maya planned a move to Leeds. Maya, 8 May 2023: “it's a big step for me”"  # a roll-up of both kinds
    assert [(q.quoted, q.render()) for q in g.quotes_of(mixed, 0)] == [
        (False, "Maya planned a move to Leeds."), (True, "Maya, 8 May 2023: “it's a big step for me”")]
    edited = "Maya is thinking of moving to Leeds. In Maya's words: “we adopted a greyhound!”"  # an edited gist's form
    assert [(q.who, q.render()) for q in g.quotes_of(edited, 0)] == [
        (None, "Maya is thinking of moving to Leeds."), ("Maya", "Maya: “we adopted a greyhound!”")]
    former = "The user said, “I adopted a puppy.” Lyra said, “What is its name?”"  # the oldest form, in stores
    assert [(q.who, q.render()) for q in g.quotes_of(former, 0)] == [
        ("The user", "The user: “I adopted a puppy.”"), ("Lyra", "Lyra: “What is its name?”")]


# The profile's gate and floor are tested in tests/test_floor_facts.py (mind/facts/gate.py, mind/facts/floor.py).


def transcribing(messages: Sequence[Message], options: GenerationOptions | None) -> str:
    """A model too small to summarize: it continues the transcript, and invents facts."""
    if options is not None and options.json_schema is not None:
        if "standing facts" in messages[-1]["content"]:
            return ('{"facts": [{"key": "home city", "value": "1", "quote": "1"}, '
                    '{"key": "partner", "value": "cat", "quote": "my cat"}]}')
        return ('{"mood": "positive", "energy": 0.5, "self_narrative": "Awesome, how awesome!", '
                '"reflections": ["./2.0"]}')
    return "The user: Sam: Hey! Lyra: Hi Sam, Carolina told me about the 1999 trip."


def test_the_dream_writes_the_floor_and_logs_checks_not_text(store: Store,
                                                            make_settings: Callable[..., Settings]) -> None:
    settings = make_settings('[companion]\nuser_name = "Sam"\n[dream]\nsession_idle_s = 0\n')
    session = add_session(store, "moving", "2024-03-04", [
        "We finally moved into the new flat near the river last weekend.", "How does it feel?",
        "It feels wonderful, the kitchen is huge and the light in the mornings is lovely.", "I am glad."])
    events: list[dict[str, object]] = []
    report = Dreamer(store, FakeChatModel(respond=transcribing), FakeEmbedder(), settings,
                     on_event=events.append).run_pass(force=True)
    assert report.status == "done"
    gist = store.derived.gist(session)
    assert gist is not None and gist.method == "extractive"
    assert gist.content == ("Sam, 4 March 2024: “We finally moved into the new flat near the river last weekend.” "
                            "Sam, 4 March 2024: “It feels wonderful, the kitchen is huge and the light in the "
                            "mornings is lovely.”"), gist.content  # her words as said, under her name and the day
    assert "Carolina" not in gist.content and "Lyra:" not in gist.content
    assert store.derived.profile() == []  # "1" and "cat" were never said as a home city or a partner
    state = store.derived.self_state()
    assert state is not None and state["mood"] == "calm" and state["reflections"] == []
    rejected = [e for e in events if str(e["kind"]).endswith(".rejected")]
    assert {e["kind"] for e in rejected} >= {"gist.rejected", "profile.rejected", "reflect.rejected"}
    gist_event = next(e for e in rejected if e["kind"] == "gist.rejected")
    assert "speaker_lines" in gist_event["detail"]["checks"]  # type: ignore[index]
    logged = str([e["detail"] for e in events]) + str(store.coord.events(after_id=0))
    assert "Carolina" not in logged and "1999" not in logged and "awesome" not in logged.lower()


def test_the_companions_name_is_not_given_to_a_person_of_an_imported_conversation(
        store: Store, make_settings: Callable[..., Settings]) -> None:
    """Two people talking ("Caroline: ...", "Melanie: ...") imported as user and assistant turns: a draft that
    calls the second speaker by the companion's name loses that sentence (SmolLM2 did this on LoCoMo)."""
    settings = make_settings('[dream]\nsession_idle_s = 0\n')
    session = add_session(store, "support", "2023-05-08", [
        "Caroline: I went to a support group yesterday and it was so powerful.",
        "Melanie: That is wonderful, I am glad you went to the support group."])

    def drafting(messages: Sequence[Message], options: GenerationOptions | None) -> str:
        if options is not None and options.json_schema is not None:
            return transcribing(messages, options)
        return "Caroline went to a support group and it was so powerful. Lyra was glad she went to the support group."

    Dreamer(store, FakeChatModel(respond=drafting), FakeEmbedder(), settings).run_pass(force=True)
    gist = store.derived.gist(session)
    assert gist is not None and "Lyra" not in gist.content, gist
    assert "Caroline went to a support group" in gist.content
