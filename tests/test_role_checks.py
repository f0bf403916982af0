"""Each role's model is checked for its role's work before Apply writes anything.

A file that loads is not yet a model for its role: the chat GGUF loads as an
embedder and then returns one vector per token, never one per text. These tests
choose the wrong real models for a role through PUT /api/models/choice and
POST /admin/reload and see them refused with the reason, lyra.toml byte for
byte as it was and the old models serving; the right ones pass, in-process and
behind a real llama-server. Then the background re-embedding with an embedder
that fails part-way: no thread dies, GET /api/models/embedding says why, and
recall stays on the vectors it had.
"""

from __future__ import annotations

import logging
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient

from lyra_local.cli.serve import check_can_serve
from lyra_local.config import Settings, load_settings, model_file_problems
from lyra_local.errors import ConfigError, ModelUnavailable
from lyra_local.llm.base import Completion, GenerationOptions, Message, Vectors
from lyra_local.llm.registry import Models
from lyra_local.llm.role_check import chat_problem, embed_problem, rerank_problem, vector_problem
from lyra_local.memory import Memory
from lyra_local.modelfiles.roles import ROLE_HINT
from lyra_local.store import Store
from lyra_local.store.exchanges import NewExchange
from lyra_local.web import create_app
from lyra_local.web.background import retry_failed_re_embedding

from .conftest import CHAT_GGUF, EMBED_GGUF
from .fakes import FakeChatModel, FakeEmbedder
from .test_model_choice import persons_folder
from .test_rerank import NativeLlamaServer, cross_encoder_dir, rank_gguf  # noqa: F401 - its builder, reused

CHAT, EMBED = CHAT_GGUF.name, EMBED_GGUF.name
PERSONS_FILE = f"""\
data_dir = "data"
models_dir = "models"

[models.chat]
path = "{CHAT}"
n_ctx = 1024
[models.chat.sampling]
temperature = 0.0
max_tokens = 8
"""
TURNS = ["I went hiking in the Rockies in July with my sister.", "My guinea pig Oscar loves carrots.",
         "I signed up for a pottery class on Tuesdays."]


# -- the checks themselves, on scripted fakes (what each refuses) ----------------------------------------------

class Returns(FakeEmbedder):
    """An embedder that returns what it is told for a batch (per-token rows, one row, NaN, the same vector)."""

    def __init__(self, make: Callable[[int, int], Any]) -> None:
        super().__init__(dim=8)
        self.make = make

    def embed(self, texts: Sequence[str]) -> Vectors:
        return self.make(len(texts), self.dim)  # type: ignore[no-any-return]


@pytest.mark.parametrize("make, says", [
    (lambda n, d: np.ones((n, 5, d), np.float32), "one vector per token"),
    (lambda n, d: np.zeros((0, d), np.float32), "no vector for a batch of 2 texts"),
    (lambda n, d: np.eye(1, d, dtype=np.float32), "1 vectors for a batch of 2 texts"),
    (lambda n, d: np.eye(n, d + 1, dtype=np.float32), "vectors of 9 numbers but says its vectors have 8"),
    (lambda n, d: np.full((n, d), np.nan, np.float32), "not numbers"),
    (lambda n, d: np.zeros((n, d), np.float32), "all-zero vector"),
    (lambda n, d: np.ones((n, d), np.float32) / np.sqrt(d), "the same vector for two different texts"),
])
def test_an_embedder_is_refused_for_each_way_its_vectors_are_unusable(make: Any, says: str) -> None:
    problem = embed_problem(Returns(make))
    assert problem is not None and says in problem, problem


def test_a_sound_embedder_of_any_dimension_passes() -> None:
    assert embed_problem(FakeEmbedder(dim=8)) is None and embed_problem(FakeEmbedder(dim=1024)) is None
    assert vector_problem(FakeEmbedder(dim=8).embed(["a", "b", "c"]), 3, 8) is None


class Silent(FakeChatModel):
    def complete(self, messages: Sequence[Message], options: GenerationOptions | None = None) -> Completion:
        return Completion("", "stop", 5, 0)


class Scores:
    def __init__(self, scores: list[float]) -> None:
        self.scores = scores

    def rerank(self, query: str, passages: Sequence[str]) -> list[float]:
        return self.scores


