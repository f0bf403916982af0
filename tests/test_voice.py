"""The companion's own voice (mind/reflection/voice.py) and the dream's log in sentences (mind/dream/sentences.py): pure
functions, checked on texts a person really types, where a looser check went wrong."""

from __future__ import annotations

import pytest

from lyra_local.mind.dream.sentences import FORGOTTEN, conversation_ids, pass_summary, period, sentence
from lyra_local.mind.reflection import voice

MAYA = ["Hi! I'm Maya. I have an interview on 2 May for a ward manager job, can you help me prepare?",
        "i work night shifts as a nurse at st james's hospital so im always tired lol",
        "I'm thinking of moving from Leeds to Edinburgh in September",
        "we adopted a rescue greyhound called Biscuit last month!! he's scared of the hoover",
        "my sister Jess lives there already, she's a teacher",
        "Jess says the flats near Leith are cheaper",
        "i started a saturday pottery class w/ jess, it's so relaxing"]
SAID = voice.runs(MAYA)


@pytest.mark.parametrize("text", [
    "I'm thinking of moving from Leeds to Edinburgh in September",  # her sentence as Lyra's: the reported bug
    "Lately I'M THINKING of moving, from Leeds to Edinburgh!",  # case and punctuation do not hide it
    "She said: I work night shifts as a nurse.",  # six words in a row, inside another sentence
    "I am always tired, I work night shifts as a nurse at st James's",
    "Im thinking of moving from leeds to somewhere",  # an apostrophe dropped, as people type
])
def test_a_six_word_run_of_the_persons_messages_is_found(text: str) -> None:
    assert voice.copied_run(text, SAID) is not None
    assert voice.judge(text, SAID) == voice.COPIED


@pytest.mark.parametrize("text", [
    "I feel glad that Maya trusts me with her plans.",
    "Maya is thinking of a move to Edinburgh.",  # five shared words at most: her topic, not her sentence
    "I work with Maya on her interview.",
    "moving from Leeds to Edinburgh",  # five words
])
def test_the_companions_own_sentences_pass(text: str) -> None:
    assert voice.copied_run(text, SAID) is None
    assert voice.judge(text, SAID) is None


@pytest.mark.parametrize("text", [
    "I'm thinking of moving to Edinburgh in September.",  # the reviewer's: "from Leeds" dropped, no run left
    "I am thinking about a move to Edinburgh this September.",  # reworded, and "move" is "moving"
    "Lately I'm thinking about Edinburgh, moving there in September.",
    "We adopted a rescue greyhound last month.",  # "we" of hers is not the companion's "we"
    "My sister lives there already, she is a teacher.",  # her "she" (Jess) told back is still her sentence
    "i started a pottery class on Saturdays",  # her lowercase "saturday" is no one else's name
    "I am glad to be here. I'm thinking of moving to Edinburgh in September!",  # one sentence of several
    "Today I am thinking about moving to Edinburgh in September.",  # a capitalised first word is no name
])
def test_the_persons_first_person_sentence_retold_as_the_companions_is_refused(text: str) -> None:
    """Her situation in the companion's first person, lightly edited so that no six-word run is left."""
    assert voice.copied_run(text, SAID) is None  # what the run check alone let through
    assert voice.echoed(text, SAID) is not None
    assert voice.judge(text, SAID) == voice.COPIED


@pytest.mark.parametrize("text", [
    "Maya is thinking of moving to Edinburgh in September.",  # the same facts told of her
    "You are moving to Edinburgh in September.",  # ... or to her
    "I hope your move to Edinburgh in September goes well.",  # the companion's hope about her plan
    "I wonder how her move to Edinburgh in September will feel.",
    "I think Maya is moving to Edinburgh in September.",
    "I keep thinking about Maya's move to Edinburgh in September.",
    "Maya's move to Edinburgh in September makes me think.",  # her name first, as a possessive
    "She started a Saturday pottery class with Jess, and I am glad.",
    "I remember the rescue greyhound called Biscuit.",  # her "we adopted" is not the companion's "I remember"
    "I say the flats near Leith are cheap.",  # what Jess says: no first-person sentence of Maya's
    "I am moving to Edinburgh.",  # too little content to be anyone's sentence (fewer than four words)
    "I'm thinking of moving to Edinburgh in September, and I love the sea, long walks and quiet evenings.",
    "I am getting to know Maya, and I like her.",
])
def test_the_companions_first_person_view_of_her_passes(text: str) -> None:
    assert voice.echoed(text, SAID) is None
    assert voice.judge(text, SAID) is None


