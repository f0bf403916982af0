"""Typed settings: defaults, then ``lyra.toml``, then ``LYRA_*`` environment variables.

Every field is described and bounded; an unknown key (in the file or in the
environment) is an error that names where it came from, never silently ignored.
Loading settings never touches model files: whether they exist and are whole is
checked by ``model_file_problems`` so that ``lyra models fetch`` can run on a fresh machine.

The package is split by concern (``specs``: the models per role; ``settings``: the
sections; ``loading``: where values come from; ``model_files``: checking the files);
its public names are re-exported here, so callers import them from ``lyra_local.config``.
"""

from __future__ import annotations

from .loading import (
    CONFIG_ENV,
    CONFIG_FILENAME,
    ENV_PREFIX,
    NOT_SETTINGS,
    TOKEN_ENV,
    checkout_root,
    default_data_dir,
    default_models_dir,
    env_locations,
    find_config_file,
    load_settings,
    settings_from_text,
    user_config_file,
)
from .model_files import FETCH_HINT, model_file_problems, uses_demo_chat_model
from .settings import (
    MIN_TOKEN_CHARS,
    TOKEN_HOW,
    CompanionSettings,
    CoordinationSettings,
    DreamSettings,
    ServerSettings,
    Settings,
    is_loopback,
)
from .specs import (
    DEFAULT_CHAT_FILE,
    DEFAULT_EMBED_FILE,
    ROLE_DEFAULTS,
    LocalModel,
    ModelsConfig,
    ModelSpec,
    RetryPolicy,
    SameAs,
    Sampling,
    ServerModel,
    SummarySpec,
    backend_tag,
    server_url,
)

__all__ = [
    "CONFIG_ENV", "CONFIG_FILENAME", "DEFAULT_CHAT_FILE", "DEFAULT_EMBED_FILE", "ENV_PREFIX", "FETCH_HINT",
    "MIN_TOKEN_CHARS", "NOT_SETTINGS", "ROLE_DEFAULTS", "TOKEN_ENV", "TOKEN_HOW",
    "CompanionSettings", "CoordinationSettings", "DreamSettings", "LocalModel", "ModelSpec", "ModelsConfig",
    "RetryPolicy", "SameAs", "Sampling", "ServerModel", "ServerSettings", "Settings", "SummarySpec",
    "backend_tag", "checkout_root", "default_data_dir", "default_models_dir", "env_locations",
    "find_config_file", "is_loopback", "load_settings", "model_file_problems", "server_url",
    "settings_from_text", "user_config_file", "uses_demo_chat_model",
]
