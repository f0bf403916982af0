"""The settings sections (server, companion, dream, coordination) and ``Settings``, which holds them all."""

from __future__ import annotations

import ipaddress
from datetime import timezone, tzinfo
from pathlib import Path
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import tzlocal
from pydantic import (
    Field,
    SecretStr,
    field_validator,
)

from ..errors import ConfigError
from ..roles import OPTIONAL_ROLES
from .specs import (
    ROLE_DEFAULTS,
    LocalModel,
    ModelsConfig,
    RetryPolicy,
    SameAs,
    ServerModel,
    Strict,
)

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


class ServerSettings(Strict):
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


class CompanionSettings(Strict):
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


class DreamSettings(Strict):
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


class CoordinationSettings(Strict):
    """Instances and world-state proposals shared by every Lyra process and local agent."""

    stale_after_s: float = Field(120.0, ge=5, le=86400, description="An instance silent this long is stale.")
    world_updates: Literal["propose", "auto", "off"] = Field(
        "propose", description="Dream-cycle world-state changes: kept for review, accepted at once, or none.")
    sitrep_chars: int = Field(3000, ge=500, le=50000, description="Longest sitrep, so it is safe in a context.")


class Settings(Strict):
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
