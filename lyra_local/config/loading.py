"""Where settings come from, in order: defaults, then ``lyra.toml``, then ``LYRA_*`` environment variables.

An error names every bad field and where its value came from (the file, a variable, the defaults).
"""

from __future__ import annotations

import os
import sys
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import (
    ValidationError,
)

from ..errors import ConfigError
from ..modelfiles.devices import FAKE_DEVICES_ENV
from ..roles import OPTIONAL_ROLES
from .settings import Settings
from .specs import ROLE_DEFAULTS, backend_tag

ENV_PREFIX = "LYRA_"
CONFIG_ENV = "LYRA_CONFIG"
TOKEN_ENV = "LYRA_TOKEN"  # the API token `lyra mcp` acts with (cli/mcp.py)
NOT_SETTINGS = frozenset({CONFIG_ENV, FAKE_DEVICES_ENV, TOKEN_ENV})  # LYRA_* variables that are not a settings key
CONFIG_FILENAME = "lyra.toml"


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
    root = Path(__file__).resolve().parents[2]
    return root if (root / "pyproject.toml").is_file() and (root / "models").is_dir() else None


def default_models_dir(data_dir: Path) -> Path:
    """``models/`` of the checkout when running from one, else inside the data dir."""
    root = checkout_root()
    return root / "models" if root else data_dir / "models"



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
