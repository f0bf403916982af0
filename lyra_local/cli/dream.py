"""``lyra dream``: run the dream cycle outside the server (one pass, or a loop), with live progress.

Several of these (and the server's own scheduler) can run on one data
directory: the leases in the store give each unit of work to exactly one.
Ctrl-C (or SIGTERM) stops at the next model call; what was done is kept.
It dreams for one person (``--person``, or the only one), or with ``--all``
for everyone in turn, one pass each per round on one summary model, so one
person's big import never starves another's summaries.
The worker registers itself and heartbeats the whole time, also while it
sleeps between passes, so `lyra sitrep` shows it running, not stale.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import socket
import sqlite3
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..config import Settings, load_settings, model_file_problems
from ..errors import ConfigError, LyraError
from ..mind import Dreamer, PassReport
from ..mind.dream.events import DreamEvent
from ..mind.dream.log import told
from ..people import Need, as_person, choose
from ..runtime import Runtime, open_runtime
from ..store import Store
from ..store.forget.erase import forget_idle_off_the_record
from ..store.household import Household, Person

log = logging.getLogger(__name__)
QUIET_KINDS = {DreamEvent.PASS_START, DreamEvent.PASS_END}
HEARTBEAT_S = 30.0


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sub.add_parser("dream", help="consolidate memory now: gists, profile, digests, narrative, reflection")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--once", action="store_true", help="one pass, acting on drives past threshold (default)")
    mode.add_argument("--loop", type=float, metavar="SECONDS", help="a pass every SECONDS until stopped")
    parser.add_argument("--all", action="store_true",
                        help="dream for every person of the household in turn, one pass each per round "
                             "(default: --person, or the only person)")
    parser.add_argument("--force", action="store_true", help="act on every drive, whatever its level")
    parser.add_argument("--quiet", action="store_true", help="print only the summary of each pass")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    settings = load_settings(args.config)
    if args.all and args.person is not None:
        raise LyraError("--all dreams for everyone: leave out --person", hint="or leave out --all")
    problems = model_file_problems(settings, roles=("summary", "embed"))
    if problems:
        raise ConfigError("cannot dream:\n  " + "\n  ".join(problems))
    console = Console(highlight=False)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    need: Need = "household" if args.all else "memory"
    with open_runtime(settings, person=args.person, need=need) as first, contextlib.ExitStack() as opened:
        household = opened.enter_context(contextlib.closing(Household(settings.data_dir)))
        chosen = choose(household, settings, args.person, need)
        people = household.people() if args.all else [chosen]
        instance = f"dream-{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        what = "lyra dream" + (" --all" if args.all else "") + (f" --loop {args.loop:g}" if args.loop is not None
                                                                 else "")
        shift = _Shift(first, chosen, household, instance, what, stop, args.quiet, console)
        workers = [opened.enter_context(_worker(shift, person)) for person in people]
        beating = threading.Thread(target=_heartbeat, args=([w.store for w in workers], instance,
                                                             heartbeat_s(settings), stop),
                                   name="dream-heartbeat", daemon=True)
        beating.start()
        try:
            while True:
                for worker in workers:  # round-robin: one pass each, so one big backlog starves nobody
                    if stop.is_set():
                        break
                    forget_idle_off_the_record(worker.store, settings.companion.off_the_record_hours)
                    worker.report = worker.dreamer.run_pass(force=args.force)
                    worker.passes += 1
                    _print_report(console, worker.report, worker.person.name if args.all else None)
                if args.loop is None or stop.wait(args.loop):
                    break
        finally:
            stop.set()
            beating.join()
    return 0 if all(w.report is not None and w.report.status in ("done", "idle") for w in workers) else 3


class Worker:
    """One person's dream in this process: their store, their dreamer, their last pass."""

    def __init__(self, person: Person, store: Store, dreamer: Dreamer) -> None:
        self.person = person
        self.store = store
        self.dreamer = dreamer
        self.passes = 0
        self.report: PassReport | None = None


