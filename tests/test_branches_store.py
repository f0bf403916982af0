"""What a regenerate or an edit does to what was built from the turns it sets aside (``store/branches.py``)."""

from __future__ import annotations

from lyra_local.store import Store, provenance
from lyra_local.store.branches import set_aside
from lyra_local.store.derived import Made
from lyra_local.store.exchanges import NewExchange


def test_setting_turns_aside_makes_the_dreams_memories_stale_and_keeps_the_rest(store: Store) -> None:
    session = store.sessions.create("trip", created_at="2024-03-04T09:00:00+00:00")
    other = store.sessions.create("work", created_at="2024-03-04T12:00:00+00:00")
    with store.write() as conn:
        turns = store.exchanges.insert(conn, [NewExchange(session.id, role, text, f"2024-03-04T09:0{i}:00+00:00")
                                              for i, (role, text) in enumerate([("user", "I fly to Lisbon."),
                                                                                ("assistant", "Pack light.")])],
                                       None, None)
        elsewhere = store.exchanges.insert(conn, [NewExchange(other.id, "user", "Busy week.",
                                                              "2024-03-04T12:00:00+00:00")], None, None)
    ids = [t.id for t in turns]
    gist = store.derived.put_gist(session.id, "Flying to Lisbon; told to pack light.", ids[-1], read=ids)
    kept_gist = store.derived.put_gist(other.id, "A busy week.", elsewhere[0].id, read=[elsewhere[0].id])
    day = store.derived.put_digest("day", "2024-03-04", "Lisbon plans; a busy week.", 2,
                                   made=Made(sources=[("gist", gist.id), ("gist", kept_gist.id)]))
    theirs = store.derived.put_digest("week", "2024-W10", "My Lisbon week.", 1,
                                      made=Made(sources=[("gist", gist.id)], method="user"))
    legacy = store.derived.set_narrative("An arc from before provenance.")  # built from who knows what (ANY)
    said = store.derived.set_fact("home city", "Lisbon", source_session_id=session.id)
    with store.write() as conn:
        provenance.record(conn, "fact", said.id, [("exchange", ids[-1])])  # as if drawn from the reply
        assert set_aside(conn, session.id, ids[-1]) == [ids[-1]]
    assert store.derived.profile() == []  # a fact drawn from a turn set aside is forgotten ...
    legacy_sources = store.conn().execute("SELECT source_kind, source_id FROM provenance WHERE kind = 'narrative' "
                                          "AND item_id = ?", (legacy,)).fetchall()
    assert [tuple(r) for r in legacy_sources] == [provenance.ANY]  # ... and the legacy arc keeps its mark
    assert store.derived.gist(session.id) is None  # stale: the dream writes it again from the path as it is
    assert store.derived.gist(other.id) == kept_gist
    digests = {(d.granularity, d.period): d for d in store.derived.digests()}
    assert ("day", "2024-03-04") not in digests and digests[("week", "2024-W10")].content == theirs.content
    assert store.derived.narrative() == "An arc from before provenance."  # a regenerate is not a forget
    assert legacy and day.id
    assert [t.content for t in store.exchanges.history(session.id)] == ["I fly to Lisbon."]
