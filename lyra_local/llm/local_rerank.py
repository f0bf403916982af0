"""A reranking GGUF run in-process by llama-cpp-python: a cross-encoder that scores a query with each passage.

Scores as llama.cpp's server does (``/v1/rerank``), so a model ranks the same
in-process and on llama-server. Loading, the gate and closing are
``local.LazyLlama``'s, as for the chat model and the embedder.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import config
from ..errors import ModelRequestError
from ..modelfiles import fit
from .base import ModelInfo
from .local import LazyLlama


@dataclass(frozen=True)
class PairFormat:
    """How a model joins a query and a passage for a cross-encoder, exactly as llama.cpp's server does (so a
    model scores the same in-process and on llama-server): ``[BOS] query [EOS] [SEP] passage [EOS]``, each
    special token where the vocabulary adds it (BERT: ``[CLS] q [SEP] p [SEP]``, its [SEP] being its EOS;
    XLM-RoBERTa, as bge-reranker: ``<s> q </s></s> p </s>``). A model with a rerank prompt template
    (Qwen3-Reranker) uses that instead."""

    bos: int | None
    eos: int | None  # the end of a segment (the vocabulary's EOS, else its SEP), when the vocabulary adds one
    sep: int | None

    def join(self, query: list[int], passage: list[int], limit: int) -> list[int]:
        """The pair's tokens, the passage (then the query) cut so that the whole fits ``limit``."""
        head = [t for t in (self.bos,) if t is not None]
        middle = [t for t in (self.eos, self.sep) if t is not None]
        tail = [t for t in (self.eos,) if t is not None]
        room = max(limit - len(head) - len(middle) - len(tail), 2)
        query = query[:max(room // 2, room - len(passage))]
        passage = passage[:room - len(query)]
        return [*head, *query, *middle, *passage, *tail]


def pair_format(llm: Any) -> PairFormat:
    import llama_cpp

    vocab = llama_cpp.llama_model_get_vocab(llm.model)

    def token(add: bool, value: int) -> int | None:
        return value if add and value >= 0 else None

    eos = llama_cpp.llama_vocab_eos(vocab)
    return PairFormat(bos=token(llama_cpp.llama_vocab_get_add_bos(vocab), llama_cpp.llama_vocab_bos(vocab)),
                      eos=token(llama_cpp.llama_vocab_get_add_eos(vocab),
                                eos if eos >= 0 else llama_cpp.llama_vocab_sep(vocab)),
                      sep=token(llama_cpp.llama_vocab_get_add_sep(vocab), llama_cpp.llama_vocab_sep(vocab)))


def rerank_template(llm: Any) -> str | None:
    """The model's own rerank prompt (``{query}``, ``{document}``), if its GGUF has one."""
    import llama_cpp

    raw = llama_cpp.llama_model_chat_template(llm.model, b"rerank")
    return raw.decode("utf-8") if raw else None


def templated_pair(llm: Any, template: str, query: str, passage: str, limit: int) -> list[int]:
    """The template filled in and tokenized (its special tokens read as such), the passage cut to fit."""
    def tokens(document: str) -> list[int]:
        prompt = template.replace("{query}", query).replace("{document}", document)
        return list(llm.tokenize(prompt.encode("utf-8"), add_bos=False, special=True))

    whole = tokens(passage)
    if len(whole) <= limit:
        return whole
    own = llm.tokenize(passage.encode("utf-8"), add_bos=False, special=False)
    kept = llm.detokenize(own[:max(len(own) - (len(whole) - limit), 0)]).decode("utf-8", errors="ignore")
    return tokens(kept)[:limit]


class LocalReranker:
    """A reranking model in this process: an encoder's classification head on the pair's first token (BERT,
    XLM-RoBERTa), or a decoder's on its last with the model's rerank template (Qwen3-Reranker).

    llama-cpp-python's ``embed`` reads ``n_embd`` floats per sequence, where rank
    pooling gives one score: the pairs are decoded here instead, packed several
    to a batch like embeddings, and the score read from each sequence's output.
    """

    def __init__(self, path: Path, spec: config.LocalModel, role: str = "rerank", *,
                 offload: fit.Offload | None = None) -> None:
        import llama_cpp

        self._model = LazyLlama(path, spec, role, embedding=True, pooling=llama_cpp.LLAMA_POOLING_TYPE_RANK,
                                 offload=offload)
        self.spec = spec
        self.role = role

    @property
    def name(self) -> str:
        return self._model.path.stem

    def load(self) -> None:
        self._model.llm()

    def rerank(self, query: str, passages: Sequence[str]) -> list[float]:
        if not passages:
            return []
        with self._model.using() as llm:
            limit = llm.n_batch  # one micro-batch holds a whole pair (see LazyLlama._load)
            template = rerank_template(llm)
            if template is not None:
                pairs = [templated_pair(llm, template, query, p, limit) for p in passages]
            else:
                form = pair_format(llm)
                asked = llm.tokenize(query.encode("utf-8"), add_bos=False, special=False)
                pairs = [form.join(asked, llm.tokenize(p.encode("utf-8"), add_bos=False, special=False), limit)
                         for p in passages]
            try:
                return _rank_scores(llm, pairs, limit)
            except (RuntimeError, ValueError) as exc:  # llama.cpp's decode failed
                raise ModelRequestError(f"the re-ranker could not score {len(pairs)} pair(s): {exc}",
                                        hint="check models.rerank: is it a reranking GGUF (rank pooling)?") from exc

    def info(self) -> ModelInfo:
        return ModelInfo(self.role, "local", self.name, {"path": str(self._model.path), "n_ctx": self.spec.n_ctx})

    def close(self) -> None:
        self._model.close()


def _rank_scores(llm: Any, pairs: list[list[int]], limit: int) -> list[float]:
    """Each pair's score: as many pairs to a decode as fit ``limit`` tokens and the context's sequences."""
    import llama_cpp

    scores: list[float] = []
    most = llm.context_params.n_seq_max
    start = 0
    while start < len(pairs):
        end, used = start, 0
        while end < len(pairs) and (end == start or (end - start < most and used + len(pairs[end]) <= limit)):
            used += len(pairs[end])
            end += 1
        llm._batch.reset()
        for seq, tokens in enumerate(pairs[start:end]):
            llm._batch.add_sequence(tokens, seq, True)
        llm._ctx.kv_cache_clear()
        llm._ctx.decode(llm._batch)
        llm._batch.reset()
        scores.extend(float(llama_cpp.llama_get_embeddings_seq(llm._ctx.ctx, seq)[0]) for seq in range(end - start))
        start = end
    return scores
