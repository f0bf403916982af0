"""The paths answered outside the usual conditions, listed once: without a login, and without a hold on the
models (the lease a reload waits for). Everything else needs both: a person, and models that stay put until
its response has ended."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class OpenPath:
    path: str
    under: bool  # the path and everything below it ("/static/..."), not the path alone
    models: bool  # whether answering it reads the loaded models (and so holds them)

    def matches(self, path: str) -> bool:
        return path.startswith(self.path) if self.under else path == self.path


# Liveness, the page and its assets, and logging in: answered for nobody in particular.
OPEN_PATHS = (
    OpenPath("/health", under=False, models=False),
    OpenPath("/static/", under=True, models=False),
    OpenPath("/", under=False, models=True),
    OpenPath("/api/auth/state", under=False, models=True),
    OpenPath("/api/auth/login", under=False, models=True),
)


def needs_no_login(path: str) -> bool:
    return any(p.matches(path) for p in OPEN_PATHS)


def needs_no_models(path: str) -> bool:
    return any(p.matches(path) and not p.models for p in OPEN_PATHS)
