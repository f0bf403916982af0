"""The dream's side of "imported replies in their source's mouth" and "summaries that read well
with any model".

With scripted fakes: a ChatGPT conversation's gist (the floor's extract of
quotes, or a model's draft) never credits ChatGPT's replies to the companion;
the floor quotes every sentence verbatim under its author and day; the gist
model reads the replies as ChatGPT's; a roll-up of one extract quotes the same
sentences, fewer of them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime

from lyra_local.authors import imported_from
from lyra_local.config import Settings
from lyra_local.llm.base import GenerationOptions, Message
from lyra_local.mind import Dreamer
from lyra_local.mind.grounding.checks import Quote, quotes_of
from lyra_local.mind.summaries.gists import repliers, transcript
from lyra_local.store import Exchange, Store
from lyra_local.store.exchanges import NewExchange

from .fakes import FakeChatModel, FakeEmbedder

MOVING = [  # Maya's "Moving plans", as a ChatGPT export holds it (her words verbatim, messy on purpose)
    "I'm thinking of moving from Leeds to Edinburgh in September",
    "That's a big move! It is normal to feel nervous about moving to a new city. Here are a few things to "
    "weigh up:\n\n1. **Rent**: flats in Edinburgh cost more than in Leeds.\n2. **Work**: nursing jobs in "
    "the NHS Lothian trust.\n3. **Friends and family** nearby.",
    "my sister Jess lives there already, she's a teacher",
    "That's lovely, having family nearby can make a move much easier. Jess could show you around.",
    "Jess says the flats near Leith are cheaper",
    "Leith is popular and often cheaper than the New Town. Here are a few things to check:\n- **Commute** "
    "to your new hospital\n- **Rent and council tax**\n- **Noise** if you sleep in the day after night shifts",
]


def add_conversation(store: Store, name: str, day: str, turns: Sequence[str], source: str = "chatgpt") -> int:
    session = store.sessions.create(name, created_at=f"{day}T09:00:00+00:00", source=source)
    with store.write() as conn:
        store.exchanges.insert(conn, [NewExchange(session.id, "user" if i % 2 == 0 else "assistant", text,
                                                  f"{day}T09:{i:02d}:00+00:00",
                                                  author=None if i % 2 == 0 else imported_from(source))
                                      for i, text in enumerate(turns)], None, None)  # as the import stores them
    return session.id


def drafting(gist: str) -> Callable[[Sequence[Message], GenerationOptions | None], str]:
    def respond(messages: Sequence[Message], options: GenerationOptions | None) -> str:
        if options is not None and options.json_schema is not None:
            if "standing facts" in messages[-1]["content"]:
                return '{"facts": []}'
            return '{"mood": "calm", "energy": 0.5, "self_narrative": "", "reflections": []}'
        return gist
    return respond


def maya(make_settings: Callable[..., Settings]) -> Settings:
    return make_settings('[companion]\nuser_name = "Maya"\n[dream]\nsession_idle_s = 0\n')


def quoted(text: str, turns: Sequence[Exchange], person: str, companion: str = "Lyra") -> list[Quote]:
    """The quotes of a floor's text, each checked to be a turn's words verbatim (markdown's bold marks aside),
    under that turn's author (``person`` for the person's; a reply's stored author, else ``companion``) and the
    day it was said; nothing in the text is not such a quote."""
    quotes = quotes_of(text, 0)
    assert quotes and " ".join(q.render() for q in quotes) == text, text
    for q in quotes:
        said = [t for t in turns if q.sentence in t.content.replace("**", "")]
        assert said and q.quoted, (q, text)
        day = datetime.fromisoformat(said[0].created_at)
        author = (t.author or companion) if (t := said[0]).role == "assistant" else person
        assert (q.who, q.when) == (author, f"{day.day} {day:%B %Y}"), (q, text)
    for edit in ("replied that", "mentioned that", "advised:", "listed:", "'s words", "said, “"):
        assert edit not in text, text
    return quotes


def test_the_floor_of_a_chatgpt_conversation_quotes_each_sentence_in_its_authors_mouth(
        store: Store, make_settings: Callable[..., Settings]) -> None:
    session = add_conversation(store, "Moving plans", "2024-03-10", MOVING)
    Dreamer(store, FakeChatModel(respond=drafting("Maya: hi. ChatGPT: hello.")), FakeEmbedder(),
            maya(make_settings)).run_pass(force=True)
    gist = store.derived.gist(session)
    assert gist is not None and gist.method == "extractive"
    text = gist.content
    quotes = quoted(text, store.exchanges.history(session), "Maya")
    assert "Lyra" not in text  # ChatGPT's replies are ChatGPT's
    assert "Maya, 10 March 2024: “I'm thinking of moving from Leeds to Edinburgh in September”" in text
    assert "Maya, 10 March 2024: “my sister Jess lives there already, she's a teacher”" in text
    assert {q.who for q in quotes} == {"Maya", "ChatGPT"}  # a reply quoted too, under its author's name
    digest = next(d for d in store.derived.digests("day"))
    assert digest.method == "extractive" and digest.content != text  # one conversation's day is shorter
    kept = quotes_of(digest.content, 0)
    assert kept and {q.render() for q in kept} <= {q.render() for q in quotes}  # the same quotes, as they were


def test_a_draft_crediting_the_companion_with_an_imported_reply_fails_whole(
        store: Store, make_settings: Callable[..., Settings]) -> None:
    session = add_conversation(store, "Moving plans", "2024-03-10", MOVING)
    events: list[dict[str, object]] = []
    draft = ("Maya is thinking of moving from Leeds to Edinburgh in September. Lyra said it is normal to feel "
             "nervous about moving to a new city. Maya's sister Jess lives there already and is a teacher.")
    Dreamer(store, FakeChatModel(respond=drafting(draft)), FakeEmbedder(), maya(make_settings),
            on_event=events.append).run_pass(force=True)
    gist = store.derived.gist(session)
    assert gist is not None and gist.method == "extractive" and "Lyra" not in gist.content
    rejected = next(e for e in events if e["kind"] == "gist.rejected")
    assert "wrong_mouth" in rejected["detail"]["checks"]  # type: ignore[index]


def test_the_same_draft_over_the_companions_own_conversation_may_name_it(
        store: Store, make_settings: Callable[..., Settings]) -> None:
    session = add_conversation(store, "Moving plans", "2024-03-10", MOVING, source="lyra")
    events: list[dict[str, object]] = []
    draft = "Maya is thinking of moving from Leeds to Edinburgh in September."
    Dreamer(store, FakeChatModel(respond=drafting(draft)), FakeEmbedder(), maya(make_settings),
            on_event=events.append).run_pass(force=True)
    assert not any("wrong_mouth" in str(e["detail"]) for e in events)
    gist = store.derived.gist(session)
    assert gist is not None and gist.method == "abstractive"


def test_the_gist_model_reads_imported_replies_as_chatgpts(store: Store,
                                                            make_settings: Callable[..., Settings]) -> None:
    add_conversation(store, "Moving plans", "2024-03-10", MOVING)
    model = FakeChatModel(respond=drafting("Maya is moving."))
    Dreamer(store, model, FakeEmbedder(), maya(make_settings)).run_pass(force=True)
    asked = next(m[-1]["content"] for m, options in model.history if options is None or options.json_schema is None)
    assert "\nChatGPT: That's a big move!" in asked and "Lyra" not in asked
    assert "between Maya and ChatGPT" in asked


def test_transcript_names_each_turns_author() -> None:
    turns = [Exchange(1, 1, "user", "hi", "2024-03-10T09:00:00+00:00"),
             Exchange(2, 1, "assistant", "hello", "2024-03-10T09:01:00+00:00", author="ChatGPT"),
             Exchange(3, 1, "user", "and now?", "2024-03-11T09:00:00+00:00"),
             Exchange(4, 1, "assistant", "now here", "2024-03-11T09:01:00+00:00")]  # continued in Lyra
    names = {"user": "Maya", "name": "Lyra"}
    assert transcript(turns, names) == ["Maya: hi", "ChatGPT: hello", "Maya: and now?", "Lyra: now here"]
    assert repliers(turns, "Lyra") == "ChatGPT and Lyra" and repliers(turns[:2], "Lyra") == "ChatGPT"


def test_without_a_configured_name_the_floor_names_the_person_as_they_introduced_themselves(
        store: Store, make_settings: Callable[..., Settings]) -> None:
    settings = make_settings('[dream]\nsession_idle_s = 0\n')
    introduced = add_conversation(store, "Interview prep", "2024-03-10", [
        "Hi! I'm Maya. I have an interview on 2 May for a ward manager job, can you help me prepare?",
        "Congratulations! Here is how to prepare:\n1. **Research the trust** and its values.\n"
        "2. **Prepare examples** of leadership."])
    unnamed = add_conversation(store, "Moving plans", "2024-03-11", MOVING[:2])
    Dreamer(store, FakeChatModel(respond=drafting("Maya: hi")), FakeEmbedder(), settings).run_pass(force=True)
    first, second = store.derived.gist(introduced), store.derived.gist(unnamed)
    assert first is not None and second is not None
    quoted(first.content, store.exchanges.history(introduced), "Maya")
    assert "Maya, 10 March 2024: “I have an interview on 2 May for a ward manager job, can you help me prepare?”" \
        in first.content, first.content
    assert second.content.startswith("Maya, 11 March 2024: “I'm thinking of moving from Leeds to Edinburgh"), \
        second.content  # she gave her name in another conversation, before the profile could learn it


def test_a_person_who_never_gave_a_name_is_the_user(store: Store, make_settings: Callable[..., Settings]) -> None:
    session = add_conversation(store, "Moving plans", "2024-03-11", MOVING[:2])
    Dreamer(store, FakeChatModel(respond=drafting("Maya: hi")), FakeEmbedder(),
            make_settings('[dream]\nsession_idle_s = 0\n')).run_pass(force=True)
    gist = store.derived.gist(session)
    assert gist is not None
    quoted(gist.content, store.exchanges.history(session), "The user")
    assert gist.content.startswith("The user, 11 March 2024: “I'm thinking of moving from Leeds to Edinburgh"), \
        gist.content
