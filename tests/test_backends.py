"""The backend registry (``llm/backends.py``): every kind of spec the config can hold has its one entry, and
each entry builds and names its model the way the rest of Lyra shows it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, get_args

from lyra_local.config import LocalModel, ModelSpec, ServerModel, Settings
from lyra_local.llm.backends import BACKENDS, backend_of
from lyra_local.llm.base import Loadable
from lyra_local.llm.local import LocalChatModel, LocalEmbedder
from lyra_local.llm.local_rerank import LocalReranker
from lyra_local.llm.server import ServerBackend


def spec_classes() -> list[type[Any]]:
    """The spec classes ``ModelSpec`` accepts, read from the union pydantic parses."""
    union, = get_args(ModelSpec)[:1]
    return [get_args(member)[0] for member in get_args(union)]


def test_every_kind_of_spec_has_its_backend() -> None:
    tags = {get_args(cls.model_fields["backend"].annotation)[0] for cls in spec_classes()}
    assert tags == set(BACKENDS) == {"local", "server"}


def settings_with(make_settings: Callable[..., Settings]) -> Settings:
    return make_settings('[models.chat]\npath = "/elsewhere/chat.gguf"\nn_ctx = 1024\n'
                         '[models.embed]\nbackend = "server"\nbase_url = "http://gpu-box:8080/v1"\nmodel = "bge"\n'
                         '[models.rerank]\npath = "rank.gguf"\n')


def test_each_backend_builds_its_models_without_loading_them(make_settings: Callable[..., Settings]) -> None:
    settings = settings_with(make_settings)
    chat, embed, rerank = (settings.role_spec(role) for role in ("chat", "embed", "rerank"))
    assert isinstance(backend_of(chat).chat(settings, chat, "chat", None), LocalChatModel)
    assert isinstance(backend_of(rerank).reranker(settings, rerank, "rerank", None), LocalReranker)
    assert isinstance(backend_of(rerank).embedder(settings, rerank, "embed", None), LocalEmbedder)
    served = backend_of(embed).embedder(settings, embed, "embed", None)
    assert isinstance(served, ServerBackend) and isinstance(served, Loadable)
    served.close()


def test_each_backend_says_where_its_model_is(make_settings: Callable[..., Settings]) -> None:
    settings = settings_with(make_settings)
    chat, embed, rerank = (settings.role_spec(role) for role in ("chat", "embed", "rerank"))
    assert isinstance(chat, LocalModel) and isinstance(embed, ServerModel)
    assert chat.local_file(settings.models_dir) == Path("/elsewhere/chat.gguf")
    assert rerank.local_file(settings.models_dir) == settings.models_dir / "rank.gguf"
    assert embed.local_file(settings.models_dir) is None
    assert backend_of(chat).where(settings, chat) == "/elsewhere/chat.gguf"
    assert backend_of(embed).where(settings, embed) == "http://gpu-box:8080"
    assert backend_of(embed).listed(settings, embed) == "bge at http://gpu-box:8080"
    assert backend_of(chat).named(settings, chat) == ("/elsewhere/chat.gguf", None)  # outside models_dir: its path
    assert backend_of(rerank).named(settings, rerank) == ("rank.gguf", None)  # missing: no header
    assert backend_of(embed).named(settings, embed) == ("the model 'bge' at http://gpu-box:8080", None)
    assert backend_of(chat).gpu_layers(chat) == "auto" and backend_of(embed).gpu_layers(embed) == 0
    assert backend_of(embed).gpu_ask(settings, embed, "embed", None) is None
    assert backend_of(chat).view(settings, chat) == {"backend": "local", "model": "chat.gguf",
                                                     "path": "/elsewhere/chat.gguf", "n_ctx": 1024,
                                                     "n_gpu_layers": "auto"}
    assert backend_of(embed).view(settings, embed) == {"backend": "server", "model": "bge",
                                                       "base_url": "http://gpu-box:8080", "n_ctx": None}
