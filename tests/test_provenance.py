"""Provenance and its guarantees, on a real store: ids never reused, no orphan vectors, no stale writes."""

from __future__ import annotations

import numpy as np
import pytest

from lyra_local.store import Store
from lyra_local.store.derived import Made
from lyra_local.store.exchanges import NewExchange
from lyra_local.store.forget.erase import forget_exchanges
from lyra_local.store.provenance import StaleSources, dependents

VECTOR = np.ones(4, dtype=np.float32) / 2


def turns(store: Store, texts: list[str]) -> tuple[int, list[int]]:
    session = store.sessions.create("s")
    with store.write() as conn:
        rows = store.exchanges.insert(conn, [NewExchange(session.id, "user", t) for t in texts], None, None)
    return session.id, [r.id for r in rows]


def test_ids_are_never_reused(store: Store) -> None:
    _, ids = turns(store, ["one", "two"])
    forget_exchanges(store, [ids[-1]])
    _, again = turns(store, ["three"])
    assert again[0] > ids[-1]


def test_no_vector_is_stored_for_a_row_that_is_gone(store: Store) -> None:
    _, ids = turns(store, ["hello"])
    forget_exchanges(store, ids)
    store.exchanges.set_vector(ids[0], VECTOR, "m")  # a background embedder finishing late
    assert store.conn().execute("SELECT count(*) FROM embeddings").fetchone()[0] == 0


def test_a_gist_drafted_from_a_forgotten_turn_is_not_written(store: Store) -> None:
    session, ids = turns(store, ["my code is 4471", "and the bike is blue"])
    forget_exchanges(store, [ids[0]])
    with pytest.raises(StaleSources):
        store.derived.put_gist(session, "The code was 4471.", ids[-1], read=ids)
    assert store.derived.gist(session) is None


def test_forgetting_follows_the_chain_of_what_was_built_from_what(store: Store) -> None:
    session, ids = turns(store, ["I moved to Lisbon", "nice"])
    gist = store.derived.put_gist(session, "Moved to Lisbon.", ids[-1], read=ids)
    [fact] = store.derived.apply_facts(gist, [("home city", "Lisbon", ids[0])], "2024-01-01T00:00:00+00:00")
    digest = store.derived.put_digest("day", "2024-01-01", "Moved.", 1, made=Made(sources=[("gist", gist.id)]))
    narrative = store.derived.set_narrative("A move.", sources=[("fact", fact.id), ("digest", digest.id)])
    state = store.derived.set_self_state({"mood": "glad"}, sources=[("narrative", narrative)])
    world = store.coord.write_world("# Now\n- Lisbon", "dream", status="proposed", sources=[("narrative", narrative)])
    user_world = store.coord.write_world("# Mine", "user")
    found = dependents(store.conn(), [("exchange", ids[0])])
    assert {k: sorted(v) for k, v in found.items() if k != "exchange"} == {
        "gist": [gist.id], "fact": [fact.id], "digest": [digest.id], "narrative": [narrative],
        "self_state": [state], "world": [world.id]}

    done = forget_exchanges(store, [ids[0]])
    assert {k: n for k, n in done.derived.items() if n} == {"gist": 1, "fact": 1, "digest": 1, "narrative": 1,
                                                             "self_state": 1, "world": 1}
    assert store.derived.profile() == [] and store.derived.narrative() is None and store.derived.self_state() is None
    assert [w.id for w in store.coord.world_history()] == [user_world.id]  # the person's own version stays
    assert store.conn().execute("SELECT count(*) FROM provenance").fetchone()[0] == 0
