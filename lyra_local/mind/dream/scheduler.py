"""Dream passes on a schedule inside the server (APScheduler), and on demand, person by person.

Each person of a household has their own memory, so their own backlog and their
own passes. One background job on an interval (``max_instances=1`` and
``coalesce``, so a slow tick never piles up runs) visits the people with a
backlog round-robin, the larger backlog first: a round gives each one pass, and
starts after the person who went first the round before. A pass is a turn: once
it has run ``turn_s`` while someone else has work waiting, it is asked to stop at
its next model call, and the tick goes on to the next person; when a round had
such a cut it begins another at once. So a big import of one person is spread
over rounds, while another's few conversations are done in their own turn.
(A turn that ended before its pass did anything doubles the next: a unit longer
than a turn still gets done.)

A tick does not begin, nor go on to the next person, during quiet hours or while
someone is chatting. "Dream now" runs one person's pass at once, ahead of the
tick's next person, and ends the scheduled turn of someone else that is in the
way. Passes in this process never overlap; passes of other processes are kept
apart by the leases in the store. Each pass runs with ``fair.ASKER`` set to its
person, so its model calls take that person's turns at the shared model.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from datetime import time as clock

from apscheduler.schedulers.background import BackgroundScheduler

from ...config import DreamSettings
from ...llm.fair import asking_for
from .cycle import Dreamer, PassReport

log = logging.getLogger(__name__)
JOB_ID = "dream"


def in_quiet_hours(spec: str | None, now: clock) -> bool:
    """``"23:00-07:00"`` -> True from 23:00 to 06:59 (windows may wrap midnight)."""
    if not spec:
        return False
    start, end = (_clock(part) for part in spec.split("-"))
    return start <= now < end if start <= end else now >= start or now < end


def _clock(text: str) -> clock:
    hours, minutes = text.split(":")
    return clock(int(hours), int(minutes))


def visit_order(backlogs: dict[str, int], after: str | None) -> list[str]:
    """The people a tick visits, in order: those with a backlog, the larger first (ties by id), the ring
    turned to start just after ``after`` (who went first last tick) when they are in it."""
    ring = sorted((p for p, n in backlogs.items() if n > 0), key=lambda p: (-backlogs[p], p))
    if after in ring:
        start = ring.index(after) + 1
        ring = ring[start:] + ring[:start]
    return ring


class DreamScheduler:
    """The dream cycle of every person in this process: one pass at a time, people in turns."""

    def __init__(self, make_dreamer: Callable[[str, threading.Event], Dreamer], settings: DreamSettings,
                 last_chat: Callable[[], float | None], backlogs: Callable[[], dict[str, int]], *,
                 turn_s: float | None = None) -> None:
        """``make_dreamer(person, stop)``: a dreamer on that person's memory whose pass ends "deferred" at its
        next model call once ``stop`` is set. ``backlogs()``: each person's unconsolidated work (0: none).
        ``turn_s``: how long one pass may keep others waiting (default: the interval between ticks)."""
        self.make_dreamer = make_dreamer
        self.settings = settings
        self.last_chat = last_chat
        self.backlogs = backlogs
        self.turn_s = settings.interval_s if turn_s is None else turn_s
        self.stop = threading.Event()
        self.last_reports: dict[str, PassReport] = {}
        self._latest: str | None = None
        self._first_last_round: str | None = None
        self._cuts: dict[str, int] = {}  # person -> their turns in a row that ended before the pass did anything
        self._cond = threading.Condition()
        self._current: str | None = None  # whose pass runs now
        self._current_forced = False
        self._turn: threading.Event | None = None  # set: the current pass stops at its next model call
        self._timer: threading.Timer | None = None  # when the current pass's turn is looked at next
        self._wanted: set[str] = set()  # people whose "Dream now" waits for the current pass
        self._scheduler = BackgroundScheduler(daemon=True, job_defaults={"coalesce": True, "max_instances": 1})

    @property
    def running(self) -> bool:
        """A pass (anyone's) runs in this process now."""
        with self._cond:
            return self._current is not None

    def running_for(self, person: str) -> bool:
        """This person's pass runs now, or their "Dream now" waits for the one that does."""
        with self._cond:
            return self._current == person or person in self._wanted

    @property
    def last_report(self) -> PassReport | None:
        """The latest finished pass, whoever's it was."""
        return self.last_reports.get(self._latest) if self._latest is not None else None

    def start(self) -> None:
        if self.settings.enabled:
            first = datetime.now() + timedelta(seconds=min(30.0, self.settings.interval_s))
            self._scheduler.add_job(self.tick, "interval", seconds=self.settings.interval_s, id=JOB_ID,
                                    next_run_time=first)
        self._scheduler.start()

    def every(self, seconds: float, job: Callable[[], None], *, at_once: bool = True) -> None:
        """Another small periodic job on the same scheduler (the server's heartbeat): first now, or with
        ``at_once=False`` after ``seconds`` (a retry, which must not race the first try)."""
        first = datetime.now() + (timedelta() if at_once else timedelta(seconds=seconds))
        self._scheduler.add_job(job, "interval", seconds=seconds, next_run_time=first)

    def shutdown(self) -> None:
        self.stop.set()
        with self._cond:
            if self._turn is not None:
                self._turn.set()  # a pass in progress ends "deferred" at its next model call
            self._cond.notify_all()
        self._scheduler.shutdown(wait=True)

    def run_now(self, person: str, *, force: bool = False) -> bool:
        """Start ``person``'s pass now in the scheduler's thread pool; False if theirs already runs or waits.
        A scheduled pass of someone else ends at its next model call to make way."""
        with self._cond:
            if self._current == person or person in self._wanted:
                return False
            self._wanted.add(person)
            if self._current is not None and not self._current_forced and self._turn is not None:
                self._turn.set()
        try:  # run however late the pool gets to it: the tick waits for it (no misfire may drop it)
            self._scheduler.add_job(self.run, "date", run_date=datetime.now(), args=[person],
                                    kwargs={"force": force, "asked": True}, id=f"dream-now-{person}",
                                    replace_existing=True, misfire_grace_time=None)
        except BaseException:
            with self._cond:
                self._wanted.discard(person)
                self._cond.notify_all()
            raise
        return True

    def tick(self) -> None:
        """The scheduled job: a round of passes, one for each person with a backlog, and another round at once
        while a pass had to end at its turn; none during quiet hours or while someone is talking."""
        while self._may_dream():
            order = visit_order(self.backlogs(), self._first_last_round)
            if not order:
                return
            self._first_last_round = order[0]
            cut = False
            for n, person in enumerate(order):
                if self.stop.is_set() or (n > 0 and not self._may_dream()):
                    return
                cut = self._pass(person, force=False, asked=False)[1] or cut
            if not cut:
                return

    def _may_dream(self) -> bool:
        if in_quiet_hours(self.settings.quiet_hours, datetime.now().time()):
            log.debug("dream skipped: quiet hours %s", self.settings.quiet_hours)
            return False
        last = self.last_chat()
        if last is not None and time.monotonic() - last < self.settings.idle_s:
            log.debug("dream skipped: a chat turn %.0fs ago", time.monotonic() - last)
            return False
        return True

    def run(self, person: str, *, force: bool = False, asked: bool = False) -> PassReport | None:
        """One pass for ``person``, once no other pass runs here (an ``asked`` one goes before the tick's
        next); None if the scheduler stops first or the pass failed."""
        return self._pass(person, force=force, asked=asked)[0]

    def _pass(self, person: str, *, force: bool, asked: bool) -> tuple[PassReport | None, bool]:
        """The pass's report, and whether its turn ended it before it was through."""
        turn = threading.Event()
        with self._cond:
            self._cond.wait_for(lambda: self.stop.is_set() or (
                self._current is None and (asked or not self._wanted)))
            self._wanted.discard(person)
            if self.stop.is_set():
                self._cond.notify_all()
                return None, False
            self._current, self._current_forced, self._turn = person, asked, turn
            self._turn_timer(person, turn)
        dreamer = None
        report = None
        try:
            with asking_for(person):
                dreamer = self.make_dreamer(person, turn)
                report = dreamer.run_pass(force=force)
            self.last_reports[person] = report
            self._latest = person
        except Exception:  # the scheduler must live on; the pass records its own failure
            log.exception("dream pass for %s failed", person)
        finally:
            with self._cond:
                if self._timer is not None:
                    self._timer.cancel()
            try:
                if dreamer is not None:
                    dreamer.close()
            except Exception:  # a store closed under it (the person was removed): the next pass must still run
                log.exception("closing the dream pass for %s failed", person)
            finally:
                with self._cond:
                    self._current, self._current_forced, self._turn, self._timer = None, False, None, None
                    self._cond.notify_all()
        cut = turn.is_set() and not self.stop.is_set() and report is not None
        # A turn that ended before the pass did anything (one unit longer than a turn) doubles the next
        # one, so that every unit fits a turn at last; any progress brings it back to turn_s.
        self._cuts[person] = self._cuts.get(person, 0) + 1 if cut and report and not report.actions else 0
        return report, cut

    def _turn_timer(self, person: str, turn: threading.Event) -> None:
        """Look at the turn of ``person``'s pass again in a turn's time."""
        timer = threading.Timer(self.turn_s * 2 ** min(self._cuts.get(person, 0), 12), self._turn_over,
                                args=[person, turn])
        timer.daemon = True
        self._timer = timer
        timer.start()

    def _turn_over(self, person: str, turn: threading.Event) -> None:
        """``turn_s`` into a pass: end it if someone else has work waiting, else look again a turn later."""
        with self._cond:
            if self._turn is not turn:
                return
            others = bool(self._wanted - {person})
        if not others:
            try:
                others = any(n > 0 for p, n in self.backlogs().items() if p != person)
            except Exception:  # cannot tell: let the others have their turn rather than wait unseen
                log.exception("dream: reading the backlogs failed")
                others = True
        if others:
            turn.set()
            return
        with self._cond:
            if self._turn is turn:
                self._turn_timer(person, turn)
