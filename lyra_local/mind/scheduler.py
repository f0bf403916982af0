"""Dream passes on a schedule inside the server (APScheduler), and on demand.

One background job on an interval, ``max_instances=1`` and ``coalesce`` so a
slow pass never piles up runs; a scheduled pass is skipped during quiet hours
and while someone is chatting. "Dream now" runs the same job at once. Passes
in this process never overlap; passes of other processes are kept apart by the
leases in the store.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from datetime import time as clock

from apscheduler.schedulers.background import BackgroundScheduler

from ..config import DreamSettings
from .dream import Dreamer, PassReport

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


class DreamScheduler:
    def __init__(self, make_dreamer: Callable[[threading.Event], Dreamer], settings: DreamSettings,
                 last_chat: Callable[[], float | None]) -> None:
        self.make_dreamer = make_dreamer
        self.settings = settings
        self.last_chat = last_chat
        self.stop = threading.Event()
        self.last_report: PassReport | None = None
        self._busy = threading.Lock()
        self._scheduler = BackgroundScheduler(daemon=True, job_defaults={"coalesce": True, "max_instances": 1})

    @property
    def running(self) -> bool:
        return self._busy.locked()

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
        self.stop.set()  # a pass in progress ends "deferred" at its next model call
        self._scheduler.shutdown(wait=True)

    def run_now(self, *, force: bool = False) -> bool:
        """Start a pass now in the scheduler's thread pool; False if one is already running here."""
        if self.running:
            return False
        self._scheduler.add_job(self.run, "date", run_date=datetime.now(), kwargs={"force": force},
                                id="dream-now", replace_existing=True)
        return True

    def tick(self) -> None:
        """The scheduled job: dream unless it is quiet time or someone is talking."""
        if in_quiet_hours(self.settings.quiet_hours, datetime.now().time()):
            log.debug("dream skipped: quiet hours %s", self.settings.quiet_hours)
            return
        last = self.last_chat()
        if last is not None and time.monotonic() - last < self.settings.idle_s:
            log.debug("dream skipped: a chat turn %.0fs ago", time.monotonic() - last)
            return
        self.run()

    def run(self, *, force: bool = False) -> PassReport | None:
        if not self._busy.acquire(blocking=False):
            return None
        dreamer = None
        try:
            dreamer = self.make_dreamer(self.stop)
            self.last_report = dreamer.run_pass(force=force)
            return self.last_report
        except Exception:  # the scheduler must live on; the pass records its own failure
            log.exception("dream pass failed")
            return None
        finally:
            if dreamer is not None:
                dreamer.close()
            self._busy.release()
