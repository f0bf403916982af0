#!/usr/bin/env python3
"""A soak test of Lyra: everything at once on one data directory, then where forgotten words remain.

On loopback only, with the real default models and a fresh data directory, it runs
a ``lyra serve`` (free port), a ``lyra dream --loop`` worker, an importer (``lyra
import`` and ``PUT /api/import`` of small Lyra JSONL files), a forgetter (``lyra
forget --matching`` and ``DELETE /api/sessions/{id}``) and several chat clients
(streamed turns, the OpenAI route, recall and every listing), for a given time.
Chat turns and imported files carry distinct marker words; about half are
forgotten, some while a dream pass runs. With ``--kill-every`` the server is
SIGKILLed during the load that often and started again on the same port: a
request cut by the kill is sent again by its client once the server is back
(counted as retried, not as an error), and every turn answered before a kill
must still be recalled at the end. Half way, and at the end, it prints one
table: requests served by route, errors by kind, lock errors, server 5xx, the
server's and the worker's open file descriptors and RSS, and every place a
forgotten marker can still be found (each byte of each file in the data
directory, WAL and FAISS snapshots included; every SQLite row and full-text
term; vectors of forgotten turns; every API response; a ``lyra export`` and a
``lyra backup`` made afterwards). Kept markers must still be recalled, so a
"0 found" means the search works.

    python scripts/soak.py [--minutes 10 | --seconds 45] [--clients 3] [--kill-every 60] [--data-dir DIR]
                           [--json FILE]

Exit code 1 when any error, lock error, server 5xx, forgotten marker found,
kept marker not recalled, or descriptor growth beyond ``--fd-margin`` was seen.
Writes only to a temp dir (kept when the run fails) or ``--data-dir``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import queue
import random
import secrets
import shlex
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
from soak_client import REPO, Api, Cli, Outage, Tally
from soak_find import Sightings, kept_recalled, orphan_vectors, scan_api, scan_database, scan_tree
from soak_load import Markers, chat_client, forgetter, importer
from soak_report import Phase, log_problems, print_table, report, verdict

# Settings that give the dream work within minutes; any LYRA_* of the caller's shell wins over these.
SOAK_ENV = {"LYRA_DREAM__SESSION_IDLE_S": "5", "LYRA_DREAM__INTERVAL_S": "30", "LYRA_DREAM__IDLE_S": "10",
            "LYRA_DREAM__SUMMARY_TOKENS": "96", "LYRA_DREAM__LEASE_S": "60",
            "LYRA_MODELS__CHAT__SAMPLING__MAX_TOKENS": "48",
            # Two processes run models (server, worker): half the CPUs each, or llama.cpp's spinning threads
            # fight over the cores and a 48-token reply takes ten seconds.
            "LYRA_MODELS__CHAT__N_THREADS": str(max(1, len(os.sched_getaffinity(0)) // 2)),
            "LYRA_MODELS__EMBED__N_THREADS": str(max(1, len(os.sched_getaffinity(0)) // 2))}
Usage = dict[str, dict[str, Any]]
# `python -m lyra_local`, plus a SIGUSR1 that writes every thread's stack to the log (``--stacks``).
BOOT = ("import faulthandler, signal, sys; faulthandler.register(signal.SIGUSR1, all_threads=True); "
        "from lyra_local.cli import main; sys.exit(main(sys.argv[1:]))")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    duration = args.seconds if args.seconds is not None else args.minutes * 60
    print(f"$ {shlex.join([sys.executable, *sys.argv])}")
    print(machine())
    work = Path(tempfile.mkdtemp(prefix="lyra-soak-"))
    data = args.data_dir.expanduser().resolve() if args.data_dir else work / "data"
    if data.exists() and any(data.iterdir()):
        print(f"error: {data} is not empty: the soak needs a fresh data directory", file=sys.stderr)
        return 2
    data.mkdir(parents=True, exist_ok=True)
    soak = Soak(args, work, data)
    print("settings: " + " ".join(f"{k}={v}" for k, v in sorted(soak.env.items())
                                  if k.startswith("LYRA_") and k != "LYRA_SERVER__API_TOKEN"))
    print(f"data: {data}  logs: {work}  load: {duration:.0f}s  clients: {args.clients}\n", flush=True)
    try:
        phases = soak.run(duration)
    finally:
        soak.kill()
    failures = verdict(phases, args.fd_margin)
    print_table(phases)
    print("\nPASS" if not failures else "\nFAIL:\n" + "\n".join(f"  - {f}" for f in failures))
    if args.json:
        args.json.write_text(json.dumps({"phases": [p.as_json() for p in phases], "failures": failures},
                                        indent=1, default=str))
    if failures or args.data_dir:
        print(f"kept for a look: data {data}, logs {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failures else 0


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    length = p.add_mutually_exclusive_group()
    length.add_argument("--minutes", type=float, default=10.0, help="how long the load runs (default 10)")
    length.add_argument("--seconds", type=float, help="the same in seconds (the test's short run)")
    p.add_argument("--clients", type=int, default=3, help="concurrent chat clients (default 3)")
    p.add_argument("--data-dir", type=Path, help="an empty or new folder (default: a temp dir)")
    p.add_argument("--dream-loop", type=float, default=20.0, help="seconds between the worker's passes")
    p.add_argument("--dream-concurrency", type=int, default=1,
                   help="dream.concurrency of the server and the worker (default 1: with the in-process model, "
                        "2 makes the dream's threads preempt each other without end, a known bug)")
    p.add_argument("--import-every", type=float, default=20.0, help="seconds between imports")
    p.add_argument("--forget-every", type=float, default=8.0, help="seconds between forget rounds")
    p.add_argument("--settle", type=float, default=6.0, help="a marker's age before it is forgotten or kept")
    p.add_argument("--idle", type=float, default=15.0,
                   help="quiet seconds before descriptors are counted, so idle worker threads retire (> 10)")
    p.add_argument("--fd-margin", type=int, default=8,
                   help="descriptors the end count may exceed the start, or the mid-run count after the burst, by")
    p.add_argument("--kill-every", type=float, default=0.0, metavar="SECONDS",
                   help="SIGKILL the server this often during the load (give or take a quarter), then start it again "
                        "(default 0: never)")
    p.add_argument("--json", type=Path, help="also write the report as JSON here")
    p.add_argument("--stacks", action="store_true",
                   help="when the load ends, write every thread's stack of the server and worker to their logs")
    return p.parse_args(argv)


def machine() -> str:
    mem = dict(line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines() if ":" in line)
    commit = subprocess.run(["git", "describe", "--always", "--dirty"], cwd=REPO, capture_output=True,
                            text=True).stdout.strip()
    return (f"machine: {platform.node()}, {platform.platform()}, nproc {len(os.sched_getaffinity(0))} "
            f"(of {os.cpu_count()}), memory {mem['MemTotal'].strip()} ({mem['MemAvailable'].strip()} available), "
            f"load {' '.join(f'{x:.2f}' for x in os.getloadavg())}; python {platform.python_version()}; "
            f"lyra_local {commit}")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def usage(procs: dict[str, subprocess.Popen[str]]) -> Usage:
    """Per process: open file descriptors (and what they point at) and RSS in MiB, from /proc."""
    out: Usage = {}
    for name, proc in procs.items():
        try:
            folder = Path(f"/proc/{proc.pid}/fd")
            targets = Counter(fd_kind(target) for fd in os.listdir(folder) if (target := fd_target(folder / fd)))
            status = Path(f"/proc/{proc.pid}/status").read_text().splitlines()
            rss = next(int(line.split()[1]) for line in status if line.startswith("VmRSS:")) // 1024
            out[name] = {"fds": sum(targets.values()), "rss": rss, "targets": dict(targets)}
        except (OSError, StopIteration):  # gone meanwhile
            out[name] = {"fds": -1, "rss": -1, "targets": {}}
    return out


def fd_target(link: Path) -> str | None:
    """What one descriptor points at, or None when it was closed since the folder was listed.

    Under load a descriptor closes between ``listdir`` and ``readlink`` now and then; counting the
    process as gone then lost the mid-run peak the verdict measures growth against.
    """
    try:
        return os.readlink(link)
    except FileNotFoundError:
        return None


def fd_kind(target: str) -> str:
    """``socket:[123]`` -> ``socket``; a path -> its name (``lyra.db-wal``), so leaks group by what leaks."""
    if target.startswith("/"):
        return Path(target).name
    return target.split(":[")[0]


def instance_records(data: Path, pids: dict[str, int]) -> dict[str, str]:
    """How each process left its instance record ("done: stopped" after a clean shutdown)."""
    conn = sqlite3.connect(f"file:{data / 'lyra.db'}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT pid, status, result FROM instances").fetchall()
    finally:
        conn.close()
    by_pid = {pid: f"{status}: {result}" for pid, status, result in rows}
    return {name: by_pid.get(pid, "no record") for name, pid in pids.items()}


def worker_passed(data: Path, pid: int) -> bool:
    """Whether the dream worker of ``pid`` has written a gist or digest yet (so both its models are loaded)."""
    conn = sqlite3.connect(f"file:{data / 'lyra.db'}?mode=ro", uri=True)
    try:
        return conn.execute("SELECT 1 FROM consolidation_log WHERE instance_id LIKE ? AND kind IN ('gist', 'digest')",
                            (f"dream-%-{pid}-%",)).fetchone() is not None
    except sqlite3.Error:
        return False
    finally:
        conn.close()


class Soak:
    """The processes, the load and the looking, on one data directory."""

    def __init__(self, args: argparse.Namespace, work: Path, data: Path) -> None:
        self.args, self.work, self.data = args, work, data
        self.token = secrets.token_hex(16)  # a token as a careful user sets one; the clients send it
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("LYRA_")}
        self.env.update(SOAK_ENV)
        self.env["LYRA_DREAM__CONCURRENCY"] = str(args.dream_concurrency)
        self.env.update({k: v for k, v in os.environ.items() if k.startswith("LYRA_")})
        self.env.update({"LYRA_DATA_DIR": str(data), "LYRA_SERVER__API_TOKEN": self.token,
                         "LYRA_MODELS_DIR": os.environ.get("LYRA_MODELS_DIR", str(REPO / "models"))})
        self.config = work / "lyra.toml"  # named, so no ./lyra.toml or ~/.config one is read
        self.config.write_text("# the soak's settings come from LYRA_* variables\n")
        self.tally, self.markers = Tally(), Markers()
        self.cli = Cli(self.config, self.env, self.tally)
        self.procs: dict[str, subprocess.Popen[str]] = {}
        self.base = ""
        self.port = 0
        self.outage = Outage()
        self.logs = {"server": "server.log"}

    def api(self) -> Api:
        return Api(self.base, self.token, self.tally, outage=self.outage)

    def run(self, duration: float) -> list[Phase]:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.spawn("server", "serve", "--host", "127.0.0.1", "--port", str(self.port))
        self.wait_healthy()
        self.spawn("dream worker", "dream", "--loop", str(self.args.dream_loop))
        self.warm_up()
        start = usage(self.procs)
        phases = self.load(duration, start)
        if self.args.stacks:
            for proc in self.procs.values():
                if proc.poll() is None:
                    proc.send_signal(signal.SIGUSR1)
        self.quiet()
        phases.append(self.look("end", start, usage(self.procs), final=True))
        return phases

    def spawn(self, name: str, *args: str) -> None:
        log = self.logs.get(name, f"{name.replace(' ', '-')}.log")
        with (self.work / log).open("w") as out:  # the child keeps its own handle
            self.procs[name] = subprocess.Popen([sys.executable, "-c", BOOT, "--config", str(self.config), *args],
                                                env=self.env, cwd=REPO, stdout=out, stderr=subprocess.STDOUT,
                                                text=True)

    def wait_healthy(self, timeout: float = 120.0) -> None:
        proc, log = self.procs["server"], self.work / self.logs["server"]
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise SystemExit(f"lyra serve exited ({proc.returncode}):\n{log.read_text()[-3000:]}")
            try:
                if httpx.get(f"{self.base}/health", timeout=2).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.3)
        raise SystemExit(f"lyra serve did not answer /health in {timeout:.0f}s:\n{log.read_text()[-3000:]}")

    def warm_up(self) -> None:
        """One turn, one recall, one listing, then quiet: models loaded before the start is counted."""
        api = self.api()
        r = api.call("POST", "/api/sessions", json={"name": "soak warm-up"})
        if r is not None:
            api.chat(r.json()["id"], "Hello! Just checking you are awake.")
        api.call("GET", "/api/recall", params={"q": "hello"})
        api.call("GET", "/api/sessions")
        api.close()
        self.quiet()

    def quiet(self) -> None:
        """An idle gap, then one request: anyio stops the worker threads idle for 10 s when the next call
        comes, so after this the server runs only the threads it needs (a leak shows as what they left)."""
        time.sleep(self.args.idle)
        api = self.api()
        api.call("GET", "/api/sessions")
        api.close()
        time.sleep(1.0)

    def load(self, duration: float, start: Usage) -> list[Phase]:
        """The load for ``duration`` seconds with the mid-run look half way; every thread joined on return."""
        stop = threading.Event()
        doomed: queue.Queue[tuple[int, list[str], float]] = queue.Queue()
        clients = [self.api() for _ in range(self.args.clients + 2)]
        imports = self.work / "imports"
        imports.mkdir()
        threads = [threading.Thread(target=chat_client, name=f"client-{n}",
                                    args=(n, clients[n], self.markers, doomed, stop, random.Random(n)))
                   for n in range(self.args.clients)]
        threads.append(threading.Thread(target=importer, name="importer", args=(
            clients[-2], self.cli, self.markers, imports, stop, self.args.import_every, random.Random(99))))
        threads.append(threading.Thread(target=forgetter, name="forgetter", args=(
            clients[-1], self.cli, self.markers, doomed, stop, self.args.forget_every, self.args.settle)))
        for thread in threads:
            thread.start()
        began = time.monotonic()
        phases: list[Phase] = []
        worker_counted = False
        rng = random.Random(7)
        next_kill = self.next_kill(began, rng)
        try:
            while time.monotonic() - began < duration:
                if time.monotonic() >= next_kill and time.monotonic() - began < duration - self.args.kill_every / 4:
                    self.kill_round(time.monotonic() - began)
                    next_kill = self.next_kill(time.monotonic(), rng)
                dead = [name for name, proc in self.procs.items() if proc.poll() is not None]
                if dead:
                    for name in dead:
                        self.tally.error(f"{name} exited during the load", f"exit {self.procs[name].returncode}")
                    break
                if not worker_counted and worker_passed(self.data, self.procs["dream worker"].pid):
                    # The worker loads its models when it first has work: its start is counted after that.
                    start["dream worker"] = usage(self.procs)["dream worker"]
                    worker_counted = True
                if not phases and time.monotonic() - began >= duration / 2:
                    self.burst()
                    phases.append(self.look("mid-run", start, usage(self.procs), final=False))
                    print_table(phases)
                time.sleep(1)
        finally:
            stop.set()
            for thread in threads:
                thread.join(timeout=600)
            for client in clients:
                client.close()
        return phases

    def next_kill(self, after: float, rng: random.Random) -> float:
        every = self.args.kill_every
        return after + rng.uniform(0.75 * every, 1.25 * every) if every > 0 else float("inf")

    def kill_round(self, at: float) -> None:
        """SIGKILL the server under the load, then the same command on the same port until /health answers; the
        clients wait meanwhile and send again what the kill cut."""
        proc = self.procs["server"]
        inflight = Path(f"/proc/{proc.pid}/fd")
        sockets = sum(1 for fd in os.listdir(inflight) if (fd_target(inflight / fd) or "").startswith("socket:"))
        self.outage.down()  # before the kill: a request failing from now on was cut by it
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        self.tally.killed(f"at {at:.0f}s, {sockets} sockets open")
        self.logs["server"] = f"server-{len(self.tally.kills) + 1}.log"
        try:
            self.spawn("server", "serve", "--host", "127.0.0.1", "--port", str(self.port))
            self.wait_healthy()
        finally:
            self.outage.back()  # a server that does not come back fails the clients' requests: counted as errors
        print(f"  killed the server (SIGKILL) at {at:.0f}s of the load; it answered again", flush=True)

    def burst(self, width: int = 16, each: int = 4) -> None:
        """``width`` clients at once, so the server's thread pool grows; those threads retire in the idle gap
        before the end count, which must then be back where it started (a connection per thread shows)."""
        def one() -> None:
            api = self.api()
            try:
                for n in range(each):
                    api.call("GET", "/api/sessions" if n % 2 else "/api/profile")
            finally:
                api.close()

        threads = [threading.Thread(target=one, name=f"burst-{n}") for n in range(width)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    def look(self, name: str, start: Usage, now: Usage, *, final: bool) -> Phase:
        """Counts so far, and every place a forgotten marker is found now: the API first (at the end, then
        everything is stopped), then an export and a backup, the files, the database, the vectors."""
        forgotten = {m.text for m in self.markers.with_fate("forgotten")}
        kept = {m.text for m in self.markers.with_fate("kept", "pending")}
        sightings = Sightings(sorted(self.markers.all))
        exits: dict[str, int | None] = {n: p.poll() for n, p in self.procs.items()}
        recalled: tuple[int, int, list[str]] = (0, 0, sorted(kept))
        dream_kinds: dict[str, int] = {}
        dream_errors: list[str] = []
        if self.procs["server"].poll() is None:
            api = self.api()
            try:
                dream_kinds, dream_errors = scan_api(api, sightings, sorted(forgotten))
                recalled = kept_recalled(api, sorted(kept))
            finally:
                api.close()
        if final:
            exits = self.stop_all()
        copies = self.work / f"{name}-copies"
        self.cli.run("export", str(copies / "export"))
        self.cli.run("backup", str(copies / "lyra-backup.db"))
        files = scan_tree(self.data, sightings, "data")
        scan_tree(copies, sightings, "after")
        problems = scan_database(self.data / "lyra.db", sightings, "lyra.db rows:") if final else []
        turns = {i: m.text for m in self.markers.with_fate("forgotten") for i in m.turn_ids if m.text in forgotten}
        for place, seen in orphan_vectors(self.data, turns).items():
            sightings.add(place, seen)
        shutdown = instance_records(self.data, {n: p.pid for n, p in self.procs.items()}) if final else {}
        return report(name, self.tally.copy(), self.markers, forgotten, kept, sightings, recalled, start, now,
                      exits if final else {}, shutdown, (files, len(turns)), dream_kinds,
                      problems + log_problems(self.work) + [f"dream log error event: {e}" for e in dream_errors])

    def stop_all(self) -> dict[str, int | None]:
        """SIGTERM, the worker first; a process still there after a minute is killed and reported."""
        exits: dict[str, int | None] = {}
        for name in ("dream worker", "server"):
            proc = self.procs[name]
            if proc.poll() is None:
                proc.terminate()
            try:
                exits[name] = proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.tally.error(f"{name} did not stop within 60s of SIGTERM")
                proc.kill()
                exits[name] = proc.wait()
        return exits

    def kill(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()


if __name__ == "__main__":
    sys.exit(main())