@dataclass(frozen=True)
class _Shift:
    """What every worker of one ``lyra dream`` shares: the chosen person's runtime (its models serve everyone),
    the household, the instance all of them register as, and how it stops and reports."""

    first: Runtime
    chosen: Person
    household: Household
    instance: str
    what: str  # the command, as `lyra sitrep` shows the instance
    stop: threading.Event
    quiet: bool
    console: Console


@contextlib.contextmanager
def _worker(shift: _Shift, person: Person) -> Iterator[Worker]:
    """A dreamer over ``person``'s memory: ``shift.first`` (the chosen person's runtime) for them, a runtime over
    their own store on its models for anyone else (one summary model serves everyone, in turn)."""
    first, console, instance = shift.first, shift.console, shift.instance
    settings = as_person(first.settings, person)
    with contextlib.ExitStack() as closing:
        if person.id == shift.chosen.id:
            runtime = first
        else:
            store = closing.enter_context(contextlib.closing(Store(shift.household.person_dir(person))))
            runtime = first.sharing(settings, store)
            closing.callback(runtime.close)
        store, models = runtime.store, runtime.models
        store.coord.register(instance, "dream", shift.what)  # `lyra sitrep` and `lyra restore` see it from the start
        dreamer = Dreamer(store, models.summary, models.embed, settings, stop=shift.stop, instance_id=instance,
                          on_event=None if shift.quiet else lambda e: _print_event(console, store, e))
        worker = Worker(person, store, dreamer)
        try:
            yield worker
        finally:
            dreamer.close()
            report = worker.report
            result = f"{worker.passes} pass(es)" + (f", the last {report.status}" if report is not None else "")
            store.coord.complete(instance, result, "done" if report is not None else "failed")


def heartbeat_s(settings: Settings) -> float:
    """Often enough that a worker asleep between passes (or in a long one) is never shown as stale."""
    return min(HEARTBEAT_S, settings.coordination.stale_after_s / 3)


def _heartbeat(stores: list[Store], instance: str, every_s: float, stop: threading.Event) -> None:
    while not stop.wait(every_s):
        for store in stores:
            try:
                store.coord.heartbeat(instance)
            except (LyraError, sqlite3.Error) as exc:  # a locked database now and then: the next beat will do
                log.warning("dream worker heartbeat failed: %s", exc)


def _print_event(console: Console, store: Store, event: dict[str, Any]) -> None:
    """What the dream did, in the sentence the Dream panel shows (``mind.dream_log``)."""
    if event["kind"] in QUIET_KINDS:
        return
    style = {"backoff": "yellow", "deferred": "red", "error": "red", "skip": "dim"}.get(event["kind"], "green")
    console.print(f"[{style}]{escape(told(store, [event])[0]['says'])}[/]")


def _print_report(console: Console, report: PassReport, whose: str | None = None) -> None:
    """The pass's drives and actions; ``whose``: the person's name, when this process dreams for several."""
    mind = "the memory" if whose is None else f"{escape(whose)}'s memory"
    if report.status == "idle":
        console.print(f"nothing to consolidate: {mind} is caught up")
        return
    title = f"dream pass {report.pass_id}" + (f" for {escape(whose)}" if whose else "") + f": {report.status}"
    table = Table(title=title + (" (forced)" if report.forced else ""))
    table.add_column("drive")
    table.add_column("before", justify="right")
    table.add_column("after", justify="right")
    for drive, level in report.drives_before.items():
        table.add_row(drive, f"{level:.2f}", f"{report.drives_after.get(drive, 0.0):.2f}")
    console.print(table)
    done: dict[str, int] = {}
    for action in report.actions:
        done[action["kind"]] = done.get(action["kind"], 0) + 1
    console.print("done: " + (", ".join(f"{n} {k}" for k, n in done.items()) or "nothing to do"))
    if report.error:
        console.print(f"[red]{report.error}[/]")
