"""The dream visits people in turns by backlog: one person's big import never starves another's summaries.

The dreamer is a scripted fake that records whose pass it ran (and for whom the model would be asked); a pass
that needs time waits for it on its stop event, and once that is set it ends "deferred" with nothing done, as a
real pass ends at its next model call.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta

import pytest

from lyra_local.config import DreamSettings
from lyra_local.llm.fair import ASKER
from lyra_local.mind.dream.cycle import PassReport
from lyra_local.mind.dream.scheduler import DreamScheduler, visit_order

from .conftest import wait_until

WAIT_S = 10.0  # how long a thread or an event is waited for (conftest.wait_until too)



class FakeDreamer:
    def __init__(self, person: str, stop: threading.Event, log: Passes) -> None:
        self.person = person
        self.stop = stop
        self.log = log

    def run_pass(self, *, force: bool = False) -> PassReport:
        self.log.started.append(self.person)
        self.log.askers.append(ASKER.get())
        needs = self.log.needs.get(self.person, 0.0)
        if needs and self.stop.wait(needs):  # stopped before its work was done: nothing to show
            self.log.passes.append((self.person, "deferred", force))
            return PassReport(len(self.log.passes), "deferred", force, {}, {}, {}, {})
        self.log.needs.pop(self.person, None)
        if self.log.drains:
            self.log.backlogs[self.person] = 0
        self.log.passes.append((self.person, "done", force))
        return PassReport(len(self.log.passes), "done", force, {}, {}, {}, {}, actions=[{"kind": "gist"}])

    def close(self) -> None:
        self.log.closed += 1


class Passes:
    """What the fake dreamers did: whose pass began, for whom the model was asked, how each ended."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self.askers: list[str | None] = []
        self.passes: list[tuple[str, str, bool]] = []
        self.needs: dict[str, float] = {}  # person -> seconds of work their next pass must do unstopped
        self.backlogs: dict[str, int] = {}
        self.drains = True  # a pass that is through leaves its person nothing to do
        self.closed = 0

    def make(self, person: str, stop: threading.Event) -> FakeDreamer:
        return FakeDreamer(person, stop, self)


@pytest.fixture
def passes() -> Passes:
    return Passes()


def scheduler_of(passes: Passes, backlogs: dict[str, int], *, turn_s: float = 60.0,
                 last_chat: Callable[[], float | None] = lambda: None, **settings: object) -> DreamScheduler:
    passes.backlogs.update(backlogs)
    dream = DreamSettings(enabled=False, idle_s=0, **settings)  # type: ignore[arg-type]
    return DreamScheduler(passes.make, dream, last_chat, lambda: dict(passes.backlogs),  # type: ignore[arg-type]
                          turn_s=turn_s)


@pytest.fixture
def started() -> Iterator[list[DreamScheduler]]:
    """Schedulers whose thread pool runs (for "Dream now"); shut down after the test."""
    running: list[DreamScheduler] = []
    yield running
    for scheduler in running:
        scheduler.shutdown()


def test_visit_order_is_larger_backlog_first_turned_after_who_went_first() -> None:
    backlogs = {"a": 100, "b": 1, "c": 0, "d": 7}
    assert visit_order(backlogs, None) == ["a", "d", "b"]  # c has nothing to do
    assert visit_order(backlogs, "a") == ["d", "b", "a"]
    assert visit_order(backlogs, "b") == ["a", "d", "b"]
    assert visit_order(backlogs, "c") == ["a", "d", "b"]  # who went first has nothing left: from the top
    assert visit_order({"y": 3, "x": 3}, None) == ["x", "y"]  # ties by id
    assert visit_order({}, "a") == [] and visit_order({"a": 0}, None) == []


def test_a_small_backlog_gets_its_pass_in_the_first_tick_beside_a_big_one(passes: Passes) -> None:
    passes.drains = False
    scheduler = scheduler_of(passes, {"A": 100, "B": 1})
    scheduler.tick()
    assert passes.started == ["A", "B"]
    scheduler.tick()
    assert passes.started == ["A", "B", "B", "A"]  # the next tick starts after who went first
    assert passes.askers == passes.started  # each pass asks the model as its own person
    assert passes.closed == 4
    assert set(scheduler.last_reports) == {"A", "B"} and scheduler.last_report == scheduler.last_reports["A"]


def test_a_long_pass_ends_at_its_turn_when_someone_else_waits(passes: Passes) -> None:
    passes.needs["A"] = 0.5  # an import of years: far more than a turn
    scheduler = scheduler_of(passes, {"A": 10_000, "B": 2}, turn_s=0.05)
    scheduler.tick()
    # B is done in the first round; A's pass, cut at its turn, goes on in the rounds after, by itself
    assert passes.passes[:2] == [("A", "deferred", False), ("B", "done", False)]
    assert passes.passes[-1] == ("A", "done", False) and passes.backlogs == {"A": 0, "B": 0}