def test_an_echo_needs_the_persons_sentences_not_only_her_runs() -> None:
    """A plain set of runs (as a caller may build one) carries no sentences, so only runs are checked."""
    plain = frozenset(SAID)
    assert voice.echoed("I'm thinking of moving to Edinburgh in September.", plain) is None
    assert voice.copied_run(MAYA[2], plain) is not None
    assert isinstance(SAID, frozenset) and MAYA[2] not in SAID  # still runs, for callers that ask


def test_a_retold_self_narrative_is_refused_as_copied() -> None:
    previous = {"self_narrative": "I am getting to know Maya.", "reflections": []}
    state = {"self_narrative": "I'm thinking of moving to Edinburgh in September.",
             "reflections": ["You are moving to Edinburgh in September."]}
    refused = voice.keep_own_voice(state, previous, SAID)
    assert [(r.field, r.reason) for r in refused] == [("self_narrative", "copied")]
    assert state["self_narrative"] == "I am getting to know Maya."
    assert state["reflections"] == ["You are moving to Edinburgh in September."]


def test_a_run_never_spans_two_messages() -> None:
    said = voice.runs(["one two three", "four five six"])
    assert voice.copied_run("one two three four five six", said) is None
    assert voice.copied_run("a b c d e f", voice.runs(["x a b c d e f y"])) == "a b c d e f"


@pytest.mark.parametrize("text", [
    "I want to keep close,",  # stopped on a comma: the reported reflection
    "I should remember to keep my distance from",
    "Maya is moving to Edinburgh and",
    "I keep thinking about the",
    'She said "keep your distance',  # a quote left open
    "I am glad (and a little worried",
    "I keep thinking about the.",
])
def test_a_sentence_cut_mid_clause_is_found(text: str) -> None:
    assert voice.cut_mid_clause(text)


@pytest.mark.parametrize("text", [
    "I keep my distance from bikes.",
    "Curious about Maya's move",  # a fragment, but a finished one
    "What is she looking forward to?",
    'She calls it "home".',
    "I feel calm (mostly).",
])
def test_a_finished_sentence_is_not_cut(text: str) -> None:
    assert not voice.cut_mid_clause(text)


@pytest.mark.parametrize("text", [
    "I am here for you :)",  # the reported refusal
    "I am here for you 😊",
    "Proud of you 💛🙏🏽",  # emoji with a skin tone
    "Glad you came :-D",
    "Here for you, always <3",
    "I feel calm (mostly) :)",  # the smiley's bracket is no clause's
    "That made me laugh xD",
    "I am here for you :) Always.",
])
def test_a_smiley_or_emoji_at_the_end_is_a_proper_end(text: str) -> None:
    assert not voice.cut_mid_clause(text)
    assert not voice.cut_mid_clause(text, limit=len(text))  # a finished sentence, even at the limit


@pytest.mark.parametrize("text", [
    "I keep thinking about the :)",  # a smiley does not finish "about the"
    "I want to keep close, 😊",  # nor a clause left open on a comma
    "I'm glad :) and (a bit worried",  # the open bracket is still open
])
def test_a_smiley_does_not_finish_a_cut_sentence(text: str) -> None:
    assert voice.cut_mid_clause(text)


def test_a_text_without_a_stop_at_its_length_limit_was_cut_there() -> None:
    text = "I think about how Maya balances her night shifts with her plans and the move north in the autumn sun"
    assert not voice.cut_mid_clause(text)
    assert voice.cut_mid_clause(text, limit=len(text))
    assert not voice.cut_mid_clause(text + ".", limit=len(text) + 1)


def test_a_copied_self_narrative_keeps_the_previous_one() -> None:
    previous = {"self_narrative": "I am getting to know Maya.", "reflections": ["Interviews matter to her."]}
    state = {"self_narrative": MAYA[2], "reflections": ["I want to keep close,", "She is brave."]}
    refused = voice.keep_own_voice(state, previous, SAID)
    assert state["self_narrative"] == "I am getting to know Maya."
    assert state["reflections"] == ["She is brave."]  # the cut one dropped, the finished one kept
    assert {(r.field, r.reason) for r in refused} == {("self_narrative", "copied"), ("reflections", "cut")}
    assert voice.reasons(refused) == ["copied", "cut"]


def test_when_every_reflection_is_refused_the_previous_ones_stay() -> None:
    previous = {"self_narrative": "", "reflections": ["Interviews matter to her."]}
    state = {"self_narrative": "I listened.", "reflections": [MAYA[1]]}
    assert [r.reason for r in voice.keep_own_voice(state, previous, SAID)] == ["copied"]
    assert state == {"self_narrative": "I listened.", "reflections": ["Interviews matter to her."]}


