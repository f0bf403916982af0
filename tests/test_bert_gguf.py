"""The converted embedding model against an independent reference.

The reference is written here, from the paper's definition of BERT: a NumPy
forward pass over the original safetensors weights (float32), HF's own
``tokenizers`` for the ids, and sentence-transformers' mean pooling. llama.cpp's
embeddings of our GGUF must match it per sentence.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import gguf
import numpy as np
import pytest
from safetensors.numpy import load_file
from tokenizers import Tokenizer

from lyra_local.modelfiles.bert_gguf import convert_bert, phantom_token
from lyra_local.fsutil import sha256_file

from .conftest import EMBED_GGUF, EMBED_SOURCE, require_file

SENTENCES = [
    "Hello world, unbelievable!",
    "I moved to Lisbon last spring and I love the light there.",
    "My sister Ana's birthday is on the 14th of March.",
    "The quarterly report shows revenue grew by 12 percent.",
    "def fibonacci(n): return n if n < 2 else fibonacci(n - 1) + fibonacci(n - 2)",
    "Außerdem möchte ich über das Wetter in München sprechen.",
]

_erf = np.vectorize(math.erf)


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * weight + bias


def reference_embedding(weights: dict[str, np.ndarray], config: dict, ids: list[int]) -> np.ndarray:
    """BERT encoder + mean pooling + L2 normalisation, in float64 NumPy."""
    pooled = reference_states(weights, config, ids).mean(axis=0)
    return pooled / np.linalg.norm(pooled)


def reference_states(weights: dict[str, np.ndarray], config: dict, ids: list[int]) -> np.ndarray:
    """The BERT encoder's last hidden state per token, in float64 NumPy (every token of segment 0)."""
    w = {k: v.astype(np.float64) for k, v in weights.items() if v.dtype.kind == "f"}
    eps = config["layer_norm_eps"]
    heads = config["num_attention_heads"]
    n = len(ids)
    x = (w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:n]
         + w["embeddings.token_type_embeddings.weight"][0])
    x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], eps)

    def dense(h: np.ndarray, name: str) -> np.ndarray:
        return h @ w[f"{name}.weight"].T + w[f"{name}.bias"]

    for layer in range(config["num_hidden_layers"]):
        p = f"encoder.layer.{layer}"
        q, k, v = (dense(x, f"{p}.attention.self.{m}").reshape(n, heads, -1).transpose(1, 0, 2)
                   for m in ("query", "key", "value"))
        scores = q @ k.transpose(0, 2, 1) / math.sqrt(q.shape[-1])
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
        attn = (scores / scores.sum(axis=-1, keepdims=True)) @ v
        attn = attn.transpose(1, 0, 2).reshape(n, -1)
        x = _layer_norm(x + dense(attn, f"{p}.attention.output.dense"),
                        w[f"{p}.attention.output.LayerNorm.weight"], w[f"{p}.attention.output.LayerNorm.bias"], eps)
        hidden = dense(x, f"{p}.intermediate.dense")
        hidden = 0.5 * hidden * (1.0 + _erf(hidden / math.sqrt(2.0)))
        x = _layer_norm(x + dense(hidden, f"{p}.output.dense"),
                        w[f"{p}.output.LayerNorm.weight"], w[f"{p}.output.LayerNorm.bias"], eps)
    return x


@pytest.fixture(scope="module")
def hf_tokenizer() -> Tokenizer:
    tokenizer = Tokenizer.from_file(str(require_file(EMBED_SOURCE / "tokenizer.json")))
    tokenizer.no_padding()  # the file pads to 128 for training; we want the bare ids
    tokenizer.no_truncation()
    return tokenizer


def test_phantom_space_vocabulary_form() -> None:
    assert phantom_token("[CLS]", is_control=True) == "[CLS]"
    assert phantom_token("##able", is_control=False) == "able"
    assert phantom_token("hello", is_control=False) == "\u2581hello"


@pytest.mark.slow
def test_llama_cpp_tokenizes_like_bert(embedder) -> None:
    llm = embedder._model.llm()
    assert llm.tokenize(b"Hello world, unbelievable!") == [101, 7592, 2088, 1010, 23653, 999, 102]


@pytest.mark.slow
def test_llama_cpp_tokens_match_hf_tokenizers(embedder, hf_tokenizer: Tokenizer) -> None:
    llm = embedder._model.llm()
    for sentence in SENTENCES:
        assert llm.tokenize(sentence.encode()) == hf_tokenizer.encode(sentence).ids, sentence


@pytest.mark.slow
def test_embeddings_match_numpy_reference(embedder, hf_tokenizer: Tokenizer) -> None:
    weights = load_file(str(require_file(EMBED_SOURCE / "model.safetensors")))
    config = json.loads((EMBED_SOURCE / "config.json").read_text())
    ours = embedder.embed(SENTENCES)
    assert ours.shape == (len(SENTENCES), 384)
    for sentence, vector in zip(SENTENCES, ours):
        ref = reference_embedding(weights, config, hf_tokenizer.encode(sentence).ids)
        cosine = float(np.dot(vector, ref) / np.linalg.norm(vector))
        assert cosine >= 0.999, f"cosine {cosine:.5f} for {sentence!r}"
    # and the reference really discriminates: different sentences are far apart
    assert float(np.dot(ours[1], ours[3])) < 0.5


@pytest.mark.slow
@pytest.mark.models
def test_tensor_types_keep_f32_where_ggml_needs_it() -> None:
    reader = gguf.GGUFReader(str(require_file(EMBED_GGUF)))
    types = {t.name: t.tensor_type for t in reader.tensors}
    assert types["position_embd.weight"] == gguf.GGMLQuantizationType.F32
    assert types["token_types.weight"] == gguf.GGMLQuantizationType.F32
    assert types["blk.0.attn_q.weight"] == gguf.GGMLQuantizationType.F16
    one_d = [t for t in reader.tensors if len([d for d in t.shape if d > 1]) == 1]
    assert one_d and all(t.tensor_type == gguf.GGMLQuantizationType.F32 for t in one_d)
    pooling = reader.fields["bert.pooling_type"]
    assert int(pooling.parts[pooling.data[0]][0]) == int(gguf.PoolingType.MEAN)


@pytest.mark.slow
@pytest.mark.models
def test_conversion_is_deterministic(tmp_path: Path) -> None:
    out = tmp_path / "again.gguf"
    convert_bert(require_file(EMBED_SOURCE / "model.safetensors").parent, out, name="all-MiniLM-L6-v2")
    assert sha256_file(out) == sha256_file(EMBED_GGUF)
