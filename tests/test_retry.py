from __future__ import annotations

import random

import pytest

from lyra_local.config import RetryPolicy
from lyra_local.errors import ModelUnavailable
from lyra_local.llm.retry import Retryable, RetryState, backoff_delays, call_with_retry


def test_delays_grow_exponentially_and_are_capped() -> None:
    policy = RetryPolicy(max_attempts=6, initial_delay_s=1.0, max_delay_s=5.0, multiplier=2.0, jitter=0.0)
    assert list(backoff_delays(policy)) == [1.0, 2.0, 4.0, 5.0, 5.0]


def test_jitter_takes_off_at_most_its_share() -> None:
    policy = RetryPolicy(max_attempts=50, initial_delay_s=1.0, max_delay_s=1.0, jitter=0.5)
    delays = list(backoff_delays(policy, random.Random(7)))
    assert len(delays) == 49
    assert all(0.5 <= d <= 1.0 for d in delays)
    assert len(set(delays)) > 40  # really random, so clients do not retry in lockstep


def test_gives_up_after_max_attempts_with_the_last_reason() -> None:
    slept: list[float] = []
    calls = []

    def attempt() -> str:
        calls.append(1)
        raise Retryable(f"boom {len(calls)}")

    state = RetryState(RetryPolicy(max_attempts=3, initial_delay_s=0.1, jitter=0.0),
                       lambda tries, reason: ModelUnavailable(f"gave up after {tries}: {reason}"),
                       sleep=slept.append)
    with pytest.raises(ModelUnavailable, match="gave up after 3: boom 3"):
        call_with_retry(attempt, state)
    assert len(calls) == 3
    assert slept == [0.1, 0.2]


def test_succeeds_once_the_failure_passes() -> None:
    outcomes = iter([Retryable("down"), Retryable("down"), "answer"])

    def attempt() -> str:
        item = next(outcomes)
        if isinstance(item, Exception):
            raise item
        return item

    state = RetryState(RetryPolicy(max_attempts=5), lambda t, r: ModelUnavailable(r), sleep=lambda _: None)
    assert call_with_retry(attempt, state) == "answer"
    assert state.tries == 2
