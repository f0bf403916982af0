"""``AppState``: what the routes share: the settings, the household, each person's store and runtime on the
current generation of models, and the reload that swaps that generation.

One place builds a person's runtime (``runtime_of``, handed out as a ``PersonRuntime`` by
``person_runtime``) and opens their store (``store_of``). Nothing here knows a "current person": whose
memory is reached is always said, by the request's login (``web/auth.py``, ``web/deps.py``) or by the
background job that names them.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ..companion import Companion
from ..config import Settings, load_settings, model_file_problems
from ..errors import LyraError, ReloadRefused
from ..llm.registry import Models
from ..memory import Memory
from ..mind import Dreamer
from ..mind.dream.backlog import sense
from ..mind.dream.drives import backlog_size
from ..mind.dream.scheduler import DreamScheduler
from ..modelfiles.pull_jobs import PullJobs
from ..people import as_person, first_person
from ..person_removal import finish_opened, opened_alone, remove_opened
from ..runtime import Runtime
from ..store import Store
from ..store.files.dirlock import DataDirBusy
from ..store.held import Held, held
from ..store.household import Household, Person, PersonNotFound
from .auth import Unbound
from .background import start_catch_up
from .import_jobs import ImportJobs
from .leases import LeasedDreamer, hold

log = logging.getLogger(__name__)
REFUSED = "reload refused, still serving the running configuration"


@dataclass(frozen=True)
class PersonRuntime:
    """One person and their runtime on one generation of models: what a route is handed (``deps.AsPerson``)
    and the only way it reaches a memory. Built by ``AppState.person_runtime`` alone."""

    person: Person
    runtime: Runtime
    by_token: bool = False  # the request proved itself with a personal API token (``auth.Bound``)

    @property
    def id(self) -> str:
        return self.person.id

    @property
    def store(self) -> Store:
        return self.runtime.store

    @property
    def memory(self) -> Memory:
        return self.runtime.memory

    @property
    def companion(self) -> Companion:
        return self.runtime.companion

    @property
    def models(self) -> Models:
        return self.runtime.models

    def hold(self) -> Callable[[], None]:
        """A lease on these models for work that outlives the request (an import); call the result when done."""
        return hold(self.runtime)


class AppState:
    """What the routes share: settings, the household and the current generation of models.

    Each person's runtime opens their own store and shares the generation's
    models. Nothing resolves without naming the person: a route is handed its
    request's (``person_runtime``, through ``deps.AsPerson``), on the
    generation the request leased (``leases.LeaseMiddleware``); background work
    goes person by person (``store_of``, ``runtime_of``, ``dreamer``) under a
    lease of its own (``lease``). ``store``, ``memory`` and ``companion`` here
    fail loudly, on every thread: there is no "current person" to fall back on.
    """

    def __init__(self, runtime: Runtime, household: Household, config_path: Path | None = None,
                 bind_host: str = "127.0.0.1") -> None:
        """``runtime``: the first generation, over the first person's store (the data directory's own), which
        it owns and every later generation borrows."""
        self.settings = runtime.settings
        self.household = household
        self.bind_host = bind_host
        self.owner_id = first_person(household, runtime.settings).id
        self.config_path = config_path
        self.reload_lock = threading.Lock()
        self.dreams: DreamScheduler | None = None
        self.imports = ImportJobs()
        self.pulls = PullJobs()  # downloads a person started in Settings → Models; cancelled at shutdown
        self.instance_id = f"server-{socket.gethostname()}-{os.getpid()}"
        self.started = False  # the lifespan began: a store opened from now on registers this server in it
        self._first = runtime
        self._runtime = runtime
        self._earlier_chat: float | None = None  # the last turn on runtimes since retired
        self._people_lock = threading.RLock()
        self._stores: dict[str, Store] = {self.owner_id: runtime.store}
        self._gone: set[str] = set()  # removed people: their folder is never opened (so made) again
        self._sharing: dict[tuple[int, str], Runtime] = {}  # (generation, person) -> that person's runtime on it

    @property
    def store(self) -> Store:
        raise _whose("store")

    @property
    def memory(self) -> Memory:
        raise _whose("memory")

    @property
    def companion(self) -> Companion:
        raise _whose("companion")

    @property
    def models(self) -> Models:
        """The current generation's models (a request uses those it leased: ``PersonRuntime.models``)."""
        return self._runtime.models

    def person_runtime(self, person: Person, generation: Runtime | None = None, *,
                       by_token: bool = False) -> PersonRuntime:
        """``person`` with their runtime on ``generation`` (default: the current one, unleased)."""
        return PersonRuntime(person, self.runtime_of(person, generation or self._runtime), by_token)

    def owner_runtime(self) -> PersonRuntime:
        """The owner's, named as such (a tool or a test holding the app; never a fallback for anyone)."""
        return self.person_runtime(self.household.person(self.owner_id))

    def store_of(self, person: Person) -> Store:
        """The person's own store, opened on first use and kept open until shutdown or their removal.

        Never for someone whose removal began, here or in another process (`lyra people remove`): that is read
        from ``household.db`` before the store is opened and again once its folder's lock is held, so a request
        already on its way when they were removed cannot bring their folder back (a removal takes that lock
        exclusively before it marks them, so one of the two reads sees it)."""
        with self._people_lock:
            store = self._stores.get(person.id)
            if store is None:
                if person.id in self._gone:
                    raise PersonNotFound("no such person in this household")
                self.household.person(person.id)  # PersonNotFound once their removal began
                folder = self.household.person_dir(person)
                existed = folder.exists()
                store = Store(folder)
                try:
                    self.household.person(person.id)
                except PersonNotFound:
                    store.close()
                    if not existed:  # made just now, for no one: nothing of it may stay
                        shutil.rmtree(folder, ignore_errors=True)
                    self._gone.add(person.id)
                    raise
                self._stores[person.id] = store
                if self.started:
                    store.coord.register(self.instance_id, "server", "web UI and API (lyra serve)")
            return store

    def open_stores(self) -> list[Store]:
        with self._people_lock:
            return list(self._stores.values())

    def runtime_of(self, person: Person, generation: Runtime) -> Runtime:
        """``person``'s runtime on ``generation``'s models: the generation itself for the first person, whose
        store it holds; for anyone else a runtime over their own store, sharing those models."""
        if person.id == self.owner_id:
            return generation
        key = (id(generation), person.id)
        with self._people_lock:
            runtime = self._sharing.get(key)
            if runtime is None:
                runtime = generation.sharing(as_person(generation.settings, person), self.store_of(person))
                self._sharing[key] = runtime
            return runtime

    def acquire_current(self) -> Runtime:
        """The current generation with one lease taken on it (release with ``runtime.models.release()``)."""
        with self.reload_lock:
            runtime = self._runtime
            runtime.models.acquire()
        return runtime

    @contextlib.contextmanager
    def lease(self) -> Iterator[Runtime]:
        """Hold the current generation open for a piece of work that runs outside a request."""
        runtime = self.acquire_current()
        try:
            yield runtime
        finally:
            runtime.models.release()

    def dreamer(self, person_id: str, stop: threading.Event) -> Dreamer:
        """A dreamer over one person's memory on the current models, holding them until it is closed."""
        person = self.household.person(person_id)
        generation = self.acquire_current()
        try:
            runtime = self.runtime_of(person, generation)
            return LeasedDreamer(runtime, generation.models.release, stop=stop,
                                 instance_id=f"dream-{socket.gethostname()}-{os.getpid()}")
        except BaseException:
            generation.models.release()
            raise

    def backlogs(self) -> dict[str, int]:
        """How much each person's memory waits for the dream (the scheduler visits people by it)."""
        out = {}
        for person in self.household.people():
            backlog = sense(self.store_of(person), self.settings.dream, zone=self.settings.companion.zone)
            out[person.id] = backlog_size(backlog)
        return out

    def held(self, person: Person) -> Held:
        return held(self.store_of(person))

    def remove_person(self, person_id: str) -> None:
        """Forget everything the person said and everything built from it (the same forget as everywhere), close
        their memory and delete its folder, then their row: they can no longer log in from the first step, and
        a removal cut short is finished at the next start (``finish_removals``). The sequence is
        ``person_removal.py``'s, which `lyra people remove` runs too."""
        person = self.household.removable(person_id)  # never the owner: nothing of theirs is closed below
        with self.lease():  # held, so that a shutdown waits for the forget before closing the store under it
            self._close_person(person)  # let go here first: another process shows only through the flock
            try:
                with opened_alone(self.household, person,
                                  "stop that `lyra mcp`, `lyra chat --person` or `lyra dream` first") as store:
                    remove_opened(self.household, person, store)
            except DataDirBusy:
                with self._people_lock:
                    self._gone.discard(person.id)
                raise

    def finish_removals(self) -> None:
        """Finish every removal begun and not finished, by this server or another process (a `lyra people
        remove` cut short): at start, and every ``background.HEARTBEAT_S``. One whose memory another process still holds
        open is left for a later round, and said."""
        for person in self.household.people(removing=True):
            log.info("finishing the removal of a person cut short earlier")
            with self.lease():
                self._close_person(person)
                try:
                    with opened_alone(self.household, person, "it is finished once that process lets go") as store:
                        finish_opened(self.household, person, store)
                except DataDirBusy as exc:
                    log.warning("cannot finish a removal yet: %s", exc)

    def _close_person(self, person: Person) -> None:
        """Close the person's runtimes (their companions only: the models are everyone's) and their store."""
        with self._people_lock:
            self._gone.add(person.id)
            gone = [key for key in self._sharing if key[1] == person.id]
            runtimes = [self._sharing.pop(key) for key in gone]
            store = self._stores.pop(person.id, None)
        for runtime in runtimes:
            runtime.close()  # its companion only: the models are everyone's
        if store is not None:
            store.close()

    def last_chat(self) -> float | None:
        with self._people_lock:
            runtimes = [self._runtime, *self._sharing.values()]
        times = [t for t in (self._earlier_chat, *(r.last_chat() for r in runtimes)) if t is not None]
        return max(times, default=None)

    def reload(self, settings: Settings | None = None, commit: Callable[[], None] | None = None) -> None:
        """Re-read the config (or take ``settings``, a candidate) and swap in fresh models; work in flight
        finishes on the old ones, which close when the last of it ends.

        The new models are checked first (files whole, changed ones loaded and doing their role's work once:
        ``Models.check``): if one fails,
        ``ReloadRefused`` says why and the running configuration keeps serving. ``commit`` runs only once
        they passed, just before the swap (Settings → Models writes lyra.toml there, so a refused choice
        leaves the file as it was); if it raises, nothing is swapped. With ``settings``, later reloads read
        ``settings.config_file``.
        """
        with self.reload_lock:
            given = settings is not None
            settings = load_settings(self.config_path) if settings is None else settings
            problems = model_file_problems(settings)
            if problems:
                raise ReloadRefused(f"{REFUSED}:\n  " + "\n  ".join(problems), reason="; ".join(problems))
            old = self._runtime
            new = old.renewed(settings)
            try:
                new.models.check(changed_roles(old.settings, settings))  # each does its role's work once
            except LyraError as exc:
                new.close()
                raise ReloadRefused(f"{REFUSED}: {exc.message}", reason=exc.message, hint=exc.hint) from exc
            try:
                if commit is not None:
                    commit()
            except BaseException:
                new.close()
                raise
            self._earlier_chat = self.last_chat()
            self._runtime = new
            self.settings = settings
            if given and settings.config_file is not None:
                self.config_path = settings.config_file
            with self._people_lock:  # the old generation's runtimes serve their work and close with its models
                for key in [k for k in self._sharing if k[0] != id(new)]:
                    del self._sharing[key]
        old.retire()
        if settings.data_dir != self.household.data_dir:
            log.warning("data_dir changed to %s: that takes a restart; still using %s",
                        settings.data_dir, self.household.data_dir)
        start_catch_up(self, after=old.built_models)  # a new embedding model: every tier gets its vectors
        log.info("configuration reloaded; models will load on next use")

    def close(self, wait_s: float = 10.0) -> None:
        """At shutdown: let the work still leasing the models end (briefly), then close the companions, the
        models and the stores: the first person's with the first runtime (whose models a reload may have
        retired), everyone else's after. Imports stop first (after the batch they are writing) and their uploads
        go at once (``store/files/uploads.py``); downloads stop too, keeping their partial files for a pull to
        resume."""
        self.pulls.stop_all(wait_s)
        for store in self.open_stores():
            store.uploads.stop_all("the server stopped", wait_s)
        with self._people_lock:
            sharing = list(self._sharing.values())
            others = [s for pid, s in self._stores.items() if pid != self.owner_id]
        for runtime in sharing:
            runtime.close()
        self._runtime.close(wait_s)
        self._first.close()  # after a reload: work still on its retired models has had its time
        for store in others:
            store.close()
        self.household.close()


def changed_roles(old: Settings, new: Settings) -> list[str]:
    """The roles whose model a new configuration changes (or adds)."""
    return [role for role in new.roles() if role not in old.roles() or new.role_spec(role) != old.role_spec(role)]


def _whose(what: str) -> Unbound:
    return Unbound(f"whose {what}? The app has no current person to fall back on",
                   hint=f"a route takes `you: AsPerson` (web/deps.py) and reads you.{what}; background work "
                        "names its person: AppState.person_runtime(person), store_of(person)")
