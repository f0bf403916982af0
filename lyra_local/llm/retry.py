"""Bounded exponential backoff with jitter: a pure schedule plus a small state machine.

The schedule is a pure function so it can be tested without sleeping; ``sleep``
and the random source are parameters for the same reason.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Iterator
from typing import TypeVar

from ..config import RetryPolicy

T = TypeVar("T")
log = logging.getLogger(__name__)


class Retryable(Exception):
    """Raised inside an attempt to ask for another try; ``reason`` is logged."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def backoff_delays(policy: RetryPolicy, rng: random.Random | None = None) -> Iterator[float]:
    """The delays to wait before each retry: ``max_attempts - 1`` of them.

    Delay *n* is ``initial * multiplier**n`` capped at ``max_delay``, minus a random
    share up to ``jitter`` of itself ("full jitter" when jitter is 1), so that many
    clients retrying against one restarting server do not arrive in lockstep.
    """
    rng = rng or random.Random()
    for attempt in range(policy.max_attempts - 1):
        base = min(policy.max_delay_s, policy.initial_delay_s * policy.multiplier**attempt)
        yield base * (1.0 - policy.jitter * rng.random())


class RetryState:
    """Counts the tries of one request; ``failed`` either waits for the next or gives up."""

    def __init__(
        self,
        policy: RetryPolicy,
        give_up: Callable[[int, str], Exception],
        *,
        what: str = "request",
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
    ) -> None:
        self.policy = policy
        self.tries = 0
        self._delays = backoff_delays(policy, rng)
        self._give_up = give_up
        self._what = what
        self._sleep = sleep

    def failed(self, reason: str) -> None:
        """Record a failed try: sleep before the next one, or raise the give-up error."""
        self.tries += 1
        delay = next(self._delays, None)
        if delay is None:
            raise self._give_up(self.tries, reason)
        log.warning("%s failed (%s); retry %d of %d in %.2fs", self._what, reason, self.tries,
                    self.policy.max_attempts - 1, delay)
        self._sleep(delay)


def call_with_retry(attempt: Callable[[], T], state: RetryState) -> T:
    """Run ``attempt`` until it returns, retrying on ``Retryable`` as ``state`` allows."""
    while True:
        try:
            return attempt()
        except Retryable as exc:
            state.failed(exc.reason)
