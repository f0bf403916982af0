"""``lyra dream``: run the dream cycle outside the server (one pass, or a loop), with live progress.

Several of these (and the server's own scheduler) can run on one data
directory: the leases in the store give each unit of work to exactly one.
Ctrl-C (or SIGTERM) stops at the next model call; what was done is kept.
The worker registers itself and heartbeats the whole time, also while it
sleeps between passes, so `lyra sitrep` shows it running, not stale.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import socket
import sqlite3
import threading
import uuid
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..config import Settings, load_settings, model_file_problems
from ..errors import ConfigError, LyraError
from ..mind import Dreamer, PassReport
from ..mind.dream_log import told
from ..runtime import open_runtime
from ..store import Store
from ..store.forget import forget_idle_off_the_record

log = logging.getLogger(__name__)
QUIET_KINDS = {"pass.start", "pass.end"}
HEARTBEAT_S = 30.0


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sub.add_parser("dream", help="consolidate memory now: gists, profile, digests, narrative, reflection")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--once", action="store_true", help="one pass, acting on drives past threshold (default)")
    mode.add_argument("--loop", type=float, metavar="SECONDS", help="a pass every SECONDS until stopped")
    parser.add_argument("--force", action="store_true", help="act on every drive, whatever its level")
    parser.add_argument("--quiet", action="store_true", help="print only the summary of each pass")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    settings = load_settings(args.config)
    problems = model_file_problems(settings, roles=("summary", "embed"))
    if problems:
        raise ConfigError("cannot dream:\n  " + "\n  ".join(problems))
    console = Console(highlight=False)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    with open_runtime(settings) as runtime:
        store, models = runtime.store, runtime.models
        instance = f"dream-{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        what = "lyra dream" + (f" --loop {args.loop:g}" if args.loop is not None else "")
        store.coord.register(instance, "dream", what)  # `lyra sitrep` and `lyra restore` see it from the start
        beating = threading.Thread(target=_heartbeat, args=(store, instance, heartbeat_s(settings), stop),
                                   name="dream-heartbeat", daemon=True)
        beating.start()
        dreamer = Dreamer(store, models.summary, models.embed, settings, stop=stop, instance_id=instance,
                          on_event=None if args.quiet else lambda e: _print_event(console, store, e))
        passes, report = 0, None
        try:
            while True:
                forget_idle_off_the_record(store, settings.companion.off_the_record_hours)  # as the server does
                report = dreamer.run_pass(force=args.force)
                passes += 1
                _print_report(console, report)
                if args.loop is None or stop.wait(args.loop):
                    break
        finally:
            stop.set()
            beating.join()
            dreamer.close()
            result = f"{passes} pass(es)" + (f", the last {report.status}" if report is not None else "")
            store.coord.complete(instance, result, "done" if report is not None else "failed")
    return 0 if report.status in ("done", "idle") else 3


def heartbeat_s(settings: Settings) -> float:
    """Often enough that a worker asleep between passes (or in a long one) is never shown as stale."""
    return min(HEARTBEAT_S, settings.coordination.stale_after_s / 3)


def _heartbeat(store: Store, instance: str, every_s: float, stop: threading.Event) -> None:
    while not stop.wait(every_s):
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


def _print_report(console: Console, report: PassReport) -> None:
    if report.status == "idle":
        console.print("nothing to consolidate: the memory is caught up")
        return
    table = Table(title=f"dream pass {report.pass_id}: {report.status}" + (" (forced)" if report.forced else ""))
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
