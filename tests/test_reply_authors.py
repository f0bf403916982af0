"""Who wrote a reply is stored with it (``exchanges.author``, migration m016) and read by one rule
(``authors.author_of``): a reply Lyra wrote in a conversation imported from ChatGPT is Lyra's in the summary's
floor too, and a store migrated to authors credits to ChatGPT only the replies it imported.

The real store (SQLite) and the real floor; the scripted fake embedder."""

from __future__ import annotations

from pathlib import Path

from lyra_local.authors import author_at_import, author_of
from lyra_local.mind.grounding.sources import Ground
from lyra_local.store import Store, migrations
from lyra_local.store.db import connect
from lyra_local.store.exchanges import NewExchange

from .fakes import FakeEmbedder

AT = "2024-01-02T10:00:{:02d}+00:00"
ADVICE = "Of course. A good interview answer starts with a short story about a patient you helped through a night."
SUIT = "A plain dark suit is always a safe choice for an interview at a hospital."


def test_one_rule_for_who_wrote_a_turn() -> None:
    lyra, chatgpt = NewExchange(1, "assistant", "Hi"), NewExchange(1, "assistant", "Hi", author="ChatGPT")
    assert (author_of(lyra, "Lyra"), author_of(chatgpt, "Lyra")) == ("Lyra", "ChatGPT")
    assert author_at_import("assistant", "chatgpt", "0f3c2a9e-5b1d-4c7e-9a2f-1d2e3f4a5b6c") == "ChatGPT"
    assert author_at_import("assistant", "chatgpt", "a1b2c3d4e5f6:13") is None  # a Lyra export's id: written here
    assert author_at_import("assistant", "chatgpt", None) is None
    assert author_at_import("user", "chatgpt", "c1-m0") is None
    assert author_at_import("assistant", "lyra", "c1-m1") is None


def test_the_migration_credits_to_chatgpt_only_the_replies_it_imported(tmp_path: Path) -> None:
    conn = connect(tmp_path / "lyra.db")
    before = next(i for i, m in enumerate(migrations.MIGRATIONS) if m.__name__ == "m016_reply_authors")
    migrations.migrate(conn, upto=before)
    conn.executescript("""
        INSERT INTO sessions (id, uid, name, created_at, updated_at, source, source_id) VALUES
            (1, 'u1', 'Interview prep', '2024-01-02T10:00:00+00:00', '2024-01-02T10:00:00+00:00', 'chatgpt', 'c1'),
            (2, 'u2', 'mine', '2024-01-02T10:00:00+00:00', '2024-01-02T10:00:00+00:00', 'lyra', NULL);
        INSERT INTO exchanges (id, session_id, role, content, created_at, source_id) VALUES
            (1, 1, 'user', 'Hi', '2024-01-02T10:00:00+00:00', 'c1-m0'),
            (2, 1, 'assistant', 'Hello', '2024-01-02T10:00:01+00:00', '0f3c2a9e-5b1d-4c7e-9a2f-1d2e3f4a5b6c'),
            (3, 1, 'user', 'Thanks', '2024-01-02T10:00:02+00:00', NULL),
            (4, 1, 'assistant', 'Any time', '2024-01-02T10:00:03+00:00', NULL),
            (5, 1, 'user', 'Again', '2024-01-02T10:00:04+00:00', 'a1b2c3d4e5f6:5'),
            (6, 1, 'assistant', 'Sure', '2024-01-02T10:00:05+00:00', 'a1b2c3d4e5f6:6'),
            (7, 2, 'user', 'Hi', '2024-01-02T10:00:06+00:00', 'x:1'),
            (8, 2, 'assistant', 'Hello', '2024-01-02T10:00:07+00:00', 'x:2');
        INSERT INTO asides (id, session_id, parent_id, role, content, created_at, source_id, set_aside_seq) VALUES
            (9, 1, 1, 'assistant', 'Hey', '2024-01-02T10:00:01+00:00', 'c1-m1b', 1);
    """)
    conn.close()
    store = Store(tmp_path)
    try:
        authors = {e.id: e.author for s in (1, 2) for e in store.exchanges.history(s)}
        assert authors == {1: None, 2: "ChatGPT", 3: None, 4: None, 5: None, 6: None, 7: None, 8: None}
        assert store.conn().execute("SELECT author FROM asides WHERE id = 9").fetchone()[0] == "ChatGPT"
    finally:
        store.close()


def ground(store: Store) -> Ground:
    embedder = FakeEmbedder()
    return Ground(store, embedder.embed, embedder.name, lambda text: len(text.split()),
                  {"user": "Maya", "name": "Lyra"}, 400)


def test_a_reply_lyra_wrote_after_an_imported_conversation_is_lyras_in_the_summary(store: Store) -> None:
    session = store.sessions.create("Interview prep", source="chatgpt", source_id="c1")
    with store.write() as conn:
        store.exchanges.insert(conn, [
            NewExchange(session.id, "user", "I have an interview on 2 May for a ward manager job", AT.format(0),
                        source_id="c1-m0"),
            NewExchange(session.id, "assistant", ADVICE, AT.format(1), source_id="c1-m1", author="ChatGPT"),
            NewExchange(session.id, "user", "i work night shifts as a nurse so im always tired", AT.format(2)),
            NewExchange(session.id, "assistant", SUIT, AT.format(3))], None, None)
    turns = store.exchanges.history(session.id)
    said = ground(store).said(turns)
    assert [(s.who, s.weight, s.when) for s in said] == [
        ("Maya", 1.0, "2 January 2024"), ("ChatGPT", 0.5, "2 January 2024"), ("Maya", 1.0, "2 January 2024"),
        ("Lyra", 0.5, "2 January 2024")]  # a reply weighs less than the person's own words

    floor = ground(store).gist(None, turns, "Interview prep")
    assert floor.method == "extractive"
    assert f"Lyra, 2 January 2024: “{SUIT}”" in floor.text and f"ChatGPT, 2 January 2024: “{SUIT}”" \
        not in floor.text
    assert f"ChatGPT, 2 January 2024: “{ADVICE.removeprefix('Of course. ')}”" in floor.text
    assert "Lyra, 2 January 2024: “A good interview" not in floor.text  # ChatGPT's advice was never Lyra's
