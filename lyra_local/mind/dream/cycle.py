"""``Dreamer``: one pass of the dream cycle.

A pass senses the backlog, computes the drives, and acts on each drive past
its threshold (or on all of them when forced): continuity summarizes ripe
sessions, coherence folds new gists into the profile, rolls up digests and
rewrites the narrative, curiosity reflects. Every unit of work runs under a
lease in the store, re-checks under it that it is still needed, and writes its
result in one transaction at the end: two dreamers never do the same unit,
a crash leaves nothing half-written, and a rerun picks up where it stopped.
While the summary model is unreachable a unit backs off (bounded exponential
with jitter); past the bound the pass ends "deferred" and the work waits.
"""

from __future__ import annotations

import contextvars
import functools
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from ...config import Settings
from ...errors import LyraError, ModelUnavailable
from ...llm.base import ChatModel, Embedder
from ...llm.retry import backoff_delays
from ...memory.gather import user_name
from ...parser import load_parser
from ...store import Store
from ...store.derived import Made
from ...store.provenance import Ref, StaleSources
from ...store.sessions import SessionNotFound
from ..facts.gate import KeyFit
from ..facts.profile import extract_facts
from ..grounding.checks import Verdict
from ..grounding.sources import Ground
from ..reflection import voice, world
from ..reflection.reflect import LIMITS, novelty, reflect
from ..reflection.world import draft_world
from ..summaries import digests
from ..summaries.gists import draft_gist
from ..summaries.narrative import narrative_due, narrative_material
from . import prompts
from .backlog import sense
from .drives import Backlog, compute_drives
from .events import DreamEvent
from .scribe import Scribe, Stopped

log = logging.getLogger(__name__)
T = TypeVar("T")
Event = dict[str, Any]
LEASE_POLL_S = 0.5


class Deferred(Exception):
    """The model stayed unreachable past the backoff bound, or we are stopping: the rest waits."""


@dataclass
class PassReport:
    pass_id: int
    status: str
    forced: bool
    drives_before: dict[str, float]
    drives_after: dict[str, float]
    backlog_before: dict[str, Any]
    backlog_after: dict[str, Any]
    actions: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None


