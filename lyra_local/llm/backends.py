"""The model backends, one entry each in ``BACKENDS``: what a role's spec becomes, and how a person is told of it.

A spec says its backend by its ``backend`` tag (``config.LocalModel``: "local",
``config.ServerModel``: "server"); the entry for that tag knows the rest: how
to build the chat model, embedder or re-ranker, what it asks of the GPU, and
how `lyra doctor`, `lyra models list`, Settings → Models and a refused choice
name it. Adding a backend is its spec class in ``config/specs.py`` (with its tag in
``ModelSpec``) and one entry here; nothing else asks which kind a spec is.
Building a backend loads nothing: a model loads on first use.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Generic, Literal, TypeVar

from .. import config
from ..modelfiles import fit
from ..modelfiles.gguf_header import GGUFSummary, ModelFileInvalid, read_gguf
from .base import ChatModel, Embedder, Reranker
from .local import LocalChatModel, LocalEmbedder, gpu_ask
from .local_rerank import LocalReranker
from .server import ServerBackend

SpecT = TypeVar("SpecT", config.LocalModel, config.ServerModel)


class Backend(ABC, Generic[SpecT]):
    """One kind of backend: builds a role's model from its spec, and says where that model is."""

    @abstractmethod
    def chat(self, settings: config.Settings, spec: SpecT, role: str, offload: fit.Offload | None) -> ChatModel:
        """The chat (or summary) model; ``offload`` is the GPU plan's choice for ``role``, if it made one."""

    @abstractmethod
    def embedder(self, settings: config.Settings, spec: SpecT, role: str, offload: fit.Offload | None) -> Embedder:
        ...

    @abstractmethod
    def reranker(self, settings: config.Settings, spec: SpecT, role: str, offload: fit.Offload | None) -> Reranker:
        ...

    def gpu_layers(self, spec: SpecT) -> int | Literal["auto"]:
        """The layers this model asks this machine's GPU for (``n_gpu_layers``): none unless it runs here."""
        return 0

    def gpu_ask(self, settings: config.Settings, spec: SpecT, role: str, shares: str | None) -> fit.Ask | None:
        """What the model needs of this machine's GPU, for the plan that places every role; None: nothing."""
        return None

    @abstractmethod
    def where(self, settings: config.Settings, spec: SpecT) -> str:
        """Where the model is, as `lyra doctor` says it: its file, or its server's URL."""

    @abstractmethod
    def listed(self, settings: config.Settings, spec: SpecT) -> str:
        """The model as `lyra models list` shows it after the backend's tag."""

    @abstractmethod
    def named(self, settings: config.Settings, spec: SpecT) -> tuple[str, GGUFSummary | None]:
        """How a person knows the model in a sentence (a refusal, a failed check), and its file's header if it
        has one here."""

    @abstractmethod
    def view(self, settings: config.Settings, spec: SpecT) -> dict[str, Any]:
        """The model as GET /api/settings and a choice's answer show it."""


class Local(Backend[config.LocalModel]):
    """A GGUF file run in-process by llama-cpp-python."""

    def chat(self, settings: config.Settings, spec: config.LocalModel, role: str,
             offload: fit.Offload | None) -> ChatModel:
        return LocalChatModel(settings.model_path(spec), spec, role, offload=offload)

    def embedder(self, settings: config.Settings, spec: config.LocalModel, role: str,
                 offload: fit.Offload | None) -> Embedder:
        return LocalEmbedder(settings.model_path(spec), spec, role, offload=offload)

    def reranker(self, settings: config.Settings, spec: config.LocalModel, role: str,
                 offload: fit.Offload | None) -> Reranker:
        return LocalReranker(settings.model_path(spec), spec, role, offload=offload)

    def gpu_layers(self, spec: config.LocalModel) -> int | Literal["auto"]:
        return spec.n_gpu_layers

    def gpu_ask(self, settings: config.Settings, spec: config.LocalModel, role: str,
                shares: str | None) -> fit.Ask | None:
        return gpu_ask(role, settings.model_path(spec), spec, shares=shares)

    def where(self, settings: config.Settings, spec: config.LocalModel) -> str:
        return str(settings.model_path(spec))

    def listed(self, settings: config.Settings, spec: config.LocalModel) -> str:
        return str(settings.model_path(spec))

    def named(self, settings: config.Settings, spec: config.LocalModel) -> tuple[str, GGUFSummary | None]:
        path = settings.model_path(spec)
        what = path.name if path.parent == settings.models_dir else str(path)
        try:
            return what, read_gguf(path)
        except ModelFileInvalid:  # loading it says why, in its own words
            return what, None

    def view(self, settings: config.Settings, spec: config.LocalModel) -> dict[str, Any]:
        return {"backend": "local", "model": spec.path.name, "path": str(settings.model_path(spec)),
                "n_ctx": spec.n_ctx, "n_gpu_layers": spec.n_gpu_layers}


class Server(Backend[config.ServerModel]):
    """A model behind an OpenAI-compatible server (llama.cpp's llama-server), usually on another machine."""

    def chat(self, settings: config.Settings, spec: config.ServerModel, role: str,
             offload: fit.Offload | None) -> ChatModel:
        return ServerBackend(spec, role)

    def embedder(self, settings: config.Settings, spec: config.ServerModel, role: str,
                 offload: fit.Offload | None) -> Embedder:
        return ServerBackend(spec, role)

    def reranker(self, settings: config.Settings, spec: config.ServerModel, role: str,
                 offload: fit.Offload | None) -> Reranker:
        return ServerBackend(spec, role)

    def where(self, settings: config.Settings, spec: config.ServerModel) -> str:
        return spec.base_url

    def listed(self, settings: config.Settings, spec: config.ServerModel) -> str:
        return f"{spec.model} at {spec.base_url}"

    def named(self, settings: config.Settings, spec: config.ServerModel) -> tuple[str, GGUFSummary | None]:
        named = "" if spec.model == "default" else f" {spec.model!r}"
        return f"the model{named} at {spec.base_url}", None

    def view(self, settings: config.Settings, spec: config.ServerModel) -> dict[str, Any]:
        return {"backend": "server", "model": spec.model, "base_url": spec.base_url, "n_ctx": spec.n_ctx}


# The spec's ``backend`` tag -> its backend: the one place that tells the kinds apart.
BACKENDS: dict[str, Backend[Any]] = {"local": Local(), "server": Server()}


def backend_of(spec: config.LocalModel | config.ServerModel) -> Backend[Any]:
    """The backend a role's spec names."""
    return BACKENDS[spec.backend]
