"""``Models``: the loaded models, one per role, built from settings, and leased by the work that uses them.

Created once by the app factory or a CLI command and passed to whoever needs a
model; never a module-level singleton. The summary role reuses the chat model's
instance when configured ``same_as = "chat"`` or with an identical spec, so one
GGUF is never loaded twice.

A configuration reload swaps in a new ``Models`` while chat turns, recalls,
dream passes and imports may still run on the old one. Each of those holds a
lease (``lease()``); ``retire()`` closes the old models when the last lease
ends, never under a call in progress. A closed registry builds nothing again:
asking it for a model raises ``ModelClosed``.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Collection, Iterable, Iterator

from .. import config
from ..modelfiles import devices, fit
from ..modelfiles.catalog import CatalogModel, load_catalog
from ..roles import FILE_ROLES, Role
from . import role_check
from .backends import backend_of
from .base import ChatModel, Embedder, Loadable, ModelInfo, Reranker
from .local import ModelClosed

log = logging.getLogger(__name__)


def offload_plan(settings: config.Settings, machine: devices.Machine | None = None, *,
                 without: Collection[str] = ()) -> dict[str, fit.Offload]:
    """``n_gpu_layers`` of every local role, ``"auto"`` resolved with the other roles on the same GPU(s), and
    why: what the models load with, and what `lyra doctor` and Settings → Models say. Reads headers, not models.

    ``without``: roles left out, to size what the others take (``fit.gpu_bytes``) before a model is chosen for
    them (a summary sharing chat's model goes with chat)."""
    asks = []
    for role in settings.roles():
        spec = settings.role_spec(role)
        shared = role == "summary" and settings.summary_shares_chat()
        if role in without or (shared and "chat" in without):
            continue
        ask = backend_of(spec).gpu_ask(settings, spec, role, "chat" if shared else None)
        if ask is not None:  # a model that runs on this machine
            asks.append(ask)
    return fit.auto_layers(asks, devices.probe() if machine is None else machine)


def describe_offload(settings: config.Settings) -> dict[str, str]:
    """Role -> what its ``n_gpu_layers`` comes to and why ("auto → 33 of 33 layers on the NVIDIA H200 (5.1 GB of
    139 GB; …)"), for the local roles."""
    return {role: offload.reason for role, offload in offload_plan(settings).items()}


def gpu_used_beside(settings: config.Settings, machine: devices.Machine, role: str) -> int:
    """GPU bytes the models of the other local roles take, placed as they load: what a model for ``role`` (the
    catalog's, the one suggested) shares the GPU with. A summary that shares chat's model goes with chat."""
    return fit.gpu_bytes(offload_plan(settings, machine, without=(role,)))


def catalog_ctx(settings: config.Settings | None, entry: CatalogModel) -> int:
    """The context a catalog entry is sized at: the n_ctx its role is set to (a local model's, or a server's
    that states one), else ``fit.RECOMMEND_CTX``; never more than the model was trained for."""
    n_ctx = None
    if settings is not None and entry.role in settings.roles():
        n_ctx = settings.role_spec(entry.role).n_ctx
    return min(n_ctx or fit.RECOMMEND_CTX, entry.context_length)


def catalog_fits(settings: config.Settings | None, machine: devices.Machine, *,
                 n_ctx: int | None = None) -> list[tuple[CatalogModel, fit.Placement]]:
    """Every catalog entry with where it would run on ``machine``: at ``n_ctx`` (else ``catalog_ctx``), in what
    the other roles' models leave of the GPU (all of it without settings). `lyra models catalog` and Settings →
    Models both show this, so they agree."""
    used = {role: gpu_used_beside(settings, machine, role) if settings is not None else 0 for role in FILE_ROLES}
    return [(entry, fit.place(fit.need_of_entry(entry, n_ctx or catalog_ctx(settings, entry)), machine,
                              gpu_used=used[Role(entry.role)]))
            for entry in load_catalog()]


def suggest_chat(settings: config.Settings, machine: devices.Machine) -> tuple[CatalogModel, fit.Placement] | None:
    """The catalog's chat model for this machine beside the other roles' models (``fit.recommend``): what the
    first-run guide and `lyra doctor` both suggest."""
    return fit.recommend(load_catalog(), machine, gpu_used=gpu_used_beside(settings, machine, "chat"))


class Models:
    """Role -> backend, built lazily; leased by work, retired on reload, closed once."""

    def __init__(self, settings: config.Settings, *, chat: ChatModel | None = None,
                 summary: ChatModel | None = None, embed: Embedder | None = None,
                 rerank: Reranker | None = None) -> None:
        """Backends given here are used as they are (tests pass fakes, or one model shared by a whole test
        session) and stay their giver's to close; the rest are built on use, and closed by ``close``."""
        self.settings = settings
        self._given = {id(m) for m in (chat, summary, embed, rerank) if m is not None}
        self._lock = threading.Lock()
        self._chat = chat
        self._summary = summary
        self._embed = embed
        self._rerank = rerank
        self._state = threading.Condition()  # guards the lease count and the lifecycle flags
        self._leases = 0
        self._retired = False
        self._closing = False
        self._closed = threading.Event()
        self._close_hooks: list[Callable[[], None]] = []
        self._plan: dict[str, fit.Offload] | None = None  # the GPU plan, made when the first local model is built

    # -- roles --------------------------------------------------------------------------

    @property
    def chat(self) -> ChatModel:
        with self._lock:
            self._check_open("chat")
            if self._chat is None:
                self._chat = self._build_chat(self.settings.models.chat, "chat")
            return self._chat

    @property
    def summary(self) -> ChatModel:
        if self._summary is None and self.shares_summary_with_chat():
            return self.chat
        spec = self.settings.resolved_summary()
        with self._lock:
            self._check_open("summary")
            if self._summary is None:
                self._summary = self._build_chat(spec, "summary")
            return self._summary

    @property
    def embed(self) -> Embedder:
        with self._lock:
            self._check_open("embed")
            if self._embed is None:
                spec = self.settings.models.embed
                self._embed = backend_of(spec).embedder(self.settings, spec, "embed", self._offload("embed"))
            return self._embed

    @property
    def rerank(self) -> Reranker | None:
        """The re-ranker, or None when none is configured (the role is optional)."""
        with self._lock:
            self._check_open("rerank")
            spec = self.settings.models.rerank
            if self._rerank is None and spec is not None:
                self._rerank = backend_of(spec).reranker(self.settings, spec, "rerank", self._offload("rerank"))
            return self._rerank

    def load(self, roles: Iterable[str]) -> None:
        """Load these roles' models now, or ask their servers if they are up: a reload checks the models it is
        about to swap in, so that a file llama.cpp cannot load fails the reload, not the next chat turn."""
        for role in roles:
            model: object = getattr(self, role)
            if isinstance(model, Loadable):  # every backend is; a test's fake need not be
                model.load()

    def check(self, roles: Iterable[str]) -> None:
        """Load these roles' models and have each do its role's smallest piece of work (``role_check``): Apply,
        a reload and the commands that embed refuse, with ``WrongModelForRole`` saying why, a model that loads
        but cannot serve its role (the chat GGUF chosen to embed), before anything is written or swapped."""
        checked: set[int] = set()
        for role in roles:
            spec = self.settings.role_spec(role)
            what, header = backend_of(spec).named(self.settings, spec)
            role_check.refuse_by_header(header, role, what)  # no header (a server's model): the check decides
            model: object = getattr(self, role)
            if model is None or id(model) in checked:  # the summary role sharing chat's instance: checked once
                continue
            checked.add(id(model))
            self.load([role])
            role_check.check_role(model, role, what, header)

    def shares_summary_with_chat(self) -> bool:
        return self.settings.summary_shares_chat()

    def info(self) -> list[ModelInfo]:
        rerank = self.rerank
        return [self.chat.info(), self.summary.info(), self.embed.info(), *([rerank.info()] if rerank else [])]

    # -- leases -------------------------------------------------------------------------

    @contextlib.contextmanager
    def lease(self) -> Iterator[Models]:
        """Hold these models open for one piece of work (a turn, a recall, a dream pass, an import)."""
        self.acquire()
        try:
            yield self
        finally:
            self.release()

    def acquire(self) -> None:
        """Take a lease by hand (it must be ``release``d once); ``ModelClosed`` if already closed."""
        with self._state:
            if self._closing:
                raise ModelClosed()
            self._leases += 1

    def release(self) -> None:
        with self._state:
            if self._leases <= 0:
                raise RuntimeError("Models.release() without a lease")
            self._leases -= 1
            last = self._retired and self._leases == 0
        if last:
            self._close_in_background()

    @property
    def leases(self) -> int:
        with self._state:
            return self._leases

    def retire(self) -> None:
        """No new work comes to these models: close them when the last lease ends (now, if none)."""
        with self._state:
            self._retired = True
            idle = self._leases == 0
        if idle:
            self._close_in_background()

    @property
    def retired(self) -> bool:
        """A newer configuration replaced these models: long work on them should stop at its next step."""
        return self._retired

    def wait_closed(self, timeout: float | None = None) -> bool:
        """Whether the models were closed (waiting up to ``timeout`` seconds)."""
        return self._closed.wait(timeout)

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    # -- closing ------------------------------------------------------------------------

    def add_close_hook(self, hook: Callable[[], None]) -> None:
        """Run ``hook`` first when these models close (what was built on them stops before they go)."""
        self._close_hooks.append(hook)

    def close(self) -> None:
        """Close every loaded model now (shutdown, or the last lease of a retired registry).

        Each model's own ``close`` waits for the call in progress on it; work that
        still holds a lease gets ``ModelClosed`` from its next call.
        """
        with self._state:
            if self._closing:
                already = True
            else:
                already, self._closing = False, True
                if self._leases:
                    log.warning("closing models with %d lease(s) still held", self._leases)
        if already:
            self._closed.wait()
            return
        for hook in self._close_hooks:
            try:
                hook()
            except Exception:  # one failing hook must not keep the models loaded
                log.exception("a close hook failed")
        with self._lock:
            models = {id(m): m for m in (self._chat, self._summary, self._embed, self._rerank)
                      if m is not None and id(m) not in self._given}.values()
            self._chat = self._summary = self._embed = self._rerank = None
        try:
            for model in models:
                model.close()
        finally:
            self._closed.set()

    def _close_in_background(self) -> None:
        # Released from the event loop (the end of a request) as often as not: never block it on a model lock.
        threading.Thread(target=self.close, name="close-old-models", daemon=True).start()

    def _check_open(self, role: str) -> None:
        if self._closing:
            raise ModelClosed(role)

    def _build_chat(self, spec: config.LocalModel | config.ServerModel, role: str) -> ChatModel:
        return backend_of(spec).chat(self.settings, spec, role, self._offload(role))

    def _offload(self, role: str) -> fit.Offload | None:
        """The GPU plan's choice for ``role`` when it is ``"auto"``: every role planned together, once, so that
        the first model loaded leaves room for the others (called under ``_lock``)."""
        spec = self.settings.role_spec(role)
        if backend_of(spec).gpu_layers(spec) != "auto":
            return None
        if self._plan is None:
            self._plan = offload_plan(self.settings)
        return self._plan.get(role)
