"""The floor quotes. A summary written without a model's draft is the conversation's most central
sentences, verbatim, each under who said it and the day it was said; roll-ups of such extracts quote the same
sentences again, as they were; what the model reads for a roll-up is dated, so "next April" can be read from when it
was said.

Pure functions with the scripted fake embedder, then the dream over the real store with a scripted model (whose
drafts fail the checks, so the floor writes)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, timezone

from lyra_local.config import Settings
from lyra_local.llm.base import GenerationOptions, Message
from lyra_local.mind import Dreamer
from lyra_local.mind.dream.scribe import Scribe
from lyra_local.mind.grounding import checks as g
from lyra_local.mind.grounding.sources import Ground
from lyra_local.mind.summaries.narrative import narrative_material
from lyra_local.store import Store

from .fakes import FakeChatModel, FakeEmbedder
from .test_dream import add_session
from .test_edited_extract import add_conversation, drafting, maya, quoted


def words_count(text: str) -> int:
    return len(text.split())


''' + open("/tmp/moved.py").read().rstrip() + '''


LOCOMO = [  # two people talking, imported as a transcript (scripts/recall_sets.py writes them so)
    "Caroline: I went to a LGBTQ support group yesterday and it was so powerful.",
    "Melanie: Wow, that's cool, Caroline! [shares a photo: a painting of a sunset over a lake] I painted this "
    "one last week after the kids went to bed.",
    "Caroline: [an image was here; not imported]",
    "Caroline: i'm thinking of going back to school next april to study counseling, the stories there moved me.",
    "Melanie: That sounds like a great plan, you would help so many people who went through the same things."]


def test_a_transcript_of_two_people_is_quoted_under_their_own_names(
        store: Store, make_settings: Callable[..., Settings]) -> None:
    session = add_session(store, "support group", "2023-05-08", LOCOMO)
    Dreamer(store, FakeChatModel(respond=drafting("Caroline: hi. Melanie: hello.")), FakeEmbedder(),
            make_settings('[dream]\nsession_idle_s = 0\n')).run_pass(force=True)
    gist = store.derived.gist(session)
    assert gist is not None and gist.method == "extractive"
    quotes = g.quotes_of(gist.content, 0)
    assert quotes and " ".join(q.render() for q in quotes) == gist.content
    for q in quotes:
        turn = next(t for t in LOCOMO if q.sentence in t)
        assert (q.who, q.when) == (g.split_speaker(turn)[0], "8 May 2023"), q
    assert {q.who for q in quotes} == {"Caroline", "Melanie"}  # never Lyra, never "the user"
    assert "Caroline, 8 May 2023: “i'm thinking of going back to school next april to study counseling, the " \
        "stories there moved me.”" in gist.content  # "next april" is read from the day it was said
    assert "Melanie, 8 May 2023: “I painted this one last week after the kids went to bed.”" in gist.content
    assert "[" not in gist.content and "image" not in gist.content and "sunset" not in gist.content


IMPORTED = [  # Maya's conversation with ChatGPT, as its export holds it
    "can u help me with my cover letter for the ward manager job?? its due friday",
    "Of course! Add a worked example of a difficult shift you led, so the panel sees how you lead a team. "
    "Keep it to one page and end with why this trust matters to you.",
    "[an image was here; not imported]",
    "ok i added the one about the night the lifts broke and we moved six patients down the stairs",
    "That is a strong example: it shows calm leadership under pressure and care for the patients."]
OWN = [  # and one with Lyra, the next week
    "i'm thinking of moving to leeds next april, the shifts here are killing me",
    "Leeds would put you closer to your sister. What draws you there besides the shifts?",
    "my sister Jess lives there and the flats near the park are cheaper than here"]


def test_every_floor_of_the_dream_quotes_its_turns_and_every_roll_up_quotes_them_again_unchanged(
        store: Store, make_settings: Callable[..., Settings]) -> None:
    sessions = [add_conversation(store, "Cover letter", "2024-03-04", IMPORTED),
                add_conversation(store, "Moving", "2024-03-12", OWN, source="lyra")]
    Dreamer(store, FakeChatModel(respond=drafting("Maya: hi. Lyra: hello. ChatGPT: hi.")), FakeEmbedder(),
            maya(make_settings)).run_pass(force=True)
    said: set[str] = set()
    for session in sessions:
        gist = store.derived.gist(session)
        assert gist is not None and gist.method == "extractive"
        said |= {q.render() for q in quoted(gist.content, store.exchanges.history(session), "Maya")}
    assert "ChatGPT, 4 March 2024: “Add a worked example of a difficult shift you led, so the panel sees how you " \
        "lead a team.”" in said  # an imported reply's advice, in ChatGPT's mouth and words
    assert not any(q.startswith("Lyra, 4 March 2024") for q in said)  # Lyra said nothing that day
    assert "Maya, 12 March 2024: “i'm thinking of moving to leeds next april, the shifts here are killing me”" in said
    digests = store.derived.digests()
    assert {d.granularity for d in digests} == {"day", "week", "month"}
    arc = store.derived.current_narrative()
    assert arc is not None
    for text, method in [*((d.content, d.method) for d in digests), (arc["content"], arc["method"])]:
        quotes = g.quotes_of(text, 0)
        assert method == "extractive" and quotes and " ".join(q.render() for q in quotes) == text, text
        assert {q.render() for q in quotes} <= said, text  # the gists' quotes, never re-attributed or re-edited


def test_a_roll_up_over_extracts_quotes_them_again_and_a_reply_weighs_less(store: Store) -> None:
    embedder = FakeEmbedder()
    ground = Ground(store, embedder.embed, embedder.name, words_count, {"user": "Maya", "name": "Lyra"}, 400)
    day = ("Maya, 8 May 2023: “i'm thinking of moving to leeds next april, the shifts here are killing me” "
           "ChatGPT, 8 May 2023: “Add a worked example to your cover letter so the panel sees how you lead.”")
    before = "Maya said, “I adopted a greyhound called Biscuit last spring.”"  # the floor's older form, still in stores
    written = ground.extract_of([(day, "extractive"), ("Maya planned a move to Leeds with Jess.", "abstractive"),
                                 (before, "extractive")])
    assert written.method == "extractive"
    assert written.text == (f"{day} Maya planned a move to Leeds with Jess. "
                            "Maya: “I adopted a greyhound called Biscuit last spring.”")
    same = "we went to the river on a long walk together today"
    one = ground.extract_of([(f"Lyra, 9 May 2023: “{same}” Maya, 9 May 2023: “{same}”", "extractive")])
    assert one.text == f"Maya, 9 May 2023: “{same}”"  # of two alike, the person's words, not the companion's


def test_what_the_model_reads_for_a_roll_up_is_dated(store: Store, make_settings: Callable[..., Settings]) -> None:
    add_conversation(store, "Moving", "2024-03-11", ["I'm thinking of moving to Leeds next April with Jess.",
                                                     "That sounds exciting."], source="lyra")
    add_conversation(store, "Flats", "2024-03-12", ["The flats near the park in Leeds are cheaper.",
                                                    "Good to know."], source="lyra")

    def summarizing(messages: Sequence[Message], options: GenerationOptions | None) -> str:
        asked = messages[-1]["content"]
        if "Write a digest" in asked or "current arc" in asked:
            return "Maya: hi."  # fails: the floor writes the roll-up
        if "Leeds next April" in asked:
            return "Maya is thinking of moving to Leeds next April with Jess."
        if "flats near the park" in asked:
            return "The flats near the park in Leeds are cheaper."
        return drafting("")(messages, options)

    model = FakeChatModel(respond=summarizing)
    Dreamer(store, model, FakeEmbedder(), maya(make_settings)).run_pass(force=True)
    asked = [m[-1]["content"] for m, options in model.history if options is None or options.json_schema is None]
    week = next(a for a in asked if "Write a digest of that week" in a)
    assert "11 March 2024: Maya is thinking of moving to Leeds next April with Jess." in week
    assert "12 March 2024: The flats near the park in Leeds are cheaper." in week
    scribe = Scribe(model, reply_tokens=96, names={"user": "Maya", "name": "Lyra"})
    material, pieces, _, _, _ = narrative_material(scribe, store, 30, now=datetime(2025, 2, 1, tzinfo=timezone.utc))
    assert material.startswith("Today is 1 February 2025.")  # "next April" of March 2024 is past
    assert "- March 2024: " in material and "- the week of 11 March 2024: " in material
    assert all(text.startswith(("March 2024: ", "the week of 11 March 2024: ")) or method == "extractive"
               for text, method in pieces)  # the checks read the dates the model read: a draft may write them
