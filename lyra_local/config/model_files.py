"""Whether the configured model files are there and can serve their roles, read from their headers only.

Apart from loading so that ``lyra models fetch`` can run on a machine that has no model yet.
"""

from __future__ import annotations

from pathlib import Path

from ..modelfiles.gguf_header import GGUFSummary, ModelFileInvalid, read_gguf
from ..modelfiles.roles import ROLE_HINT, header_refusal
from .settings import Settings
from .specs import DEFAULT_CHAT_FILE, DEFAULT_EMBED_FILE

FETCH_HINT = "run `lyra models fetch` (or `make run`) to fetch the default models"


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