def test_a_chat_model_that_generates_nothing_and_a_reranker_that_miscounts_are_refused() -> None:
    assert chat_problem(FakeChatModel()) is None
    assert chat_problem(Silent()) == "it generated no token in answer to a message"
    assert rerank_problem(Scores([0.5, -1.0])) is None  # type: ignore[arg-type]
    assert rerank_problem(Scores([0.5])) == "it returned 1 scores for two pairs"  # type: ignore[arg-type]
    assert "not all numbers" in (rerank_problem(Scores([0.5, float("nan")])) or "")  # type: ignore[arg-type]


@pytest.mark.models
def test_a_file_whose_header_rules_out_its_role_stops_every_command_before_llama_cpp_runs_it(
        make_settings: Callable[..., Settings], rank_gguf: Path) -> None:  # noqa: F811
    """`lyra serve`, `dream`, `import`, `doctor`, `models list` and a reload all start from these lines."""
    settings = make_settings(f'[models.chat]\npath = "{EMBED}"\n[models.rerank]\npath = "{CHAT}"\n'
                             f'[models.embed]\npath = "{rank_gguf}"\n')
    problems = model_file_problems(settings)
    assert problems == [
        f"models.chat: {EMBED} cannot be the chat model: it is an encoder (bert), which cannot generate text (its "
        f"pooling is MEAN; it is an embedding model) — {ROLE_HINT}",
        f"models.embed: {rank_gguf} cannot be the embedding model: its header declares rank pooling: it scores "
        f"pairs, one number each, instead of embedding texts (its pooling is RANK; it is a re-ranker) — {ROLE_HINT}",
        f"models.rerank: {CHAT} cannot be the re-ranker: its header declares no rank pooling, so it has no head to "
        f"score a pair with (it has no pooling; it is a chat model) — {ROLE_HINT}"]  # the summary, chat's: once
    with pytest.raises(ConfigError, match=f"cannot start:\n  models.chat: {EMBED} cannot be the chat model"):
        check_can_serve(settings, "127.0.0.1")
    assert model_file_problems(make_settings(f'[models.rerank]\npath = "{rank_gguf}"\n')) == []


# -- PUT /api/models/choice with the real tiny models --------------------------------------------------------

@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A person's folder (``test_model_choice.persons_folder``) with their own ``lyra.toml``."""
    persons_folder(tmp_path, monkeypatch)
    (tmp_path / "lyra.toml").write_text(PERSONS_FILE)
    return tmp_path



@pytest.fixture
def client(home: Path) -> Iterator[TestClient]:
    """The real app on ``home``'s lyra.toml, its models built as `lyra serve` builds them, three turns stored."""
    with TestClient(create_app(load_settings(home / "lyra.toml")), base_url="http://127.0.0.1") as served:
        state = served.app.state.lyra  # type: ignore[attr-defined]
        session = state.owner_runtime().store.sessions.create("chat")
        for turn in TURNS:
            state.owner_runtime().memory.remember(session.id, "user", turn)
        yield served


def choose(client: TestClient, **roles: Any) -> Any:
    return client.put("/api/models/choice", json={"roles": roles})


def embedding(client: TestClient) -> dict[str, Any]:
    body: dict[str, Any] = client.get("/api/models/embedding").json()
    return body


