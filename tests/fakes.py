"""Scripted fakes for fast unit tests of logic (never the only test of a feature).

``FakeChatModel`` answers from a queue and records what it was asked, like
simonw/llm's MockModel; ``FakeEmbedder`` hashes words into a fixed vector space
so similar texts get similar vectors, deterministically.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterator, Sequence

import numpy as np

from lyra_local.llm.base import ChatDelta, Completion, GenerationOptions, Message, ModelInfo, Vectors


Respond = Callable[[Sequence[Message], "GenerationOptions | None"], str]


class Fake:
    """What both fakes share: a name, and a token for every word."""

    def __init__(self, name: str) -> None:
        self._name = name

    @property
    def name(self) -> str:
        return self._name

    def count_tokens(self, text: str) -> int:
        return len(text.split())


class FakeChatModel(Fake):
    """Replies from ``enqueue``d texts, else from ``respond(messages, options)``, else "ok"."""

    def __init__(self, n_ctx: int = 2048, name: str = "fake-chat", respond: Respond | None = None) -> None:
        super().__init__(name)
        self._n_ctx = n_ctx
        self.respond = respond
        self.queue: list[str] = []
        self.history: list[tuple[list[Message], GenerationOptions | None]] = []
        self.closed = False

    @property
    def n_ctx(self) -> int:
        return self._n_ctx

    def enqueue(self, *replies: str) -> None:
        self.queue.extend(replies)

    def _next(self, messages: Sequence[Message], options: GenerationOptions | None) -> str:
        self.history.append((list(messages), options))
        if self.queue:
            return self.queue.pop(0)
        return self.respond(messages, options) if self.respond else "ok"

    def complete(self, messages: Sequence[Message], options: GenerationOptions | None = None) -> Completion:
        text = self._next(messages, options)
        prompt = sum(self.count_tokens(m["content"]) for m in messages)
        return Completion(text, "stop", prompt, self.count_tokens(text))

    def stream(self, messages: Sequence[Message], options: GenerationOptions | None = None) -> Iterator[ChatDelta]:
        words = self._next(messages, options).split(" ")
        for i, word in enumerate(words):
            yield ChatDelta(word if i == 0 else " " + word)
        yield ChatDelta("", "stop")

    def info(self) -> ModelInfo:
        return ModelInfo("chat", "fake", self._name)

    def close(self) -> None:
        self.closed = True


class FakeEmbedder(Fake):
    def __init__(self, dim: int = 64, name: str = "fake-embed") -> None:
        super().__init__(name)
        self._dim = dim
        self.calls: list[list[str]] = []

    @property
    def dim(self) -> int:
        return self._dim

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.calls.append(list(texts))
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()) or [""]:
                bucket = int.from_bytes(hashlib.sha1(word.encode()).digest()[:4], "little") % self._dim
                out[row, bucket] += 1.0
            out[row] /= max(float(np.linalg.norm(out[row])), 1e-12)
        return out

    def info(self) -> ModelInfo:
        return ModelInfo("embed", "fake", self._name)

    def close(self) -> None:
        pass
