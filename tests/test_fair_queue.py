"""The shared model serves people in turns: one person's burst never makes another wait behind all of it.

Threads queue at a ``FairGate`` one at a time behind a holder (each known to be waiting before the next
comes), then the holder lets go and the order they were admitted in is read back.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from lyra_local.config import LocalModel
from lyra_local.llm.base import Message
from lyra_local.llm.fair import ASKER, FairGate, asking_for
from lyra_local.llm.local import LocalChatModel

from .conftest import wait_until

WAIT_S = 10.0  # how long a thread or an event is waited for (conftest.wait_until too)



class Queue:
    """Callers of ``take`` (each for a person) lined up behind a holder, admitted in an order we record."""

    def __init__(self, take: Callable[[], None], waiting: Callable[[], int]) -> None:
        self.take = take
        self.waiting = waiting
        self.served: list[str | None] = []
        self.threads: list[threading.Thread] = []

    def line_up(self, *people: str | None) -> None:
        for person in people:
            self._queue_one(person)

    def _queue_one(self, person: str | None) -> None:
        """Start ``person``'s call and return once it waits at the gate."""
        before = self.waiting()
        thread = threading.Thread(target=self._one, args=(person,), daemon=True)
        thread.start()
        self.threads.append(thread)
        wait_until(lambda: self.waiting() == before + 1)

    def _one(self, person: str | None) -> None:
        with asking_for(person):
            self.take()

    def finish(self) -> list[str | None]:
        for thread in self.threads:
            thread.join(WAIT_S)
            assert not thread.is_alive(), "a waiter was never served"
        return self.served


@pytest.fixture
def gate() -> FairGate:
    return FairGate()


@pytest.fixture
def held(gate: FairGate) -> Iterator[tuple[Queue, threading.Event]]:
    """A gate held by someone ("X") until the event is set, and a queue of callers recording their turn."""
    letting_go = threading.Event()
    queue = Queue(lambda: record(gate, queue), gate.waiting)
    holder = threading.Thread(target=hold_until, args=(gate, letting_go), daemon=True)
    holder.start()
    wait_until(gate.locked)
    yield queue, letting_go
    letting_go.set()
    holder.join(WAIT_S)


def record(gate: FairGate, queue: Queue) -> None:
    with gate.hold():
        queue.served.append(ASKER.get())


def hold_until(gate: FairGate, event: threading.Event) -> None:
    with asking_for("X"), gate.hold():
        event.wait(WAIT_S)


def test_a_person_queued_behind_a_burst_is_served_second(held: tuple[Queue, threading.Event]) -> None:
    queue, letting_go = held
    queue.line_up("A", "A", "A", "B")
    letting_go.set()
    assert queue.finish() == ["A", "B", "A", "A"]


def test_people_take_turns_round_by_round_and_each_in_arrival_order(held: tuple[Queue, threading.Event]) -> None:
    queue, letting_go = held
    queue.line_up(*["A"] * 6, "B", "B", "B", "C")
    letting_go.set()
    assert queue.finish() == ["A", "B", "C", "A", "B", "A", "B", "A", "A", "A"]


def test_the_holder_coming_back_waits_for_those_already_waiting(held: tuple[Queue, threading.Event]) -> None:
    queue, letting_go = held
    queue.line_up("A", "X", "B")
    letting_go.set()
    assert queue.finish() == ["A", "X", "B"]  # X had round 1 already: A, X and B share round 2, by arrival


def test_callers_with_no_asker_are_one_anonymous_person(held: tuple[Queue, threading.Event]) -> None:
    queue, letting_go = held
    queue.line_up(None, None, None, "B")
    letting_go.set()
    assert queue.finish() == [None, "B", None, None]