def embedding_once(client: TestClient, ready: Callable[[dict[str, Any]], bool], seconds: float) -> dict[str, Any]:
    """GET /api/models/embedding until ``ready`` says so or ``seconds`` pass; the last answer."""
    deadline = time.monotonic() + seconds
    while not ready(shown := embedding(client)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return shown


def recalls(client: TestClient) -> str:
    """The best hit of a dense recall: the embedder answers, and recall uses its vectors."""
    hits = client.get("/api/recall", params={"q": "a small pet that eats vegetables", "mode": "dense"}).json()["hits"]
    return str(hits[0]["content"])


def refused(client: TestClient, home: Path, says: Sequence[str], **roles: Any) -> None:
    """The choice is refused (400) saying ``says``; lyra.toml and the running models are as they were."""
    state = client.app.state.lyra  # type: ignore[attr-defined]
    running = state.models
    resp = choose(client, **roles)
    assert resp.status_code == 400, resp.text
    message = resp.json()["error"]["message"]
    assert message.startswith(f"not applied ({home / 'lyra.toml'} is unchanged, the running models keep serving)")
    assert all(part in message for part in says), message
    assert (home / "lyra.toml").read_bytes() == PERSONS_FILE.encode()
    assert sorted(os.listdir(home)) == ["data", "lyra.toml", "models"]  # no temporary file left either
    assert state.models is running and not running.retired


@pytest.mark.models
def test_the_chat_gguf_is_refused_as_the_embedding_model_and_the_old_embedder_keeps_answering(
        client: TestClient, home: Path) -> None:
    assert recalls(client) == TURNS[1]
    refused(client, home, [f"{CHAT} cannot be the embedding model: it returned no vector for a batch of two texts",
                           "(it has no pooling; it is a chat model)"], embed={"file": CHAT})
    assert embedding(client)["model"] == embedding(client)["in_use"] == EMBED_GGUF.stem
    assert embedding(client)["missing"] == 0
    assert recalls(client) == TURNS[1]


@pytest.mark.models
def test_the_embedding_gguf_is_refused_as_the_chat_model(client: TestClient, home: Path) -> None:
    refused(client, home, [f"{EMBED} cannot be the chat model: it is an encoder (bert), which cannot generate text",
                           "it is an embedding model"], chat={"file": EMBED})
    refused(client, home, [f"{EMBED} cannot be the summary model"], summary={"file": EMBED})
    resp = client.post("/v1/chat/completions", json={"messages": [{"role": "user", "content": "Say hello."}]})
    assert resp.status_code == 200 and resp.json()["choices"][0]["message"]["content"].strip()


@pytest.mark.models
def test_a_reload_refuses_the_wrong_embedder_written_by_hand(client: TestClient, home: Path) -> None:
    """POST /admin/reload (and SIGHUP, which calls the same reload) after lyra.toml was edited by hand."""
    state = client.app.state.lyra  # type: ignore[attr-defined]
    running = state.models
    (home / "lyra.toml").write_text(PERSONS_FILE + f'\n[models.embed]\npath = "{CHAT}"\n')
    resp = client.post("/admin/reload")
    assert resp.status_code == 500, resp.text  # ReloadRefused is a ConfigError, as any reload refusal
    assert f"{CHAT} cannot be the embedding model" in resp.json()["error"]["message"]
    assert state.models is running and recalls(client) == TURNS[1]


@pytest.mark.models
def test_the_right_models_are_accepted_and_a_new_embedder_re_embeds_then_switches(
        client: TestClient, home: Path) -> None:
    shutil.copyfile(EMBED_GGUF, home / "models" / "minilm-copy.gguf")
    resp = choose(client, embed={"file": "minilm-copy.gguf"}, chat={"file": CHAT, "n_ctx": 2048})
    assert resp.status_code == 200, resp.text
    assert embedding_once(client, lambda e: e["state"] == "done", 60) == {
        "model": "minilm-copy", "in_use": "minilm-copy", "missing": 0, "state": "done", "error": None,
        "embedded": len(TURNS)}
    assert recalls(client) == TURNS[1]


@pytest.mark.models
def test_a_reranker_is_checked_for_rank_pooling_and_scores(client: TestClient, home: Path,
                                                           rank_gguf: Path) -> None:  # noqa: F811
    shutil.copyfile(rank_gguf, home / "models" / "tiny-rank.gguf")
    refused(client, home, [f"{EMBED} cannot be the re-ranker: its header declares no rank pooling",
                           "it is an embedding model"], rerank={"file": EMBED})
    refused(client, home, [f"{CHAT} cannot be the re-ranker", "it is a chat model"], rerank={"file": CHAT})
    refused(client, home, ["tiny-rank.gguf cannot be the embedding model: its header declares rank pooling",
                           "it is a re-ranker"], embed={"file": "tiny-rank.gguf"})
    resp = choose(client, rerank={"file": "tiny-rank.gguf", "n_ctx": 512})
    assert resp.status_code == 200, resp.text
    assert client.app.state.lyra.models.rerank.name == "tiny-rank"  # type: ignore[attr-defined]


# -- a role behind a real llama-server on loopback ------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.models
def test_a_server_backed_embedder_is_checked_the_same_way(client: TestClient, home: Path,
                                                          tmp_path_factory: pytest.TempPathFactory) -> None:
    logs = tmp_path_factory.mktemp("servers")  # not in home, whose files the refusal checks
    chat = NativeLlamaServer(CHAT_GGUF, logs / "chat-server.log", "--embeddings")
    try:
        refused(client, home, [f"the model 'smollm2' at {chat.url} cannot be the embedding model: it could not "
                               "embed a batch of two texts: model server refused the request: HTTP 400",
                               "Pooling type 'none'"], embed={"base_url": chat.url, "model": "smollm2"})
    finally:
        chat.stop()
    embed = NativeLlamaServer(EMBED_GGUF, logs / "embed-server.log", "--embeddings")
    try:
        resp = choose(client, embed={"base_url": embed.url, "model": "minilm"})
        assert resp.status_code == 200, resp.text
        shown = embedding_once(client, lambda e: e["state"] == "done", 60)
        assert shown["in_use"] == f"minilm@{embed.url}" and shown["missing"] == 0
        assert recalls(client) == TURNS[1]
    finally:
        embed.stop()


# -- the background re-embedding with an embedder that fails part-way ------------------------------------------

class FailsAfter(FakeEmbedder):
    """Embeds its first ``good`` batches, then fails the way ``fail`` says (raises, or returns unusable rows)."""

    def __init__(self, good: int, fail: Callable[[int, int], Vectors]) -> None:
        super().__init__(name="new-embed")
        self.good = good
        self.fail = fail

    def embed(self, texts: Sequence[str]) -> Vectors:
        if len(self.calls) >= self.good:
            self.calls.append(list(texts))
            return self.fail(len(texts), self.dim)
        return super().embed(texts)


def raises(exc: Exception) -> Callable[[int, int], Vectors]:
    def fail(n: int, d: int) -> Vectors:
        raise exc
    return fail


def remembered_by_old_embed(settings: Settings, texts: list[str]) -> None:
    """``texts`` as the person's turns of one conversation, embedded by "old-embed", the store closed again: the
    app then starts on another embedder and re-embeds them."""
    store = Store(settings.data_dir)
    session = store.sessions.create("chat")
    Memory(store, FakeEmbedder(name="old-embed")).remember_many([NewExchange(session.id, "user", t) for t in texts])
    store.close()


@pytest.mark.parametrize("fail, says", [
    (raises(ModelUnavailable("embedding model server http://gpu-box:8081 failed 3 times")), "failed 3 times"),
    (lambda n, d: np.ones((n - 1, d), np.float32), "failed after 64 vector(s): it returned 63 vectors for a batch "
                                                   "of 64 texts"),
    (raises(RuntimeError("llama_decode returned -3")), "RuntimeError: llama_decode returned -3"),
])
def test_an_embedder_failing_part_way_is_reported_and_no_thread_dies(
        make_settings: Callable[..., Settings], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture, fail: Callable[[int, int], Vectors], says: str) -> None:
    settings = make_settings()
    remembered_by_old_embed(settings, [f"turn {n} about hiking and carrots" for n in range(200)])
    died: list[BaseException | None] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: died.append(args.exc_value))
    embedder = FailsAfter(good=1, fail=fail)
    models = Models(settings, chat=FakeChatModel(), embed=embedder)  # type: ignore[arg-type]
    with caplog.at_level(logging.INFO), \
            TestClient(create_app(settings, models=models), base_url="http://127.0.0.1") as client:
        shown = embedding_once(client, lambda e: e["state"] not in ("idle", "running"), 30)
        assert shown["state"] == "failed" and says in shown["error"], shown
        assert shown["model"] == "new-embed" and shown["in_use"] == "old-embed"
        assert shown["missing"] == 200 - 64 and shown["embedded"] == 64  # the first batch kept, the rest to do
        hits = client.get("/api/recall", params={"q": "hiking"}).json()["hits"]
        assert hits  # recall answers (by words, until every tier has the new vectors)
    assert died == []
    reported = [r for r in caplog.records if "background re-embedding with new-embed stopped" in r.getMessage()]
    assert len(reported) == 1 and says in reported[0].getMessage()
    assert len(embedder.calls) == 2  # it stopped at the failing batch, no retry loop


