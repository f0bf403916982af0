"""The soak's load (see soak.py): chat clients that plant markers, an importer and a forgetter, all on
one running ``lyra serve`` and its data directory.

Nothing here judges the result: soak_client.py counts what was served and
what failed, soak_find.py looks for what remains.
A marker counts as planted only once the turn or import that carried it has
finished, and as forgotten only once the forget that removed it has returned.
"""

from __future__ import annotations

import json
import queue
import random
import secrets
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

from soak_client import Api, Cli, ConversationGone

TOPICS = ["repotting the basil", "the train to Porto", "Ana's birthday dinner", "the leaking kitchen tap",
          "a chess opening I keep losing with", "the budget for the flat", "my knee physio", "the piano recital",
          "Miso's vet visit", "the new job's first week", "a book about glaciers", "the marathon plan"]
PLANTS = ["My new neighbour is called {m}; she moved in last week.", "We named the boat {m}, after my grandmother.",
          "Please remember the code word {m} for the storage locker.", "The café I loved in Porto is called {m}.",
          "My physio's name is {m} and she is strict about the exercises."]
CONSONANTS, VOWELS = "bdfgkmptvz", "aou"
READS = ["/api/sessions", "/api/profile", "/api/digests", "/api/narrative", "/api/self", "/api/dream",
         "/api/dream/events?follow=false", "/api/sitrep", "/api/world", "/api/world/proposals", "/api/instances",
         "/api/locks", "/api/settings", "/health"]


def new_marker() -> str:
    """A name nobody has: 'zq', seven random syllables, 'k' (written capitalized, as a name would be).

    Made of letters so the model may copy it into gists and digests like any name; no 'e', 'i', 's' or
    'l' and a final 'k', so the full-text stemmer keeps it whole. 10^10 of them: no two plants share one,
    nor the last 13 letters that soak_find also looks for."""
    return "zq" + "".join(secrets.choice(CONSONANTS) + secrets.choice(VOWELS) for _ in range(7)) + "k"


@dataclass
class Marker:
    text: str
    origin: str  # chat, openai, import, doomed (a chat session later deleted over the API)
    where: str
    turn_ids: set[int] = field(default_factory=set)  # turns that held it (known before the forget)
    fate: str = "pending"  # pending, kept, forgetting, forgotten, forget-failed
    how: str = ""
    dream_running: bool = False  # a dream pass was running when its forget started
    planted_at: float = field(default_factory=time.monotonic)
    # Ages vary, so some markers go while new (the dream mid-way through them), some once consolidated.
    patience: float = field(default_factory=lambda: random.uniform(1.0, 4.0))


