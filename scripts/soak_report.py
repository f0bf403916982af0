"""The soak's report (see soak.py): one table of what was served, what failed and where forgotten
markers remain, the examples under it, and the verdict that sets the exit code."""

from __future__ import annotations

import re
import statistics
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from soak_client import is_lock_text
from soak_find import Sightings
from soak_load import Markers

PROCESSES = ("server", "dream worker")
HOW = {"lyra forget --matching": "CLI", "POST /api/forget": "API", "DELETE /api/sessions/{id}": "API"}
NOWHERE: dict[str, Any] = {"fds": -1, "rss": -1, "targets": {}}


@dataclass
class Phase:
    """One look: the rows shown, the numbers the verdict reads, and the examples printed under the table."""

    name: str
    rows: dict[str, str] = field(default_factory=dict)
    facts: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def log_problems(work: Path) -> list[str]:
    """Tracebacks, lock messages and failed passes in the processes' logs, one line each."""
    out = []
    for log in sorted(work.glob("*.log")):
        lines = log.read_text(errors="replace").splitlines()
        for i, line in enumerate(lines):
            if line.startswith("Traceback (most recent call last)"):
                last = next((x for x in lines[i + 1:] if x and not x[0].isspace()), "?")
                out.append(f"{log.name}: traceback: {last[:160]}")
            elif is_lock_text(line) and not line.startswith(" "):
                out.append(f"{log.name}: {line.strip()[:160]}")
            elif re.match(r"\s*dream pass \d+: failed", line):
                out.append(f"{log.name}: {line.strip()}")
    return out


def report(name: str, tally: dict[str, Any], markers: Markers, forgotten: set[str], kept: set[str],
           sightings: Sightings, recalled: tuple[int, int, list[str]], start: dict[str, dict[str, Any]],
           now: dict[str, dict[str, Any]], exits: dict[str, int | None], shutdown: dict[str, str],
           read: tuple[int, int], dream: dict[str, int], problems: list[str]) -> Phase:
    """The rows, numbers and examples of one look; ``read`` is (files read, forgotten turns whose vectors were
    looked for)."""
    phase = Phase(name)
    rows, facts, notes = phase.rows, phase.facts, phase.notes
    # Numbers vary between occurrences of one kind ("no session with id 12"): grouped as N.
    errors: Counter[str] = Counter({_kind(k): 0 for k in tally["errors"]})
    for kind, n in tally["errors"].items():
        errors[_kind(kind)] += n
    errors.update(_kind(p) for p in problems)
    locks = sum(tally["locks"].values()) + sum(1 for p in problems if is_lock_text(p))
    rows["requests served (all routes)"] = str(sum(tally["served"].values()))
    for route, n in sorted(tally["served"].items(), key=lambda kv: (-kv[1], kv[0])):
        rows[f"  {route}"] = str(n)
    rows["errors (all kinds)"] = str(sum(errors.values()))
    for kind, n in sorted(errors.items(), key=lambda kv: (-kv[1], kv[0])):
        rows[f"  error: {kind}"] = str(n)
        example = next((" ".join(v.split()) for k, v in tally["examples"].items() if _kind(k) == kind),
                       next((" ".join(p.split()) for p in problems if _kind(p) == kind), kind))
        notes.append(f"error {kind}: e.g. {example}")
    if tally["kills"]:
        rows["server kills (SIGKILL during the load)"] = str(len(tally["kills"]))
        rows["requests sent again after a kill (not errors)"] = str(sum(tally["retried"].values()))
        notes.append("server kills: " + "; ".join(tally["kills"]))
        notes.append("sent again after a kill: " + ", ".join(f"{r} {n}" for r, n in tally["retried"].most_common()))
    rows["lock errors (locked, StoreBusy, 503)"] = str(locks)
    rows["server 5xx"] = str(tally["server_5xx"])
    chat = sorted(tally["chat_s"])
    if chat:
        rows["chat turn s (p50 / p95)"] = f"{statistics.median(chat):.1f} / {chat[int(0.95 * (len(chat) - 1))]:.1f}"
    for proc in PROCESSES:
        before, after = start.get(proc, NOWHERE), now.get(proc, NOWHERE)
        rows[f"{proc}: open fds (start -> now)"] = f"{before['fds']} -> {after['fds']}"
        rows[f"{proc}: RSS MiB (start -> now)"] = f"{before['rss']} -> {after['rss']}"
        grown = Counter(after["targets"]) - Counter(before["targets"])
        if grown:
            notes.append(f"{proc}: descriptors added since the start: "
                         + ", ".join(f"{k} +{n}" for k, n in grown.most_common()))
        if proc in exits:
            rows[f"{proc}: exit code (instance record)"] = (
                "running" if exits[proc] is None else f"{exits[proc]} ({shutdown.get(proc, 'no record')})")
    every = list(markers.all.values())
    origins = Counter(m.origin for m in every)
    rows["markers planted (chat / openai / deleted session / import)"] = (
        f"{len(every)} ({origins['chat']} / {origins['openai']} / {origins['doomed']} / {origins['import']})")
    gone = [markers.all[m] for m in forgotten]
    rows["markers forgotten (CLI / API; while a dream pass ran)"] = (
        f"{len(gone)} ({sum(HOW.get(m.how) == 'CLI' for m in gone)} / {sum(HOW.get(m.how) == 'API' for m in gone)}; "
        f"{sum(m.dream_running for m in gone)})")
    failed = markers.with_fate("forget-failed")
    if failed:
        rows["markers whose forget failed (left out)"] = str(len(failed))
    rows["markers kept"] = str(len(kept))
    found = sightings.found(forgotten)
    leaked = set().union(*found.values()) if found else set()
    rows["FORGOTTEN MARKERS FOUND (distinct)"] = str(len(leaked))
    for place, seen in found.items():
        rows[f"  found in: {place}"] = str(len(seen))
        notes.append(f"found in {place}: " + ", ".join(
            f"{m} ({markers.all[m].origin}, {markers.all[m].how}"
            f"{', dream ran' if markers.all[m].dream_running else ''})" for m in sorted(seen)[:4]))
    in_files = set().union(*(s for p, s in sightings.found(kept).items() if p.startswith("data/")) or [set()])
    rows["kept markers seen in the data files (the search works)"] = f"{len(in_files)}/{len(kept)}"
    reached = sightings.found(kept)
    if reached:
        notes.append("kept markers reached (so forgotten ones could have): " + ", ".join(
            f"{place} {len(seen)}" for place, seen in reached.items() if not place.startswith("after/")))
    hybrid, bm25, missing = recalled
    rows["kept markers recalled (hybrid / bm25)"] = f"{hybrid}/{len(kept)} / {bm25}/{len(kept)}"
    if missing:
        notes.append("kept markers recall did not find: " + ", ".join(
            f"{m} ({markers.all[m].origin} {markers.all[m].where})" for m in missing[:8]))
    rows["files read in the data dir / forgotten turns whose vectors were looked for"] = f"{read[0]} / {read[1]}"
    rows["dream log events by kind"] = ", ".join(f"{k} {n}" for k, n in sorted(dream.items())) or "none"
    facts.update(served=sum(tally["served"].values()), errors=sum(errors.values()), locks=locks,
                 server_5xx=tally["server_5xx"], found=len(leaked), kept=len(kept), forgotten=len(gone),
                 planted=len(every), kept_missing=len(missing), exits=exits, kills=len(tally["kills"]),
                 fds={p: (start.get(p, NOWHERE)["fds"], now.get(p, NOWHERE)["fds"]) for p in PROCESSES},
                 shutdown=shutdown,
                 found_places={p: sorted(s) for p, s in found.items()})
    return phase