class Dreamer:
    def __init__(self, store: Store, summary: ChatModel, embedder: Embedder, settings: Settings, *,
                 instance_id: str | None = None, on_event: Callable[[Event], None] | None = None,
                 stop: threading.Event | None = None) -> None:
        self.store = store
        self.summary = summary
        self.embedder = embedder
        self.settings = settings
        self.dream = settings.dream
        self.zone = settings.companion.zone  # which day a session belongs to
        self.id = instance_id or f"dream-{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        self.on_event = on_event
        self.stop = stop or threading.Event()
        self._registered = False
        self._actions: list[dict[str, Any]] = []
        self._actions_lock = threading.Lock()
        self._narrative_written = False
        self._fit = KeyFit(self._embed_many)  # the profile's keys embedded once per dreamer

    # -- the pass ------------------------------------------------------------------------

    def run_pass(self, *, force: bool = False) -> PassReport:
        """One pass; a scheduled pass with nothing to do is not recorded (status "idle")."""
        backlog = sense(self.store, self.dream, force=force, zone=self.zone)
        before = compute_drives(backlog)
        if backlog.empty and not force:
            return PassReport(0, "idle", False, before, before, backlog.summary(), backlog.summary())
        self._register()
        pass_id = self.store.dreams.start(self.id, forced=force, backlog=backlog.summary(), drives=before)
        self._actions = []
        self._narrative_written = False
        self._event(DreamEvent.PASS_START, None, forced=force, drives=before, backlog=backlog.summary())
        status, error = "done", None
        try:
            if self._acts(force, before, "continuity"):
                self.summarize(backlog)
            drives = compute_drives(sense(self.store, self.dream, force=force, zone=self.zone))
            if self._acts(force, drives, "coherence"):
                self._consolidate()
            drives = compute_drives(sense(self.store, self.dream, force=force, zone=self.zone))
            if self._acts(force, drives, "curiosity") and any(novelty(self.store)):
                self._reflect(drives)
        except Deferred as exc:
            status, error = "deferred", str(exc)
        except Exception as exc:
            status, error = "failed", f"{type(exc).__name__}: {exc}"
            raise
        finally:
            after_backlog = sense(self.store, self.dream, zone=self.zone)
            after = compute_drives(after_backlog)
            self.store.dreams.finish(pass_id, status=status, backlog=after_backlog.summary(), drives=after,
                                     actions=self._actions, error=error)
            self._event(DreamEvent.PASS_END, None, status=status, drives=after, backlog=after_backlog.summary(),
                        actions=len(self._actions), error=error)
        return PassReport(pass_id, status, force, before, after, backlog.summary(), after_backlog.summary(),
                          list(self._actions), error)

    def close(self) -> None:
        if self._registered:
            self.store.coord.complete(self.id, "stopped")

    # -- continuity: session gists ---------------------------------------------------------

    def summarize(self, backlog: Backlog) -> None:
        """Gist every ripe session of ``backlog``, ``dream.concurrency`` at a time."""
        total = len(backlog.ripe)

        def one(n: int, session_id: int) -> None:
            self._unit(f"gist:{session_id}", lambda scribe: self._gist(scribe, session_id, f"{n}/{total}"))

        if self.dream.concurrency == 1 or total < 2:
            for n, session_id in enumerate(backlog.ripe, 1):
                one(n, session_id)
            return
        with ThreadPoolExecutor(self.dream.concurrency, thread_name_prefix="dream") as pool:
            results = [pool.submit(contextvars.copy_context().run, one, n, sid)  # the pass's person: fair queueing
                       for n, sid in enumerate(backlog.ripe, 1)]
        errors = [exc for exc in (f.exception() for f in results) if exc is not None]
        if errors:
            raise errors[0]

    def _gist(self, scribe: Scribe, session_id: int, progress: str) -> None:
        draft = draft_gist(scribe, self.store, session_id, self.zone)  # None: someone else caught it up already
        if draft is None:
            return
        # The turns up to what the draft covers: one said meanwhile is left for the next pass, not claimed.
        turns = [t for t in self.store.exchanges.history(session_id) if t.id <= draft.covers_upto]
        written = self._ground(scribe).gist(draft.text, turns, self.store.sessions.get(session_id).name, self.zone)
        self._checked(DreamEvent.GIST_REJECTED, DreamEvent.GIST_PRUNED, f"session:{session_id}", written.verdict)
        if not written.text:
            return
        vector = self._embed(written.text)
        gist = self.store.derived.put_gist(session_id, written.text, draft.covers_upto, vector, self.embedder.name,
                                           read=draft.read, previous=draft.previous, method=written.method)
        self._act(DreamEvent.GIST, f"session:{session_id}", progress=progress, gist_id=gist.id,
                  covers_upto=gist.covers_upto, turns=draft.turns, chunks=draft.chunks, method=written.method,
                  updated=draft.updated, calls=scribe.calls, preempted=scribe.preemptions)

    # -- coherence: profile, digests, narrative ----------------------------------------------

    def _consolidate(self) -> None:
        self._unit("profile", self._profile, wait=True)
        for job in digests.plan(self.store, self.zone).jobs:
            self._unit(f"digest:{job.granularity}:{job.period}", functools.partial(self._digest, job=job))
        obsolete = digests.plan(self.store, self.zone).obsolete
        if obsolete:
            self.store.derived.delete_digests(obsolete)
            self._act(DreamEvent.DIGESTS_DELETED, None, periods=[f"{g}:{p}" for g, p in obsolete])
        self._unit("narrative", self._narrative, wait=True)
        if self._narrative_written and self.settings.coordination.world_updates != "off":
            self._unit("world", self._world, wait=True)

    def _profile(self, scribe: Scribe) -> None:
        # Gists that land while we work (another dreamer's) are read too, before the lease goes.
        while batch := self.store.derived.unprofiled_gists():
            for gist, observed_at in batch:
                own = [t.content for t in self.store.exchanges.history(gist.session_id)
                       if t.role == "user" and t.id <= gist.covers_upto]
                facts = extract_facts(scribe, own, self.store.derived.profile())
                if facts is None:
                    self._event(DreamEvent.PROFILE_FALLBACK, f"session:{gist.session_id}",
                                reason="the model's JSON did not validate; only the parse floor's facts were read")
                rejected = {key: basis for (key, session), basis in self.store.corrections.rejected_facts().items()
                            if session == gist.session_id}  # "that's wrong" holds for what was said until then
                kept, failed = self._ground(scribe).facts(facts or [], gist.session_id, rejected)
                if failed:
                    self._event(DreamEvent.PROFILE_REJECTED, f"session:{gist.session_id}",
                                checks={check: failed.count(check) for check in set(failed)})
                stored = self.store.derived.apply_facts(gist, kept, observed_at)
                self._act(DreamEvent.PROFILE, f"session:{gist.session_id}", covers_upto=gist.covers_upto,
                          fact_ids=[f.id for f in stored])

    def _digest(self, scribe: Scribe, *, job: digests.DigestJob) -> None:
        fresh = digests.plan(self.store, self.zone)
        if not any(j == job for j in fresh.jobs):
            return  # built by someone else meanwhile, or its sources changed again
        if job.granularity != "day" and any(j.granularity == "day" and j.period in job.sources for j in fresh.jobs):
            self._event(DreamEvent.DIGEST_WAITING, f"{job.granularity}:{job.period}",
                        reason="its days are being rebuilt")
            return
        try:
            pieces, sources = digests.digest_material(self.store, job)
        except LookupError:  # its days went meanwhile (forgotten, or deleted by the person): the next plan says
            self._event(DreamEvent.DIGEST_WAITING, f"{job.granularity}:{job.period}", reason="its sources are gone")
            return
        written = self._ground(scribe).rollup(lambda: digests.write_digest(scribe, job, pieces), pieces)
        self._checked(DreamEvent.DIGEST_REJECTED, DreamEvent.DIGEST_PRUNED, f"{job.granularity}:{job.period}",
                      written.verdict)
        vector = self._embed(written.text)
        digest = self.store.derived.put_digest(job.granularity, job.period, written.text, len(job.sources), vector,
                                               self.embedder.name,
                                               made=Made(basis=job.basis, sources=sources, method=written.method))
        self._act(DreamEvent.DIGEST, f"{job.granularity}:{job.period}", digest_id=digest.id, sources=len(job.sources),
                  basis=job.basis, method=written.method)

    def _narrative(self, scribe: Scribe) -> None:
        if not narrative_due(self.store):  # a narrative built from forgotten sources was deleted with them
            return
        material, pieces, facts, basis, sources = narrative_material(
            scribe, self.store, self.settings.companion.timeline_days, self.zone)
        ground = self._ground(scribe)
        written = ground.rollup(lambda: scribe.write(prompts.NARRATIVE, material), pieces, facts)
        self._checked(DreamEvent.NARRATIVE_REJECTED, DreamEvent.NARRATIVE_PRUNED, None, written.verdict)
        if written.method == "abstractive" and voice.copied_run(written.text, self._person_runs()):
            # The model's arc is the companion's view: the person's words in it would be put in its mouth.
            # An extractive arc is the person's own words, attributed to them, and is not judged so.
            self._event(DreamEvent.NARRATIVE_REFUSED, None, because=[voice.COPIED])
            written = ground.extract_of(pieces, written.verdict)
        if not written.text:
            return
        version = self.store.derived.set_narrative(written.text, basis, sources, method=written.method)
        self._narrative_written = True
        self._act(DreamEvent.NARRATIVE, None, basis=basis, version=version, sources=len(sources))

    def _world(self, scribe: Scribe) -> None:
        drafted = draft_world(scribe, self.store)
        if drafted is None:
            return
        text, sources = drafted
        current = self.store.coord.world()
        verdict = self._ground(scribe).world(text, [current.content if current else "",
                                                    self.store.derived.narrative() or "",
                                                    *(f"{f.key}: {f.value}" for f in self.store.derived.profile())])
        if not verdict.ok:  # only grounded, transcript-free documents are proposed
            self._checked(DreamEvent.WORLD_REJECTED, None, None, verdict)
            return
        auto = self.settings.coordination.world_updates == "auto"
        arc = next((i for kind, i in sources if kind == "narrative"), 0)
        reason = f"the dream cycle saw the arc change (narrative version {arc})"
        version = self.store.coord.write_world(text, world.AUTHOR, reason, status="accepted" if auto else "proposed",
                                               sources=sources)
        self._act(DreamEvent.WORLD, None, version=version.id, status=version.status, basis=version.id)

    # -- curiosity: reflection ---------------------------------------------------------------------

    def _reflect(self, drives: dict[str, float]) -> None:
        def work(scribe: Scribe) -> None:
            if not any(novelty(self.store)):
                return
            state, sources = reflect(scribe, self.store, drives)
            previous = self.store.derived.self_state() or {}
            failed = self._ground(scribe).reflection(state, previous, self._texts(sources))
            refused = voice.keep_own_voice(state, previous, self._person_runs(), LIMITS)
            if previous.get("edited_by") == "user":  # the person's corrections stay as they wrote them
                kept = list(previous.get("edited_fields", []))
                state.update({f: previous[f] for f in kept if f in previous}, edited_by="user", edited_fields=kept)
            first = not previous.get("self_narrative")  # nothing was reflected before: nothing can be kept
            if failed:
                self._event(DreamEvent.REFLECT_REJECTED, None, checks=failed, first=first)
            if refused:  # said, so that nobody reads the kept state as new
                self._event(DreamEvent.REFLECT_KEPT, None, fields=sorted({r.field for r in refused}),
                            because=voice.reasons(refused), first=first)
            version = self.store.derived.set_self_state(state, sources)
            self._act(DreamEvent.REFLECT, None, energy=state["energy"], fallback=state["fallback"],
                      basis=state["basis"], version=version, kept=sorted({r.field for r in refused}), first=first)

        self._unit("reflect", work, wait=True)

    # -- units, leases, backoff ------------------------------------------------------------------

    def _unit(self, resource: str, work: Callable[[Scribe], None], *, wait: bool = False) -> None:
        """Run ``work`` under a lease on ``resource``.

        If another dreamer holds it, a per-item unit is skipped (the holder is doing
        exactly that); with ``wait`` (the profile, narrative and self-state, one of
        each), we wait for the holder and then re-check what is left to do.
        """
        if self.stop.is_set():
            raise Deferred("stopping")
        coord, ttl = self.store.coord, self.dream.lease_s
        taken = coord.acquire(resource, self.id, ttl, note="dream cycle")
        if not taken.ok and wait:
            self._event(DreamEvent.WAITING, resource, holder=taken.lease.holder)
            while not taken.ok:
                if self.stop.wait(LEASE_POLL_S):
                    raise Deferred("stopping")
                taken = coord.acquire(resource, self.id, ttl, note="dream cycle")
        if not taken.ok:
            self._event(DreamEvent.SKIP, resource, holder=taken.lease.holder)
            return
        def renew() -> None:
            if not coord.acquire(resource, self.id, ttl, note="dream cycle").ok:
                raise LyraError(f"lost the lease on {resource} (a call outlived dream.lease_s)",
                                hint="raise dream.lease_s for this summary model")

        def attempt() -> None:  # a fresh scribe per try: asking a server its context may fail too
            work(Scribe(self.summary, reply_tokens=self.dream.summary_tokens, names=self._names(), stop=self.stop,
                        keepalive=renew))

        try:
            self._with_backoff(resource, attempt)
        except (StaleSources, SessionNotFound) as exc:  # forgotten while we worked: nothing written
            self._event(DreamEvent.STALE, resource, error=str(exc))
        except LyraError as exc:  # a bad answer or request: this unit waits for the next pass
            self._event(DreamEvent.ERROR, resource, error=str(exc), hint=exc.hint)
        finally:
            coord.release(resource, self.id)
            coord.heartbeat(self.id)

    def _with_backoff(self, what: str, call: Callable[[], T]) -> T:
        delays = backoff_delays(self.dream.retry)
        while True:
            try:
                return call()
            except Stopped as exc:
                raise Deferred("stopping") from exc
            except ModelUnavailable as exc:
                delay = next(delays, None)
                if delay is None:
                    self._event(DreamEvent.DEFERRED, what, error=str(exc))
                    raise Deferred(f"the model stayed unreachable: {exc}") from exc
                self._event(DreamEvent.BACKOFF, what, delay_s=round(delay, 2), error=str(exc))
                if self.stop.wait(delay):
                    raise Deferred("stopping") from exc

    def _embed(self, text: str) -> Any:
        return self._with_backoff("embed", lambda: self.embedder.embed([text])[0])

    def _embed_many(self, texts: list[str]) -> npt.NDArray[np.float32]:
        if not texts:
            return np.zeros((0, 1), dtype=np.float32)
        return np.asarray(self._with_backoff("embed", lambda: self.embedder.embed(texts)), dtype=np.float32)

    def _ground(self, scribe: Scribe) -> Ground:
        return Ground(self.store, self._embed_many, self.embedder.name, scribe.count, scribe.names,
                      scribe.reply_tokens, parse=load_parser(self.settings.models_dir), fit=self._fit)

    def _checked(self, rejected: DreamEvent, pruned: DreamEvent | None, target: str | None,
                 verdict: Verdict | None) -> None:
        """Log a draft that failed its grounding checks (``rejected``), or kept with sentences left out
        (``pruned``, where the draft's kind can be pruned): which checks and how many, never its text."""
        if verdict is not None and not verdict.ok:
            self._event(rejected, target, checks=list(verdict.failed), **verdict.counts)
        elif pruned is not None and verdict is not None and verdict.counts.get("sentences_dropped"):
            self._event(pruned, target, **verdict.counts)

    def _texts(self, refs: list[Ref]) -> list[str]:
        """The texts of the gists and narrative a reflection read, to check it against."""
        wanted = {i for kind, i in refs if kind == "gist"}
        texts = [g.content for g in self.store.derived.gists() if g.id in wanted]
        return [*texts, self.store.derived.narrative() or ""]

    def _person_runs(self) -> frozenset[tuple[str, ...]]:
        """Every six-word run of the person's own messages in the conversations the dream has summarised:
        what the companion may never write about itself as its own words."""
        said = [t.content for g in self.store.derived.gists() for t in self.store.exchanges.history(g.session_id)
                if t.role == "user"]
        return voice.runs(said)

    def _names(self) -> dict[str, str]:
        companion = self.settings.companion
        return {"name": companion.name, "user": user_name(self.store.derived.profile(), companion) or "the user"}

    # -- events -------------------------------------------------------------------------------------

    def _acts(self, force: bool, drives: dict[str, float], drive: str) -> bool:
        return force or drives[drive] >= self.dream.threshold

    def _act(self, kind: DreamEvent, target: str | None, **detail: Any) -> None:
        with self._actions_lock:
            self._actions.append({"kind": kind.value, "target": target,
                                  **{k: v for k, v in detail.items() if k != "text"}})
        self._event(kind, target, **detail)

    def _event(self, kind: DreamEvent, target: str | None, **detail: Any) -> None:
        # The plain string goes out: the log, the listeners and the API carry the kind as they always did.
        event_id = self.store.coord.log_event(kind.value, target, detail, self.id)
        log.info("dream %s %s %s", kind.value, target or "", {k: v for k, v in detail.items() if k != "text"})
        if self.on_event is not None:
            self.on_event({"id": event_id, "kind": kind.value, "target": target, "detail": detail,
                           "at": time.time()})

    def _register(self) -> None:
        if not self._registered:
            self.store.coord.register(self.id, "dream", "dream cycle: summarize, consolidate, reflect")
            self._registered = True
