"""Search can say "nothing found", with the real tiny embedder and a real store: a made-up word, a word nobody
said and a forgotten word find nothing, while a word that was said finds its turn by words and a paraphrase
(no word in common) finds it by meaning. The floor under meaning is measured by scripts/search_floor.py."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from lyra_local.llm.local import LocalEmbedder
from lyra_local.memory import Memory
from lyra_local.memory.search import SearchQuery, search
from lyra_local.store import Store

from .maya_export import HER_WORDS as MAYA  # Maya's own messages, verbatim and messy on purpose

REPLY = ("That sounds like a lot to juggle. A few ideas: plan the week ahead, keep a short list of what matters "
         "most, and ask for help when you need it.")
GREYHOUND = MAYA[2]


@pytest.fixture
def maya(store: Store, embedder: LocalEmbedder) -> Iterator[Memory]:
    """Maya's messages, each answered by the same long, general reply (as an imported ChatGPT's would be)."""
    memory = Memory(store, embedder)
    session = store.sessions.create("Interview prep", created_at="2024-03-04T09:00:00+00:00").id
    for i, text in enumerate(MAYA):
        memory.remember(session, "user", text, created_at=f"2024-03-04T09:{i:02d}:00+00:00")
        memory.remember(session, "assistant", f"{REPLY} ({i + 1})", created_at=f"2024-03-04T09:{i:02d}:30+00:00")
    yield memory


def found(memory: Memory, text: str) -> list[tuple[str, str]]:
    return [(f.content, f.matched) for f in search(memory, SearchQuery(text))]


@pytest.mark.parametrize("query", ["zorblatt", "quimflexen", "saxophone", "volcano eruption"])
def test_a_word_nobody_said_finds_nothing(maya: Memory, query: str) -> None:
    assert found(maya, query) == []


def test_a_said_word_finds_its_turn_by_words_and_a_paraphrase_by_meaning(maya: Memory) -> None:
    biscuit = found(maya, "Biscuit")
    assert biscuit[0] == (GREYHOUND, "words")
    assert [how for _, how in biscuit[1:]] == ["reply"], biscuit  # the answer to it, said to be that
    by_meaning = found(maya, "our new dog is afraid of the vacuum cleaner")
    assert by_meaning and by_meaning[0] == (GREYHOUND, "meaning"), by_meaning
    nurse = found(maya, "nurse")
    assert nurse[0] == (MAYA[1], "words") and {how for _, how in nurse[1:]} <= {"reply"}, nurse


def test_a_forgotten_word_finds_nothing_after_the_forget(maya: Memory) -> None:
    turn = next(t for t in maya.store.exchanges.history(1) if t.content == GREYHOUND)
    assert found(maya, "greyhound")
    maya.forget_exchanges([turn.id])
    assert found(maya, "greyhound") == []
    assert found(maya, "Biscuit") == []
    assert found(maya, "swimming")[0] == (MAYA[-1], "words")  # what was not forgotten is still found
