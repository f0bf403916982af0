"""The optional re-ranker role: a cross-encoder GGUF, in-process and behind llama.cpp's own server.

No reranking GGUF ships in a PyPI package, so the tests build one: the default
embedding model's BERT with a classification head of seeded random weights on
its pooler, converted by ``lyra models convert-bert`` (the ``gguf`` library).
**Its scores say nothing about relevance.** What the tests prove is the
plumbing: llama.cpp computes on the pair ``[CLS] query [SEP] passage [SEP]``
exactly the head that a NumPy BERT computes, in-process and on llama-server
alike, and recall re-orders its best candidates by those scores.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import gguf
import numpy as np
import pytest
from safetensors.numpy import load_file, save_file
from tokenizers import Tokenizer

from lyra_local.config import LocalModel, ServerModel, model_file_problems
from lyra_local.diagnostics import _model_check
from lyra_local.llm.local_rerank import LocalReranker, PairFormat
from lyra_local.llm.registry import Models
from lyra_local.llm.server import ServerBackend
from lyra_local.memory import Memory
from lyra_local.memory.recall import RecallQuery, without
from lyra_local.modelfiles.bert_gguf import convert_bert
from lyra_local.store import Store
from lyra_local.store.exchanges import NewExchange

from .conftest import EMBED_SOURCE, REPO, free_port, require_file, wait_until_up
from .fakes import FakeEmbedder
from .test_bert_gguf import reference_states

LLAMA_SERVER = Path(os.environ.get("LLAMA_SERVER")  # absolute: a test that moves into a folder of its own finds it
                    or REPO / ".venv" / "llama-server" / "bin" / "llama-server").absolute()
QUESTION = "Where did Caroline go hiking last summer?"
PASSAGES = [
    "We went hiking in the Rockies in July, the views were unreal.",
    "My guinea pig Oscar loves carrots.",
    "I signed up for a pottery class on Tuesdays.",
    "Caroline told me the trail near Boulder was her favourite.",
    "The quarterly report shows revenue grew by 12 percent.",
    "hey! how r u",
]


def test_a_pair_is_joined_as_llama_cpp_joins_it() -> None:
    bert = PairFormat(bos=101, eos=102, sep=None)  # [CLS] q [SEP] p [SEP]: a BERT vocabulary adds [SEP] as EOS
    assert bert.join([1, 2], [3, 4, 5], limit=512) == [101, 1, 2, 102, 3, 4, 5, 102]
    assert PairFormat(bos=1, eos=None, sep=9).join([2], [3], limit=512) == [1, 2, 9, 3]  # only what it adds
    xlm_roberta = PairFormat(bos=0, eos=2, sep=2)  # <s> q </s></s> p </s>
    assert xlm_roberta.join([1, 2], [3], limit=512) == [0, 1, 2, 2, 2, 3, 2]
    cut = xlm_roberta.join(list(range(10, 30)), list(range(40, 80)), limit=16)
    assert len(cut) == 16 and cut[:2] == [0, 10] and cut[-1] == 2 and 40 in cut  # both sides kept, the passage cut


@pytest.fixture(scope="module")
def cross_encoder_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """MiniLM as a ``BertForSequenceClassification``: its own pooler, and a seeded random classifier on it."""
    source = require_file(EMBED_SOURCE / "model.safetensors").parent
    out = tmp_path_factory.mktemp("cross-encoder")
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        shutil.copy(source / name, out / name)
    config = json.loads((source / "config.json").read_text())
    config.update(architectures=["BertForSequenceClassification"], id2label={"0": "LABEL_0"})
    (out / "config.json").write_text(json.dumps(config))
    weights = load_file(str(source / "model.safetensors"))
    rng = np.random.default_rng(26)
    weights["classifier.weight"] = rng.normal(0.0, 0.3, (1, config["hidden_size"])).astype(np.float32)
    weights["classifier.bias"] = np.array([0.1], dtype=np.float32)
    save_file(weights, str(out / "model.safetensors"))
    return out


@pytest.fixture(scope="module")
def rank_gguf(cross_encoder_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("rank") / "tiny-rank.gguf"
    convert_bert(cross_encoder_dir, out, name="tiny-rank")
    return out


@pytest.fixture(scope="module")
def reranker(rank_gguf: Path) -> Iterator[LocalReranker]:
    model = LocalReranker(rank_gguf, LocalModel(path=rank_gguf, n_ctx=512, n_batch=512, n_ubatch=512))
    yield model
    model.close()


@pytest.mark.models
def test_a_cross_encoder_converts_to_rank_pooling_with_its_head(rank_gguf: Path) -> None:
    reader = gguf.GGUFReader(str(rank_gguf))
    pooling = reader.fields["bert.pooling_type"]
    assert int(pooling.parts[pooling.data[0]][0]) == int(gguf.PoolingType.RANK)
    shapes = {t.name: tuple(int(d) for d in t.shape) for t in reader.tensors}
    assert shapes["cls.weight"] == (384, 384) and shapes["cls.output.weight"] == (384, 1)
    assert "cls.bias" in shapes and "cls.output.bias" in shapes


@pytest.mark.models
def test_scores_are_the_head_a_numpy_bert_computes_on_the_pair(reranker: LocalReranker,
                                                               cross_encoder_dir: Path) -> None:
    tokenizer = Tokenizer.from_file(str(cross_encoder_dir / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    weights = {k: v.astype(np.float64) for k, v in load_file(str(cross_encoder_dir / "model.safetensors")).items()}
    config = json.loads((cross_encoder_dir / "config.json").read_text())
    ours = reranker.rerank(QUESTION, PASSAGES)  # all six in one decode
    expected = []
    for passage in PASSAGES:
        first = reference_states(weights, config, tokenizer.encode(QUESTION, passage).ids)[0]
        pooled = np.tanh(weights["pooler.dense.weight"] @ first + weights["pooler.dense.bias"])
        expected.append(float(weights["classifier.weight"][0] @ pooled + weights["classifier.bias"][0]))
    assert np.allclose(ours, expected, atol=0.02), (ours, expected)
    assert max(expected) - min(expected) > 0.2  # the passages score apart: the comparison means something
    assert reranker.rerank(QUESTION, PASSAGES[2:3]) == pytest.approx(ours[2:3], abs=3e-3)  # alone as in a batch
    assert reranker.rerank(QUESTION, []) == []


class NativeLlamaServer:
    """llama.cpp's own ``llama-server`` (built by ``make test`` from the pinned sources) serving one GGUF on
    loopback: ``--reranking`` (it has ``/v1/rerank``) or, for an embedder, ``--embeddings``."""

    def __init__(self, model: Path, log_path: Path, mode: str = "--reranking") -> None:
        if not LLAMA_SERVER.is_file():
            pytest.fail(f"{LLAMA_SERVER} is missing: run `make test`, which builds it "
                        "(scripts/build_llama_server.sh)")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = log_path
        with log_path.open("wb") as log:
            self.proc = subprocess.Popen(
                [str(LLAMA_SERVER), "-m", str(model), mode, "--host", "127.0.0.1", "--port",
                 str(self.port), "-c", "512", "-b", "512", "-ub", "512", "-t", "2", "--parallel", "1"],
                stdout=log, stderr=subprocess.STDOUT)
        try:
            wait_until_up(self.proc, f"{self.url}/health", log_path)
        except RuntimeError:
            self.stop()
            raise

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=20)


@pytest.mark.slow
@pytest.mark.models
def test_llama_server_scores_pairs_as_the_in_process_model_does(reranker: LocalReranker, rank_gguf: Path,
                                                                 tmp_path: Path) -> None:
    server = NativeLlamaServer(rank_gguf, tmp_path / "llama-server.log")
    try:
        remote = ServerBackend(ServerModel(backend="server", base_url=server.url), "rerank")
        scores = remote.rerank(QUESTION, PASSAGES)
        remote.close()
    finally:
        server.stop()
    assert scores == pytest.approx(reranker.rerank(QUESTION, PASSAGES), abs=1e-3)


TURNS = [
    "I went hiking in the Rockies in July with my sister.",
    "The trail near Boulder was steep but the views were worth it.",
    "We camped by a lake and saw a moose at dawn.",
    "Work has been busy, lots of meetings this week.",
    "My guinea pig Oscar loves carrots and cucumber.",
    "I signed up for a pottery class on Tuesdays.",
    "Hiking boots are on sale at the shop downtown.",
    "Next summer I want to hike part of the Appalachian Trail.",
    "I baked sourdough bread for the first time.",
    "My cousin visited from Sweden last weekend.",
    "The hike up the mountain took us six hours.",
    "Reading a fantasy novel about dragons lately.",
]


def recall_memory(store: Store, embedder, reranker) -> Memory:
    """The turns told an hour apart (a burst would be re-ordered again after the re-ranker: stages.Bursts)."""
    memory = Memory(store, embedder, reranker=reranker)
    session = store.sessions.create("chat")
    memory.remember_many([NewExchange(session.id, "user", turn, f"2024-03-01T{8 + n:02d}:00:00+00:00")
                          for n, turn in enumerate(TURNS)])
    return memory


@pytest.mark.models
def test_recall_reorders_its_best_candidates_by_the_reranker(store: Store, embedder,
                                                             reranker: LocalReranker) -> None:
    memory = recall_memory(store, embedder, reranker)
    question = "Where did I go hiking?"
    fused = memory.recall(RecallQuery(question, k=len(TURNS), stages=without("rerank")))
    ranked = memory.recall(RecallQuery(question, k=len(TURNS)))
    assert sorted(h.id for h in ranked) == sorted(h.id for h in fused)  # the same candidates
    scores = reranker.rerank(question, [h.content for h in ranked])
    assert scores == sorted(scores, reverse=True)  # in the re-ranker's order
    assert all("rerank" in h.stages for h in ranked) and not any("rerank" in h.stages for h in fused)
    assert [h.id for h in ranked] != [h.id for h in fused]  # which the fused order was not


def test_a_reranker_that_fails_leaves_recall_answering(store: Store, caplog: pytest.LogCaptureFixture) -> None:
    dead = ServerBackend(ServerModel.model_validate({"backend": "server", "base_url": f"http://127.0.0.1:{free_port()}",
                                                     "retry": {"max_attempts": 1}}), "rerank")
    memory = recall_memory(store, FakeEmbedder(), dead)
    plain = Memory(store, FakeEmbedder())
    with caplog.at_level(logging.WARNING):
        hits = memory.recall(RecallQuery("hiking in July", k=5))
    assert [h.id for h in hits] == [h.id for h in plain.recall(RecallQuery("hiking in July", k=5))]
    assert hits and "re-ranking skipped" in caplog.text
    dead.close()


def test_the_rerank_role_is_off_unless_configured(make_settings) -> None:
    settings = make_settings()
    assert settings.roles() == ("chat", "summary", "embed") and settings.models.rerank is None
    assert Models(settings).rerank is None
    configured = make_settings('[models.rerank]\npath = "no-such-reranker.gguf"\n')
    assert configured.roles() == ("chat", "summary", "embed", "rerank")
    assert any(line.startswith("models.rerank: model file not found") for line in model_file_problems(configured))
    served = make_settings('[models.rerank]\nbackend = "server"\nbase_url = "http://gpu-box:8082/v1"\n')
    assert served.role_spec("rerank").base_url == "http://gpu-box:8082"  # type: ignore[union-attr]


@pytest.mark.models
def test_doctor_checks_the_reranker(make_settings, rank_gguf: Path) -> None:
    settings = make_settings(f'[models.rerank]\npath = "{rank_gguf}"\nn_ctx = 512\n')
    models = Models(settings)
    try:
        check = _model_check(settings, models, "rerank")
    finally:
        models.close()
    assert check.ok and "scores a pair" in check.detail, check
