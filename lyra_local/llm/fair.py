"""Fair turns at a shared model: the people of a household take turns, not a queue.

One chat model in memory serves every person. A plain lock lets whoever grabs it
first go first, so one person's burst (an agent firing ten requests, an import)
would make everyone else wait behind all of it. ``FairGate`` admits one holder at
a time (or ``slots``) and, among waiters, serves people round-robin: each
person's k-th waiting request belongs to round k after their last one, the
lowest round goes first, and within a round the earliest arrival. So A, A, A, B
waiting behind a holder are served A, B, A, A; within one person it is first come,
first served; and nobody starves, since a new arrival is never put in a round
before the one being served.

Who is asking is ``ASKER``, a context variable the caller sets (the web layer per
request, the dream per person's pass); work with no asker is one anonymous person.
This module never decides anything but the order: no priorities, no timeouts.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import threading
from collections.abc import Iterator
from contextvars import ContextVar

ASKER: ContextVar[str | None] = ContextVar("lyra_asker", default=None)
ANONYMOUS = ""  # the one "person" of every call made with no ASKER (the CLI, a script, a test)


@contextlib.contextmanager
def asking_for(person: str | None) -> Iterator[None]:
    """Model calls inside are made for ``person`` (and take that person's turns at a ``FairGate``)."""
    token = ASKER.set(person)
    try:
        yield
    finally:
        ASKER.reset(token)


class FairGate:
    """At most ``slots`` holders at once; waiters admitted round-robin across people, FIFO within one."""

    def __init__(self, slots: int = 1) -> None:
        if slots < 1:
            raise ValueError(f"a gate needs at least one slot, not {slots}")
        self.slots = slots
        self._held = 0
        self._cond = threading.Condition()
        self._round = 0  # the round of the latest admission: a newcomer's first request is the round after it
        self._last: dict[str, int] = {}  # each person's latest round taken; only those still ahead of _round
        self._queue: list[tuple[int, int, str]] = []  # heap of (round, arrival, person)
        self._arrivals = itertools.count()

    def acquire(self, timeout: float | None = None) -> bool:
        """Wait for this asker's turn, then hold a slot until ``release``; False if ``timeout`` seconds passed
        first (as ``threading.Lock.acquire``)."""
        person = ASKER.get() or ANONYMOUS
        with self._cond:
            turn = max(self._round, self._last.get(person, 0)) + 1
            self._last[person] = turn
            ticket = (turn, next(self._arrivals), person)
            heapq.heappush(self._queue, ticket)
            try:
                admitted = self._cond.wait_for(lambda: self._held < self.slots and self._queue[0] == ticket,
                                               timeout)
            except BaseException:  # interrupted: leave the line so the next one is not stuck behind us
                self._leave(ticket)
                raise
            if not admitted:
                self._leave(ticket)
                return False
            heapq.heappop(self._queue)
            self._held += 1
            self._round = max(self._round, turn)
            self._last = {p: r for p, r in self._last.items() if r > self._round}
            self._cond.notify_all()  # with slots to spare, the next in line may go too
            return True

    def _leave(self, ticket: tuple[int, int, str]) -> None:
        self._queue.remove(ticket)
        heapq.heapify(self._queue)
        person = ticket[2]
        left = [turn for turn, _, p in self._queue if p == person]
        if left:
            self._last[person] = max(left)
        else:
            self._last.pop(person, None)
        self._cond.notify_all()

    def release(self) -> None:
        with self._cond:
            if self._held == 0:
                raise RuntimeError("release of a FairGate that is not held")
            self._held -= 1
            self._cond.notify_all()

    @contextlib.contextmanager
    def hold(self) -> Iterator[None]:
        self.acquire()
        try:
            yield
        finally:
            self.release()

    def locked(self) -> bool:
        """Every slot is held (as ``threading.Lock.locked``)."""
        with self._cond:
            return self._held >= self.slots

    def waiting(self) -> int:
        """How many callers wait for a slot now."""
        with self._cond:
            return len(self._queue)
