"""Typed settings: defaults, then ``lyra.toml``, then ``LYRA_*`` environment variables.

Every field is described and bounded; an unknown key (in the file or in the
environment) is an error that names where it came from, never silently ignored.
Loading settings never touches model files: whether they exist and are whole is
checked by ``model_file_problems`` so that ``lyra models fetch`` can run on a fresh machine.
"""

from __future__ import annotations

import ipaddress
import os
import sys
import tomllib
from collections.abc import Mapping
from datetime import timezone, tzinfo
from pathlib import Path
from typing import Annotated, Any, Literal, Union
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import tzlocal
from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    SecretStr,
    Tag,
    ValidationError,
    field_validator,
)

from .errors import ConfigError
from .modelfiles.devices import FAKE_DEVICES_ENV
from .modelfiles.gguf_header import GGUFSummary, ModelFileInvalid, read_gguf
from .modelfiles.roles import ROLE_HINT, header_refusal

ENV_PREFIX = "LYRA_"
CONFIG_ENV = "LYRA_CONFIG"
TOKEN_ENV = "LYRA_TOKEN"  # the API token `lyra mcp` acts with (cli/mcp.py)
NOT_SETTINGS = frozenset({CONFIG_ENV, FAKE_DEVICES_ENV, TOKEN_ENV})  # LYRA_* variables that are not a settings key
CONFIG_FILENAME = "lyra.toml"
DEFAULT_CHAT_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_EMBED_FILE = "all-MiniLM-L6-v2.F16.gguf"
FETCH_HINT = "run `lyra models fetch` (or `make run`) to fetch the default models"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Sampling(_Strict):
    """Generation defaults for a chat-capable role; a request may override them."""

    temperature: float = Field(0.7, ge=0.0, le=2.0, description="Sampling temperature.")
    top_p: float = Field(0.95, gt=0.0, le=1.0, description="Nucleus sampling mass.")
    top_k: int = Field(40, ge=0, le=1000, description="Top-k cut-off (0 = off).")
    min_p: float = Field(0.05, ge=0.0, le=1.0, description="Min-p cut-off.")
    repeat_penalty: float = Field(1.1, ge=0.5, le=2.0, description="Repetition penalty.")
    max_tokens: int = Field(512, ge=1, le=32768, description="Default reply budget in tokens.")
    seed: int | None = Field(None, description="Fixed RNG seed for reproducible output.")


class RetryPolicy(_Strict):
    """Bounded exponential backoff with jitter for a model server."""

    max_attempts: int = Field(5, ge=1, le=50, description="Tries per request, the first included.")
    initial_delay_s: float = Field(0.5, ge=0.0, le=60.0, description="Delay before the first retry.")
    max_delay_s: float = Field(8.0, ge=0.0, le=600.0, description="Upper bound of one delay.")
    multiplier: float = Field(2.0, ge=1.0, le=10.0, description="Growth of the delay per retry.")
    jitter: float = Field(0.5, ge=0.0, le=1.0, description="Random share taken off each delay.")


class LocalModel(_Strict):
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


class ServerModel(_Strict):
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


class SameAs(_Strict):
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


class ModelsConfig(_Strict):
    """The model roles: three always, and the re-ranker when one is configured."""

    chat: ModelSpec = Field(description="Replies to the user.")
    summary: SummarySpec = Field(description="Gists, digests, reflection; may reuse chat.")
    embed: ModelSpec = Field(description="Embeddings for recall.")
    rerank: ModelSpec | None = Field(None, description="A reranking GGUF (rank pooling) that re-orders recall's "
                                                      "best candidates; off when absent.")


