"""A reload waits for the work that uses the old models, and a closed model never loads itself again."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from lyra_local.config import Settings, load_settings
from lyra_local.llm.local import LocalEmbedder, ModelClosed
from lyra_local.llm.registry import Models
from lyra_local.web import create_app

from .conftest import EMBED_GGUF, MODELS_DIR, require_file
from .fakes import FakeChatModel, FakeEmbedder
from .sse import sse_events


class Recorder(FakeEmbedder):
    """A fake embedder that says when it was closed."""

    def __init__(self, name: str = "fake-embed") -> None:
        super().__init__(name=name)
        self.closed = threading.Event()

    def close(self) -> None:
        self.closed.set()


def closing_with(models: Models, *backends: FakeChatModel | Recorder) -> Models:
    """Backends given to ``Models`` stay the giver's: here the test closes them when the registry closes."""
    models.add_close_hook(lambda: [backend.close() for backend in backends])
    return models


def test_retired_models_close_when_their_last_lease_ends(make_settings: Callable[..., Settings]) -> None:
    chat, embed = FakeChatModel(), Recorder()
    models = closing_with(Models(make_settings(), chat=chat, embed=embed), chat, embed)  # type: ignore[arg-type]
    first, second = threading.Event(), threading.Event()

    def work(done: threading.Event) -> None:
        with models.lease():
            done.wait(10)
            models.embed.embed(["still open"])

    with ThreadPoolExecutor(2) as pool:
        runs = [pool.submit(work, first), pool.submit(work, second)]
        while models.leases < 2:
            time.sleep(0.01)
        models.retire()
        assert models.retired and not models.wait_closed(0.2) and not chat.closed
        first.set()
        runs[0].result(timeout=5)
        assert not models.wait_closed(0.2)  # one lease left
        second.set()
        runs[1].result(timeout=5)
    assert models.wait_closed(5) and chat.closed and embed.closed.is_set()
    with pytest.raises(ModelClosed):
        models.chat  # noqa: B018 - never built again
    with pytest.raises(ModelClosed):
        models.acquire()


@pytest.fixture(scope="module")
def embed_settings() -> Settings:
    return load_settings(None, env={"LYRA_MODELS_DIR": str(MODELS_DIR), "LYRA_DATA_DIR": "/tmp/lyra-unused"})


@pytest.mark.models
def test_a_closed_local_model_raises_instead_of_loading_again(embed_settings: Settings) -> None:
    spec = embed_settings.models.embed
    assert spec.backend == "local"
    model = LocalEmbedder(require_file(EMBED_GGUF), spec)
    assert model.count_tokens("hello there") > 0  # loaded
    model.close()
    for use in (lambda: model.count_tokens("hello"), lambda: model.embed(["hello"]), model.load):
        with pytest.raises(ModelClosed, match="embed model was closed"):
            use()
    never_loaded = LocalEmbedder(require_file(EMBED_GGUF), spec)
    never_loaded.close()
    with pytest.raises(ModelClosed):
        never_loaded.count_tokens("hello")
    assert never_loaded._model._llm is None  # closing did not load it, and neither did the call


@pytest.mark.models
def test_tokenizing_while_the_model_closes_never_touches_freed_memory(embed_settings: Settings) -> None:
    """``count_tokens`` takes no model lock: close must wait for it (the vocabulary goes with the model)."""
    model = LocalEmbedder(require_file(EMBED_GGUF), embed_settings.models.embed)
    model.load()
    counted, refused = [0], [0]
    stop = threading.Event()

    def tokenize() -> None:
        while not stop.is_set():
            try:
                model.count_tokens("a sentence to count, " * 50)
                counted[0] += 1
            except ModelClosed:
                refused[0] += 1
                return

    with ThreadPoolExecutor(4) as pool:
        runs = [pool.submit(tokenize) for _ in range(4)]
        while counted[0] < 20:
            time.sleep(0.001)
        model.close()
        stop.set()
        for run in runs:
            run.result(timeout=10)
    assert counted[0] >= 20 and refused[0] >= 1