@pytest.mark.models
def test_the_chat_gguf_configured_by_hand_as_embedder_fails_the_re_embedding_with_the_reason(
        make_settings: Callable[..., Settings], monkeypatch: pytest.MonkeyPatch) -> None:
    """The defect as found: the server starts on a lyra.toml naming the chat GGUF as embedder (no Apply ran)."""
    settings = make_settings(f'[models.embed]\npath = "{CHAT}"\nn_ctx = 512\n[models.chat]\npath = "{CHAT}"\n')
    remembered_by_old_embed(settings, TURNS)
    died: list[BaseException | None] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: died.append(args.exc_value))
    with TestClient(create_app(settings), base_url="http://127.0.0.1") as client:
        shown = embedding_once(client, lambda e: e["state"] not in ("idle", "running"), 60)
        assert shown["state"] == "failed" and "only one per token" in shown["error"], shown
        assert shown["in_use"] == "old-embed" and shown["missing"] == len(TURNS)
    assert died == []


class Outage(FakeEmbedder):
    """An embedder behind a server that goes down after the first batch, until ``back`` is set."""

    def __init__(self) -> None:
        super().__init__(name="new-embed")
        self.back = threading.Event()

    def embed(self, texts: Sequence[str]) -> Vectors:
        if self.calls and not self.back.is_set():
            self.calls.append(list(texts))
            raise ModelUnavailable("embedding model server http://gpu-box:8081 failed 3 times")
        return super().embed(texts)