TOKEN_HOW = 'make one with: python3 -c "import secrets; print(secrets.token_urlsafe(24))"'
MIN_TOKEN_CHARS = 16


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address, IPv6 without brackets) is this machine only."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class ServerSettings(_Strict):
    """The HTTP server `lyra serve` runs, and who may reach it."""

    host: str = Field("127.0.0.1", description="Bind address; loopback unless a token is set.")
    port: int = Field(8000, ge=1, le=65535, description="TCP port.")
    api_token: SecretStr | None = Field(
        None, description=f"Bearer token required by the API; at least {MIN_TOKEN_CHARS} characters.")
    allowed_hosts: tuple[str, ...] = Field(
        (),
        description="Names the server answers to besides loopback and its bind address ('lyra.lan', "
                    "'lyra.lan:8000'); a request for any other Host is refused, so no web page can "
                    "rebind a name of its own to this machine. From the environment: comma-separated.")
    trusted_proxies: tuple[str, ...] = Field(
        (),
        description="Addresses (or networks, '10.0.0.0/8') of reverse proxies in front of Lyra whose "
                    "X-Forwarded-For and X-Forwarded-Proto are believed: the client's address then comes from "
                    "them (the login limits count per address). Empty, the default: the address is the "
                    "socket's and forwarded headers are ignored. Read at start (a change takes a restart). From the "
                    "environment: comma-separated.")

    @field_validator("api_token")
    @classmethod
    def _long_enough(cls, value: SecretStr | None) -> SecretStr | None:
        # An unset shell variable gives "": it must neither mean "no token" nor be one.
        if value is None:
            return None
        secret = value.get_secret_value()
        if not secret.strip():
            raise ValueError(f"is empty (an unset shell variable?): leave it out for no token, or {TOKEN_HOW}")
        if secret != secret.strip():
            raise ValueError("starts or ends with whitespace, which no client would send")
        if len(secret) < MIN_TOKEN_CHARS:
            raise ValueError(f"is {len(secret)} characters: too short, it could be guessed; "
                             f"use at least {MIN_TOKEN_CHARS}, {TOKEN_HOW}")
        return value

    @field_validator("allowed_hosts", "trusted_proxies", mode="before")
    @classmethod
    def _split(cls, value: Any) -> Any:
        if isinstance(value, str):  # LYRA_SERVER__ALLOWED_HOSTS="lyra.lan, 192.168.1.5"
            return [part for part in value.replace(",", " ").split() if part]
        return value

    @field_validator("allowed_hosts")
    @classmethod
    def _bare_names(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        names = tuple(name.strip().lower() for name in value)
        for name in names:
            if not name or any(c in name for c in "/@*?#\\ "):
                raise ValueError(f"{name!r} is not a host name: give 'name' or 'name:port', no scheme or path")
        # A bare IPv6 address as a Host header is written in brackets.
        return tuple(f"[{name}]" if name.count(":") > 1 and not name.startswith("[") else name for name in names)

    @field_validator("trusted_proxies")
    @classmethod
    def _addresses(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        # Only addresses: "*" (anyone may say where a request came from) would undo the login limits.
        for entry in value:
            try:
                ipaddress.ip_network(entry.strip("[]"), strict=False)
            except ValueError:
                raise ValueError(f"{entry!r} is not an IP address or network: name the proxy's address, "
                                 "e.g. 127.0.0.1 or 172.17.0.0/16") from None
        return tuple(entry.strip("[]") for entry in value)


class CompanionSettings(_Strict):
    """Who the companion is and how much memory goes into each reply."""

    name: str = Field("Lyra", min_length=1, max_length=60, description="The companion's name.")
    user_name: str | None = Field(None, max_length=60, description="Your name; else the profile's, else 'you'.")
    persona_file: Path | None = Field(None, description="A text file with the persona; default: built in.")
    recent_turns: int = Field(60, ge=2, le=1000, description="Most turns of the session considered.")
    recalled_turns: int = Field(6, ge=0, le=50, description="Raw turns recalled from other sessions.")
    recalled_gists: int = Field(4, ge=0, le=50, description="Gists of other sessions recalled.")
    timeline_days: int = Field(14, ge=0, le=366, description="Days of day digests offered; older come as weeks/months.")
    off_the_record_hours: float = Field(24, gt=0, le=8760, description="An off-the-record conversation is "
                                        "deleted after this many hours without a turn (or when you leave it).")
    timezone: str = Field("", description="Your time zone (IANA name, e.g. 'Europe/Lisbon'): which day a turn "
                                          "belongs to for digests, the timeline and dates in questions. Empty: "
                                          "this machine's.")

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        if value:
            try:
                ZoneInfo(value)
            except (ZoneInfoNotFoundError, ValueError) as exc:
                raise ValueError(f"unknown time zone {value!r}: give an IANA name such as 'Europe/Lisbon'") from exc
        return value

    @property
    def zone(self) -> tzinfo:
        """The configured zone, else this machine's (UTC when it cannot be told)."""
        if self.timezone:
            return ZoneInfo(self.timezone)
        try:
            return ZoneInfo(tzlocal.get_localzone_name() or "UTC")
        except (ZoneInfoNotFoundError, ValueError):
            return timezone.utc

    @field_validator("persona_file")
    @classmethod
    def _persona_exists(cls, value: Path | None) -> Path | None:
        if value is not None and not value.expanduser().is_file():
            raise ValueError(f"persona file not found: {value}")
        return None if value is None else value.expanduser()


class DreamSettings(_Strict):
    """The dream cycle: when it runs, what is ripe, when a drive acts, how it backs off."""

    enabled: bool = Field(True, description="Run the dream cycle on a schedule inside `lyra serve`.")
    interval_s: float = Field(300.0, ge=5, le=86400, description="Seconds between scheduled passes.")
    idle_s: float = Field(120.0, ge=0, le=86400, description="Skip a scheduled pass while a chat turn was this recent.")
    quiet_hours: str | None = Field(None, pattern=r"^\d{1,2}:\d{2}-\d{1,2}:\d{2}$",
                                    description="Local 'HH:MM-HH:MM' when scheduled passes do not run.")
    session_idle_s: float = Field(900.0, ge=0, description="A session with new turns is ripe once quiet this long.")
    resummarize_after: int = Field(20, ge=1, le=10000, description="New turns that make an active session ripe.")
    min_turns: int = Field(2, ge=1, le=1000, description="Turns a session needs before its first gist.")
    threshold: float = Field(0.2, ge=0.0, le=1.0, description="A drive acts once it reaches this level.")
    summary_tokens: int = Field(256, ge=32, le=4096, description="Most tokens of one summary the model writes.")
    concurrency: int = Field(1, ge=1, le=64, description="Sessions summarized at once (a server's parallel slots).")
    lease_s: float = Field(600.0, ge=5, le=86400, description="Lease on one unit of work; a crashed holder's expires.")
    retry: RetryPolicy = Field(RetryPolicy(max_attempts=8, initial_delay_s=2.0, max_delay_s=60.0),
                               description="Backoff of a pass while the summary model is unreachable.")

    @field_validator("quiet_hours")
    @classmethod
    def _valid_clock(cls, value: str | None) -> str | None:
        for part in (value or "").split("-") if value else ():
            hours, minutes = (int(x) for x in part.split(":"))
            if not (0 <= hours < 24 and 0 <= minutes < 60):
                raise ValueError(f"{part} is not a time of day (HH:MM)")
        return value


class CoordinationSettings(_Strict):
    """Instances and world-state proposals shared by every Lyra process and local agent."""

    stale_after_s: float = Field(120.0, ge=5, le=86400, description="An instance silent this long is stale.")
    world_updates: Literal["propose", "auto", "off"] = Field(
        "propose", description="Dream-cycle world-state changes: kept for review, accepted at once, or none.")
    sitrep_chars: int = Field(3000, ge=500, le=50000, description="Longest sitrep, so it is safe in a context.")


class Settings(_Strict):
    """Everything `lyra` is configured with."""

    data_dir: Path = Field(description="Where the memory lives (database, indexes).")
    models_dir: Path = Field(description="Where model files are fetched to and looked up.")
    server: ServerSettings = ServerSettings()
    companion: CompanionSettings = CompanionSettings()
    dream: DreamSettings = DreamSettings()
    coordination: CoordinationSettings = CoordinationSettings()
    models: ModelsConfig
    config_file: Path | None = Field(None, description="The lyra.toml that was read, if any.")

    def model_path(self, spec: LocalModel) -> Path:
        """The absolute path of a local model's file."""
        return spec.local_file(self.models_dir)

    def resolved_summary(self) -> LocalModel | ServerModel:
        """The summary role's own spec, following ``same_as``."""
        summary = self.models.summary
        return self.models.chat if isinstance(summary, SameAs) else summary

    def summary_shares_chat(self) -> bool:
        """Whether the summary role is served by chat's model (``same_as = "chat"``, or the same spec)."""
        return self.resolved_summary() == self.models.chat

    def roles(self) -> tuple[str, ...]:
        """The roles configured: chat, summary and embed, and rerank when set."""
        return (*ROLE_DEFAULTS, *(role for role in OPTIONAL_ROLES if getattr(self.models, role) is not None))

    def role_spec(self, role: str) -> LocalModel | ServerModel:
        """The spec serving ``role`` (one of ``roles()``), following ``same_as``."""
        spec: LocalModel | ServerModel | None = (self.resolved_summary() if role == "summary"
                                                 else getattr(self.models, role))
        if spec is None:
            raise ConfigError(f"no model is configured for the {role} role", hint=f"add a [models.{role}] section")
        return spec


def default_data_dir(env: Mapping[str, str]) -> Path:
    """The user's data location (XDG on Linux), never inside site-packages."""
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / "lyra"
    if sys.platform == "win32":
        return Path(env.get("APPDATA", Path.home() / "AppData" / "Roaming")) / "lyra"
    base = env.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "lyra"


def checkout_root() -> Path | None:
    """The source checkout this package runs from (editable install), if any."""
    root = Path(__file__).resolve().parent.parent
    return root if (root / "pyproject.toml").is_file() and (root / "models").is_dir() else None


def default_models_dir(data_dir: Path) -> Path:
    """``models/`` of the checkout when running from one, else inside the data dir."""
    root = checkout_root()
    return root / "models" if root else data_dir / "models"


ROLE_DEFAULTS: dict[str, dict[str, Any]] = {
    "chat": {"backend": "local", "path": DEFAULT_CHAT_FILE, "n_ctx": 2048},
    "summary": {"same_as": "chat"},
    "embed": {"backend": "local", "path": DEFAULT_EMBED_FILE, "n_ctx": 512, "n_batch": 256, "n_ubatch": 256},
}
OPTIONAL_ROLES = ("rerank",)  # no default model: off unless configured


def find_config_file(explicit: Path | None, env: Mapping[str, str]) -> Path | None:
    """``--config``, then ``$LYRA_CONFIG``, then ``./lyra.toml``, then the user config dir."""
    if explicit is None and env.get(CONFIG_ENV):
        explicit = Path(env[CONFIG_ENV])
    if explicit is not None:
        explicit = explicit.expanduser()
        if not explicit.is_file():
            raise ConfigError(f"config file not found: {explicit}", hint="check --config or $LYRA_CONFIG")
        return explicit
    for candidate in (Path.cwd() / CONFIG_FILENAME, user_config_file(env)):
        if candidate.is_file():
            return candidate
    return None


def user_config_file(env: Mapping[str, str]) -> Path:
    """``$XDG_CONFIG_HOME/lyra/lyra.toml`` (default ``~/.config/lyra/lyra.toml``): the last place
    ``find_config_file`` looks, and where Settings → Models creates one when none was read."""
    return Path(env.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "lyra" / CONFIG_FILENAME


def load_settings(config: Path | None = None, env: Mapping[str, str] | None = None) -> Settings:
    """Build validated settings; raise ``ConfigError`` naming every bad field."""
    env = os.environ if env is None else env
    path = find_config_file(config, env)
    return settings_from_text(None if path is None else path.read_text(encoding="utf-8"), path, env)


def settings_from_text(text: str | None, path: Path | None, env: Mapping[str, str]) -> Settings:
    """Settings from ``text``, the contents of ``path`` (or of a file about to be written there), under ``env``.

    Relative directories resolve against ``path``'s folder, so a candidate text is judged exactly as it will
    be read once written (Settings → Models checks a choice before it touches the file).
    """
    raw: dict[str, Any] = {}
    if text is not None:
        try:
            raw = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{path} is not valid TOML: {exc}", hint="fix the syntax at that line") from exc
        if path is not None:
            raw = _resolve_relative_paths(raw, path.parent)
    env_keys = _overlay_env(raw, env)
    _apply_defaults(raw, env)
    if path is not None:
        raw["config_file"] = path
    try:
        return Settings.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(_describe(exc, path, env_keys), hint="see docs/configuration.md") from exc


def _resolve_relative_paths(raw: dict[str, Any], base: Path) -> dict[str, Any]:
    """Directories in a config file are relative to that file, not to the cwd."""
    for key in ("data_dir", "models_dir"):
        if isinstance(raw.get(key), str) and not Path(raw[key]).expanduser().is_absolute():
            raw[key] = str(base / raw[key])
    return raw


def env_locations(env: Mapping[str, str]) -> dict[tuple[str, ...], str]:
    """Where each ``LYRA_A__B__C`` variable lands in the settings, ``("a", "b", "c")``, and its name."""
    return {tuple(part.lower() for part in name[len(ENV_PREFIX):].split("__")): name
            for name in env if name.startswith(ENV_PREFIX) and name not in NOT_SETTINGS}


def _overlay_env(raw: dict[str, Any], env: Mapping[str, str]) -> dict[tuple[str, ...], str]:
    """Apply ``LYRA_A__B__C=value`` onto ``raw['a']['b']['c']``; return loc -> variable name."""
    sources: dict[tuple[str, ...], str] = {}
    for loc, name in env_locations(env).items():
        value = env[name]
        node = raw
        for part in loc[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise ConfigError(f"{name} sets a field inside {part!r}, which is not a section")
            node = child
        node[loc[-1]] = value
        sources[loc] = name
    return sources


def _apply_defaults(raw: dict[str, Any], env: Mapping[str, str]) -> None:
    data_dir = Path(raw.get("data_dir") or default_data_dir(env)).expanduser()
    raw["data_dir"] = data_dir
    raw["models_dir"] = Path(raw.get("models_dir") or default_models_dir(data_dir)).expanduser()
    models = raw.setdefault("models", {})
    if not isinstance(models, dict):
        return
    for role, default in ROLE_DEFAULTS.items():
        given = models.get(role)
        if given is None:
            models[role] = dict(default)
        elif isinstance(given, dict) and backend_tag(given) == backend_tag(default):
            models[role] = {**default, **given}


def _describe(exc: ValidationError, path: Path | None, env_keys: dict[tuple[str, ...], str]) -> str:
    lines = ["invalid configuration:"]
    for err in exc.errors():
        loc = _drop_union_tags(tuple(str(p) for p in err["loc"]))
        from_env = [name for env_loc, name in env_keys.items() if env_loc[:len(loc)] == loc]
        where = ", ".join(from_env) or (f"{path}" if path else "defaults")
        detail = "unknown key" if err["type"] == "extra_forbidden" else err["msg"]
        lines.append(f"  - {'.'.join(loc)}: {detail} (from {where})")
    return "\n".join(lines)


def _drop_union_tags(loc: tuple[str, ...]) -> tuple[str, ...]:
    """``models.chat.local.n_ctx`` -> ``models.chat.n_ctx``: the backend tag is pydantic's, not the user's."""
    return tuple(part for i, part in enumerate(loc)
                 if not (i > 0 and loc[i - 1] in (*ROLE_DEFAULTS, *OPTIONAL_ROLES)
                         and part in {"local", "server", "same_as"}))


def uses_demo_chat_model(settings: Settings) -> bool:
    """Whether chat runs on the small model `make run` fetches: a demonstration, not a companion to keep (the first
    run, `lyra doctor` and Settings → Models say so, and suggest a real one)."""
    path = settings.role_spec("chat").local_file(settings.models_dir)
    return path is not None and path.name == DEFAULT_CHAT_FILE


def model_file_problems(settings: Settings, roles: tuple[str, ...] | None = None) -> list[str]:
    """One actionable line per configured local model (of ``roles``, default all) whose file is missing, that
    llama.cpp could not load (not GGUF, a version it does not read, a download cut short), or whose header shows it
    cannot serve its role (an embedding model chosen to chat: ``modelfiles/roles.py``). Reads headers only."""
    problems = []
    headers: dict[Path, GGUFSummary | None] = {}  # each file read once
    judged: set[tuple[Path, str]] = set()
    for role in settings.roles() if roles is None else roles:
        path = settings.role_spec(role).local_file(settings.models_dir)
        if path is None:  # a server's model: its file is the server's to check
            continue
        if path not in headers:
            headers[path] = None
            default = path.name in (DEFAULT_CHAT_FILE, DEFAULT_EMBED_FILE)
            if not path.is_file():
                hint = FETCH_HINT if default else f"put the GGUF there or fix models.{role}.path"
                problems.append(f"models.{role}: model file not found: {path} — {hint}")
                continue
            try:
                headers[path] = read_gguf(path)
            except ModelFileInvalid as exc:
                again = "`lyra models fetch --force` fetches the defaults again" if default else exc.hint
                problems.append(f"models.{role}: {exc.message} — {again}")
        work = (path, "chat" if role == "summary" else role)  # a summary on chat's file was judged with chat
        if work in judged:
            continue
        judged.add(work)
        refused = header_refusal(headers[path], role, path.name if path.parent == settings.models_dir else str(path))
        if refused is not None:
            problems.append(f"models.{role}: {refused} — {ROLE_HINT}")
    return problems
