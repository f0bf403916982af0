"""Changing the embedding model re-embeds gists and digests too, not just turns (fake embedders, real store)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from lyra_local.cli import main
from lyra_local.config import Settings
from lyra_local.llm.registry import Models
from lyra_local.memory import Memory, RecallQuery
from lyra_local.memory.reembed import Superseded
from lyra_local.store import Store, reembedding
from lyra_local.store.blobs import put_vector
from lyra_local.web import create_app

from .conftest import MODELS_DIR
from .fakes import FakeChatModel, FakeEmbedder
from .test_dream import add_session


def vectors(store: Store, tier: str, model: str) -> int:
    return int(store.conn().execute("SELECT count(*) FROM embeddings WHERE tier = ? AND model = ?",
                                    (tier, model)).fetchone()[0])


def planted(store: Store, old: FakeEmbedder) -> tuple[int, int]:
    """A session, its gist and a day digest, all with vectors of the ``old`` model only."""
    Memory(store, old)  # the old model is the active one
    sid = add_session(store, "garden", "2024-05-02", ["the tomatoes on the balcony", "lovely"])
    last = store.exchanges.history(sid)[-1].id
    with store.write() as conn:
        for e in store.exchanges.history(sid):
            put_vector(conn, "exchange", old.name, e.id, old.embed([e.content])[0])
    gist_text = "Sam grows tomatoes on the balcony"
    gist = store.derived.put_gist(sid, gist_text, last, old.embed([gist_text])[0], old.name)
    digest_text = "A day of gardening: balcony tomatoes"
    digest = store.derived.put_digest("day", "2024-05-02", digest_text, 1, old.embed([digest_text])[0], old.name)
    return gist.id, digest.id


def test_switching_the_embedding_model_embeds_gists_and_digests_before_switching(store: Store) -> None:
    old, new = FakeEmbedder(name="old-embed"), FakeEmbedder(name="new-embed")
    gist_id, digest_id = planted(store, old)
    memory = Memory(store, new)
    assert memory.switching_model and memory.active_model == "old-embed"
    assert reembedding.count_missing(store, "new-embed") == {"exchange": 2, "gist": 1, "digest": 1}

    seen: list[tuple[int, int]] = []
    assert memory.reembed(progress=lambda done, total: seen.append((done, total))) == 4
    assert seen[-1] == (4, 4)
    assert not memory.switching_model and memory.active_model == "new-embed"
    assert {tier: vectors(store, tier, "new-embed") for tier in ("exchange", "gist", "digest")} == \
        {"exchange": 2, "gist": 1, "digest": 1}
    assert not reembedding.any_missing(store, "new-embed")

    gists = memory.recall(RecallQuery("balcony tomatoes", tier="gist", mode="dense"))
    assert [h.id for h in gists] == [gist_id]  # dense recall over gists, with the new model's vectors
    digests = memory.recall(RecallQuery("gardening", tier="digest", mode="dense"))
    assert [h.id for h in digests] == [digest_id]
    assert memory.reembed() == 0  # nothing left to do


def test_a_row_rewritten_or_forgotten_while_it_was_embedded_gets_no_vector(store: Store) -> None:
    old = FakeEmbedder(name="old-embed")
    gist_id, _ = planted(store, old)
    pending = reembedding.missing(store, "gist", "new-embed")
    assert [p.id for p in pending] == [gist_id]
    sid = store.conn().execute("SELECT session_id FROM gists WHERE id = ?", (gist_id,)).fetchone()[0]
    store.derived.put_gist(sid, "rewritten meanwhile", pending[0].id)  # a dream pass rewrote it, no vector
    assert reembedding.put_current(store, "new-embed", pending, FakeEmbedder().embed([pending[0].text])) == 0
    assert vectors(store, "gist", "new-embed") == 0
    turns = reembedding.missing(store, "exchange", "new-embed")
    Memory(store, old).forget_session(sid)  # forgotten while the batch was being embedded
    assert reembedding.put_current(store, "new-embed", turns, FakeEmbedder().embed([t.text for t in turns])) == 0
    assert vectors(store, "exchange", "new-embed") == 0


def test_a_superseded_reembedding_stops_between_batches_and_does_not_switch(store: Store) -> None:
    planted(store, FakeEmbedder(name="old-embed"))
    memory = Memory(store, FakeEmbedder(name="new-embed"))
    with pytest.raises(Superseded):
        memory.reembed(stop=lambda: True)
    assert memory.active_model == "old-embed"


@pytest.mark.models  # `lyra reindex` with the default embedding model
def test_lyra_reindex_embeds_every_tier_with_the_configured_model(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    store = Store(data)
    planted(store, FakeEmbedder(name="old-embed"))
    store.close()
    for key, value in {"LYRA_DATA_DIR": str(data), "LYRA_MODELS_DIR": str(MODELS_DIR),
                       "LYRA_DREAM__ENABLED": "false"}.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("LYRA_CONFIG", raising=False)
    assert main(["reindex"]) == 0  # the real default embedding model
    out = capsys.readouterr().out
    store = Store(data)
    model = store.get_meta("embed_model")
    assert model and model != "old-embed"
    assert {tier: vectors(store, tier, model) for tier in ("exchange", "gist", "digest")} == \
        {"exchange": 2, "gist": 1, "digest": 1}
    assert "4 vector(s)" in out and "2 turn(s), 1 gist(s), 1 digest(s)" in out
    store.close()


def test_a_reload_to_another_embedding_model_reembeds_every_tier_in_the_server(
        make_settings: Callable[..., Settings]) -> None:
    settings = make_settings()
    store = Store(settings.data_dir)
    gist_id, digest_id = planted(store, FakeEmbedder(name="fake-embed"))
    store.close()
    app = create_app(settings, models=Models(settings, chat=FakeChatModel(), embed=FakeEmbedder()))
    assert settings.config_file is not None
    settings.config_file.write_text(  # the real default embedding model from now on
        f'data_dir = "{settings.data_dir}"\nmodels_dir = "{MODELS_DIR}"\n[dream]\nenabled = false\n')
    with TestClient(app, base_url="http://127.0.0.1") as client:
        state = client.app.state.lyra  # type: ignore[attr-defined]
        assert client.post("/admin/reload").status_code == 200
        deadline = time.monotonic() + 60
        while state.owner_runtime().store.get_meta("embed_model") == "fake-embed":
            assert time.monotonic() < deadline, "the server did not switch to the new embedding model"
            time.sleep(0.1)
        model = state.owner_runtime().store.get_meta("embed_model")
        assert {tier: vectors(state.owner_runtime().store, tier, model) for tier in ("exchange", "gist", "digest")} == \
            {"exchange": 2, "gist": 1, "digest": 1}
        hits = client.get("/api/recall", params={"q": "tomatoes on the balcony", "tier": "gist",
                                                 "mode": "dense"}).json()["hits"]
        assert [h["id"] for h in hits] == [gist_id]
        hits = client.get("/api/recall", params={"q": "a day of gardening", "tier": "digest",
                                                 "mode": "dense"}).json()["hits"]
        assert [h["id"] for h in hits] == [digest_id]