class Markers:
    """Every planted marker and what became of it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.all: dict[str, Marker] = {}

    def plant(self, text: str, origin: str, where: str, turn_id: int | None = None) -> Marker:
        with self._lock:
            marker = self.all[text] = Marker(text, origin, where, {turn_id} if turn_id else set())
            return marker

    def ripe(self, age: float) -> list[Marker]:
        now = time.monotonic()
        with self._lock:
            return [m for m in self.all.values() if m.fate == "pending" and m.origin != "doomed"
                    and now - m.planted_at >= age * m.patience]

    def should_forget(self) -> bool:
        """Forget about half: whichever fate is behind."""
        with self._lock:
            fates = Counter(m.fate for m in self.all.values())
        return fates["forgotten"] + fates["forget-failed"] <= fates["kept"]

    def decide(self, marker: Marker, fate: str, how: str = "", dream_running: bool = False) -> None:
        with self._lock:
            marker.fate, marker.how, marker.dream_running = fate, how, dream_running

    def with_fate(self, *fates: str) -> list[Marker]:
        with self._lock:
            return [m for m in self.all.values() if m.fate in fates]


def chat_message(rng: random.Random, marker: str | None) -> str:
    text = f"Today I dealt with {rng.choice(TOPICS)} and later with {rng.choice(TOPICS)}."
    return f"{text} {rng.choice(PLANTS).format(m=marker.capitalize())}" if marker else text


def chat_client(n: int, api: Api, markers: Markers, doomed: queue.Queue[tuple[int, list[str], float]],
                stop: threading.Event, rng: random.Random) -> None:
    """Turns in a few rotating sessions (so older ones go quiet and ripen for the dream), half with a marker;
    now and then a short session that the forgetter deletes; reads between turns."""
    session, turns, made = None, 0, 0
    while not stop.is_set():
        if session is None or turns >= 4:
            made += 1
            r = api.call("POST", "/api/sessions", json={"name": f"soak client {n} #{made}"})
            session, turns = (r.json()["id"] if r is not None else None), 0
            if session is None:
                stop.wait(2)
                continue
        roll = rng.random()
        if roll < 0.15:
            _doomed_session(n, api, markers, doomed, rng)
        elif roll < 0.25:
            _openai_turn(n, api, markers, rng)
        else:
            marker = new_marker() if rng.random() < 0.5 else None
            try:
                user_id, reply_id = api.chat(session, chat_message(rng, marker))
            except ConversationGone:
                session = None
                continue
            turns += 1
            if user_id and marker:
                markers.plant(marker, "chat", f"session {session}", user_id)
            if reply_id and rng.random() < 0.3:
                api.call("GET", f"/api/exchanges/{reply_id}/trace", "GET /api/exchanges/{id}/trace")
        for _ in range(rng.randint(1, 3)):
            _read(api, rng, session)
        stop.wait(rng.uniform(0.2, 1.5))


def _doomed_session(n: int, api: Api, markers: Markers, doomed: queue.Queue[tuple[int, list[str], float]],
                    rng: random.Random) -> None:
    r = api.call("POST", "/api/sessions", json={"name": f"soak client {n}: to be deleted"})
    if r is None:
        return
    session, planted = r.json()["id"], []
    for _ in range(2):
        marker = new_marker()
        try:
            user_id, _reply = api.chat(session, chat_message(rng, marker))
        except ConversationGone:
            break
        if user_id:
            markers.plant(marker, "doomed", f"session {session}", user_id)
            planted.append(marker)
    doomed.put((session, planted, time.monotonic()))


def _openai_turn(n: int, api: Api, markers: Markers, rng: random.Random) -> None:
    """The OpenAI-compatible route, session named by header; a marker in half of them."""
    marker = new_marker() if rng.random() < 0.5 else None
    r = api.call("POST", "/v1/chat/completions", headers={"X-Lyra-Session": f"soak-openai-{n}"},
                 json={"model": "lyra", "messages": [{"role": "user", "content": chat_message(rng, marker)}],
                       "max_tokens": 32})
    if r is not None and marker:
        markers.plant(marker, "openai", f"session soak-openai-{n}")


def _read(api: Api, rng: random.Random, session: int | None) -> None:
    roll = rng.random()
    if roll < 0.25:
        api.call("GET", "/api/recall", params={"q": rng.choice(TOPICS)})
    elif roll < 0.35 and session is not None:  # 404: forgotten whole meanwhile (every turn held a forgotten word)
        api.call("GET", f"/api/sessions/{session}/messages", "GET /api/sessions/{id}/messages", ok=(200, 404))
    elif roll < 0.40 and session is not None:
        api.call("GET", f"/api/sessions/{session}/gist", "GET /api/sessions/{id}/gist", ok=(200, 404))
    elif roll < 0.42:
        api.call("GET", "/api/export")
    else:
        api.call("GET", rng.choice(READS))


def lyra_jsonl(rng: random.Random, n: int) -> tuple[str, list[tuple[str, str]]]:
    """Two sessions of recent history (so day digests form), each with two markers; the file and what it plants."""
    lines, planted = [], []
    for s in range(2):
        uid = f"soak-import-{n}-{s}-{secrets.token_hex(3)}"
        start = datetime.now(timezone.utc) - timedelta(hours=rng.uniform(2, 72))
        messages = []
        for i in range(6):
            marker = new_marker() if i in (0, 3) else None
            text = (chat_message(rng, marker) if i % 2 == 0
                    else f"That sounds like a lot. How did {rng.choice(TOPICS)} go?")
            if marker and i % 2:
                text = f"{text} I noted {marker.capitalize()} for you."
            messages.append({"role": "user" if i % 2 == 0 else "assistant", "content": text,
                             "created_at": (start + timedelta(minutes=3 * i)).isoformat(timespec="seconds")})
            if marker:
                planted.append((marker, uid))
        lines.append(json.dumps({"id": uid, "name": f"soak import {n}.{s}", "messages": messages}))
    return "\n".join(lines) + "\n", planted


def importer(api: Api, cli: Cli, markers: Markers, folder: Path, stop: threading.Event, every: float,
             rng: random.Random) -> None:
    """Every ``every`` seconds a small Lyra JSONL file, by ``lyra import`` and by ``PUT /api/import`` in turn."""
    n = 0
    while not stop.wait(every if n else 3.0):
        n += 1
        body, planted = lyra_jsonl(rng, n)
        path = folder / f"soak-import-{n}.jsonl"
        path.write_text(body, encoding="utf-8")
        done = cli.run("import", str(path)) is not None if n % 2 else _http_import(api, path, stop)
        path.unlink()
        if done:
            for marker, uid in planted:
                markers.plant(marker, "import", f"session {uid}")


def _http_import(api: Api, path: Path, stop: threading.Event) -> bool:
    """The upload, then its job to the end; a job the server lost to a kill round (its status 404 once the new
    server is up) is uploaded again, as a person would: the import resumes without duplicates."""
    for _ in range(5):
        epoch = api.epoch()
        r = api.call("PUT", "/api/import", params={"filename": path.name, "format": "lyra"}, content=path.read_bytes())
        if r is None:
            return False
        job = r.json()["job"]
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            status = api.call("GET", f"/api/import/{job}", "GET /api/import/{job}", ok=(200, 404))
            if status is not None and status.status_code == 404:
                if api.cut_by_a_kill(epoch, "PUT /api/import (its job died with the server)"):
                    break
                api.tally.error("GET /api/import/{job}: HTTP 404", status.text, status=404)
                return False
            if status is not None and status.json()["status"] != "running":
                state = status.json()
                if "a forget ran meanwhile" in str(state.get("error")):  # as its hint says: the same file again
                    api.tally.retry("PUT /api/import (its job stopped by a forget)")
                    break
                if state["status"] != "done" or (state.get("report") or {}).get("problems"):
                    api.tally.error(f"import job {state['status']}", str(state.get("error") or state.get("report")))
                    return False
                return True
            time.sleep(0.5)
        else:
            api.tally.error("import job: still running after 300s")
            return False
    api.tally.error("import job: lost to a kill five times over")
    return False


def forgetter(api: Api, cli: Cli, markers: Markers, doomed: queue.Queue[tuple[int, list[str], float]],
              stop: threading.Event, every: float, settle: float) -> None:
    """Deletes the doomed sessions over the API and forgets about half the other markers, with
    ``lyra forget --matching`` and ``POST /api/forget`` in turn; every other round it first starts a
    dream pass, so some forgets land while the dream works on what they remove."""
    round_ = matching = 0
    while not stop.wait(every):
        round_ += 1
        if round_ % 2 == 0 and not api.dream_running():
            api.call("POST", "/api/dream", params={"force": "true"})
            for _ in range(10):
                if stop.wait(0.5) or api.dream_running():
                    break
        _delete_doomed(api, markers, doomed, settle)
        for marker in markers.ripe(settle)[:3]:
            if stop.is_set():
                return
            if not markers.should_forget():
                markers.decide(marker, "kept")
                continue
            markers.decide(marker, "forgetting")  # neither kept nor forgotten until the forget returns
            marker.turn_ids |= _turns_holding(api, marker.text)
            running = api.dream_running()
            matching += 1
            if matching % 2:
                how, turns = "lyra forget --matching", _cli_forget(cli, marker.text)
            else:
                how, turns = "POST /api/forget", _api_forget(api, marker.text)
            if turns == 0:
                api.tally.error(f"{how}: a planted marker matched nothing", marker.text)
            markers.decide(marker, "forgotten" if turns is not None else "forget-failed", how, running)


REFUSED_TRIES, REFUSED_WAIT_S = 40, 3.0  # a forget refused while an import runs is tried again, for 2 minutes


def _cli_forget(cli: Cli, text: str) -> int | None:
    """Turns forgotten by ``lyra forget --matching`` (None: it failed); refused while an import runs, it waits
    and tries again, as its message says to."""
    for _ in range(REFUSED_TRIES):
        proc = cli.run("forget", "--matching", text, "--yes", refused_ok=True)
        if proc is None:
            return None
        if proc.returncode == 0:
            return 0 if "nothing matches" in proc.stdout else 1
        time.sleep(REFUSED_WAIT_S)
    cli.tally.error("cli lyra forget: refused while an import ran, for two minutes", text)
    return None


def _api_forget(api: Api, text: str) -> int | None:
    """Turns (and conversations forgotten whole: every turn held it) forgotten by ``POST /api/forget``; refused
    while an import runs, it waits and tries again."""
    for _ in range(REFUSED_TRIES):
        r = api.call("POST", "/api/forget", json={"matching": text}, refused_ok=True)
        if r is None:
            return None
        if r.status_code == 200:
            return int(r.json().get("turns", 0)) + len(r.json().get("sessions", []))
        time.sleep(REFUSED_WAIT_S)
    api.tally.error("POST /api/forget: refused while an import ran, for two minutes", text)
    return None


def _delete_doomed(api: Api, markers: Markers, doomed: queue.Queue[tuple[int, list[str], float]],
                   settle: float) -> None:
    waiting = []
    while not doomed.empty():
        item = doomed.get()
        if time.monotonic() - item[2] < settle:
            waiting.append(item)
            continue
        session, planted, _ = item
        for text in planted:
            markers.decide(markers.all[text], "forgetting")
        listing = api.call("GET", f"/api/sessions/{session}/messages", "GET /api/sessions/{id}/messages")
        ids = {m["id"] for m in listing.json()["messages"]} if listing is not None else set()
        running = api.dream_running()
        gone = False
        for _ in range(REFUSED_TRIES):
            r = api.call("DELETE", f"/api/sessions/{session}", "DELETE /api/sessions/{id}", refused_ok=True)
            if r is None or r.status_code != 409:
                gone = r is not None
                break
            time.sleep(REFUSED_WAIT_S)
        for text in planted:
            marker = markers.all[text]
            marker.turn_ids |= ids
            markers.decide(marker, "forgotten" if gone else "forget-failed", "DELETE /api/sessions/{id}", running)
    for item in waiting:
        doomed.put(item)


def _turns_holding(api: Api, text: str) -> set[int]:
    """The ids of the turns that hold ``text`` now (to look for their vectors after the forget)."""
    r = api.call("GET", "/api/recall", params={"q": text, "mode": "bm25", "k": 20})
    if r is None:
        return set()
    return {h["id"] for h in r.json()["hits"] if h["kind"] == "exchange" and text in h["content"].lower()}
