"""The companion's own voice through the dream, with a scripted model: a reflection that copies the person's
sentence, or stops on a comma, is refused, the previous state is kept, and the log says so in words; an
abstractive arc that copies the person is written from the floor instead. And the log read over HTTP names
conversations by title, and a forgotten one never."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

import pytest

from lyra_local.config import Settings
from lyra_local.llm.base import GenerationOptions, Message
from lyra_local.mind import Dreamer
from lyra_local.store import Store
from lyra_local.store.forget.erase import forget_sessions

from .conftest import fake_client
from .fakes import FakeChatModel, FakeEmbedder
from .test_dream import add_session, respond

MOVING = "I'm thinking of moving from Leeds to Edinburgh in September"
OWN = "She lives in Berlin with her cat Miso."  # grounded in what Sam said, told of her: the companion's view
ECHO = "Berlin with the cat Miso is where I live."  # no six words of hers in a row, but her life as Lyra's


def reflecting(narrative: str, reflections: list[str]) -> Callable[[Sequence[Message], GenerationOptions | None], str]:
    """The stand-in model of test_dream, whose reflection answers with the given texts."""
    def answer(messages: Sequence[Message], options: GenerationOptions | None) -> str:
        if options is not None and options.json_schema is not None and "your mood" in messages[-1]["content"]:
            return json.dumps({"mood": "curious", "energy": 0.6, "self_narrative": narrative,
                               "reflections": reflections})
        return respond(messages, options)
    return answer


@pytest.fixture()
def settings(make_settings: Callable[..., Settings]) -> Settings:
    return make_settings('[companion]\nuser_name = "Sam"\n[dream]\nsession_idle_s = 0\n')


def dream(store: Store, settings: Settings, answer: Callable[..., str]) -> None:
    report = Dreamer(store, FakeChatModel(respond=answer), FakeEmbedder(), settings).run_pass(force=True)
    assert report.status == "done"


def test_a_reflection_that_copies_the_person_keeps_the_previous_state_and_says_so(store: Store,
                                                                                  settings: Settings) -> None:
    add_session(store, "home", "2024-01-10", ["I live in Berlin with my cat Miso", "How lovely!"])
    dream(store, settings, reflecting(OWN, ["Miso the cat lives in Berlin."]))
    assert store.derived.self_state()["self_narrative"] == OWN  # type: ignore[index]

    add_session(store, "moving", "2024-02-01", [MOVING, "Edinburgh is lovely in autumn."])
    dream(store, settings, reflecting(MOVING, ["Thinking of moving to Edinburgh in"]))  # grounded, but cut
    state = store.derived.self_state()
    assert state is not None
    assert state["self_narrative"] == OWN  # hers was never written as Lyra's
    assert state["reflections"] == ["Miso the cat lives in Berlin."]  # the cut one neither
    kept = [e for e in store.coord.events() if e["kind"] == "reflect.kept"]
    assert len(kept) == 1
    assert kept[0]["detail"] == {"fields": ["reflections", "self_narrative"], "because": ["copied", "cut"],
                                 "first": False}  # there was a reflection to keep


def test_a_reflection_that_retells_the_persons_life_as_the_companions_is_refused(store: Store,
                                                                                 settings: Settings) -> None:
    """Sam's "I live in Berlin with my cat Miso" reworded so that no six words are hers in a row is still her
    life in the companion's first person: refused as copied, and the log says so."""
    add_session(store, "home", "2024-01-10", ["I live in Berlin with my cat Miso", "How lovely!"])
    dream(store, settings, reflecting(ECHO, [OWN]))
    state = store.derived.self_state()
    assert state is not None and state["self_narrative"] == "" and state["reflections"] == [OWN]
    kept = [e for e in store.coord.events() if e["kind"] == "reflect.kept"]
    assert [k["detail"] for k in kept] == [{"fields": ["self_narrative"], "because": ["copied"], "first": True}]


def test_a_first_reflection_that_copies_leaves_it_unwritten_not_hers(store: Store, settings: Settings) -> None:
    add_session(store, "moving", "2024-02-01", [MOVING, "Edinburgh is lovely in autumn."])
    dream(store, settings, reflecting(f"{MOVING}.", [f"Sam said {MOVING.lower()}."]))
    state = store.derived.self_state()
    assert state is not None and state["self_narrative"] == "" and state["reflections"] == []
    assert state["mood"] == "curious"  # the mood is a word of the vocabulary, not her words


def test_an_abstractive_arc_that_copies_the_person_is_written_from_the_floor(store: Store,
                                                                             settings: Settings) -> None:
    add_session(store, "moving", "2024-02-01", [MOVING, "Edinburgh is lovely in autumn."])

    def copying(messages: Sequence[Message], options: GenerationOptions | None) -> str:
        if "current arc of" in messages[-1]["content"]:
            return MOVING + "."
        return respond(messages, options)

    dream(store, settings, copying)
    arc = store.derived.current_narrative()
    assert arc is not None and arc["method"] == "extractive"  # attributed to her, not Lyra's view
    assert any(e["kind"] == "narrative.refused" for e in store.coord.events())


def test_an_abstractive_arc_in_its_own_words_is_kept(store: Store, settings: Settings) -> None:
    add_session(store, "moving", "2024-02-01", [MOVING, "Edinburgh is lovely in autumn."])
    dream(store, settings, reflecting(OWN, []))
    assert not any(e["kind"] == "narrative.refused" for e in store.coord.events())


def test_the_log_over_http_reads_in_sentences_with_titles(make_settings: Callable[..., Settings]) -> None:
    settings = make_settings('[companion]\nuser_name = "Sam"\n[dream]\nenabled = false\n')
    with fake_client(settings, chat=FakeChatModel(respond=reflecting(MOVING, []))) as client:
        store = client.app.state.lyra.owner_runtime().store  # type: ignore[attr-defined]
        prep = add_session(store, "Interview prep", "2024-01-10", ["I have an interview on 2 May", "Good luck!"])
        gone = add_session(store, "Old flat", "2024-01-11", ["I live in Berlin with my cat Miso", "Lovely"])
        Dreamer(store, FakeChatModel(respond=reflecting(MOVING, [])), FakeEmbedder(), settings).run_pass(force=True)
        forget_sessions(store, [gone])
        events = client.get("/api/dream/events", params={"follow": "false"}).json()["events"]
        says = [e["says"] for e in events]
        assert "Summarised ‘Interview prep’ (1 of 2 conversations)." in says or \
               "Summarised ‘Interview prep’ (2 of 2 conversations)." in says
        assert "Summarised a forgotten conversation (2 of 2 conversations)." in says or \
               "Summarised a forgotten conversation (1 of 2 conversations)." in says
        assert not any("Old flat" in s for s in says)
        assert any(s.startswith("Wrote no reflection yet") for s in says)  # her sentence refused, and said
        assert not any(s.startswith("Kept the last reflection") for s in says)  # there was none to keep
        assert all("session:" not in s and ".rejected" not in s for s in says)
        assert next(e for e in events if e["kind"] == "gist")["target"] in (f"session:{prep}", f"session:{gone}")
        status = client.get("/api/dream").json()
        assert status["last_pass_says"].startswith("summarised 2 conversations")
