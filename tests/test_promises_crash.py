"""The promises when a process dies: a model-based (stateful) test with kills.

One data directory, a real ``lyra serve`` on it and real ``lyra`` commands, on
the real tiny models. Between what a person does (talk, forget a text, delete
a conversation, import a history, back up), steps kill the server while it
chats, forgets, imports an upload or dreams, or kill ``lyra import``,
``lyra forget``, ``lyra dream``, ``lyra reindex`` or ``lyra restore``, with
SIGKILL or SIGTERM, at a point drawn among several (a delay, or a moment the
process shows: a ledger line written, an upload stored, the restore's staging
folder made, a first conversation stored, a dream pass begun, an index
written). Then what a person does next: the server is started again, a forget
or an import that got no answer is run again, a restore is run again or not.

With no process on the data directory after a kill:
- SQLite passes ``integrity_check`` and every vector index, loaded from the
  snapshot the crash left and caught up, holds exactly SQLite's vectors.

After every step (the server running again, its recovery done):
- every turn whose request was answered (a chat turn that ended ``done``, a
  history whose import finished) is stored, exactly once: an interrupted
  import run again adds nothing twice;
- a forgotten word (and one lost to a restore) is in no byte of any file under
  the data directory;
- no file there is one the registry of places (``store/files/registry.py``) does not
  explain, and none is an upload or a restore's staging (a killed process's,
  which the recovery step removes).

``make test`` runs two short examples; ``PROMISES_EXAMPLES`` and
``PROMISES_STEPS`` (as for test_promises_stateful.py) run more, and
``PROMISES_REPORT=FILE`` appends each example's kills as a JSON line.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TypeVar

import pytest
from hypothesis import HealthCheck, Phase, note, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from lyra_local.store.files.registry import explaining, unexplained_files

from .conftest import CHAT_GGUF, EMBED_GGUF, require_file
from .crash_kit import (
    MARKER,
    Lyra,
    Point,
    import_file,
    in_thread,
    index_problems,
    moments,
    new_marker,
    on_disk,
    snapshot,
    stored_texts,
    wait_for,
)

EXAMPLES = int(os.environ.get("PROMISES_EXAMPLES", "2"))
STEPS = int(os.environ.get("PROMISES_STEPS", "6"))
T = TypeVar("T")
SIGNALS = st.sampled_from([signal.SIGKILL, signal.SIGTERM])
KILLS: Counter[str] = Counter()  # "what / signal / point" -> kills, over the whole run
INDEX = st.integers(0, 2**16)  # a choice among what the model holds now, whatever its size (see ``pick``)


def points(*moments_: str, longest: float = 3.0) -> st.SearchStrategy[Point]:
    """A delay from the start, or one of ``moments_`` and a shorter delay after it."""
    delay = st.floats(0.0, longest).map(lambda s: round(s, 1))
    after = st.floats(0.0, 0.5).map(lambda s: round(s, 2))
    return st.one_of(st.builds(Point, st.none(), delay), *(st.builds(Point, st.just(m), after) for m in moments_))


CHAT_POINTS = points(longest=2.0)
IMPORT_POINTS = points("upload stored", "first conversation stored", longest=4.0)
SERVER_DREAM_POINTS = points("dream pass begun", longest=4.0)
COMMAND_IMPORT_POINTS = points("first conversation stored", longest=8.0)
DREAM_POINTS = points("dream pass begun", longest=8.0)
REINDEX_POINTS = points("index written", longest=8.0)
RESTORE_POINTS = points("staging folder made", "paused at restore-staged", longest=6.0)
# What the first crash of an example may be: those that need nothing said first, with the points they land on.
FIRST = {"kill_the_server_while_it_chats": CHAT_POINTS, "kill_the_server_while_it_imports": IMPORT_POINTS,
         "kill_the_server_while_it_dreams": SERVER_DREAM_POINTS, "kill_an_import": COMMAND_IMPORT_POINTS,
         "kill_a_dream": DREAM_POINTS, "kill_a_reindex": REINDEX_POINTS}


class Crashes(RuleBasedStateMachine):
    """One person's data directory, processes that die on it, and what the person expects after."""

    def __init__(self) -> None:
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp(prefix="lyra-crash-"))
        self.lyra = Lyra(self.tmp)
        self.committed: dict[str, str] = {}  # marker -> the text of the answered turn that holds it
        self.conversations: dict[int, set[str]] = {}  # chat conversations -> every marker said there, answered or not
        self.forgotten: set[str] = set()
        self.lost: set[str] = set()  # answered after the backup that was restored
        self.reply_of: dict[str, str] = {}  # an imported turn of the person's -> the reply to it, which goes with it
        self.backups: list[tuple[Path, dict[str, str], dict[int, set[str]]]] = []
        self.kills: Counter[str] = Counter()
        self.before: dict[str, object] = {}
        self.checked = 0  # the checks after each step: the steps taken, plus one before the first
        self.n = 0
        self.lyra.start()

    def teardown(self) -> None:
        self.lyra.close()
        if os.environ.get("PROMISES_REPORT"):
            with open(os.environ["PROMISES_REPORT"], "a") as out:
                out.write(json.dumps({"steps": self.checked - 1, "kills": dict(self.kills),
                                      "committed": len(self.committed),
                                      "forgotten": len(self.forgotten), "lost": len(self.lost)}) + "\n")
        shutil.rmtree(self.tmp, ignore_errors=True)

    def file(self, stem: str) -> Path:
        self.n += 1
        return self.tmp / f"{stem}-{self.n}"

    # -- what a person does ------------------------------------------------------------------------------

    @staticmethod
    def pick(data: st.DataObject, items: Iterable[T], label: str) -> T | None:
        """One of ``items`` (None if there is none), by one draw whose kind never depends on them.

        What the model holds depends on where kills landed, which no draw decides: a draw shaped by it (or a
        precondition on it) would make hypothesis see the same choices lead to different draws, and stop the
        run as flaky. So every rule draws the same things whatever the state, and does nothing when it has
        nothing to act on."""
        index = data.draw(INDEX, label=label)
        ordered = sorted(items)  # type: ignore[type-var]
        chosen = ordered[index % len(ordered)] if ordered else None
        note(f"{label}: {chosen}")
        return chosen

    def _conversation(self, data: st.DataObject) -> int:
        existing = data.draw(st.booleans(), label="an existing conversation")
        chosen = self.pick(data, self.conversations, "conversation")
        if existing and chosen is not None:
            return chosen
        made = self.lyra.call("POST", "/api/sessions", json={"name": "Chat"}).json()["id"]
        self.conversations[made] = set()
        return int(made)

    def _turn(self, conversation: int) -> tuple[str, str]:
        marker = new_marker()
        self.conversations[conversation].add(marker)
        return marker, f"My word today is {marker}."

    @initialize()
    def a_first_conversation(self) -> None:
        conversation = int(self.lyra.call("POST", "/api/sessions", json={"name": "Chat"}).json()["id"])
        self.conversations[conversation] = set()
        marker, text = self._turn(conversation)
        assert self.lyra.chat(conversation, text)
        self.committed[marker] = text

    @initialize(data=st.data(), sig=SIGNALS)
    def a_first_crash(self, data: st.DataObject, sig: signal.Signals) -> None:
        """One kill in every example: hypothesis's first (simplest) example would otherwise only repeat the first
        rule by name."""
        name = data.draw(st.sampled_from(sorted(FIRST)), label="first crash")
        point = data.draw(FIRST[name], label="point")
        if name == "kill_the_server_while_it_chats":
            self.kill_the_server_while_it_chats(data, sig, point)
        else:
            getattr(self, name)(sig, point)

    @rule(data=st.data())
    def talk(self, data: st.DataObject) -> None:
        conversation = self._conversation(data)
        marker, text = self._turn(conversation)
        assert self.lyra.chat(conversation, text), "a turn failed with nothing killed"
        self.committed[marker] = text

    @rule(data=st.data(), how=st.sampled_from(["POST /api/forget", "lyra forget"]))
    def forget_a_text(self, data: st.DataObject, how: str) -> None:
        marker = self.pick(data, self.committed, "marker")
        if marker is None:
            return
        if how == "lyra forget":
            self.lyra.run("forget", "--matching", marker, "--yes")
        else:
            assert self.lyra.call("POST", "/api/forget", json={"matching": marker}).status_code == 200
        self._forgot({marker})

    @rule(data=st.data())
    def delete_a_conversation(self, data: st.DataObject) -> None:
        conversation = self.pick(data, self.conversations, "conversation")
        if conversation is None:
            return
        assert self.lyra.call("DELETE", f"/api/sessions/{conversation}").status_code in (200, 204)
        self._forgot(self.conversations.pop(conversation))

    @rule(how=st.sampled_from(["lyra import", "PUT /api/import"]))
    def import_a_history(self, how: str) -> None:
        path = self.file("history.jsonl")
        texts = import_file(path, 2, 6)
        if how == "lyra import":
            self.lyra.run("import", str(path))
        else:
            assert self.lyra.http_import(path), "an import failed with nothing killed"
        self._imported(texts)

    @rule()
    def back_up(self) -> None:
        path = self.file("backup.db")
        response = self.lyra.call("GET", "/api/backup")
        assert response.status_code == 200
        path.write_bytes(response.content)
        self.backups.append((path, dict(self.committed), {c: set(m) for c, m in self.conversations.items()}))

    def _forgot(self, markers: set[str]) -> None:
        markers = markers | {self.reply_of[m] for m in markers if m in self.reply_of}  # a reply goes with its turn
        self.forgotten |= markers
        for marker in markers:
            self.committed.pop(marker, None)
        for conversation in list(self.conversations):
            self.conversations[conversation] -= markers
            if self.lyra.call("GET", f"/api/sessions/{conversation}/messages").status_code == 404:
                del self.conversations[conversation]  # it had no turn left: it went whole

    def _imported(self, texts: list[str]) -> None:
        markers = [MARKER.findall(text)[0] for text in texts]
        self.committed.update(zip(markers, texts, strict=True))
        self.reply_of.update(zip(markers[0::2], markers[1::2], strict=True))  # conversations of even length

    # -- the server killed -----------------------------------------------------------------------------------

    def _kill_server(self, what: str, work: Callable[[], object], point: Point, sig: signal.Signals) -> object:
        """``work()`` on the running server, the server killed at ``point``; the checks a dead data directory
        owes; the server started again. Returns what ``work`` returned (or raised)."""
        thread, out = in_thread(work)
        hit = wait_for(point, moments(self.lyra.data, self.before), lambda: not thread.is_alive())
        self.lyra.stop(sig if hit else signal.SIGTERM)
        thread.join(timeout=180)
        assert not thread.is_alive(), f"{what}: the request never ended after the server died"
        self._count(what, sig, point, hit)
        self._dead_checks(what)
        self.lyra.start()
        return out[0] if out else None

    def _count(self, what: str, sig: signal.Signals, point: Point, hit: bool) -> None:
        key = f"{what} / {sig.name} / {point.moment or 'delay'}" if hit else f"{what} / finished before the point"
        self.kills[key] += 1
        KILLS[key] += 1

    def _dead_checks(self, what: str) -> None:
        problems = index_problems(self.lyra.data)
        assert not problems, f"after a kill during {what}: {problems}"

    @rule(data=st.data(), sig=SIGNALS, point=CHAT_POINTS)
    def kill_the_server_while_it_chats(self, data: st.DataObject, sig: signal.Signals, point: Point) -> None:
        conversation = self._conversation(data)
        marker, text = self._turn(conversation)
        self.before = snapshot(self.lyra.data)
        if self._kill_server("chat", lambda: self.lyra.chat(conversation, text), point, sig) is True:
            self.committed[marker] = text  # answered: it must be there (unanswered, it may or may not be)

    @rule(data=st.data(), sig=SIGNALS, point=points("ledger line written", longest=1.0),
          how=st.sampled_from(["POST /api/forget", "DELETE /api/sessions/{id}"]))
    def kill_the_server_while_it_forgets(self, data: st.DataObject, sig: signal.Signals, point: Point,
                                         how: str) -> None:
        conversation = self.pick(data, self.conversations, "conversation")
        marker = self.pick(data, self.committed, "marker")
        if how == "DELETE /api/sessions/{id}" and conversation is not None:
            path = f"/api/sessions/{conversation}"
            self.before = snapshot(self.lyra.data)
            self._kill_server(how, lambda: self.lyra.call("DELETE", path), point, sig)
            # Answered or not, the person deletes it again if it is still listed: gone either way.
            assert self.lyra.call("DELETE", path).status_code in (200, 204, 404)
            self._forgot(self.conversations.pop(conversation))
            return
        if marker is None:
            return
        self.before = snapshot(self.lyra.data)
        self._kill_server("POST /api/forget", lambda: self.lyra.call("POST", "/api/forget", json={"matching": marker}),
                          point, sig)
        assert self.lyra.call("POST", "/api/forget", json={"matching": marker}).status_code == 200  # again
        self._forgot({marker})

    @rule(sig=SIGNALS, point=IMPORT_POINTS)
    def kill_the_server_while_it_imports(self, sig: signal.Signals, point: Point) -> None:
        path = self.file("upload.jsonl")
        texts = import_file(path, 2, 150)  # two transactions of the importer's batches
        self.before = snapshot(self.lyra.data)
        if self._kill_server("PUT /api/import", lambda: self.lyra.http_import(path), point, sig) is not True:
            assert self.lyra.http_import(path), "an interrupted import run again failed"
        self._imported(texts)

    @rule(sig=SIGNALS, point=SERVER_DREAM_POINTS)
    def kill_the_server_while_it_dreams(self, sig: signal.Signals, point: Point) -> None:
        self.before = snapshot(self.lyra.data)
        assert self.lyra.call("POST", "/api/dream", params={"force": "true"}).status_code == 202

        def dreaming() -> None:  # until the pass ends (or the server dies under it)
            begun = moments(self.lyra.data, self.before)
            deadline = time.monotonic() + 20
            while not begun("dream pass begun") and time.monotonic() < deadline:
                time.sleep(0.05)
            while self.lyra.call("GET", "/api/dream").json().get("running"):
                time.sleep(0.05)
        self._kill_server("dream (server)", dreaming, point, sig)

    # -- a command killed --------------------------------------------------------------------------------------

    def _kill_command(self, what: str, args: list[str], point: Point, sig: signal.Signals) -> bool:
        # A pause point holds the command still at one step: the kill lands exactly there.
        """The server stopped (as a person quits the app to run a command), ``lyra ARGS`` killed at ``point``, the
        checks a dead data directory owes. Returns whether the command ended by itself, successfully."""
        self.lyra.stop()
        self.before = snapshot(self.lyra.data)
        name = f"{args[0]}-{self.n}"
        pause = point.moment.removeprefix("paused at ") if point.moment and point.moment.startswith("paused") else None
        proc = self.lyra.spawn(name, *args, pause=pause)
        seen = moments(self.lyra.data, self.before, self.lyra.log(name))
        hit = wait_for(point, seen, lambda: proc.poll() is not None, limit=180)
        if hit:
            proc.send_signal(sig)
        code = proc.wait(timeout=180)
        self._count(what, sig, point, hit)
        assert hit or code == 0, f"{what} failed by itself ({code}):\n{self.lyra.tail(f'{args[0]}-{self.n}')}"
        self._dead_checks(what)
        return not hit

    @rule(sig=SIGNALS, point=COMMAND_IMPORT_POINTS)
    def kill_an_import(self, sig: signal.Signals, point: Point) -> None:
        path = self.file("export.jsonl")
        texts = import_file(path, 2, 150)
        if not self._kill_command("lyra import", ["import", str(path)], point, sig):
            self.lyra.run("import", str(path))  # run again: it resumes, nothing twice
        self._imported(texts)
        self.lyra.start()

    @rule(data=st.data(), sig=SIGNALS, point=points("ledger line written", longest=6.0))
    def kill_a_forget(self, data: st.DataObject, sig: signal.Signals, point: Point) -> None:
        marker = self.pick(data, self.committed, "marker")
        if marker is None:
            return
        if not self._kill_command("lyra forget", ["forget", "--matching", marker, "--yes"], point, sig):
            self.lyra.run("forget", "--matching", marker, "--yes")  # the person runs it again
        self._forgot_offline({marker})

    def _forgot_offline(self, markers: set[str]) -> None:
        self.lyra.start()
        self._forgot(markers)

    @rule(sig=SIGNALS, point=DREAM_POINTS)
    def kill_a_dream(self, sig: signal.Signals, point: Point) -> None:
        self._kill_command("lyra dream", ["dream", "--force", "--quiet"], point, sig)
        self.lyra.start()

    @rule(sig=SIGNALS, point=REINDEX_POINTS)
    def kill_a_reindex(self, sig: signal.Signals, point: Point) -> None:
        self._kill_command("lyra reindex", ["reindex"], point, sig)
        self.lyra.start()

    @precondition(lambda self: self.backups)
    @rule(data=st.data(), sig=SIGNALS, point=RESTORE_POINTS, again=st.booleans())
    def kill_a_restore(self, data: st.DataObject, sig: signal.Signals, point: Point, again: bool) -> None:
        path, committed, conversations = self.backups[data.draw(INDEX, label="backup") % len(self.backups)]
        args = ["restore", str(path), "--force", "--keep", str(self.file("replaced.db"))]
        restored = self._kill_command("lyra restore", args, point, sig)
        if not restored and again:
            self.lyra.run("restore", str(path), "--force", "--keep", str(self.file("replaced.db")))
            restored = True
        elif not restored:
            restored = self._which_memory(committed)
        if restored:
            now = set(self.committed)
            self.committed = {m: t for m, t in committed.items() if m not in self.forgotten}
            self.conversations = {c: m - self.forgotten for c, m in conversations.items()}
            self.lost = (self.lost | now) - set(self.committed)
        self.lyra.start()
        for conversation in list(self.conversations):
            if self.lyra.call("GET", f"/api/sessions/{conversation}/messages").status_code == 404:
                del self.conversations[conversation]

    def _which_memory(self, backup: dict[str, str]) -> bool:
        """A restore killed and not run again left the memory as it was, or the backup's whole: True for the
        backup's."""
        texts = stored_texts(self.lyra.data)
        old = all(texts[t] for t in self.committed.values())
        new = all(texts[t] for m, t in backup.items() if m not in self.forgotten) and not any(
            texts[t] for m, t in self.committed.items() if m not in backup)
        assert old or new, "a restore killed half-way left neither the memory it replaced nor the backup"
        return not old

    # -- the promises ----------------------------------------------------------------------------------------------

    @invariant()
    def what_was_answered_is_there_once(self) -> None:
        self.checked += 1
        texts = stored_texts(self.lyra.data)
        missing = sorted(m for m, t in self.committed.items() if texts[t] == 0)
        twice = sorted(m for m, t in self.committed.items() if texts[t] > 1)
        assert not missing, f"{len(missing)} answered turns lost, e.g. {missing[:3]}"
        assert not twice, f"{len(twice)} turns stored twice, e.g. {twice[:3]}"

    @invariant()
    def forgotten_is_nowhere_on_disk(self) -> None:
        found = on_disk(self.lyra.data, self.forgotten | self.lost)
        assert not found, f"forgotten words left on disk: {dict(list(found.items())[:4])}"

    @invariant()
    def nothing_a_dead_process_left_stays(self) -> None:
        """Between steps nothing is on its way in or out: an upload or a restore's staging here was left by a
        killed process, and the recovery step of the server started since should have removed it. (A half-written
        index snapshot is left out: the server may be writing one in the background now.)"""
        left = [str(p.relative_to(self.lyra.data)) for p in self.lyra.data.rglob("*") if p.is_file()
                and (place := explaining(self.lyra.data, p)) is not None and place.sweep != "never"
                and not place.pattern.startswith("index/")]
        assert not left, f"left by a killed process after the recovery: {left}"

    @invariant()
    def every_file_is_explained(self) -> None:
        unexplained = list(unexplained_files(self.lyra.data))
        assert not unexplained, f"files no declaration explains: {unexplained}"


@pytest.mark.slow
@pytest.mark.models
def test_the_promises_hold_whatever_is_killed_when() -> None:
    require_file(CHAT_GGUF)
    require_file(EMBED_GGUF)
    # No shrinking: each step starts processes; the failing steps are printed as they ran.
    run_state_machine_as_test(Crashes, settings=settings(
        max_examples=EXAMPLES, stateful_step_count=STEPS, deadline=None, suppress_health_check=list(HealthCheck),
        phases=[Phase.explicit, Phase.reuse, Phase.generate]))
