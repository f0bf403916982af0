"""The context view (each turn read with the one before it): kept by triggers, built for older turns, forgotten."""

from __future__ import annotations

from pathlib import Path

from lyra_local.memory import Memory, RecallQuery
from lyra_local.memory.recall import without
from lyra_local.store import Store, context_view, migrations
from lyra_local.store.db import connect
from lyra_local.store.exchanges import NewExchange

from .fakes import FakeEmbedder

TURNS = [("user", "We adopted a kitten on Saturday!"), ("assistant", "What did you name the kitten?"),
         ("user", "Pixel, the kids chose it."), ("assistant", "Lovely.")]


def context_rows(store: Store, word: str) -> list[int]:
    return [r[0] for r in store.conn().execute(
        "SELECT rowid FROM exchange_context_fts WHERE exchange_context_fts MATCH ? ORDER BY rowid", (word,))]


def test_each_new_turn_is_indexed_with_the_turn_before_it(store: Store) -> None:
    session = store.sessions.create("life")
    ids = [store.exchanges.add(NewExchange(session.id, role, text)).id for role, text in TURNS]
    assert context_rows(store, "kitten") == ids[:3]  # "Pixel, ..." is read after "What did you name the kitten?"
    assert context_rows(store, "pixel") == ids[2:4]
    assert context_view.pending(store) == 0


def test_forgetting_a_turn_takes_its_words_out_of_its_successors_row(store: Store) -> None:
    session = store.sessions.create("life")
    ids = [store.exchanges.add(NewExchange(session.id, role, text)).id for role, text in TURNS]
    Memory(store, FakeEmbedder()).forget_exchanges([ids[1]])
    assert context_rows(store, "name") == []  # only the forgotten turn said it
    assert context_rows(store, "adopted") == [ids[0], ids[2]]  # the successor is now read after the first turn


def test_turns_stored_before_the_view_existed_are_added_and_recalled(tmp_path: Path) -> None:
    conn = connect(tmp_path / "lyra.db")
    migrations.migrate(conn, upto=9)
    conn.execute("INSERT INTO sessions (id, uid, name, created_at, updated_at) VALUES (1, 'u', 'life', "
                 "'2023-05-08T13:56:00+00:00', '2023-05-08T13:56:00+00:00')")
    for n in range(30):
        conn.execute("INSERT INTO exchanges (session_id, role, content, created_at) VALUES (1, 'user', ?, ?)",
                     (f"note {n}: the cat slept all day", "2023-05-08T13:56:00+00:00"))
    for role, text in TURNS:
        conn.execute("INSERT INTO exchanges (session_id, role, content, created_at) VALUES (1, ?, ?, ?)",
                     (role, text, "2023-05-08T14:00:00+00:00"))
    conn.close()

    store = Store(tmp_path)
    memory = Memory(store, FakeEmbedder())
    memory.reembed()
    assert context_view.pending(store) == 34
    question = RecallQuery("kitten name", k=3, stages=without("answer", "neighbours"))
    before = [h.content for h in memory.recall(question)]  # recall answers meanwhile, from what there is
    assert not any(text.startswith("Pixel") for text in before)

    seen: list[tuple[int, int]] = []
    added = context_view.backfill(store, progress=lambda done, total: seen.append((done, total)), batch=10)
    assert added == 34 and seen[-1] == (34, 34) and len(seen) == 4
    assert context_view.pending(store) == 0
    after = memory.recall(question)
    pixel = next(h for h in after if h.content.startswith("Pixel"))
    assert "context" in pixel.stages
    assert context_view.backfill(store) == 0  # done once
    store.close()
