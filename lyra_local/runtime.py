"""``open_runtime(settings)``: the one place that builds what the app and every command run on, and closes it.

A ``Runtime`` opens the store, builds the model registry, the memory and the
companion on first use, each on the one before it: a command that only reads
the store never builds a model registry (let alone loads a model), and one
that never touches the store never opens it. Closing always goes the same
way: the companion (its background embedding of replies must end before the
models), then the models, then the store (which saves the indexes and
releases the data-directory lock, so a ``lyra restore`` can take it).

The web app keeps one store across configuration reloads: ``renewed`` gives a
runtime on fresh models over the same store, which borrows that store and
never closes it. In a household each person's runtime borrows their store and
shares one generation of models with everyone (``shares_models``): closing it
closes that person's companion only. This module holds no lease and never decides when to reload:
``web/leases.py`` and ``web/state.py`` do.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator

from .companion import Companion
from .config import Settings
from .errors import LyraError
from .llm.registry import Models
from .memory import Memory
from .memory.speakers import KnownNames
from .people import Need, PersonChoice
from .store import Store


class RuntimeClosed(LyraError):
    """Something was asked of a runtime after it was closed."""

    status_code = 503


class Runtime:
    """The store, the models, and the memory and companion built on them, for one configuration."""

    def __init__(self, settings: Settings, *, store: Store | None = None, models: Models | None = None,
                 shares_models: bool = False, household: Callable[[], str | None] | None = None,
                 choice: PersonChoice | None = None) -> None:
        """``store``: an open store to borrow (its opener closes it); else one is opened on first use (in
        ``store_dir``, default the data directory) and closed with the runtime. ``models``: a registry to use
        instead of building one (tests share fakes); it is closed with the runtime like one built here, unless
        ``shares_models`` (another runtime owns it). ``household``: reads the household memory for the
        context. ``choice``: the person a command acts as (their store, their name, the household memory),
        resolved on first use of the store."""
        self.settings = settings
        self._lock = threading.RLock()
        self._store = store
        self._owns_store = store is None
        self._choice = choice
        self._shares_models = shares_models
        self._household = household if choice is None else choice.shared
        self._models: Models | None = None
        self._memory: Memory | None = None
        self._companion: Companion | None = None
        self._closed = False
        if models is not None:
            self._adopt(models)

    @property
    def store(self) -> Store:
        with self._lock:
            if self._store is None:
                self._check_open()
                self._store = Store(self.settings.data_dir if self._choice is None else self._choice.store_dir())
            return self._store

    @property
    def models(self) -> Models:
        """The registry (built now if it was not): its models still load only when a role is first used."""
        with self._lock:
            models = self._models
            if models is None:
                self._check_open()
                models = Models(self.settings)
                self._adopt(models)
            return models

    @property
    def built_models(self) -> Models | None:
        """The registry if one was built or given, else None; never builds one."""
        return self._models

    @property
    def memory(self) -> Memory:
        with self._lock:
            if self._memory is None:
                companion = self.settings.companion
                known = KnownNames(person=(companion.user_name,) if companion.user_name else (),
                                   companion=(companion.name,))
                self._memory = Memory(self.store, self.models.embed, zone=companion.zone,
                                      reranker=self.models.rerank, household=self._household, known=known)
            return self._memory

    @property
    def companion(self) -> Companion:
        with self._lock:
            if self._companion is None:
                memory = self.memory
                settings = self.settings if self._choice is None else self._choice.person_settings()
                self._companion = Companion(memory, self.models.chat, settings.companion)
            return self._companion

    def last_chat(self) -> float | None:
        """When the companion last took a turn (monotonic), None if it never did."""
        return None if self._companion is None else self._companion.last_turn_at

    def renewed(self, settings: Settings) -> Runtime:
        """A runtime for ``settings`` on fresh models over this runtime's store (a configuration reload)."""
        return Runtime(settings, store=self.store, household=self._household)

    def sharing(self, settings: Settings, store: Store) -> Runtime:
        """Another person's runtime on this runtime's models (which this one keeps owning), over their store."""
        return Runtime(settings, store=store, models=self.models, shares_models=True, household=self._household)

    def retire(self) -> None:
        """No new work comes to these models: they close when the last lease on them ends (the store stays)."""
        if self._models is not None:
            self._models.retire()

    def close_companion(self) -> None:
        """Stop the companion's background work now (it also runs first whenever the models close)."""
        with self._lock:
            companion, self._companion = self._companion, None
        if companion is not None:
            companion.close()

    def close(self, wait_s: float = 0.0) -> None:
        """Close the companion, then the models, then the store if this runtime opened it (idempotent).

        ``wait_s``: how long work still holding a lease on the models may take to end before they close
        under it (the web app at shutdown); a command that holds no lease passes nothing.
        """
        with self._lock:
            self._closed = True
            models = None if self._shares_models else self._models
            store = self._store if self._owns_store else None
        if models is None:
            self.close_companion()
        else:
            if wait_s > 0:
                models.retire()
                models.wait_closed(wait_s)
            models.close()  # its first close hook closes the companion
        if store is not None:
            store.close()

    def _adopt(self, models: Models) -> None:
        self._models = models
        models.add_close_hook(self.close_companion)  # its background embedding must end before the models

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeClosed("this runtime was closed", hint="open a new one with open_runtime(settings)")


@contextlib.contextmanager
def open_runtime(settings: Settings, *, models: Models | None = None, person: str | None = None,
                 need: Need = "memory") -> Iterator[Runtime]:
    """A ``Runtime`` for ``settings`` acting as one person of the household, closed (companion, models, store)
    when the block ends, however it ends.

    ``person``: their name (``--person``); without it, the only person, else (``need="household"``) the
    owner, else an error naming the choice (``people.choose``)."""
    choice = PersonChoice(settings, person, need)
    runtime = Runtime(settings, models=models, choice=choice)
    try:
        yield runtime
    finally:
        try:
            runtime.close()
        finally:
            choice.close()
