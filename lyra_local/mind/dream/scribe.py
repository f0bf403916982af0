"""``Scribe``: the dream cycle's calls to the summary model.

It fits material into the model's context (budgets from its ``n_ctx``), merges
partial texts hierarchically, asks for JSON under llama.cpp's schema-constrained
generation (validated, with ``None`` for the caller's fallback), and yields to
chat: when the summary model is the in-process chat model and a chat turn is
waiting for it, generation stops at once and the call is repeated afterwards.
"""

from __future__ import annotations

import functools
import json
import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from ...errors import ModelRequestError
from ...llm.base import ChatModel, GenerationOptions, Message, Preemptible, background_call
from ..summaries.chunks import input_budget, pack

log = logging.getLogger(__name__)
M = TypeVar("M", bound=BaseModel)
TEMPERATURE = 0.3  # summaries should be faithful rather than inventive
YIELD_POLL_S = 0.05


class Preempted(Exception):
    """A chat turn needed the model; the call is repeated once it is done."""


class Stopped(Exception):
    """The process is shutting down; the unit of work is left for the next pass."""


class Scribe:
    def __init__(self, model: ChatModel, *, reply_tokens: int, names: dict[str, str],
                 stop: threading.Event | None = None, keepalive: Callable[[], None] | None = None) -> None:
        self.model = model
        self.reply_tokens = min(reply_tokens, model.n_ctx // 4)
        self.names = names
        self.stop = stop or threading.Event()
        self.keepalive = keepalive
        self.preemptions = 0
        self.calls = 0
        self.count: Callable[[str], int] = functools.lru_cache(maxsize=16384)(model.count_tokens)

    def instructions(self, template: str, **extra: str) -> str:
        text = template
        for key, value in {**self.names, **extra}.items():
            text = text.replace("{" + key + "}", value)
        return text

    def budget(self, template: str, **extra: str) -> int:
        """Tokens of material one request with these instructions can take."""
        return input_budget(self.model.n_ctx, self.reply_tokens, self.instructions(template, **extra), self.count)

    def write(self, template: str, material: str, **extra: str) -> str:
        """The model's text for ``material`` under ``template``; never empty."""
        text = self._call(template, material, GenerationOptions(max_tokens=self.reply_tokens,
                                                                temperature=TEMPERATURE), extra)
        if not text:
            raise ModelRequestError(f"the summary model {self.model.name} wrote nothing",
                                    hint="try a larger summary model (models.summary)")
        return text

    def ask_json(self, template: str, material: str, schema_model: type[M], **extra: str) -> M | None:
        """Schema-constrained JSON, validated; ``None`` when the model's answer does not validate."""
        options = GenerationOptions(max_tokens=self.reply_tokens, temperature=TEMPERATURE,
                                    json_schema=schema_model.model_json_schema())
        text = self._call(template, material, options, extra)
        try:
            return schema_model.model_validate(json.loads(text))
        except (json.JSONDecodeError, ValidationError) as exc:
            log.warning("the summary model's JSON did not validate (%s): %.200r", type(exc).__name__, text)
            return None

    def reduce(self, template: str, pieces: Sequence[str], **extra: str) -> str:
        """Merge ``pieces`` into one text, in as many rounds as the context needs."""
        pieces = [p for p in pieces if p.strip()]
        if not pieces:
            raise ValueError("nothing to merge")
        budget = self.budget(template, **extra)
        while len(pieces) > 1:
            groups = pack(pieces, budget, self.count)
            if len(groups) == len(pieces):  # each piece fills a request: halve them so pairs fit
                groups = pack([p[: max(1, len(p) // 2)] for p in pieces], budget, self.count)
            pieces = [g[0] if len(g) == 1 else self.write(template, "\n\n".join(g), **extra) for g in groups]
        return pieces[0]

    # -- internals ------------------------------------------------------------------

    def _call(self, template: str, material: str, options: GenerationOptions, extra: dict[str, str]) -> str:
        messages: list[Message] = [{"role": "user",
                                    "content": f"{material}\n\n{self.instructions(template, **extra)}"}]
        while True:
            self._wait_for_chat()
            try:
                with background_call():
                    text = self._generate(messages, options)
            except Preempted:
                self.preemptions += 1
                continue
            self.calls += 1
            if self.keepalive is not None:
                self.keepalive()
            return text.strip()

    def _generate(self, messages: list[Message], options: GenerationOptions) -> str:
        preemptible = isinstance(self.model, Preemptible)
        parts: list[str] = []
        stream = self.model.stream(messages, options)
        try:
            for delta in stream:
                parts.append(delta.text)
                if self.stop.is_set():
                    raise Stopped()
                if preemptible and self.model.contended():  # type: ignore[attr-defined]
                    raise Preempted()
        finally:
            close: Any = getattr(stream, "close", None)
            if close is not None:
                close()
        return "".join(parts)

    def _wait_for_chat(self) -> None:
        if not isinstance(self.model, Preemptible):
            return
        while self.model.contended():
            if self.stop.wait(YIELD_POLL_S):
                raise Stopped()