def test_nobody_starves_behind_a_person_who_keeps_asking(gate: FairGate) -> None:
    """Each of A's requests, once served, asks again while still holding the gate (30 times over): B, who
    asked once behind five of A's, is served second all the same, and every caller ends."""
    letting_go = threading.Event()
    more = [30]
    queue = Queue(lambda: None, gate.waiting)

    def take() -> None:
        with gate.hold():
            queue.served.append(ASKER.get())
            if ASKER.get() == "A" and more[0] > 0:
                more[0] -= 1
                queue.line_up("A")

    queue.take = take
    holder = threading.Thread(target=hold_until, args=(gate, letting_go), daemon=True)
    holder.start()
    wait_until(gate.locked)
    queue.line_up("A", "A", "A", "A", "A", "B")
    letting_go.set()
    served = queue.finish()
    assert served[:2] == ["A", "B"] and served.count("A") == 35 and len(served) == 36
    assert gate.waiting() == 0 and not gate.locked()


def test_many_people_asking_at_once_all_get_through(gate: FairGate) -> None:
    served: list[str | None] = []

    def ask(person: str | None) -> None:
        with asking_for(person):
            for _ in range(30):
                with gate.hold():
                    served.append(person)

    threads = [threading.Thread(target=ask, args=(p,), daemon=True) for p in ("A", "A", "B", "C", None)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT_S)
    assert not any(t.is_alive() for t in threads) and len(served) == 150


def test_a_gate_with_slots_admits_that_many_at_once() -> None:
    gate = FairGate(slots=2)
    inside: list[str] = []
    both_in = threading.Event()
    letting_go = threading.Event()

    def hold(person: str) -> None:
        with asking_for(person), gate.hold():
            inside.append(person)
            if len(inside) == 2:
                both_in.set()
            letting_go.wait(WAIT_S)

    threads = [threading.Thread(target=hold, args=(p,), daemon=True) for p in ("A", "A", "B")]
    for thread in threads:
        thread.start()
    assert both_in.wait(WAIT_S)
    wait_until(lambda: gate.waiting() == 1)
    assert len(inside) == 2  # the third waits for a slot
    letting_go.set()
    for thread in threads:
        thread.join(WAIT_S)
    assert sorted(inside) == ["A", "A", "B"]
    with pytest.raises(ValueError):
        FairGate(slots=0)


class BlockingLlama:
    """Stands in for a loaded ``Llama``: each completion records who asked and, the first, waits to be let go."""

    def __init__(self) -> None:
        self.asked: list[str | None] = []
        self.first = threading.Event()
        self.letting_go = threading.Event()

    def create_chat_completion(self, **_: Any) -> dict[str, Any]:
        self.asked.append(ASKER.get())
        if len(self.asked) == 1:
            self.first.set()
            self.letting_go.wait(WAIT_S)
        return {"choices": [{"message": {"content": "ok"}, "finish_reason": "stop"}], "usage": {}}

    def close(self) -> None:
        pass


def test_the_in_process_chat_model_serves_people_in_turns(tmp_path: Path) -> None:
    """The gate is where a local model is taken: a burst of A queued before B's request does not delay it."""
    model = LocalChatModel(tmp_path / "chat.gguf", LocalModel(backend="local", path=tmp_path / "chat.gguf"))
    llama = BlockingLlama()
    model._model._llm = llama  # as loaded: the gate, not the weights, is under test
    message: list[Message] = [{"role": "user", "content": "hi"}]
    waiters = model._model._lock

    def complete() -> None:
        model.complete(message)

    queue = Queue(complete, waiters.waiting)
    first = threading.Thread(target=lambda: queue._one("X"), daemon=True)
    first.start()
    assert llama.first.wait(WAIT_S)
    queue.line_up("A", "A", "A", "B")
    assert model.contended()  # foreground callers wait: a dream pass would yield to them
    llama.letting_go.set()
    queue.finish()
    first.join(WAIT_S)
    assert llama.asked == ["X", "A", "B", "A", "A"]


def test_a_waiter_that_gives_up_leaves_the_line_and_its_round(held: tuple[Queue, threading.Event],
                                                              gate: FairGate) -> None:
    queue, letting_go = held
    with asking_for("A"):
        assert gate.acquire(timeout=0.05) is False  # X still holds it
    assert gate.waiting() == 0
    queue.line_up("A", "B")
    letting_go.set()
    assert queue.finish() == ["A", "B"]  # A's abandoned try cost A no turn