def _kind(text: str) -> str:
    """One line, numbers as N: occurrences of one failure differ only in ids ("no session with id 12")."""
    return re.sub(r"\d+", "N", " ".join(text.split("\n")[0].split()))[:160]


def verdict(phases: list[Phase], fd_margin: int) -> list[str]:
    """What makes the run fail; empty when it passed."""
    end = phases[-1].facts
    out = []
    for key, what in (("errors", "errors"), ("locks", "lock errors"), ("server_5xx", "server 5xx answers"),
                      ("kept_missing", "kept markers recall did not find")):
        if end[key]:
            out.append(f"{end[key]} {what}")
    for phase in phases:
        if phase.facts["found"]:
            out.append(f"{phase.name}: {phase.facts['found']} forgotten markers found in "
                       f"{len(phase.facts['found_places'])} places")
    for proc, (fd0, fd1) in end["fds"].items():
        # The mid-run look comes right after a 16-client burst: the most threads the server ever ran at once.
        # SQLite keeps the database descriptor of a connection closed while another connection of the process
        # holds a lock on that file, and hands it to the next connection it opens: so the count may stay at
        # that peak. A leak is growth beyond it.
        peak = max([fd0] + [ph.facts["fds"][proc][1] for ph in phases[:-1] if proc in ph.facts["fds"]])
        if fd1 > peak + fd_margin:
            out.append(f"{proc}: open file descriptors grew from {fd0} (peak {peak}) to {fd1} (margin {fd_margin})")
    exits, shutdown = end["exits"], end["shutdown"]
    for proc, clean in (("server", (0, -15)), ("dream worker", (0, 3))):
        # uvicorn re-raises SIGTERM after its graceful shutdown (-15); a stopped worker's unfinished pass is
        # "deferred" (3). Either way the process must have completed its instance record on the way out.
        if proc in exits and (exits[proc] not in clean or not shutdown.get(proc, "").startswith("done")):
            out.append(f"the {proc} did not stop cleanly: exit {exits[proc]}, instance {shutdown.get(proc)}")
    if end["planted"] < 4 or not end["forgotten"] or not end["kept"]:
        out.append(f"too little happened to mean anything ({end['planted']} planted, {end['forgotten']} "
                   f"forgotten, {end['kept']} kept): run it longer")
    return out


def print_table(phases: list[Phase]) -> None:
    """One markdown table, a column per phase, then the examples."""
    names = [p.name for p in phases]
    keys = list(dict.fromkeys(k for p in reversed(phases) for k in p.rows))
    width = max(len(k) for k in keys) if keys else 10
    print(f"\n| {'measure'.ljust(width)} | " + " | ".join(names) + " |")
    print(f"|{'-' * (width + 2)}|" + "|".join("-" * (len(n) + 2) for n in names) + "|")
    for key in keys:
        print(f"| {key.ljust(width)} | " + " | ".join(p.rows.get(key, "").ljust(len(p.name)) for p in phases) + " |")
    for phase in phases:
        if phase.notes:
            print(f"\n{phase.name}:")
            for note in phase.notes:
                print(f"  {note[:1500]}")
