#!/usr/bin/env python3
"""Benchmark a household: how long a login takes, and how the dream shares the model across people.

- ``login``: the password check alone (``lyra_local.passwords``: scrypt N=2^15,
  r=8, p=1) right and wrong, then the whole ``POST /api/auth/login`` through the
  real app (fastapi's TestClient; fake chat and embedding models, which a login
  never touches), p50/p95;
- ``dream``: four people's memories, A with one big import of many
  conversations, B, C and D with one or two each; the dream cycle on the real
  tiny model (or, with ``--fake-call-s``, a scripted one whose every call takes
  that long), first one whole pass per person in turn (A first, as a single
  queue would), then through the household's round-robin scheduler
  (``mind/dream/scheduler.py``, its turn ``--turn`` seconds). Per pass: whose it was,
  when, how long and what it did; per person: seconds from the start until
  every conversation of theirs had its summary.

Recall and memory with four people's stores open are ``scripts/bench_chat.py --people 4``.
Prints markdown tables; writes only to a temp dir.

    python scripts/bench_household.py [login|dream|all] [--logins 50] [--big 12] [--turn 20] [--fake-call-s S]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # tests.fakes: a login involves no model, so fakes serve

from bench_chat import pct  # noqa: E402
from bench_dream import seed_store  # noqa: E402  (the same conversations bench_dream.py dreams over)
from fastapi.testclient import TestClient  # noqa: E402

from lyra_local.config import load_settings  # noqa: E402
from lyra_local.llm.local import available_cpus  # noqa: E402
from lyra_local.llm.registry import Models  # noqa: E402
from lyra_local.mind import Dreamer  # noqa: E402
from lyra_local.mind.dream.backlog import sense  # noqa: E402
from lyra_local.mind.dream.drives import backlog_size  # noqa: E402
from lyra_local.mind.dream.scheduler import DreamScheduler  # noqa: E402
from lyra_local.passwords import hash_secret, verify_secret  # noqa: E402
from lyra_local.store import Store  # noqa: E402
from lyra_local.store.household import Household  # noqa: E402
from lyra_local.web import create_app  # noqa: E402
from lyra_local.web.logins import LoginFailed, check_login  # noqa: E402
from tests.fakes import FakeChatModel, FakeEmbedder  # noqa: E402

SECRET = "correct horse battery"

def row(label: str, timings: list[tuple[float, float]]) -> str:
    wall, cpu = [w for w, _ in timings], [c for _, c in timings]
    return (f"| {label} | {len(timings)} | {statistics.median(wall):.0f} | {pct(wall, 0.95):.0f} | "
            f"{statistics.median(cpu):.0f} | {pct(cpu, 0.95):.0f} |")


def timed(call: Callable[[], Any]) -> tuple[float, float]:
    """Wall and CPU milliseconds of ``call`` (CPU: every thread of this process, the app's included), since on
    a shared VM the wall time is mostly waiting for a core."""
    start, cpu = time.perf_counter(), time.process_time()
    call()
    return (time.perf_counter() - start) * 1000, (time.process_time() - cpu) * 1000


# -- login ------------------------------------------------------------------------------------------------

def app_logins(n: int) -> dict[str, list[tuple[float, float]]]:
    """``POST /api/auth/login`` ``n`` times through the real app, for a household of two (the owner and Ana, in
    turn), each login's cookie then used once; and four wrong passwords (the fifth would be rate-limited)."""
    with tempfile.TemporaryDirectory(prefix="lyra-bench-login-") as tmp:
        settings = load_settings(None, env={"LYRA_DATA_DIR": str(Path(tmp) / "data"),
                                            "LYRA_MODELS_DIR": str(REPO / "models"), "LYRA_DREAM__ENABLED": "false"})
        models = Models(settings, chat=FakeChatModel(), embed=FakeEmbedder())
        with TestClient(create_app(settings, models=models), base_url="http://127.0.0.1") as client:
            # one person on loopback: login-free, so the owner sets a password and adds a second person
            owner = client.get("/api/me").json()["name"]
            client.put("/api/me/secret", json={"secret": SECRET}).raise_for_status()
            client.post("/api/people", json={"name": "Ana", "kind": "adult", "secret": SECRET}).raise_for_status()
            client.cookies.clear()
            out: dict[str, list[tuple[float, float]]] = {"right": [], "state": [], "wrong": []}

            def log_in(name: str, secret: str, status: int) -> None:
                response = client.post("/api/auth/login", json={"name": name, "secret": secret})
                assert response.status_code == status, response.text

            for i in range(n):
                name = "Ana" if i % 2 else owner
                out["right"].append(timed(lambda name=name: log_in(name, SECRET, 200)))  # type: ignore[misc]
                out["state"].append(timed(lambda: client.get("/api/me").raise_for_status()))  # the cookie works
                client.cookies.clear()
            for _ in range(4):  # the fifth failure in 15 minutes is rate-limited
                out["wrong"].append(timed(lambda: log_in("Ana", "not the password", 401)))
            return out


def login(n: int) -> None:
    stored = hash_secret(SECRET)
    hashing = [timed(lambda: hash_secret(SECRET)) for _ in range(max(5, n // 5))]
    right = [timed(lambda: verify_secret(SECRET, stored)) for _ in range(n)]
    wrong = [timed(lambda: verify_secret("not the password", stored)) for _ in range(n)]
    print(f"\n### Login, ms ({available_cpus()} CPUs; password check: lyra_local.passwords, scrypt N=2^15 r=8 p=1)\n")
    print("| what | n | wall p50 | wall p95 | CPU p50 | CPU p95 |\n|---|---|---|---|---|---|")
    print(row("hash a new password (set / reset)", hashing))
    print(row("check a right password", right))
    print(row("check a wrong password", wrong))
    through = app_logins(n)
    print(row("POST /api/auth/login, right password (whole request through the app)", through["right"]))
    print(row("POST /api/auth/login, wrong password (401)", through["wrong"]))
    print(row("GET /api/me with the session cookie", through["state"]))
    known, unknown = wrong_names(n)
    print(row("the login check, wrong password for a name that lives here", known))
    print(row("the login check, any password for a name nobody has", unknown))
    ratio = statistics.median(w for w, _ in unknown) / statistics.median(w for w, _ in known)
    print(f"\nunknown name / known name, wall p50: **{ratio:.2f}**")


def wrong_names(n: int) -> tuple[list[tuple[float, float]], list[tuple[float, float]]]:
    """The whole login check (``web/logins.check_login``: limits, lookups, scrypt) failing ``n`` times for a name
    that lives here and ``n`` times for one nobody has, interleaved, each from an address of its own and the
    known names in turn (so that no limit is reached): whether the time tells who lives here."""
    with tempfile.TemporaryDirectory(prefix="lyra-bench-names-") as tmp:
        household = Household(Path(tmp))
        stored = hash_secret(SECRET)
        household.logins.set_secret(household.ensure_first("Ada").id, stored)
        names = ["Ada", *(household.add(f"Person{k}", "adult", stored).name for k in range(n // 15))]
        known: list[tuple[float, float]] = []
        unknown: list[tuple[float, float]] = []

        def fail(name: str, address: str) -> None:
            try:
                check_login(household, name, "not the password", address, None)
            except LoginFailed:
                return
            raise AssertionError("a wrong password logged in")

        for i in range(n):
            known.append(timed(lambda i=i: fail(names[i % len(names)], f"10.1.{i // 250}.{i % 250}")))  # type: ignore[misc]
            unknown.append(timed(lambda i=i: fail(f"Nobody{i}", f"10.2.{i // 250}.{i % 250}")))  # type: ignore[misc]
        household.close()
        return known, unknown


# -- the dream across people ---------------------------------------------------------------------------------

class Timeline:
    """When each person's conversations got their summaries, and each pass's person and length."""

    def __init__(self, sessions: dict[str, int]) -> None:
        self.start = time.time()
        self.sessions = sessions
        self.gists: dict[str, int] = dict.fromkeys(sessions, 0)
        self.done_at: dict[str, float] = {}
        self.passes: list[tuple[str, float, float, int]] = []  # person, start s, seconds, actions

    def on_event(self, person: str) -> Callable[[dict[str, Any]], None]:
        def seen(event: dict[str, Any]) -> None:
            if event["kind"] == "gist":
                self.gists[person] += 1
                if self.gists[person] >= self.sessions[person] and person not in self.done_at:
                    self.done_at[person] = event["at"] - self.start
        return seen


def one_queue(dirs: dict[str, Path], models: Models, settings: Any, timeline: Timeline) -> None:
    """Before the household scheduler: one whole pass per person, in turn, A (the big import) first."""
    for person, data_dir in dirs.items():
        store = Store(data_dir)
        dreamer = Passing(person, store, models, settings, timeline, stop=None)
        try:
            dreamer.run_pass()
        finally:
            dreamer.close()
            store.close()


def slow_fake(call_s: float) -> Any:
    """A scripted chat model whose every call takes ``call_s`` and answers with a sentence of the prompt's last
    message (a grounded, extractive summary), so the schedule, not the model, is what is measured."""
    def respond(messages: Any, options: Any) -> str:
        time.sleep(call_s)
        said = [line for line in messages[-1]["content"].splitlines() if "talked with" in line]
        return said[0].split(":", 1)[-1].strip() if said else "ok"

    return FakeChatModel(respond=respond)


def dream(big: int, turns: int, summary_tokens: int, turn_s: float, fake_call_s: float | None) -> None:
    sessions = {"A": big, "B": 1, "C": 2, "D": 1}
    with tempfile.TemporaryDirectory(prefix="lyra-bench-household-dream-") as tmp:
        work = Path(tmp)
        template = work / "template"
        for k, (person, count) in enumerate(sessions.items()):
            seed_store(template / person, count, turns, seed=11 + k, months_later=11 + k)
        settings = load_settings(None, env={"LYRA_DATA_DIR": str(work / "unused"),
                                            "LYRA_MODELS_DIR": str(REPO / "models"),
                                            "LYRA_DREAM__SESSION_IDLE_S": "0",
                                            "LYRA_DREAM__SUMMARY_TOKENS": str(summary_tokens)})
        models = Models(settings, chat=None if fake_call_s is None else slow_fake(fake_call_s))
        models.embed.embed(["warm up"])
        model_name = models.summary.name
        results = []
        try:
            for label, schedule in schedules(turn_s):
                run_dir = work / label.split()[0]
                shutil.copytree(template, run_dir)
                dirs = {person: run_dir / person for person in sessions}
                timeline = Timeline(sessions)
                schedule(dirs, models, settings, timeline)
                results.append((label, timeline))
        finally:
            models.close()
    print(f"\n### The dream across four people ({available_cpus()} CPUs; summary model "
          f"{model_name} (the chat model's, shared), "
          f"summary_tokens {summary_tokens}; conversations of {turns} turns: A {big}, B 1, C 2, D 1)\n")
    print("| schedule | A all summarized, s | B, s | C, s | D, s | last of B/C/D, s | passes |")
    print("|---|---|---|---|---|---|---|")
    for label, timeline in results:
        done = timeline.done_at

        def at(person: str, done: dict[str, float] = done) -> str:
            return f"{done[person]:.0f}" if person in done else "never"

        others = [done[p] for p in "BCD" if p in done]
        last = f"{max(others):.0f}" if len(others) == 3 else "never"
        print(f"| {label} | {at('A')} | {at('B')} | {at('C')} | {at('D')} | {last} | {len(timeline.passes)} |")
    for label, timeline in results:
        print(f"\n{label}: passes in order (person: start s + length s, actions)\n")
        print("; ".join(f"{p}: {s:.0f}+{d:.0f} ({a})" for p, s, d, a in timeline.passes))


def round_robin(turn_s: float) -> Callable[[dict[str, Path], Models, Any, Timeline], None]:
    """The household's scheduler (``mind/dream/scheduler.py``): people with a backlog round-robin, the larger first,
    a pass cut at its next model call once it has had ``turn_s`` while others wait; its ticks run here."""

    def schedule(dirs: dict[str, Path], models: Models, settings: Any, timeline: Timeline) -> None:
        stores = {person: Store(data_dir) for person, data_dir in dirs.items()}

        def make_dreamer(person: str, stop: Any) -> Dreamer:
            return Passing(person, stores[person], models, settings, timeline, stop)

        def backlogs() -> dict[str, int]:
            return {p: backlog_size(sense(store, settings.dream, zone=settings.companion.zone))
                    for p, store in stores.items()}

        scheduler = DreamScheduler(make_dreamer, settings.dream.model_copy(update={"idle_s": 0}), lambda: None,
                                   backlogs, turn_s=turn_s)
        try:
            for _ in range(3):  # a tick ends after a round with no pass cut; a server's next comes interval_s later
                scheduler.tick()
                if not any(backlogs().values()):
                    break
        finally:
            for store in stores.values():
                store.close()

    return schedule


class Passing(Dreamer):
    """A ``Dreamer`` that writes its pass (whose, when, how long, how it ended) into the timeline."""

    def __init__(self, person: str, store: Store, models: Models, settings: Any, timeline: Timeline,
                 stop: Any) -> None:
        super().__init__(store, models.summary, models.embed, settings, on_event=timeline.on_event(person), stop=stop)
        self.person, self.timeline = person, timeline

    def run_pass(self, *, force: bool = False) -> Any:
        start = time.time()
        report = super().run_pass(force=force)
        self.timeline.passes.append((self.person, start - self.timeline.start, time.time() - start,
                                     len(report.actions)))
        return report


def schedules(turn_s: float) -> list[tuple[str, Callable[[dict[str, Path], Models, Any, Timeline], None]]]:
    return [("one queue (a whole pass per person, A first)", one_queue),
            (f"round-robin by backlog, turn {turn_s:g} s (mind/dream/scheduler.py)", round_robin(turn_s))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", nargs="?", choices=["login", "dream", "all"], default="all")
    parser.add_argument("--logins", type=int, default=50)
    parser.add_argument("--big", type=int, default=12, help="conversations in A's import")
    parser.add_argument("--turns", type=int, default=10)
    parser.add_argument("--summary-tokens", type=int, default=96)
    parser.add_argument("--turn", type=float, default=20.0, help="the scheduler's turn_s (default in lyra: "
                        "dream.interval_s, 300 s)")
    parser.add_argument("--fake-call-s", type=float, default=None,
                        help="a scripted model whose every call takes this long, instead of the real tiny model")
    args = parser.parse_args()
    if args.what in ("login", "all"):
        login(args.logins)
    if args.what in ("dream", "all"):
        dream(args.big, args.turns, args.summary_tokens, args.turn, args.fake_call_s)


if __name__ == "__main__":
    main()
