"""A photo's caption, on real SQLite and FAISS with the real embedding model.

People send photos with no text ("[photo]" and nothing else): without what it
shows, such a message can never be found. A caption (a chat's description of
the photo, an import's ``caption``) is stored beside the words, not in them:
recall finds the photo by meaning and by words through it, and shows it as a
caption, never as what the sender said; forgetting by text reaches it, and an
export carries it.
"""

from __future__ import annotations

import io
import json

from lyra_local.config import CompanionSettings
from lyra_local.memory import Memory, RecallQuery
from lyra_local.memory.gather import gather
from lyra_local.memory.search import SearchQuery, search
from lyra_local.store import Store
from lyra_local.store.exchanges import NewExchange
from lyra_local.store.forget.erase import forget
from lyra_local.store.forget.plan import plan_forget
from lyra_local.transfer.importer import import_source
from lyra_local.transfer.lyra_format import write_sessions
from lyra_local.transfer.sources import open_source

from .test_recall_stages_real import filler

CAPTION = "a golden retriever puppy running on a sandy beach"


def test_an_imported_photo_with_no_text_is_found_by_its_caption_and_shown_as_one(store: Store, embedder,
                                                                                  tmp_path) -> None:
    """The photo has no words: the question finds it through its caption, by meaning ("dog", "seaside") and by
    a word ("retriever"); its content stays empty (nobody said the caption) and the caption comes apart."""
    turns = [{"role": role, "content": text, "created_at": f"2023-05-08T13:56:{i:02d}+00:00"}
             for i, (role, text) in enumerate(filler(12))]
    turns.insert(6, {"role": "user", "content": "", "caption": CAPTION, "created_at": "2023-05-08T13:56:06+00:00"})
    path = tmp_path / "chat.jsonl"
    path.write_text(json.dumps({"id": "chat-1", "name": "a chat", "messages": turns}) + "\n", encoding="utf-8")
    report, _ = import_source(store, embedder, open_source(path, "lyra"))
    assert not report.problems
    memory = Memory(store, embedder)
    for question in ("did I send you a picture of my dog at the seaside?", "the retriever photo"):
        hit = memory.recall(RecallQuery(question, k=1))[0]
        assert (hit.content, hit.caption) == ("", CAPTION)
    assert memory.recall(RecallQuery("retriever", k=1, mode="bm25"))[0].caption == CAPTION


def test_a_posted_photo_is_found_forgotten_by_its_caption_and_exported_with_it(store: Store, embedder) -> None:
    memory = Memory(store, embedder)
    session = store.sessions.create("today")
    memory.remember_many([NewExchange(session.id, role, text) for role, text in filler(8)])
    photo = memory.remember(session.id, "user", "look!!", caption=CAPTION)
    hit = memory.recall(RecallQuery("a puppy on the beach", k=1))[0]
    assert (hit.id, hit.content, hit.caption) == (photo.id, "look!!", CAPTION)

    out = io.StringIO()
    write_sessions(store, out)
    exported = [m for m in json.loads(out.getvalue())["messages"] if m["content"] == "look!!"]
    assert exported and exported[0]["caption"] == CAPTION

    plan = plan_forget(store, matching="golden retriever")
    assert photo.id in plan.exchange_ids
    forget(store, plan)
    assert store.exchanges.get(photo.id) is None
    assert not [h for h in memory.recall(RecallQuery("retriever", k=5, mode="bm25")) if h.id == photo.id]


def test_the_companion_reads_a_photo_as_what_it_shows_not_as_its_senders_words(store: Store, embedder) -> None:
    """In the prompt, a photo with no text is its caption in brackets, as a photo: recalled from an earlier
    conversation, and among the conversation's recent turns."""
    memory = Memory(store, embedder)
    earlier = store.sessions.create("last week")
    memory.remember_many([NewExchange(earlier.id, role, text) for role, text in filler(8)])
    memory.remember(earlier.id, "user", "", caption=CAPTION)
    today = store.sessions.create("today")
    memory.remember(today.id, "user", "", caption="a bowl of ramen with a soft-boiled egg")
    question = "do you remember the picture of my puppy at the beach?"
    inputs = gather(memory, CompanionSettings(), today.id, question, embedder.embed([question])[0])
    assert f"[a photo: {CAPTION}]" in [item.text for item in inputs.recalled]
    assert [turn.content for turn in inputs.recent] == ["[a photo: a bowl of ramen with a soft-boiled egg]"]


def test_search_finds_a_photo_by_a_word_of_its_caption_and_marks_it_there(store: Store, embedder) -> None:
    """Found by words, though nobody said the word: the match is marked in the caption, the words stay empty."""
    memory = Memory(store, embedder)
    session = store.sessions.create("today")
    memory.remember_many([NewExchange(session.id, role, text) for role, text in filler(8)])
    memory.remember(session.id, "user", "", caption=CAPTION)
    found = next(f for f in search(memory, SearchQuery("retriever")) if f.caption)
    assert (found.content, found.caption, found.matched) == ("", CAPTION, "words")
    assert [p.text for p in found.caption_snippet if p.match] == ["retriever"]