def test_a_failed_re_embedding_is_tried_again_said_once_and_switches_once_the_model_is_back(
        make_settings: Callable[..., Settings], caplog: pytest.LogCaptureFixture) -> None:
    settings = make_settings()
    remembered_by_old_embed(settings, [f"turn {n} about hiking" for n in range(100)])
    embedder = Outage()
    models = Models(settings, chat=FakeChatModel(), embed=embedder)  # type: ignore[arg-type]

    def settles(client: TestClient, calls: int) -> dict[str, Any]:
        return embedding_once(client, lambda e: len(embedder.calls) >= calls and e["state"] != "running", 30)

    with caplog.at_level(logging.INFO), \
            TestClient(create_app(settings, models=models), base_url="http://127.0.0.1") as client:
        state = client.app.state.lyra  # type: ignore[attr-defined]
        assert settles(client, 2)["state"] == "failed"
        retry_failed_re_embedding(state)  # as the server does every REEMBED_RETRY_S
        shown = settles(client, 3)
        assert shown["state"] == "failed" and shown["in_use"] == "old-embed" and shown["missing"] == 100 - 64
        embedder.back.set()
        retry_failed_re_embedding(state)
        assert embedding_once(client, lambda e: e["state"] == "done", 30) == {
            "model": "new-embed", "in_use": "new-embed", "missing": 0, "state": "done", "error": None,
            "embedded": 100 - 64}
    said = [r for r in caplog.records if r.levelno == logging.ERROR and "re-embedding with new-embed" in r.getMessage()]
    assert len(said) == 1  # the second failure, alike, is not said again


@pytest.mark.slow
def test_settings_says_a_failed_re_embedding_and_its_reason_in_the_browser(
        make_settings: Callable[..., Settings], tmp_path: Path) -> None:
    """The page followed the count every 3 s for ever ("N left"); it now says the run failed, why, and what
    recall uses meanwhile (a real uvicorn and Chromium over fake models)."""
    from playwright.sync_api import expect, sync_playwright

    from .test_web_ui import chromium
    from .threaded_server import serve_in_thread

    settings = make_settings()
    remembered_by_old_embed(settings, [f"turn {n} about hiking and carrots" for n in range(100)])
    failing = FailsAfter(good=0, fail=raises(ModelUnavailable("embedding model server http://gpu-box:8081 failed "
                                                              "3 times")))
    models = Models(settings, chat=FakeChatModel(), embed=failing)  # type: ignore[arg-type]
    with serve_in_thread(create_app(settings, models=models)) as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium(), args=["--no-sandbox"])
        try:
            page = browser.new_page()
            page.goto(url)
            page.click(".tab[data-panel=settings]")
            line = page.locator("#embed-progress")
            expect(line).to_contain_text("Re-embedding your memories with new-embed failed", timeout=30_000)
            expect(line).to_contain_text("failed 3 times")
            expect(line).to_contain_text("100 left")
            expect(line).to_contain_text("recall uses old-embed meanwhile")
            expect(line).to_have_class("hint warning")
        finally:
            browser.close()
