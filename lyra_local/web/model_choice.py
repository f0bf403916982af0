"""Applying a choice of models (Settings → Models): check it, then write lyra.toml, then swap the models.

A choice is refused before anything is written when a chosen file is not in
``models_dir``, when the new settings do not validate, when a ``LYRA_MODELS__…``
environment variable would override it (the file would say one thing and the
server run another), or when the new models fail the reload's checks (a file
cut short, not GGUF, one llama.cpp cannot load, a server that does not answer).
Then lyra.toml is byte for byte what it was and the running models keep
serving. The file is written only once the models passed, and the models are
swapped in only once it was written: a reload after a restart reads what runs.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from ..config import settings_from_text, user_config_file
from ..config_edit import ModelChoices, edit_models, env_overrides
from ..errors import BadRequest, ConfigError, Conflict, ReloadRefused
from ..fsutil import replace_text

if TYPE_CHECKING:
    from .state import AppState

FILES_HINT = "GET /api/models/files lists the GGUF files in models_dir"


class ChoiceRefused(BadRequest):
    """A choice that cannot run: nothing was written and the running models keep serving."""


class OverriddenByEnv(Conflict):
    """An environment variable sets what the choice would change; environment variables win over lyra.toml."""


def config_target(config_path: Path | None, env: Mapping[str, str]) -> Path:
    """Where a choice is written: the config file the server reads, else the user's (created then)."""
    return config_path if config_path is not None else user_config_file(env)


def apply_choice(state: AppState, choices: ModelChoices, env: Mapping[str, str]) -> Path:
    """Check ``choices`` against the running server's config file and environment, write it, swap the models;
    return the file written. Raises ``ChoiceRefused`` (400), ``OverriddenByEnv`` or ``Conflict`` (409)."""
    if not any(True for _ in choices.given()):
        raise BadRequest("no role chosen", hint='e.g. {"roles": {"chat": {"file": "model.gguf"}}}')
    target = config_target(state.config_path, env)
    before = read_config(target)
    unchanged = f"not applied ({target} is unchanged, the running models keep serving)"
    try:
        text = edit_models(before, choices)
        candidate = settings_from_text(text, target, env)
    except (BadRequest, ConfigError) as exc:  # a name or URL no config may hold, or settings that do not validate
        raise ChoiceRefused(f"{unchanged}: {exc.message}", hint=exc.hint) from exc
    for role, choice in choices.given():
        missing = choice.absent_from(candidate.models_dir)
        if missing is not None:
            raise ChoiceRefused(f"{unchanged}: models.{role}: {missing} is not in {candidate.models_dir}",
                                hint=FILES_HINT)
    if not writable(target):  # before loading anything: a read-only mount (Docker's /config) refuses at once
        raise ChoiceRefused(f"{unchanged}: {target} cannot be written here (a read-only file or mount?)",
                            hint="make it writable, or edit lyra.toml where it lives and reload the server")
    overriding = env_overrides(choices, candidate, env)
    if overriding:
        raise OverriddenByEnv(f"{unchanged}: {', '.join(overriding)} in the server's environment "
                              f"override{'s' if len(overriding) == 1 else ''} this choice",
                              hint="environment variables win over lyra.toml: unset it where the server is "
                                   "started (or give it the chosen value) and restart the server")

    def commit() -> None:
        if read_config(target) != before:
            raise Conflict(f"{target} changed while the choice was being checked; nothing was written",
                           hint="look at the file, then choose again")
        try:
            replace_text(target, text)
        except OSError as exc:
            raise ConfigError(f"could not write {target}: {exc.strerror or exc}",
                              hint="check that folder's permissions; nothing was changed") from exc

    try:
        state.reload(candidate, commit)
    except ReloadRefused as exc:
        raise ChoiceRefused(f"{unchanged}: {exc.reason}", hint=exc.hint) from exc
    return target


def writable(path: Path) -> bool:
    """Whether ``path`` can be replaced: the file (if there) and the folder its temporary copy goes in, or the
    nearest folder that exists, where it would be created."""
    if path.exists():
        return os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    return os.access(folder, os.W_OK)


def read_config(path: Path) -> str | None:
    """The config file's text, None when there is none yet."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}", hint="fix or remove that file, then choose again") from exc
