"""``Models``: the loaded models, one per role, built from settings.

Created once by the app factory or a CLI command and passed to whoever needs a
model; never a module-level singleton. The summary role reuses the chat model's
instance when configured ``same_as = "chat"`` or with an identical spec, so one
GGUF is never loaded twice.
"""

from __future__ import annotations

import threading
from typing import Union

from .. import config
from .base import ChatModel, Embedder, ModelInfo
from .local import LocalChatModel, LocalEmbedder
from .server import ServerBackend

AnyBackend = Union[LocalChatModel, LocalEmbedder, ServerBackend]


class Models:
    """Role -> backend, built lazily; ``close`` frees what was loaded."""

    def __init__(self, settings: config.Settings, *, chat: ChatModel | None = None,
                 summary: ChatModel | None = None, embed: Embedder | None = None) -> None:
        """Backends given here are used as they are (tests pass fakes); the rest are built on use."""
        self.settings = settings
        self._lock = threading.Lock()
        self._chat = chat
        self._summary = summary
        self._embed = embed

    @property
    def chat(self) -> ChatModel:
        with self._lock:
            if self._chat is None:
                self._chat = self._build_chat(self.settings.models.chat, "chat")
            return self._chat

    @property
    def summary(self) -> ChatModel:
        if self._summary is None and self.shares_summary_with_chat():
            return self.chat
        spec = self.settings.resolved_summary()
        with self._lock:
            if self._summary is None:
                self._summary = self._build_chat(spec, "summary")
            return self._summary

    @property
    def embed(self) -> Embedder:
        with self._lock:
            if self._embed is None:
                spec = self.settings.models.embed
                if isinstance(spec, config.LocalModel):
                    self._embed = LocalEmbedder(self.settings.model_path(spec), spec, "embed")
                else:
                    self._embed = ServerBackend(spec, "embed")
            return self._embed

    def shares_summary_with_chat(self) -> bool:
        return self.settings.resolved_summary() == self.settings.models.chat

    def info(self) -> list[ModelInfo]:
        return [self.chat.info(), self.summary.info(), self.embed.info()]

    def close(self) -> None:
        with self._lock:
            for model in {id(m): m for m in (self._chat, self._summary, self._embed) if m is not None}.values():
                model.close()
            self._chat = self._summary = self._embed = None

    def _build_chat(self, spec: config.LocalModel | config.ServerModel, role: str) -> ChatModel:
        if isinstance(spec, config.LocalModel):
            return LocalChatModel(self.settings.model_path(spec), spec, role)
        return ServerBackend(spec, role)