@pytest.fixture
def app_on_fakes(make_settings: Callable[..., Settings]) -> Iterator[tuple[TestClient, FakeChatModel, Recorder]]:
    gate = threading.Event()

    def slow(messages: object, options: object) -> str:
        gate.wait(20)  # a reply being written while the reload happens
        return "the answer, finished on the old model"

    chat, embed = FakeChatModel(respond=slow), Recorder()
    settings = make_settings()
    models = closing_with(Models(settings, chat=chat, embed=embed), chat, embed)  # type: ignore[arg-type]
    app = create_app(settings, models=models)
    with TestClient(app, base_url="http://127.0.0.1") as client:
        client.gate = gate  # type: ignore[attr-defined]
        yield client, chat, embed


def test_a_reload_during_a_streamed_turn_closes_the_old_models_only_after_the_turn(
        app_on_fakes: tuple[TestClient, FakeChatModel, Recorder]) -> None:
    client, chat, embed = app_on_fakes
    state = client.app.state.lyra  # type: ignore[attr-defined]
    old = state.models
    sid = client.post("/api/sessions", json={"name": "reload race"}).json()["id"]

    def turn() -> list[tuple[str, dict[str, Any]]]:
        with client.stream("POST", f"/api/sessions/{sid}/chat", json={"message": "hello"}) as resp:
            return sse_events(resp.iter_lines())

    with ThreadPoolExecutor(1) as pool:
        streaming = pool.submit(turn)
        while not chat.history:  # the turn is inside the model
            time.sleep(0.01)
        assert client.post("/admin/reload").status_code == 200
        assert state.models is not old and old.retired
        assert not old.wait_closed(0.5) and not chat.closed  # the turn still holds its lease
        client.gate.set()  # type: ignore[attr-defined]
        events = streaming.result(timeout=20)
    assert "".join(data["text"] for kind, data in events if kind == "delta") == "the answer, finished on the old model"
    assert [kind for kind, _ in events if kind != "delta"] == ["stored", "done"]
    assert old.wait_closed(10) and chat.closed and embed.closed.is_set()
    with pytest.raises(ModelClosed):
        old.embed  # noqa: B018 - the old registry never loads a model again
    deadline = time.monotonic() + 30
    while state.models.leases:  # only the embedding catch-up a reload starts, and it ends
        assert time.monotonic() < deadline, "a lease on the new models was never released"
        time.sleep(0.05)


def test_a_dream_pass_and_an_import_hold_the_models_they_started_on(
        app_on_fakes: tuple[TestClient, FakeChatModel, Recorder]) -> None:
    client, chat, _ = app_on_fakes
    state = client.app.state.lyra  # type: ignore[attr-defined]
    old = state.models
    while old.leases:  # the start-up catch-up of embeddings
        time.sleep(0.01)
    dreamer = state.dreamer(state.owner_id, threading.Event())
    release_import = state.owner_runtime().hold()
    assert old.leases == 2
    state.reload()
    assert dreamer.summary is chat and not old.wait_closed(0.3)
    dreamer.close()
    assert not old.wait_closed(0.3)  # the import still runs on them
    release_import()
    release_import()  # once only
    assert old.wait_closed(10) and chat.closed
    with pytest.raises(ModelClosed):
        old.summary  # noqa: B018


def test_shutdown_closes_the_current_models(make_settings: Callable[..., Settings], tmp_path: Path) -> None:
    chat, embed = FakeChatModel(), Recorder()
    settings = make_settings()
    models = closing_with(Models(settings, chat=chat, embed=embed), chat, embed)  # type: ignore[arg-type]
    with TestClient(create_app(settings, models=models), base_url="http://127.0.0.1") as client:
        assert client.get("/api/sessions").status_code == 200
    assert models.closed and chat.closed and embed.closed.is_set()


def test_models_close_what_they_built_and_leave_given_backends_to_their_giver(embed_settings: Settings) -> None:
    shared = FakeChatModel()
    models = Models(embed_settings, chat=shared)
    built = models.embed  # a real local embedder, not loaded yet
    assert isinstance(built, LocalEmbedder)
    models.close()
    assert not shared.closed  # a test session's shared model outlives one app
    with pytest.raises(ModelClosed):
        built.count_tokens("hello")  # closed: it will not load the GGUF now
    assert built._model._llm is None
