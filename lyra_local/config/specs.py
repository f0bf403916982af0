"""The models each role runs on, as typed specs: a local GGUF, an OpenAI-compatible server, or the same
model as another role; and the defaults a role gets when the config names none.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, Union

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    SecretStr,
    Tag,
    field_validator,
)

DEFAULT_CHAT_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_EMBED_FILE = "all-MiniLM-L6-v2.F16.gguf"


class Strict(BaseModel):
    """A settings section: an unknown key is an error, and settings never change once read."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Sampling(Strict):
    """Generation defaults for a chat-capable role; a request may override them."""

    temperature: float = Field(0.7, ge=0.0, le=2.0, description="Sampling temperature.")
    top_p: float = Field(0.95, gt=0.0, le=1.0, description="Nucleus sampling mass.")
    top_k: int = Field(40, ge=0, le=1000, description="Top-k cut-off (0 = off).")
    min_p: float = Field(0.05, ge=0.0, le=1.0, description="Min-p cut-off.")
    repeat_penalty: float = Field(1.1, ge=0.5, le=2.0, description="Repetition penalty.")
    max_tokens: int = Field(512, ge=1, le=32768, description="Default reply budget in tokens.")
    seed: int | None = Field(None, description="Fixed RNG seed for reproducible output.")


class RetryPolicy(Strict):
    """Bounded exponential backoff with jitter for a model server."""

    max_attempts: int = Field(5, ge=1, le=50, description="Tries per request, the first included.")
    initial_delay_s: float = Field(0.5, ge=0.0, le=60.0, description="Delay before the first retry.")
    max_delay_s: float = Field(8.0, ge=0.0, le=600.0, description="Upper bound of one delay.")
    multiplier: float = Field(2.0, ge=1.0, le=10.0, description="Growth of the delay per retry.")
    jitter: float = Field(0.5, ge=0.0, le=1.0, description="Random share taken off each delay.")


class LocalModel(Strict):
    """A GGUF file run in-process by llama-cpp-python."""

    backend: Literal["local"] = "local"
    path: Path = Field(description="GGUF file; relative paths are inside models_dir.")
    n_ctx: int = Field(2048, ge=64, le=1_048_576, description="Context length in tokens.")
    n_gpu_layers: int | Literal["auto"] = Field(
        "auto", description="Layers offloaded to the GPU: -1 all, 0 none, N that many, 'auto' as many as fit beside "
                            "the other local roles and the KV cache (`lyra doctor` says what it chose).")
    n_threads: int | None = Field(None, ge=1, le=1024, description="CPU threads (default: all).")
    n_batch: int = Field(512, ge=16, le=65536, description="Prompt batch size in tokens.")
    n_ubatch: int = Field(512, ge=16, le=65536, description="Physical micro-batch in tokens.")
    chat_format: str | None = Field(None, description="llama.cpp chat format; default: the GGUF's template.")
    flash_attn: bool = Field(True, description="Flash attention: faster batched embeddings, less KV memory.")
    sampling: Sampling = Sampling()

    @field_validator("path")
    @classmethod
    def _expand_user(cls, value: Path) -> Path:
        return value.expanduser()

    def local_file(self, models_dir: Path) -> Path:
        """The GGUF this model runs from: ``path``, inside ``models_dir`` when relative."""
        return self.path if self.path.is_absolute() else models_dir / self.path

    @field_validator("n_gpu_layers", mode="before")
    @classmethod
    def _layers(cls, value: Any) -> Any:
        """One message for every wrong value (the union's two would name pydantic's own types)."""
        if isinstance(value, str) and value.strip().removeprefix("-").isdigit():
            value = int(value)  # from the environment
        if value == "auto" or (isinstance(value, int) and not isinstance(value, bool) and value >= -1):
            return value
        raise ValueError('must be "auto" (as many layers as fit), -1 (all), 0 (none) or a number of layers')


class ServerModel(Strict):
    """A model behind an OpenAI-compatible llama.cpp server (usually on the GPU box)."""

    backend: Literal["server"]
    base_url: str = Field(description="Server root, e.g. http://gpu-box:8080 (no /v1).")
    model: str = Field("default", description="Model name sent in requests.")
    api_key: SecretStr | None = Field(None, description="Bearer token the server expects.")
    n_ctx: int | None = Field(None, ge=64, description="Context length; default: asked from the server.")
    connect_timeout_s: float = Field(5.0, gt=0, le=600, description="TCP connect timeout.")
    read_timeout_s: float = Field(300.0, gt=0, le=3600, description="Longest silence while reading.")
    retry: RetryPolicy = RetryPolicy()
    sampling: Sampling = Sampling()

    @field_validator("base_url")
    @classmethod
    def _check_url(cls, value: str) -> str:
        return server_url(value)

    def local_file(self, models_dir: Path) -> None:
        """None: the model's file is the server's, not on this machine's disk (``LocalModel.local_file``)."""
        return None


def server_url(value: str) -> str:
    """A model server's root as ``ServerModel`` keeps it (http(s) only, no trailing ``/`` or ``/v1``);
    ``ValueError`` for any other scheme."""
    if not value.startswith(("http://", "https://")):
        raise ValueError("must start with http:// or https://")
    return value.rstrip("/").removesuffix("/v1")


class SameAs(Strict):
    """Reuse another role's model: one loaded instance serves both."""

    same_as: Literal["chat"]


def backend_tag(value: Any) -> str:
    """A role's backend as a table or a spec says it: ``same_as`` first, then ``backend`` (default local)."""
    if isinstance(value, Mapping):
        if "same_as" in value:
            return "same_as"
        return str(value.get("backend", "local"))
    if isinstance(value, SameAs):
        return "same_as"
    return str(getattr(value, "backend", "local"))


ModelSpec = Annotated[
    Union[Annotated[LocalModel, Tag("local")], Annotated[ServerModel, Tag("server")]],
    Discriminator(backend_tag),
]
SummarySpec = Annotated[
    Union[
        Annotated[LocalModel, Tag("local")],
        Annotated[ServerModel, Tag("server")],
        Annotated[SameAs, Tag("same_as")],
    ],
    Discriminator(backend_tag),
]


class ModelsConfig(Strict):
    """The model roles: three always, and the re-ranker when one is configured."""

    chat: ModelSpec = Field(description="Replies to the user.")
    summary: SummarySpec = Field(description="Gists, digests, reflection; may reuse chat.")
    embed: ModelSpec = Field(description="Embeddings for recall.")
    rerank: ModelSpec | None = Field(None, description="A reranking GGUF (rank pooling) that re-orders recall's "
                                                      "best candidates; off when absent.")



ROLE_DEFAULTS: dict[str, dict[str, Any]] = {
    "chat": {"backend": "local", "path": DEFAULT_CHAT_FILE, "n_ctx": 2048},
    "summary": {"same_as": "chat"},
    "embed": {"backend": "local", "path": DEFAULT_EMBED_FILE, "n_ctx": 512, "n_batch": 256, "n_ubatch": 256},
}