def test_a_unit_longer_than_a_turn_gets_a_longer_turn_until_it_fits(passes: Passes) -> None:
    passes.drains = False  # B always has something: A's turn is always wanted back
    passes.needs["A"] = 0.6
    scheduler = scheduler_of(passes, {"A": 100, "B": 1}, turn_s=0.1)
    scheduler.tick()
    mine = [status for person, status, _ in passes.passes if person == "A"]
    assert mine == ["deferred", "deferred", "deferred", "done"]  # turns of 0.1, 0.2, 0.4, then 0.8 s
    assert [person for person, _, _ in passes.passes].count("B") == 4  # B's turn came between each


def test_a_long_pass_keeps_going_while_nobody_else_has_work(passes: Passes) -> None:
    passes.needs["A"] = 0.4
    scheduler = scheduler_of(passes, {"A": 10_000, "B": 0}, turn_s=0.05)
    scheduler.tick()
    assert passes.passes == [("A", "done", False)]  # its turn came round eight times; nobody was waiting


def test_dream_now_runs_that_persons_pass_only(passes: Passes, started: list[DreamScheduler]) -> None:
    scheduler = scheduler_of(passes, {"A": 5, "B": 5})
    scheduler.start()
    started.append(scheduler)
    assert scheduler.run_now("B", force=True)
    wait_until(lambda: len(passes.passes) == 1 and not scheduler.running)
    assert passes.passes == [("B", "done", True)] and passes.askers == ["B"]


def test_dream_now_ends_someone_elses_scheduled_turn_and_goes_next(passes: Passes,
                                                                    started: list[DreamScheduler]) -> None:
    passes.needs["A"] = WAIT_S
    passes.drains = False
    scheduler = scheduler_of(passes, {"A": 10_000, "C": 1})
    scheduler.start()
    started.append(scheduler)
    tick = threading.Thread(target=scheduler.tick, daemon=True)
    tick.start()
    wait_until(lambda: passes.started == ["A"])
    assert scheduler.running and scheduler.running_for("A") and not scheduler.running_for("B")
    assert scheduler.run_now("B", force=True)
    assert not scheduler.run_now("B")  # already asked for: not twice
    assert scheduler.running_for("B")
    wait_until(lambda: len(passes.passes) >= 3)
    scheduler.shutdown()
    started.remove(scheduler)
    tick.join(WAIT_S)
    # A's cut turn, B's asked-for pass before the tick's next, then C (and A again: its cut starts a round)
    assert passes.passes[:3] == [("A", "deferred", False), ("B", "done", True), ("C", "done", False)]


def test_dream_now_of_a_person_whose_pass_runs_is_refused(passes: Passes, started: list[DreamScheduler]) -> None:
    passes.needs["A"] = WAIT_S
    scheduler = scheduler_of(passes, {"A": 1})
    scheduler.start()
    started.append(scheduler)
    tick = threading.Thread(target=scheduler.tick, daemon=True)
    tick.start()
    wait_until(lambda: passes.started == ["A"])
    assert not scheduler.run_now("A")
    scheduler.shutdown()  # the pass in progress ends at its next model call
    started.remove(scheduler)
    tick.join(WAIT_S)
    assert passes.passes == [("A", "deferred", False)] and passes.closed == 1


def test_no_pass_while_someone_chats_nor_in_quiet_hours(passes: Passes) -> None:
    passes.drains = False
    last_chat = [time.monotonic()]
    scheduler = scheduler_of(passes, {"A": 3, "B": 1}, last_chat=lambda: last_chat[0])
    scheduler.settings = scheduler.settings.model_copy(update={"idle_s": 60})
    scheduler.tick()
    assert passes.started == []  # a turn a moment ago: no pass
    last_chat[0] = time.monotonic() - 61
    scheduler.tick()
    assert passes.started == ["A", "B"]  # quiet for longer than idle_s: everyone's pass
    now = datetime.now()
    window = f"{(now - timedelta(hours=1)):%H:%M}-{(now + timedelta(hours=1)):%H:%M}"
    scheduler_of(passes, {"A": 3}, quiet_hours=window).tick()
    assert passes.started == ["A", "B"]  # quiet hours: no pass


def test_a_failing_pass_leaves_the_others_their_turn(passes: Passes) -> None:
    def make(person: str, stop: threading.Event) -> FakeDreamer:
        if person == "A":
            raise RuntimeError("A's memory could not be opened")
        return passes.make(person, stop)

    scheduler = DreamScheduler(make, DreamSettings(idle_s=0), lambda: None,  # type: ignore[arg-type]
                               lambda: {"A": 9, "B": 1})
    scheduler.tick()
    assert passes.passes == [("B", "done", False)] and not scheduler.running
    assert scheduler.last_report == scheduler.last_reports["B"] and "A" not in scheduler.last_reports
