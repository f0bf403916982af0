"""GGUF models run in-process by llama-cpp-python.

A ``Llama`` object is not thread-safe, so each loaded model has its own gate (a
lock that serves the people of a household in turns: ``fair.FairGate``) and every
call into it (generation, embedding) holds it; a stream holds it until it ends or
is closed. Models load lazily, on first use, so that
``lyra doctor`` and the web app start instantly and a missing file is reported
when and where it matters. Once closed, a model never loads itself again: a
late caller gets ``ModelClosed`` instead of a second copy of the weights in
memory, and ``close`` waits for calls in progress, tokenizing included.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .. import config
from ..errors import LyraError, ModelFileMissing, ModelLoadError, ModelRequestError
from ..modelfiles import devices, fit
from ..modelfiles.gguf_header import ModelFileInvalid, read_gguf
from ..roles import Role, runs
from .base import (
    ChatDelta,
    Completion,
    GenerationOptions,
    Message,
    ModelInfo,
    Vectors,
    completion_from_response,
    in_background,
    request_params,
)
from .fair import FairGate

log = logging.getLogger(__name__)


class ModelClosed(LyraError):
    """A model was used after it was closed (a reload or shutdown released it)."""

    status_code = 503

    def __init__(self, role: str | None = None) -> None:
        what = f"the {role} model was" if role else "these models were"
        super().__init__(f"{what} closed (the configuration was reloaded, or the server is stopping)",
                         hint="send the request again: it will use the current models")


def available_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


GPU_LAYERS_IGNORED = "n_gpu_layers = {layers}, but this llama-cpp-python has no GPU offload: it runs on the CPU"


def gpu_offload_supported() -> bool:
    """Whether this llama-cpp-python build can offload layers to a GPU."""
    import llama_cpp

    return bool(llama_cpp.llama_supports_gpu_offload())


def batches(spec: config.LocalModel, embedding: bool) -> tuple[int, int]:
    """``n_batch`` and ``n_ubatch`` as the model is loaded with them.

    An encoder must see a whole sequence in one micro-batch, and llama-cpp-python packs sequences up to
    n_batch tokens: for embeddings they are kept equal (and within the context) so that no input can overrun a
    micro-batch."""
    if embedding:
        both = min(spec.n_batch, spec.n_ubatch, spec.n_ctx)
        return both, both
    return spec.n_batch, min(spec.n_ubatch, spec.n_batch)


def gpu_ask(role: str, path: Path, spec: config.LocalModel, *, shares: str | None = None) -> fit.Ask:
    """What the GPU plan (``fit.auto_layers``) needs of one local role: its setting and its model's memory at
    its context (None when the file's header cannot be read: loading it then says why)."""
    if shares is not None:
        return fit.Ask(role, spec.n_gpu_layers, None, shares)
    try:
        summary = read_gguf(path)
    except ModelFileInvalid:
        return fit.Ask(role, spec.n_gpu_layers, None)
    ubatch = batches(spec, embedding=runs(role) is not Role.CHAT)[1]
    return fit.Ask(role, spec.n_gpu_layers, fit.need_of_file(summary, spec.n_ctx, role=role, n_ubatch=ubatch,
                                                             flash_attn=spec.flash_attn))


def resolve_alone(path: Path, spec: config.LocalModel, role: str) -> fit.Offload:
    """``n_gpu_layers`` for a model loaded outside a ``Models`` registry (which plans every role together):
    as if it were the only model on the GPU."""
    return fit.auto_layers([gpu_ask(role, path, spec)], devices.probe())[role]


@contextlib.contextmanager
def _prompt_errors() -> Iterator[None]:
    """llama-cpp-python says "too many tokens" with a ValueError: make it one of ours."""
    try:
        yield
    except ValueError as exc:
        raise ModelRequestError(f"the model could not take this prompt: {exc}",
                                hint="shorten the message, or raise models.chat.n_ctx") from exc


class LazyLlama:
    """Loads a ``Llama`` on first use, serialises access to it, and frees it once: shared by the chat model, the
    embedder and the re-ranker (``local_rerank.py``), so each loads, queues and closes the same way."""

    def __init__(self, path: Path, spec: config.LocalModel, role: str, *, embedding: bool,
                 pooling: int = -1, offload: fit.Offload | None = None) -> None:
        """``pooling``: llama.cpp's pooling type; -1 (unspecified) is the GGUF's own (a re-ranker's is rank).
        ``offload``: what the registry's GPU plan chose for ``n_gpu_layers = "auto"`` (else it is chosen at load,
        for this model alone)."""
        self.path = path
        self.spec = spec
        self.role = role
        self.embedding = embedding
        self.pooling = pooling
        self.offload = offload
        self._lock = FairGate()  # one caller at a time, people served in turns (one person's burst queues behind)
        self._load_lock = threading.Lock()
        self._count_lock = threading.Lock()
        self._waiting = 0  # foreground callers blocked on the lock: background work yields to them
        self._readers = threading.Condition()  # lock-free callers (tokenizing) that close must wait for
        self._reading = 0
        self._closed = False
        self._llm: Any = None

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        # Two dream threads waiting for each other would both yield forever: only foreground callers count.
        counted = not in_background()
        if counted:
            with self._count_lock:
                self._waiting += 1
        try:
            self._lock.acquire()
        finally:
            if counted:
                with self._count_lock:
                    self._waiting -= 1
        try:
            yield
        finally:
            self._lock.release()

    @contextlib.contextmanager
    def using(self) -> Iterator[Any]:
        """The loaded ``Llama`` under this model's lock; ``ModelClosed`` if it was closed meanwhile."""
        self.llm()  # load outside the lock
        with self.lock():
            if self._closed or self._llm is None:
                raise ModelClosed(self.role)
            yield self._llm

    def contended(self) -> bool:
        return self._waiting > 0

    @property
    def closed(self) -> bool:
        return self._closed

    def llm(self) -> Any:
        if self._closed:
            raise ModelClosed(self.role)
        if self._llm is None:
            with self._load_lock:
                if self._closed:
                    raise ModelClosed(self.role)
                if self._llm is None:
                    self._llm = self._load()
        return self._llm

    def _load(self) -> Any:
        if not self.path.is_file():
            default = self.path.name in (config.DEFAULT_CHAT_FILE, config.DEFAULT_EMBED_FILE)
            raise ModelFileMissing(
                f"{self.role} model file not found: {self.path}",
                hint=config.FETCH_HINT if default else f"put the GGUF there or fix models.{self.role}.path")
        from llama_cpp import Llama

        batch, ubatch = batches(self.spec, self.embedding)
        threads = self.spec.n_threads or available_cpus()
        layers = self.gpu_layers()
        try:
            return Llama(
                model_path=str(self.path),
                n_ctx=self.spec.n_ctx,
                n_gpu_layers=layers,
                n_threads=threads,
                n_threads_batch=threads,
                n_batch=batch,
                n_ubatch=ubatch,
                chat_format=self.spec.chat_format,
                flash_attn=self.spec.flash_attn,
                embedding=self.embedding,
                seed=self.spec.sampling.seed if self.spec.sampling.seed is not None else 0xFFFFFFFF,
                verbose=False,
                pooling_type=self.pooling,
            )
        except (ValueError, RuntimeError) as exc:
            raise ModelLoadError(f"llama.cpp could not load {self.path}: {exc}",
                                 hint="is it a complete GGUF file for this llama.cpp version? "
                                      "`lyra models fetch --force` re-fetches the defaults") from exc

    def gpu_layers(self) -> int:
        """``n_gpu_layers`` for llama.cpp: "auto" resolved (and said in the log), a number kept (with a warning
        when this build cannot offload it)."""
        if self.spec.n_gpu_layers != "auto":
            if self.spec.n_gpu_layers != 0 and not gpu_offload_supported():
                log.warning("models.%s: %s", self.role, GPU_LAYERS_IGNORED.format(layers=self.spec.n_gpu_layers))
            return self.spec.n_gpu_layers
        offload = self.offload or resolve_alone(self.path, self.spec, self.role)
        # Said louder when a GPU is there but the model does not (wholly) fit: it runs slower than it could.
        short = offload.placement is not None and offload.placement.kind != "gpu"
        log.log(logging.WARNING if short else logging.INFO, "models.%s: n_gpu_layers %s", self.role, offload.reason)
        return offload.n_gpu_layers

    def count_tokens(self, text: str) -> int:
        # Tokenizing reads only the vocabulary, so it needs no lock and never waits
        # for a generation in progress; close waits for it instead (the vocabulary
        # is freed with the model).
        with self._readers:
            if self._closed:
                raise ModelClosed(self.role)
            self._reading += 1
        try:
            return len(self.llm().tokenize(text.encode("utf-8"), add_bos=False, special=False))
        finally:
            with self._readers:
                self._reading -= 1
                self._readers.notify_all()

    def close(self) -> None:
        """Free the model once the calls in progress end; every later call raises ``ModelClosed``."""
        with self._readers:
            self._closed = True
            self._readers.wait_for(lambda: self._reading == 0)
        with self._load_lock, self.lock():
            if self._llm is not None:
                self._llm.close()
                self._llm = None


class LocalChatModel:
    """A chat model in this process."""

    def __init__(self, path: Path, spec: config.LocalModel, role: str = "chat", *,
                 offload: fit.Offload | None = None) -> None:
        self._model = LazyLlama(path, spec, role, embedding=False, offload=offload)
        self.spec = spec
        self.role = role

    @property
    def name(self) -> str:
        return self._model.path.stem

    @property
    def n_ctx(self) -> int:
        return self.spec.n_ctx

    def load(self) -> None:
        """Load now rather than on first use (start-up, `doctor`)."""
        self._model.llm()

    def count_tokens(self, text: str) -> int:
        return self._model.count_tokens(text)

    def contended(self) -> bool:
        """Someone (a chat turn) is waiting for this model: the dream cycle yields to it."""
        return self._model.contended()

    def complete(self, messages: Sequence[Message], options: GenerationOptions | None = None) -> Completion:
        with self._model.using() as llm, _prompt_errors():
            result = llm.create_chat_completion(messages=list(messages), stream=False,
                                                **request_params(self.spec.sampling, options))
        return completion_from_response(result)

    def stream(self, messages: Sequence[Message], options: GenerationOptions | None = None) -> Iterator[ChatDelta]:
        with self._model.using() as llm, _prompt_errors():
            chunks = llm.create_chat_completion(messages=list(messages), stream=True,
                                                **request_params(self.spec.sampling, options))
            try:
                for chunk in chunks:
                    choice = chunk["choices"][0]
                    text = choice.get("delta", {}).get("content") or ""
                    finish = choice.get("finish_reason")
                    if text or finish:
                        yield ChatDelta(text, finish)
            finally:
                chunks.close()  # stops generation when our caller stops reading

    def info(self) -> ModelInfo:
        return ModelInfo(self.role, "local", self.name, {
            "path": str(self._model.path), "n_ctx": self.spec.n_ctx, "n_gpu_layers": self.spec.n_gpu_layers})

    def close(self) -> None:
        self._model.close()


class PerTokenVectors(ModelRequestError):
    """A GGUF with no pooling (a chat model) embeds each token, never a text: no vector to store or search."""

    def __init__(self, name: str, texts: int) -> None:
        super().__init__(f"the embedding model {name} returned no vector for a batch of {texts} text(s), only "
                         "one per token (it has no pooling; a chat model?)",
                         hint="models.embed must be an embedding GGUF (one with pooling, as all-MiniLM-L6-v2)")
        self.texts = texts


SHORT_TEXT = 512  # characters: one text this short (a question, a chat turn) takes only the cores free now


def _one_short(texts: Sequence[str]) -> bool:
    return len(texts) == 1 and len(texts[0]) <= SHORT_TEXT


def short_text_threads(loadavg: str, cores: int, loaded: int) -> int:
    """The threads to embed one short text on: this one and one per core nothing else runs or waits for right
    now, at most ``loaded``. ``loadavg``: ``/proc/loadavg``, whose fourth field counts the threads runnable at
    this instant (this one among them); unreadable, one thread. A second thread that must wait for a core
    spins its partner at a barrier (on the 2-core box at load 12: p95 2,462 ms on two threads, 79 on one),
    while on a free core it saves a third (quiet, the same box: p50 6.9 -> 4.1 ms, p95 10.1 -> 6.5); the
    vectors are the same bit for bit either way (docs/benchmarks.md, recall's speed)."""
    try:
        runnable = int(loadavg.split()[3].split("/")[0])
    except (IndexError, ValueError):
        return 1
    return max(1, min(loaded, cores - runnable + 1))


def _threads_now(loaded: int) -> int:
    try:
        loadavg = Path("/proc/loadavg").read_text(encoding="ascii")
    except OSError:
        loadavg = ""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return short_text_threads(loadavg, cores, loaded)


@contextlib.contextmanager
def _threads(llm: Any, n: int | None) -> Iterator[None]:
    """Decode on ``n`` threads for the duration (``None``: as loaded): one short text on the cores free now
    (``short_text_threads``)."""
    if n is None:
        yield
        return
    import llama_cpp

    llama_cpp.llama_set_n_threads(llm.ctx, n, n)
    try:
        yield
    finally:
        llama_cpp.llama_set_n_threads(llm.ctx, llm.n_threads, llm.n_threads_batch)


class LocalEmbedder:
    """An embedding model in this process.

    Throughput matters (imports embed years of history): llama-cpp-python packs
    several texts into one decode, up to ``n_batch`` tokens. Attention spans the
    whole micro-batch, so a moderate micro-batch (256) beats both one text per
    call and one huge batch.
    """

    def __init__(self, path: Path, spec: config.LocalModel, role: str = "embed", *,
                 offload: fit.Offload | None = None) -> None:
        self._model = LazyLlama(path, spec, role, embedding=True, offload=offload)
        self.spec = spec
        self.role = role
        self._dim: int | None = None

    @property
    def name(self) -> str:
        return self._model.path.stem

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = int(self._model.llm().n_embd())
        return self._dim

    def load(self) -> None:
        self._model.llm()

    def count_tokens(self, text: str) -> int:
        return self._model.count_tokens(text)

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._model.using() as llm, _threads(llm, _threads_now(llm.n_threads) if _one_short(texts) else None):
            rows = llm.embed(list(texts), normalize=True, truncate=True)
        if rows and rows[0] and isinstance(rows[0][0], list):  # no pooling: llama-cpp-python gives each token's
            raise PerTokenVectors(self.name, len(texts))
        return np.asarray(rows, dtype=np.float32)

    def info(self) -> ModelInfo:
        return ModelInfo(self.role, "local", self.name, {"path": str(self._model.path), "n_ctx": self.spec.n_ctx})

    def close(self) -> None:
        self._model.close()