def test_a_previous_state_with_the_persons_words_is_not_carried_on() -> None:
    """A state written before these checks (the person's sentence as Lyra's) must not survive as "the last"."""
    previous = {"self_narrative": MAYA[2], "reflections": [MAYA[1]]}
    state = {"self_narrative": MAYA[2] + ".", "reflections": [MAYA[0]]}
    voice.keep_own_voice(state, previous, SAID)
    assert state == {"self_narrative": "", "reflections": []}


def test_a_clean_state_is_left_as_it_is() -> None:
    state = {"self_narrative": "I am learning Maya's rhythm.", "reflections": ["She needs rest."], "mood": "calm"}
    assert voice.keep_own_voice(dict(state), {}, SAID) == []


# -- the log in sentences ---------------------------------------------------------------------------------------

TITLES = {9: "Interview prep", 4: None}


def said(kind: str, target: str | None = None, **detail: object) -> str:
    return sentence({"kind": kind, "target": target, "detail": detail}, TITLES)


def test_events_read_as_sentences_with_titles() -> None:
    assert said("gist", "session:9", progress="3/6") == "Summarised ‘Interview prep’ (3 of 6 conversations)."
    assert said("profile", "session:9", fact_ids=[1, 2]) == "Learnt 2 facts about you from ‘Interview prep’."
    assert said("profile", "session:9", fact_ids=[]) == "Read ‘Interview prep’: nothing new about you."
    assert said("gist.rejected", "session:9", checks=["unsupported_terms"]) == (
        "Wrote a summary of ‘Interview prep’ from your own words: the model's draft said something the "
        "conversation does not.")
    assert said("reflect.kept", None, fields=["self_narrative"], because=["copied"]) == (
        "Kept the last reflection: the model's draft copied your words.")
    assert said("reflect.kept", None, because=["cut"]) == "Kept the last reflection: the model's draft stopped " \
                                                          "mid-sentence."
    assert said("reflect.kept", None, because=["cut"], first=True) == "Wrote no reflection yet: the model's draft " \
                                                                      "stopped mid-sentence."
    assert said("reflect", None, fallback=True, first=True) == "Wrote no reflection yet: the model's answer could " \
                                                               "not be used."
    assert said("digest", "week:2024-W10") == "Wrote the timeline for the week of 4 March 2024."
    assert said("skip", "gist:9") == "Another dreamer is already summarising ‘Interview prep’."
    assert said("pass.start", None, forced=True, backlog={"ripe": 6}) == (
        "Started dreaming because you asked: 6 conversations to summarise.")
    assert said("reflect", None, fallback=False) == "Reflected on how I am."


def test_a_forgotten_conversation_is_never_named() -> None:
    assert said("gist", "session:4") == f"Summarised {FORGOTTEN}."
    assert said("gist", "session:77") == f"Summarised {FORGOTTEN}."  # not looked up: not shown either


@pytest.mark.parametrize("kind", ["gist", "gist.rejected", "gist.pruned", "profile", "profile.fallback",
                                  "profile.rejected", "digest", "digest.rejected", "digest.waiting",
                                  "digests.deleted", "narrative", "narrative.rejected", "narrative.refused",
                                  "world", "world.rejected", "reflect", "reflect.rejected", "reflect.kept",
                                  "backoff", "deferred", "skip", "waiting", "stale", "error", "pass.start",
                                  "pass.end"])
def test_no_sentence_speaks_jargon(kind: str) -> None:
    target = {"digest": "day:2024-03-04", "digest.rejected": "month:2024-03", "digest.waiting": "week:2024-W10",
              "skip": "gist:9", "waiting": "profile", "stale": "gist:4", "error": "narrative",
              "deferred": "reflect"}.get(kind, "session:9")
    text = said(kind, target, checks=["unsupported_sentences"], progress="1/2", status="done", actions=3)
    assert text[0].isupper() and text.endswith(".")
    for jargon in ("session:", "gist", ".rejected", "digest", "W10", "2024-03", "None", "_"):
        assert jargon not in text, (kind, text)


def test_periods_and_a_pass_in_words() -> None:
    assert period("day", "2024-03-04") == "4 March 2024" and period("month", "2024-03") == "March 2024"
    assert pass_summary([{"kind": "gist"}, {"kind": "gist"}, {"kind": "profile", "fact_ids": [3]},
                         {"kind": "reflect"}]) == "summarised 2 conversations, learnt 1 fact about you, reflected"
    assert pass_summary([]) == "nothing needed doing"
    assert conversation_ids({"target": "gist:12"}) == {12} and conversation_ids({"target": "day:2024"}) == set()
